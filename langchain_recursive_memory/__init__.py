"""Long-term conversation memory for LangChain that stays inside a token budget.

The LangChain classes are imported lazily, so ``langchain_recursive_memory.core`` (and a
LlamaIndex-only install) never needs ``langchain-core``.

Example:
    >>> from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
    >>> RecursiveSummaryChatMessageHistory.__name__
    'RecursiveSummaryChatMessageHistory'
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core import (
    CacheLimits,
    ConfigurationError,
    Context,
    EmbeddingError,
    Fact,
    FoldResult,
    HiGMem,
    HybridMemory,
    InvalidInputError,
    MemoryConfig,
    MemoryStore,
    MissingDependencyError,
    ModelError,
    ModelOutputError,
    ModelTimeoutError,
    RecallHit,
    RecursiveMemory,
    RecursiveMemoryError,
    RetryPolicy,
    StoreError,
    Summary,
    TokenCounter,
    TokenizerError,
    Turn,
    WriteOutcomeUnknownError,
)

if TYPE_CHECKING:
    from .chat_message_histories import RecursiveSummaryChatMessageHistory
    from .language_models import LangChainTextModel
    from .middleware import RecursiveMemoryMiddleware
    from .retrievers import HiGMemRetriever, RecursiveMemoryRetriever

__version__ = "0.3.0"

_LAZY = {
    "LangChainTextModel": ".language_models",
    "HiGMemRetriever": ".retrievers",
    "RecursiveMemoryMiddleware": ".middleware",
    "RecursiveMemoryRetriever": ".retrievers",
    "RecursiveSummaryChatMessageHistory": ".chat_message_histories",
}

__all__ = [
    "CacheLimits",
    "ConfigurationError",
    "Context",
    "EmbeddingError",
    "Fact",
    "FoldResult",
    "HiGMem",
    "HiGMemRetriever",
    "HybridMemory",
    "InvalidInputError",
    "LangChainTextModel",
    "MemoryConfig",
    "MemoryStore",
    "ModelError",
    "ModelOutputError",
    "ModelTimeoutError",
    "RecallHit",
    "RecursiveMemory",
    "RecursiveMemoryError",
    "RecursiveMemoryMiddleware",
    "RecursiveMemoryRetriever",
    "RecursiveSummaryChatMessageHistory",
    "RetryPolicy",
    "StoreError",
    "Summary",
    "TokenCounter",
    "TokenizerError",
    "Turn",
    "WriteOutcomeUnknownError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        imported = import_module(module, __name__)
    except MissingDependencyError as exc:  # name the class asked for, not the module
        raise MissingDependencyError(str(exc).replace(f"{__name__}{module}", name)) from exc
    value = getattr(imported, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
