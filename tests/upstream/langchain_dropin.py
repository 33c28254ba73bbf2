"""A pytest plugin: LangChain's own tests of its in-memory history, pointed at ours.

``langchain_core.chat_history.InMemoryChatMessageHistory`` is replaced, before the test
modules import it, by :class:`DropInHistory`: a ``RecursiveSummaryChatMessageHistory``
built the way ``InMemoryChatMessageHistory`` is built (no session id, optional
``messages``), each on a fresh session of one in-memory Chroma store. The tests
themselves are LangChain's, unchanged (``tests/test_upstream.py`` runs them).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import langchain_core.chat_history as chat_history
from langchain_core.messages import BaseMessage

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import MemoryStore

_STORE = MemoryStore.in_memory()


class DropInHistory(RecursiveSummaryChatMessageHistory):
    """``RecursiveSummaryChatMessageHistory`` built as ``InMemoryChatMessageHistory()``."""

    def __init__(self, messages: Sequence[BaseMessage] | None = None) -> None:
        super().__init__(f"dropin-{uuid.uuid4().hex}", store=_STORE, messages=messages)


chat_history.InMemoryChatMessageHistory = DropInHistory  # type: ignore[misc, assignment]
