"""Temporary shim: the store moved to :mod:`langchain_recursive_memory.core.storage`.

Import from ``.storage`` instead; this module goes away once nothing imports it.
"""

import time  # noqa: F401 - tests/test_regressions.py patches time.time_ns through this path

from .storage import (
    DEFAULT_NAMESPACE,
    MemoryStore,
    SessionInfo,
    SessionState,
    StoredTurn,
    Summary,
    VectorRecord,
    default_path,
    session_key,
    text_hash,
    validate_scope,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "MemoryStore",
    "SessionInfo",
    "SessionState",
    "StoredTurn",
    "Summary",
    "VectorRecord",
    "default_path",
    "session_key",
    "text_hash",
    "validate_scope",
]
