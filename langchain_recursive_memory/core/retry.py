"""0.1.0's ``core.retry``: deprecated since 0.2.0, gone in 0.3.0.

It moved to :mod:`langchain_recursive_memory.core.runtime.retry`.
Its names still import from here, each with a ``DeprecationWarning`` naming its new
home (the table is :data:`~langchain_recursive_memory.core.deprecations.MOVED`).

Example:
    >>> import warnings
    >>> from langchain_recursive_memory.core import retry
    >>> with warnings.catch_warnings(record=True):
    ...     retry.RetryPolicy.__name__
    'RetryPolicy'
"""

# ruff: noqa: F822 (the names of __all__ are resolved by __getattr__)

from typing import Any

from .deprecations import moved_attribute

__all__ = [
    "RetryPolicy",
    "call_with_timeout",
    "acall_with_timeout",
]


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name)
