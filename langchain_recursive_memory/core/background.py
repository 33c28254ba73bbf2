"""0.1.0's ``core.background``: deprecated since 0.2.0, gone in 0.3.0.

It moved to :mod:`langchain_recursive_memory.core.runtime.background`.
Its names still import from here, each with a ``DeprecationWarning`` naming its new
home (the table is :data:`~langchain_recursive_memory.core.deprecations.MOVED`).

Example:
    >>> import warnings
    >>> from langchain_recursive_memory.core import background
    >>> with warnings.catch_warnings(record=True):
    ...     background.BackgroundFolds.__name__
    'BackgroundFolds'
"""

# ruff: noqa: F822 (the names of __all__ are resolved by __getattr__)

from typing import Any

from .deprecations import moved_attribute

__all__ = ["BackgroundFolds"]


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name)
