"""Release checks: the CHANGELOG's newest release is the version; CI checks the package.

The built package itself (sdist and wheel metadata, the wheel's contents, the wheel with
``[all]`` in a clean venv, ``lrm demo`` and two examples run from outside the checkout) is
checked by ``.ci/package-check``, which ``.ci/run`` calls before the tests.
"""

from __future__ import annotations

import os
import re

from conftest import ROOT

import langchain_recursive_memory


def test_changelog_top_release_matches_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.M)
    assert headings[0] == "Unreleased"
    releases = [h for h in headings if h != "Unreleased"]
    assert releases, "no released version in CHANGELOG.md"
    assert releases[0] == langchain_recursive_memory.__version__
    assert re.search(
        rf"^## \[{re.escape(releases[0])}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
    )


def test_ci_checks_the_built_package_before_the_tests():
    script = ROOT / ".ci" / "package-check"
    assert script.is_file() and os.access(script, os.X_OK)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    check = next(i for i, line in enumerate(ci) if line.startswith(".ci/package-check"))
    tests = max(i for i, line in enumerate(ci) if "-m pytest" in line)
    assert check < tests == len(ci) - 1  # and .ci/run still ends with the README's command
    text = script.read_text()
    for step in ("-m build", "twine check --strict", "py.typed", "[all]", 'lrm" demo'):
        assert step in text, step
    assert "HF_HUB_OFFLINE=1" in text and "env -i" in text  # offline, no PYTHONPATH
