"""Griffe extension for the docs build: docstrings as Python shows them, rendered right.

Static analysis reads the library's docstrings as written; three things need help:

* the ``{OPTIONS}`` line of an adapter's docstring, which ``OPTIONS.document(...)``
  (``langchain_recursive_memory/core/options.py``) expands at import time into the memory
  options (``**options``): its lines are taken from the imported object, under an
  ``Other Parameters:`` heading (keyword arguments the signature spells ``**options``),
  each with its type from the option table;
* ``Example:``, which Google style (and Napoleon) reads as ``Examples:`` but griffe as an
  admonition, so its doctest would render as prose;
* Sphinx roles (``:class:`~.core.MemoryStore```), which the docstrings use for
  cross-references: they become inline code (``MemoryStore``).

Configured in ``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

PLACEHOLDER = "{OPTIONS}"
ROLE = re.compile(r":(?:class|meth|func|data|mod|attr|exc|obj|const):`(~?)([^`]+)`")
SECTION_INDENT = 4  # a Google-style section's entries, under its heading


def _role_as_code(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    target = target.strip()
    if tilde:
        target = target.rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def _runtime_doc(obj: griffe.Object) -> str:
    """The docstring of ``obj`` as Python has it once imported."""
    module_path = obj.module.path
    value: Any = importlib.import_module(module_path)
    for name in obj.path[len(module_path) + 1 :].split("."):
        value = inspect.getattr_static(value, name)
        if isinstance(value, (classmethod, staticmethod)):
            value = value.__func__
    return inspect.cleandoc(value.__doc__ or "")


def _typed(line: str, indent: int) -> str:
    """An option's entry ``name: doc`` as ``name (type): doc`` (other lines unchanged)."""
    from langchain_recursive_memory.core.options import LLAMAINDEX, OPTIONS, PYTHON

    match = re.match(rf"^ {{{indent}}}(\w+): ", line)
    if match is None:
        return line
    option = {**OPTIONS.on(PYTHON), **OPTIONS.on(LLAMAINDEX)}[match.group(1)]
    name = match.group(1)
    return line.replace(f"{name}: ", f"{name} ({option.annotation}): ", 1)


def _expand_options(obj: griffe.Object, static: str) -> str:
    """``static`` with its ``{OPTIONS}`` line replaced by the imported docstring's lines."""
    lines = static.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == PLACEHOLDER)
    runtime = _runtime_doc(obj).splitlines()
    count = len(runtime) - len(lines) + 1
    expanded = runtime[at : at + count]
    if runtime[:at] != lines[:at] or runtime[at + count :] != lines[at + 1 :] or count < 1:
        raise ValueError(f"{obj.path}: the imported docstring does not match the source")
    indent = len(lines[at]) - len(lines[at].lstrip())
    expanded = [_typed(line, indent) for line in expanded]
    heading = " " * max(indent - SECTION_INDENT, 0) + "Other Parameters:"
    return "\n".join([*lines[:at], "", heading, *expanded, *lines[at + 1 :]])


class RuntimeDocstrings(griffe.Extension):
    """Expand ``{OPTIONS}``, read ``Example:`` as examples, render roles as code."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of each object griffe loads (see the module doc)."""
        docstring = obj.docstring
        if docstring is None:
            return
        value = docstring.value
        if any(line.strip() == PLACEHOLDER for line in value.splitlines()):
            value = _expand_options(obj, value)
        value = re.sub(r"(?m)^(\s*)Example:$", r"\1Examples:", value)
        docstring.value = ROLE.sub(_role_as_code, value)
