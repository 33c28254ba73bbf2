"""The library's architecture rules, checked statically (see ``_architecture.py``).

1. sizes: no module over 600 lines of code (660 physical), class over 400 (440), function
   over 60 (80); lines of code leave out docstrings, comments and blank lines;
2. imports: no cycle among the library's modules (function-level imports count, those
   under ``if TYPE_CHECKING:`` do not) and no module importing its own package;
3. no run of six lines repeated in the library, to the letter or in shape;
4. sorted ``__all__`` in the package ``__init__`` files that ``test_public_api`` does not
   already import and check;
5. no unnamed tuned number in the engine's (``core``) function bodies.
"""

from __future__ import annotations

from _architecture import (
    ALLOWED_NUMBERS,
    SIZE_LIMITS,
    check_all_sorted,
    check_import_cycles,
    check_magic_numbers,
    check_own_package_imports,
    check_repeats,
    check_sizes,
    import_graph,
    library_sources,
)

#: the packages whose ``__all__`` test_public_api.py imports and checks (sorted, unique)
COVERED_BY_TEST_PUBLIC_API = frozenset(
    {"langchain_recursive_memory", "langchain_recursive_memory.core", "llamaindex_higmem"}
)


def report(violations: list[str], rule: str, fix: str) -> str:
    listing = "\n".join(f"  {v}" for v in violations)
    return f"{len(violations)} {rule}; {fix}:\n{listing}"


def test_sizes():
    found = check_sizes(library_sources())
    limits = ", ".join(
        f"{kind} {code} ({physical})" for kind, (code, physical) in SIZE_LIMITS.items()
    )
    assert not found, report(
        found,
        "definitions over their size",
        f"split them (most lines of code (physical): {limits})",
    )


def test_no_import_cycles():
    graph = import_graph(library_sources())
    found = [f"imports its own package: {v}" for v in check_own_package_imports(graph)]
    found += [f"cycle: {v}" for v in check_import_cycles(graph)]
    assert not found, report(
        found,
        "import problems (function-level imports count, those under TYPE_CHECKING do not)",
        "import sibling modules directly and break each cycle",
    )


def test_no_repeated_code():
    found = check_repeats(library_sources())
    assert not found, report(
        found,
        "pairs of places sharing 6+ lines (same text, or same shape: 'shape')",
        "let one piece of code serve both",
    )


def test_package_all_is_sorted():
    found = check_all_sorted(library_sources(), skip=COVERED_BY_TEST_PUBLIC_API)
    assert not found, report(
        found, "package __all__ problems", "sort with sorted() (case-sensitive), as test_public_api"
    )


def test_engine_names_its_numbers():
    found = check_magic_numbers(library_sources())
    allowed = ", ".join(map(repr, ALLOWED_NUMBERS))
    assert not found, report(
        found,
        "unnamed numbers in core function bodies",
        f"make each a named module or class constant (allowed as is: {allowed})",
    )
