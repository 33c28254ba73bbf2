from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from langchain_recursive_memory.core import MemoryStore, RetryPolicy

# Never touch a developer's real store from the tests.
os.environ.setdefault("LANGCHAIN_RECURSIVE_MEMORY_PATH", "/nonexistent/lrm-tests-must-pass-a-path")

FAST_RETRY = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0, cooldown=0.0)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore.in_memory()


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return FAST_RETRY


@pytest.fixture(autouse=True)
def _fresh_fold_health():
    """Fold cool-downs are shared per session in a process; tests start from none."""
    from langchain_recursive_memory.core import memory

    memory._HEALTH.clear()
    yield
    memory._HEALTH.clear()
