"""0.1.0's ``core.store``: deprecated since 0.2.0, gone in 0.3.0.

It moved to :mod:`langchain_recursive_memory.core.storage`.
Its names still import from here, each with a ``DeprecationWarning`` naming its new
home (the table is :data:`~langchain_recursive_memory.core.deprecations.MOVED`).

Example:
    >>> import warnings
    >>> from langchain_recursive_memory.core import store
    >>> with warnings.catch_warnings(record=True):
    ...     store.MemoryStore.__name__
    'MemoryStore'
"""

# ruff: noqa: F822 (the names of __all__ are resolved by __getattr__)

from typing import Any

from .deprecations import moved_attribute

__all__ = [
    "DEFAULT_NAMESPACE",
    "MemoryStore",
    "SessionInfo",
    "SessionState",
    "StoredTurn",
    "Summary",
    "VectorRecord",
    "default_path",
]


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name)
