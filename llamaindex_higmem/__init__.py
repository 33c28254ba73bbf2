"""LlamaIndex adapters of langchain-recursive-memory.

:class:`RecursiveSummaryMemory` is a LlamaIndex ``BaseMemory``, a drop-in for
``ChatMemoryBuffer`` in chat engines and agents: every message is stored durably in
the store's database, and the history handed to the model is a running summary followed
by the recent messages, within a token budget however long the conversation gets (recursive
summarization, arXiv 2308.15022). With ``extract_facts``/``embedder``/``recall_tokens``
it becomes the hybrid memory: facts and archived messages relevant to the current
question are recalled into the same budget.

:class:`HiGMemRetriever` returns the turns the HiGMem engine (hierarchical turn and event
memory, arXiv 2604.18349) retrieves for a query as LlamaIndex nodes, and
:class:`HiGMemMemoryBlock` plugs HiGMem into LlamaIndex's ``Memory`` as a long-term block;
:class:`RecursiveSummaryMemoryBlock` and :class:`HybridMemoryBlock` do the same with the
running summary of what overflows ``Memory``'s FIFO (and, hybrid, the facts and messages
recalled for the question).

:class:`LlamaIndexTextModel` lets any LlamaIndex LLM be the summarizer of the core
engines; :mod:`llamaindex_higmem.messages` converts ``ChatMessage`` objects to and from the
core's turns.

This package needs ``llama-index-core`` and never imports ``langchain_core``: a
LlamaIndex-only install (``pip install 'langchain-recursive-memory[llamaindex]'``) is
enough.

Example:
    >>> from llama_index.core.chat_engine import SimpleChatEngine
    >>> from llama_index.core.llms import MockLLM
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from llamaindex_higmem import RecursiveSummaryMemory
    >>> memory = RecursiveSummaryMemory.from_defaults(
    ...     session_id="demo", store=MemoryStore.in_memory(), token_limit=800
    ... )
    >>> engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    >>> _ = engine.chat("Hello!")
    >>> [m.role.value for m in memory.get_all()]
    ['user', 'assistant']
"""

from __future__ import annotations

from langchain_recursive_memory.core.errors import MissingDependencyError

try:
    from .instrumentation import MemoryUsageEvent
    from .llms import LlamaIndexTextModel
    from .memory import RecursiveSummaryMemory
    from .memory_blocks import HiGMemMemoryBlock
    from .retrievers import HiGMemRetriever
    from .summary_blocks import HybridMemoryBlock, RecursiveSummaryMemoryBlock
except ImportError as exc:  # llama-index-core comes with the [llamaindex] extra
    raise MissingDependencyError.for_import(exc, "llamaindex_higmem") from exc

__all__: list[str] = [
    "HiGMemMemoryBlock",
    "HiGMemRetriever",
    "HybridMemoryBlock",
    "LlamaIndexTextModel",
    "MemoryUsageEvent",
    "RecursiveSummaryMemory",
    "RecursiveSummaryMemoryBlock",
]
