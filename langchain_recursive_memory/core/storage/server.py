"""Deprecated since 0.3.0: the development servers are :mod:`langchain_recursive_memory.servers`.

``LocalChromaServer``, ``free_port``, ``wait_for_heartbeat`` and ``HEARTBEAT_SECONDS``
resolve there, with a warning naming it, until 0.4.0.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..deprecations import warn_deprecated

_NAMES = ("HEARTBEAT_SECONDS", "LocalChromaServer", "free_port", "wait_for_heartbeat")


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = "langchain_recursive_memory.servers"
    warn_deprecated(f"{__name__}.{name}", f"{new}.{name}")
    return getattr(importlib.import_module(new), name)
