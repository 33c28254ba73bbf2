"""No import-order trap: every package of the library can be the first one imported.

A cycle through package ``__init__`` modules (``core.storage`` -> runtime -> prompts ->
storage) imports fine from the top-level package and fails with "cannot import name ... from
partially initialized module" when a subpackage is imported first. Each package is
imported first in its own fresh interpreter, as an application or a test may do.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import LIBRARY, ROOT

PACKAGES = sorted(
    ".".join(init.parent.relative_to(ROOT).parts)
    for top in LIBRARY
    for init in (ROOT / top).rglob("__init__.py")
)


def test_every_package_is_found() -> None:
    assert "langchain_recursive_memory.core.storage" in PACKAGES
    assert "llamaindex_higmem" in PACKAGES
    assert len(PACKAGES) >= 10


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_first_in_a_fresh_interpreter(package: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {package}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
