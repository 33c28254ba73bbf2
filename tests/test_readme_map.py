"""The module map names every module of the library, in its own package.

The map is the first code block of the "Architecture" section of ``docs/how-it-works.md``
(the README links there; it kept the map until the docs site): a line whose first word ends
with ``/`` opens a package (nested by indentation), and each ``name.py`` on the lines
indented under it names a module of that package. A new module, a move or a rename that
the map does not follow fails here.
"""

from __future__ import annotations

import re

from conftest import LIBRARY, ROOT

MAP_PAGE = ROOT / "docs" / "how-it-works.md"


def _map_block() -> list[str]:
    text = MAP_PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```[\w-]*\n(.*?)^```$", section, re.S | re.M)
    assert block, f"no code block in the Architecture section of {MAP_PAGE.name}"
    return block.group(1).splitlines()


def named_modules(lines: list[str]) -> set[str]:
    """``package/module.py`` paths the map names (see the module doc)."""
    named: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, package path)
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        while stack and indent <= stack[-1][0]:
            stack.pop()
        if first.endswith("/"):
            parent = stack[-1][1] if stack else ""
            stack.append((indent, parent + first))
            line = line.replace(first, "", 1)
        if stack:
            package = stack[-1][1]
            named.add(package)
            named.update(package + name for name in re.findall(r"\b\w+\.py\b", line))
    return named


def library_modules() -> set[str]:
    """Every module (a package's ``__init__.py`` counts as the package, ``name/``)."""
    found = set()
    for top in LIBRARY:
        for path in (ROOT / top).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            found.add(relative)
            found.add(relative.rsplit("/", 1)[0] + "/")
    return found


def _required() -> set[str]:
    top = {f"{name}/__init__.py" for name in LIBRARY}
    return {m for m in library_modules() if not m.endswith("/__init__.py") or m in top}


def test_the_parser_reads_packages_and_continuation_lines() -> None:
    lines = [
        "pkg/",
        "  a.py                  one",
        "  sub/                  b.py (two),",
        "                        c.py",
        "  d.py",
    ]
    assert named_modules(lines) == {
        "pkg/",
        "pkg/a.py",
        "pkg/sub/",
        "pkg/sub/b.py",
        "pkg/sub/c.py",
        "pkg/d.py",
    }


def test_the_map_names_every_module_in_its_package() -> None:
    named = named_modules(_map_block())
    missing = sorted(_required() - named)
    assert not missing, f"modules the map ({MAP_PAGE.name}) does not name: {missing}"


def test_the_map_names_no_module_that_does_not_exist() -> None:
    stale = sorted(named_modules(_map_block()) - library_modules())
    assert not stale, f"the map ({MAP_PAGE.name}) names modules that do not exist: {stale}"
