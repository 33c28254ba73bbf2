"""A budget too small for a summary: ``ChatMemoryBuffer``'s behaviour. Pure helpers.

LlamaIndex's ``ChatMemoryBuffer`` takes any ``token_limit`` (its own tests use 5) and
returns the newest messages whose contents fit it. A :class:`~.memory.RecursiveSummaryMemory`
whose ``token_limit`` is below :func:`~langchain_recursive_memory.core.config.
smallest_summary_budget` (and no explicit summary cap) does the same: :func:`buffer_options`
gives its engine a budget of its own (messages are stored and folded, without an LLM, as
ever; nothing is lost), and :func:`newest_that_fit` picks what ``get()`` returns.

Example:
    >>> from llama_index.core.llms import ChatMessage
    >>> history = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant",
    ...            content="hello"), ChatMessage(role="user", content="how are you")]
    >>> words = lambda text: text.split()
    >>> [m.content for m in newest_that_fit(history, 4, 0, words)]
    ['how are you']
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from langchain_recursive_memory.core.builder import MemoryOptions
from langchain_recursive_memory.core.config import DEFAULT_MAX_TOKENS, smallest_summary_budget

__all__ = ["buffer_options", "newest_that_fit"]

logger = logging.getLogger("langchain_recursive_memory")

_NOT_FIRST = (MessageRole.ASSISTANT, MessageRole.TOOL)


def buffer_options(options: MemoryOptions, token_limit: int) -> MemoryOptions | None:
    """The engine's options when ``token_limit`` is too small for a summary, else None.

    Only a budget left to the default summary cap is taken as a buffer (an explicit
    ``max_summary_tokens`` that does not fit is the caller's error, reported as ever).
    The engine then keeps the default budget, folds with the no-LLM summarizer (nobody
    is shown a summary) and recalls nothing; a warning says so, once per memory.
    """
    if options.config is not None or options.max_summary_tokens is not None:
        return None
    smallest = smallest_summary_budget()
    if not isinstance(token_limit, int) or isinstance(token_limit, bool):
        return None  # not a budget: the configuration's check names it
    if not 1 <= token_limit < smallest:
        return None
    logger.warning(
        "token_limit=%d is too small for a summary (it needs at least %d tokens): the "
        "memory behaves as ChatMemoryBuffer does, get() returns the newest messages whose "
        "contents fit token_limit, no summary and no recall; every message is still "
        "stored (get_all())",
        token_limit,
        smallest,
    )
    return MemoryOptions(
        max_tokens=DEFAULT_MAX_TOKENS,
        summary_role=options.summary_role,
        tokenizer_model=options.tokenizer_model,
        retry=options.retry,
        recall_scope=options.recall_scope,
        recall_tokens=0,  # nothing is recalled into a buffer
    )


def newest_that_fit(
    messages: Sequence[ChatMessage],
    token_limit: int,
    initial_token_count: int,
    tokenize: Callable[[str], Sequence[Any]],
) -> list[ChatMessage]:
    """The newest messages whose contents fit, as ``ChatMemoryBuffer.get`` picks them.

    Counted as ``ChatMemoryBuffer`` counts: the contents joined by spaces, plus
    ``initial_token_count``. The oldest message goes first, and an assistant or tool
    message is never left first. Unlike ``ChatMemoryBuffer``, a last message that does
    not fit is not returned anyway: the budget holds.
    """

    def tokens(chosen: Sequence[ChatMessage]) -> int:
        return len(tokenize(" ".join(str(m.content) for m in chosen))) if chosen else 0

    start = 0
    while start < len(messages) and tokens(messages[start:]) + initial_token_count > token_limit:
        start += 1
        while start < len(messages) and messages[start].role in _NOT_FIRST:
            start += 1
    return list(messages[start:])
