"""The library's architecture rules: import-linter's contracts, and the two no tool checks.

Where each rule is checked (the configuration of the tools is in pyproject.toml):

* a function's size and shape: ruff (``tests/test_quality.py`` runs it) with C901
  (complexity), PLR0915 (statements), PLR0917 (positional parameters) and PLR2004
  (unnamed numbers in comparisons);
* imports: import-linter's contracts, run here (``lint-imports``): the adapters sit above
  the core, the core imports neither framework, storage imports no engine, the engines'
  collaborators never import an engine, and no import cycle at any depth (imports in
  functions and under ``if TYPE_CHECKING:`` count);
* sorted, unique ``__all__`` of every package: ``tests/test_public_api.py``;
* one async pattern: ruff's banned-api (TID251) keeps ``asyncio.to_thread`` out of the
  library but where a blocking call is performed (the runtime, the database, the model and
  embedder adapters, the middleware); ``tests/test_memory.py`` and ``tests/test_higmem.py``
  check that each async twin asks the store what its sync method asks;
* here, because no tool checks them: a module's length (ruff has no module-length rule)
  and no module importing its own package (a cycle through the package's ``__init__``,
  which import-linter's ``acyclic_siblings`` does not see: an ``__init__`` is no sibling).

No longer checked: a class's length (its module's bounds it) and runs of lines written
twice (neither ruff nor import-linter has such a rule).
"""

from __future__ import annotations

import functools
import subprocess
import sys

import grimp
from conftest import LIBRARY, ROOT

#: the most lines a library module may have
MODULE_LINES = 660


def test_import_contracts_are_kept():
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    out = subprocess.run(
        [sys.executable, "-c", command, "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


@functools.cache
def import_graph(*, exclude_type_checking_imports: bool = False) -> grimp.ImportGraph:
    """The library's imports as import-linter reads them (grimp): in functions too."""
    return grimp.build_graph(
        *LIBRARY, exclude_type_checking_imports=exclude_type_checking_imports, cache_dir=None
    )


def test_the_import_rules_see_type_checking_imports():
    plain = import_graph(exclude_type_checking_imports=True)
    assert import_graph().count_imports() > plain.count_imports()  # some modules have them
    assert "exclude_type_checking_imports" not in (ROOT / "pyproject.toml").read_text()


def test_no_module_imports_its_own_package():
    graph = import_graph()
    found = [
        f"{module} -> {package} (line {detail['line_number']}: {detail['line_contents']})"
        for module in sorted(graph.modules)
        for package in (module.rsplit(".", n)[0] for n in range(1, module.count(".") + 1))
        for detail in graph.get_import_details(importer=module, imported=package)
    ]
    assert not found, "import the sibling module itself, not its package:\n" + "\n".join(found)


def test_no_module_is_too_long():
    found = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for package in LIBRARY
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    ]
    assert not found, f"split these modules (most lines: {MODULE_LINES}):\n" + "\n".join(found)
