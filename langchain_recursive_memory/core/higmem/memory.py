"""HiGMem (Cao, He, Tan, arXiv 2604.18349): hierarchical, LLM-guided conversation memory.

Two layers over the turn log, in the store's database and scoped by session:

* **turn nodes** (keywords, tags, a one-sentence context, speaker, time, segment, events);
* **event nodes** (summary, fact sheet linked to turn ids, entities, keywords, tags),
  linked both ways.

Construction (:mod:`.indexer`): one LLM call per batch of new turns, or the no-LLM
method (:mod:`.heuristic`). Retrieval (:mod:`.retrieval`): LLM-guided over events, or the
no-LLM multi-scale ranking (also how the guided path picks its candidate turns).

Example:
    >>> from langchain_recursive_memory.core import HiGMem, MemoryStore, Turn
    >>> memory = HiGMem("chat-1", store=MemoryStore.in_memory())
    >>> _ = memory.add([
    ...     Turn(role="user", name="Ada", text="I adopted a cat called Miso last week."),
    ...     Turn(role="assistant", name="Bot", text="Congratulations on Miso!"),
    ...     Turn(role="user", name="Ada", text="Also, my sister moved to Porto."),
    ... ])
    >>> [r.turn.text for r in memory.retrieve("What is the name of Ada's cat?", k=1)]
    ['I adopted a cat called Miso last week.']
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

from ..engine import Engine, resolve_config
from ..events import Event, TurnNode
from ..models import TextModel
from ..retrieval.pool import SESSION
from ..runtime.effects import Steps, store_call
from ..runtime.retry import RetryPolicy
from ..storage import DEFAULT_NAMESPACE, MemoryStore, StoredTurn
from ..tokenizer import TokenCounter
from ..turn import Turn, turn_list
from ..usage import UsageRecord
from .config import HiGMemConfig, RetrievedTurn
from .indexer import Indexer
from .rebuild import NodeRebuilder
from .retrieval import Retriever

__all__ = ["HiGMem"]


class HiGMem(Engine):
    """HiGMem memory of one session (see the module doc).

    Args:
        session_id: The conversation's id.
        model: The LLM for construction and guided retrieval (a core ``TextModel``). None:
            the no-LLM methods.
        embedder: Embeddings for turn windows and events (LangChain ``Embeddings``,
            LlamaIndex ``BaseEmbedding``, Chroma ``EmbeddingFunction``...). None: BM25 only.
        store: A :class:`~..storage.MemoryStore` (default: embedded persistent at ``path``).
        path: Directory of the default embedded store.
        namespace: Isolates apps or tenants (default ``"default"``).
        config: A :class:`~.config.HiGMemConfig`; or give its fields as keyword arguments.
        retry: Retries, timeouts of model and embedding calls.
        counter: Token counter for prompt lines (default ``TokenCounter()``).
        on_usage: Called with a :class:`~..usage.UsageRecord` after each operation that
            called the model (also kept in the store: see :meth:`usage`).
        user_id: The user the conversation belongs to (see :class:`~..engine.Engine`);
            ``retrieve(..., scope="user")`` then ranks every session of the user.
        **config_fields: Fields of :class:`~.config.HiGMemConfig`.
    """

    def __init__(
        self,
        session_id: str,
        *,
        model: TextModel | None = None,
        embedder: Any = None,
        store: MemoryStore | None = None,
        path: str | PathLike[str] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        config: HiGMemConfig | None = None,
        retry: RetryPolicy | None = None,
        counter: TokenCounter | None = None,
        on_usage: Callable[[UsageRecord], None] | None = None,
        user_id: str | None = None,
        **config_fields: Any,
    ) -> None:
        counter = counter or TokenCounter()
        super().__init__(
            session_id,
            model=model,
            store=store,
            path=path,
            namespace=namespace,
            retry=retry,
            counter=counter,
            embedder=embedder,
            on_usage=on_usage,
            user_id=user_id,
        )
        self.config = resolve_config(HiGMemConfig, config, config_fields)
        scope, models, cfg = self.session, self.models, self.config
        self._indexer = Indexer(scope, models, cfg)
        self._retriever = Retriever(scope, models, self.user, cfg, self._indexer)
        self._rebuilder = NodeRebuilder(scope, models, cfg)

    def __repr__(self) -> str:
        return (
            f"HiGMem(session_id={self.session_id!r}, namespace={self.namespace!r}, "
            f"model={self.model!r}, embedder={self.embedder!r})"
        )

    def _add_steps(self, turns: Sequence[Turn], flush: bool) -> Steps[list[StoredTurn]]:
        stored, _ = yield from self._append_steps(turns)
        state = self._indexer.state()
        state.view.appended(stored)
        if self._indexer.due(state, flush):  # else the turns wait: no read, no write
            yield from self._index_steps(flush)
        return stored

    def _index_steps(self, flush: bool) -> Steps[int]:
        """Index the turns not indexed yet, then embed their settled windows."""
        indexed = yield from self._indexer.index_steps(flush)
        if indexed:
            yield from self._retriever.index_windows_steps()
        return indexed

    def settings(self) -> dict[str, str | int | float]:
        """The memory's kind, recorded with the session (see ``lrm show``)."""
        return {"memory": "higmem"}

    def _forget(self) -> None:
        self._indexer.state().forget()

    # -- public API: sync and async twins ---------------------------------------------------

    def add(self, turns: Turn | Sequence[Turn], *, flush: bool = False) -> list[StoredTurn]:
        """Log turns durably, then index them once a full batch waits.

        A batch is ``batch_size`` turns with an LLM (one analysis call), 16 without
        (:data:`~.indexer.HEURISTIC_BATCH`); until then an ``add`` only stores, and
        retrieval ranks the waiting turns with the others.

        Args:
            turns: One turn or several, in conversation order.
            flush: Also index a last, incomplete batch now (retrieval with an LLM always
                does; :meth:`flush` does it later).

        Returns:
            The stored turns.

        Raises:
            StoreError: When the turns could not be logged (nothing was logged).
        """
        return self.runner.run(self._add_steps(turn_list(turns), flush))

    async def aadd(self, turns: Turn | Sequence[Turn], *, flush: bool = False) -> list[StoredTurn]:
        """Async twin of :meth:`add`."""
        return await self.runner.arun(self._add_steps(turn_list(turns), flush))

    def flush(self) -> int:
        """Index every turn not indexed yet; return how many were indexed."""
        return self.runner.run(self._index_steps(flush=True))

    async def aflush(self) -> int:
        """Async twin of :meth:`flush`."""
        return await self.runner.arun(self._index_steps(flush=True))

    def retrieve(
        self,
        query: str,
        k: int | None = None,
        *,
        use_llm: bool | None = None,
        scope: str = SESSION,
        now: float | dt.datetime | dt.date | None = None,
    ) -> list[RetrievedTurn]:
        """Return the turns relevant to ``query``, best first.

        The first turn is the one the ranking scores highest (ties: in log order), so a
        caller can take the first few; each turn carries its ``score`` and ``rank``
        (1 = best). To hand the turns to a model as a story, sort them by
        ``turn.created_at`` (as ``HiGMemMemoryBlock`` does); ``rank`` keeps the order of
        relevance. (In 0.1.0 the turns came in time order.)

        Args:
            query: The question.
            k: Most turns to return (no-LLM default: ``no_llm_k``; guided: all the filter
                keeps).
            use_llm: Guided retrieval (default: when a model is configured) or the no-LLM
                ranking (``False``).
            scope: ``"session"`` (default) or ``"user"``: every session of the memory's
                user, ranked as one pool without the LLM (events are one conversation's);
                a turn of another session names it in ``session_id``.
            now: When the question is asked (seconds since the epoch, a datetime or a
                date): relative dates in it ("last week") count from that day. Default:
                the day of the newest turn ranked.

        Raises:
            InvalidInputError: For a query that is not a string, ``k`` < 1, a bad scope
                or a bad ``now``.
            ConfigurationError: For ``scope="user"`` without a user, or with ``use_llm``.
        """
        return self.runner.run(self._retriever.retrieve_steps(query, k, use_llm, scope, now))

    async def aretrieve(
        self,
        query: str,
        k: int | None = None,
        *,
        use_llm: bool | None = None,
        scope: str = SESSION,
        now: float | dt.datetime | dt.date | None = None,
    ) -> list[RetrievedTurn]:
        """Async twin of :meth:`retrieve` (per-event and filter calls run concurrently)."""
        return await self.runner.arun(self._retriever.retrieve_steps(query, k, use_llm, scope, now))

    def events(self) -> list[Event]:
        """Return the session's events, oldest first.

        Without a model, every stored turn is indexed first; with one, those indexed so
        far (an incomplete batch waits for :meth:`flush` or retrieval).
        """
        return self.runner.run(self._events_steps())

    async def aevents(self) -> list[Event]:
        """Async twin of :meth:`events`."""
        return await self.runner.arun(self._events_steps())

    def _events_steps(self) -> Steps[list[Event]]:
        if self.model is None:  # no-LLM indexing is cheap: what waits is indexed first
            yield from self._index_steps(flush=True)
        return (yield from store_call(self.session.records.nodes.events))

    def turn_nodes(self) -> list[TurnNode]:
        """Return the session's turn nodes, in log order (indexed first as by :meth:`events`)."""
        return self.runner.run(self._turn_nodes_steps())

    async def aturn_nodes(self) -> list[TurnNode]:
        """Async twin of :meth:`turn_nodes`."""
        return await self.runner.arun(self._turn_nodes_steps())

    def _turn_nodes_steps(self) -> Steps[list[TurnNode]]:
        if self.model is None:
            yield from self._index_steps(flush=True)
        turns = yield from store_call(self.session.records.turns.all)
        order = {t.id: i for i, t in enumerate(turns)}
        nodes = yield from store_call(self.session.records.nodes.turn_nodes)
        return sorted(nodes, key=lambda n: order.get(n.turn_id, len(order)))
