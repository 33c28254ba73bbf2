"""The framework-free engine of langchain-recursive-memory.

Imports neither ``langchain_core`` nor ``llama_index`` (a test checks this in a fresh
interpreter). Adapters in :mod:`langchain_recursive_memory` and :mod:`llamaindex_higmem`
translate framework types to and from :class:`Turn` and call into this package.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, Turn
    >>> memory = RecursiveMemory("s1", store=MemoryStore.in_memory())
    >>> _ = memory.add(Turn(role="user", text="I prefer tea."))
    >>> [t.text for t in memory.context().window]
    ['I prefer tea.']
"""

from .cache import CacheLimits
from .config import MemoryConfig
from .errors import (
    ConfigurationError,
    EmbeddingError,
    InvalidInputError,
    MissingDependencyError,
    ModelError,
    ModelOutputError,
    ModelTimeoutError,
    RecursiveMemoryError,
    StoreError,
    TokenizerError,
    WriteOutcomeUnknownError,
)
from .events import Event, EventFact, TurnNode
from .facts import Fact
from .higmem import HiGMem, HiGMemConfig, RetrievedTurn
from .models import Embedder, FunctionTextModel, JsonTextModel, ModelSettings, TextModel
from .rebuild import RebuildProgress, RebuildResult
from .recursive import Context, ExtractiveSummarizer, FoldResult, HybridMemory, RecursiveMemory
from .retrieval.hits import RecallHit
from .runtime.retry import RetryPolicy
from .storage import (
    DEFAULT_NAMESPACE,
    MemoryStore,
    SessionInfo,
    SessionState,
    StoredTurn,
    Summary,
    UserInfo,
    default_path,
)
from .tokenizer import TokenCounter, encoding_name_for_model, get_encoding
from .turn import ToolCall, Turn
from .usage import CountingTextModel, Usage

__all__ = [
    "CacheLimits",
    "ConfigurationError",
    "Context",
    "CountingTextModel",
    "DEFAULT_NAMESPACE",
    "Embedder",
    "EmbeddingError",
    "Event",
    "EventFact",
    "ExtractiveSummarizer",
    "Fact",
    "FoldResult",
    "FunctionTextModel",
    "HiGMem",
    "HiGMemConfig",
    "HybridMemory",
    "InvalidInputError",
    "JsonTextModel",
    "MemoryConfig",
    "MemoryStore",
    "MissingDependencyError",
    "ModelError",
    "ModelOutputError",
    "ModelSettings",
    "ModelTimeoutError",
    "RebuildProgress",
    "RebuildResult",
    "RecallHit",
    "RecursiveMemory",
    "RecursiveMemoryError",
    "RetrievedTurn",
    "RetryPolicy",
    "SessionInfo",
    "SessionState",
    "StoreError",
    "StoredTurn",
    "Summary",
    "TextModel",
    "TokenCounter",
    "TokenizerError",
    "ToolCall",
    "Turn",
    "TurnNode",
    "Usage",
    "UserInfo",
    "WriteOutcomeUnknownError",
    "default_path",
    "encoding_name_for_model",
    "get_encoding",
]
