"""``HiGMemRetriever``: HiGMem's turns as LlamaIndex nodes.

One ``NodeWithScore(TextNode)`` per retrieved turn, best first (the node's score is the
ranking's; ``metadata["rank"]`` 1 is the best). The node text is the turn's text; its
metadata carries the session id, turn id, speaker, time, rank and event ids, with the
bookkeeping (session id, turn id, rank, event ids) kept out of the text the LLM and the
embedder see.

Example:
    >>> from langchain_recursive_memory.core import HiGMem, MemoryStore, Turn
    >>> from llamaindex_higmem import HiGMemRetriever
    >>> memory = HiGMem("s", store=MemoryStore.in_memory())
    >>> _ = memory.add([Turn(role="user", name="Ada", text="My cat is called Miso.")])
    >>> nodes = HiGMemRetriever(memory, k=1).retrieve("What is the cat called?")
    >>> nodes[0].node.text, nodes[0].node.metadata["speaker"]
    ('My cat is called Miso.', 'Ada')
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from langchain_recursive_memory.core.errors import ConfigurationError
from langchain_recursive_memory.core.higmem import HiGMem, RetrievedTurn
from langchain_recursive_memory.core.retrieval.pool import SESSION, check_scope

from .instrumentation import dispatch_usage

__all__ = ["HiGMemRetriever", "retrieved_to_node"]

HIDDEN_KEYS = ["session_id", "namespace", "turn_id", "rank", "event_ids", "found_by"]


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def retrieved_to_node(item: RetrievedTurn, memory: HiGMem) -> NodeWithScore:
    """Convert a retrieved turn to a ``NodeWithScore(TextNode)``."""
    turn = item.turn
    session_id = item.session_id or memory.session_id
    metadata: dict[str, Any] = {
        "session_id": session_id,
        "namespace": memory.namespace,
        "turn_id": turn.id,
        "speaker": item.speaker,
        "time": _iso(turn.created_at),
        "rank": item.rank,
        "event_ids": list(item.event_ids),
        "found_by": list(item.found_by),
    }
    node = TextNode(
        id_=f"{session_id}:{turn.id}",
        text=turn.text,
        metadata=metadata,
        excluded_llm_metadata_keys=list(HIDDEN_KEYS),
        excluded_embed_metadata_keys=list(HIDDEN_KEYS),
    )
    return NodeWithScore(node=node, score=item.score)


class HiGMemRetriever(BaseRetriever):
    """Retrieve a session's turns with HiGMem (guided by the LLM, or the no-LLM ranking).

    Args:
        memory: The session's :class:`~langchain_recursive_memory.core.HiGMem`.
        k: Most turns to return (default: HiGMem's choice, see ``HiGMem.retrieve``).
        use_llm: Guided retrieval (default: when the memory has a model) or not.
        scope: ``"session"`` (default) or ``"user"``: every session of the memory's user,
            ranked without the LLM (a node of another session names it in its metadata).
        callback_manager: LlamaIndex callbacks.
        verbose: LlamaIndex verbosity.
    """

    def __init__(
        self,
        memory: HiGMem,
        *,
        k: int | None = None,
        use_llm: bool | None = None,
        scope: str = SESSION,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(memory, HiGMem):
            raise ConfigurationError.for_value("memory", memory, "must be a HiGMem")
        if k is not None and k < 1:
            raise ConfigurationError.for_value("k", k, "must be >= 1")
        self.memory = memory
        if dispatch_usage not in memory.usage_listeners:
            memory.usage_listeners.append(dispatch_usage)
        self.k = k
        self.use_llm = use_llm
        self.scope = check_scope(scope)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.memory.retrieve(
            query_bundle.query_str, self.k, use_llm=self.use_llm, scope=self.scope
        )
        return [retrieved_to_node(item, self.memory) for item in found]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = await self.memory.aretrieve(
            query_bundle.query_str, self.k, use_llm=self.use_llm, scope=self.scope
        )
        return [retrieved_to_node(item, self.memory) for item in found]
