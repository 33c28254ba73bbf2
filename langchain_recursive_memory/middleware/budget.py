"""The whole request within ``max_tokens`` by the provider's own count. Pure helpers.

The middleware counts the request it sends (system prompt, tool schemas as the JSON the
provider receives, the memory's context) with tiktoken. A provider may count more: another
tokenizer, a preamble it adds for tool use. When a response reports
``usage_metadata["input_tokens"]``, :func:`usage_correction` turns the difference into
tokens the thread's next request leaves free, so that request fits ``max_tokens`` by the
provider's count.

Example:
    >>> usage_correction(estimate=3600, reported=3950, max_tokens=4000)
    355
    >>> usage_correction(estimate=3600, reported=3500, max_tokens=4000)  # never loosens
    0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["reported_input_tokens", "usage_correction"]


def reported_input_tokens(response: Any) -> int | None:
    """The ``input_tokens`` a model call's response reports, or None when it has none.

    ``response`` is what a ``wrap_model_call`` handler returns: a ``ModelResponse``, an
    ``ExtendedModelResponse`` or an ``AIMessage``; the last AI message with usage counts.
    """
    messages: Sequence[BaseMessage]
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    if isinstance(response, ModelResponse):
        messages = response.result
    elif isinstance(response, BaseMessage):
        messages = [response]
    else:
        return None
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.usage_metadata:
            tokens = message.usage_metadata.get("input_tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
                return tokens
    return None


def usage_correction(estimate: int, reported: int, max_tokens: int) -> int:
    """Tokens the next request leaves free so that it fits by the provider's count.

    ``estimate`` is this package's count of a request, ``reported`` the provider's count
    of the same request. The provider's surplus is either a fixed amount (a preamble: the
    next request needs ``reported - estimate`` tokens less) or a proportion (another
    tokenizer: it needs ``max_tokens * (1 - estimate / reported)`` less); the larger of
    the two holds in both cases. A provider that counts less loosens nothing: the
    conservative count stays.

    Args:
        estimate: The tokens this package counted for the request (> 0).
        reported: The ``input_tokens`` the provider reported for it.
        max_tokens: The budget of the whole request.

    Returns:
        Tokens to leave free in the thread's next request (0 when none).
    """
    if estimate <= 0 or reported <= estimate:
        return 0
    fixed = reported - estimate
    proportional = math.ceil(max_tokens * (1 - estimate / reported))
    return max(fixed, proportional)
