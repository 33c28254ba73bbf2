"""HiGMem retrieval: the no-LLM multi-scale ranking, and LLM-guided retrieval over events.

**No-LLM retrieval** (no model configured, or ``use_llm=False``): the multi-scale hybrid
ranking of :mod:`..retrieval.ranking` (BM25 and embeddings over turns and over windows of
neighbouring turns inside their segment, plus speaker and date cues), top ``no_llm_k``
turns with any signal, best first.

**Guided retrieval.** Optional keyword rewrite of the question (``query_rewrite``; off by
default, as in the authors' paper-aligned run), the top ``retrieval_turns`` turns of the
ranking and the ``retrieval_events`` events nearest the question, one turn-prediction
call per event (it sees the event summary and its turns), the union, and an inclusive LLM
relevance filter over chunks of ``filter_chunk`` turns. In the async path the per-event and
per-chunk calls run concurrently. A prediction call that fails adds nothing; a filter chunk
that fails keeps all of its candidates (the filter is inclusive), so one unusable answer
never costs the query its guided results. Results come best first by the candidate
ranking's score (the official code sorts them by date string for the model to read; here
a caller that wants time order sorts by ``turn.created_at`` and keeps ``rank``).

**Order.** Whatever the path, the turns come best first (ties: in log order), each
with its ``score`` and its 1-based ``rank``.

**A user's sessions** (``scope="user"``): the same no-LLM ranking over every session of
the user as one pool (:mod:`..retrieval.pool`; no window crosses a session). Guided
retrieval stays within the session (events are one conversation's), so ``scope="user"``
always ranks without the LLM.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigurationError, EmbeddingError, ModelError, StoreError
from ..events import Event
from ..prompts import (
    FILTER_PROMPT,
    PREDICT_PROMPT,
    REWRITE_PROMPT,
    parse_rewrite,
    turn_line,
    turn_list_parser,
)
from ..retrieval.dense import unit
from ..retrieval.index import TurnIndex
from ..retrieval.lexical import LexicalIndex
from ..retrieval.pool import TurnPool, check_scope, embed_missing_steps, user_pool_steps
from ..retrieval.ranking import best_first
from ..runtime.effects import (
    ModelCall,
    Steps,
    complete,
    embed_query,
    gather,
)
from ..session import Models, SessionRef, UserBinding
from ..storage import StoredTurn
from ..validation import check_count, check_text, check_when
from .affiliation import nearest_events_steps
from .config import HiGMemConfig, RetrievedTurn
from .heuristic import segment_event_id
from .indexer import Indexer
from .state import SessionIndex, sync_steps

__all__ = ["Retriever"]

logger = logging.getLogger("langchain_recursive_memory")

Found = dict[str, tuple[str, ...]]
"""Turn id -> how it was found (``"ranking"``, ``"event:<id>"``)."""


class Retriever:
    """Retrieves a session's turns for a question (see the module doc).

    Args:
        session: The session.
        models: The model (guided retrieval), embedder and token counter, as they are now.
        user: The session's user (``scope="user"`` ranks its sessions).
        config: The memory's settings.
        indexer: Indexes pending turns first (retrieval sees every turn).
    """

    def __init__(
        self,
        session: SessionRef,
        models: Models,
        user: UserBinding,
        config: HiGMemConfig,
        indexer: Indexer,
    ) -> None:
        self.session = session
        self.models = models
        self.user = user
        self.config = config
        self.indexer = indexer

    def _guided(self, use_llm: bool | None, scope: str) -> bool:
        """Whether to retrieve guided by the LLM (refusing what cannot be)."""
        if scope == "user":
            if use_llm:
                raise ConfigurationError.for_value(
                    "use_llm",
                    use_llm,
                    "guided retrieval stays within a session; scope='user' ranks without the LLM",
                )
            return False
        guided = self.models.model is not None if use_llm is None else use_llm
        if guided and self.models.model is None:
            raise ConfigurationError.for_value("use_llm", use_llm, "needs a model")
        return guided

    def retrieve_steps(
        self,
        query: str,
        k: int | None,
        use_llm: bool | None,
        scope: str = "session",
        now: object = None,
    ) -> Steps[list[RetrievedTurn]]:
        """The turns for ``query``, best first (see :meth:`~.memory.HiGMem.retrieve`)."""
        check_text("query", query)
        day = check_when("now", now)
        if k is not None:
            check_count("k", k)
        guided = self._guided(use_llm, check_scope(scope))
        user = yield from self.user.scope_steps(scope)
        state = self.indexer.state()
        sessions, indexes = [self.session.session_id], [state.index]
        if user is not None and scope == "user":  # every session brought up together
            sessions, indexes = yield from self._user_indexes_steps(user, state)
        yield from sync_steps(self.session, state, view_synced=len(sessions) > 1)
        # With an LLM, what waits is analysed now; without, a full batch only (the ranking
        # needs no node: waiting turns are ranked like the others).
        yield from self.indexer.index_steps(flush=self.models.model is not None, synced=True)
        if not query.strip():
            return []
        query_vector = yield from self._dense_steps(sessions, indexes, query)
        query_unit = unit(query_vector) if query_vector is not None else None
        with TurnPool.locked(indexes):
            pool = TurnPool(indexes, sessions, self.config.ranker)
            if not pool.size:
                return []
            everything = np.ones(pool.size, bool)
            dense = pool.similarity(query_unit, everything) if query_unit is not None else None
            if not guided:
                # A compact set: turns with no signal at all (score 0) are not padding.
                top, scores = pool.select(query, k or self.config.no_llm_k, dense=dense, now=day)
                return self._results(state, pool, top, scores, {})
            scores = pool.ranker.scores(query, dense, now=day)
            order = [pool.turn(i).id for i in best_first(scores, self.config.retrieval_turns)]
        found = yield from self._guided_or_ranked_steps(query, query_vector, state, order)
        with TurnPool.locked(indexes):
            pool = TurnPool(indexes, sessions, self.config.ranker)
            dense = (
                pool.similarity(query_unit, np.ones(pool.size, bool))
                if query_unit is not None
                else None
            )
            scores = pool.ranker.scores(query, dense, now=day)
            own = self.session.session_id
            chosen = [p for t in found if (p := pool.position(own, t)) is not None]
            if k is not None:
                chosen = sorted(chosen, key=lambda i: -scores[i])[:k]
            return self._results(state, pool, chosen, scores, found)

    def _results(
        self,
        state: SessionIndex,
        pool: TurnPool,
        chosen: Sequence[int],
        scores: np.ndarray,
        found: Found,
    ) -> list[RetrievedTurn]:
        """The chosen turns (by pool position), best first (ties: in log order)."""
        own = self.session.session_id
        out = []
        for rank, i in enumerate(sorted(chosen, key=lambda i: (-float(scores[i]), i)), start=1):
            item, session = pool.turn(i), pool.session_of(i)
            mine = session == own
            retrieved = RetrievedTurn(
                turn=item.turn,
                speaker=item.turn.speaker,
                score=float(scores[i]),
                event_ids=self._event_ids(state, item.id) if mine else (),
                found_by=found.get(item.id, ("ranking",)) if mine else ("ranking",),
                session_id=None if mine else session,
                rank=rank,
            )
            out.append(retrieved)
        return out

    def _event_ids(self, state: SessionIndex, turn_id: str) -> tuple[str, ...]:
        """A turn's events: its node's, or the one its node will name.

        Without an LLM, a turn waiting for its batch belongs to its segment's event, so
        nothing a retrieval returns depends on when the batch is written.
        """
        node = state.nodes.get(turn_id)
        if node is not None:
            return node.event_ids
        position = state.index.position(turn_id)
        if self.models.model is not None or position is None:
            return ()
        return (segment_event_id(state.index.segments[position]),)

    # -- the ranking ------------------------------------------------------------------------

    def _user_indexes_steps(
        self, user: str, own: SessionIndex
    ) -> Steps[tuple[list[str], list[TurnIndex]]]:
        """Every session of the user and its index, brought up to the store together."""
        store, ns, sid = self.session.store, self.session.namespace, self.session.session_id
        return (yield from user_pool_steps(store, ns, sid, user, own.view))

    def index_windows_steps(self) -> Steps[int]:
        """Embed the settled windows that have no current vector (after indexing).

        Windows of the newest turns can still grow and are embedded when retrieval needs
        them. A failure is logged, never raised: retrieval embeds what is missing.
        """
        space = self.models.space
        if self.models.embedder is None or space is None:
            return 0
        index = self.indexer.state().index
        with index.lock:
            settled = index.windows.settled()
        scope = (self.session.namespace, self.session.session_id)
        try:
            return (yield from index.windows.embed_steps(self.session.store, space, scope, settled))
        except (EmbeddingError, StoreError) as exc:
            logger.warning(
                "session %r: window vectors not written (%s); retrieval embeds them",
                self.session.session_id,
                exc,
            )
            return 0

    def _dense_steps(
        self, sessions: Sequence[str], indexes: Sequence[TurnIndex], query: str
    ) -> Steps[list[float] | None]:
        """The query's vector, every window of the pool given one (embedding those without).

        None without an embedder, or when the embedder or Chroma fails (logged): the
        ranking is then lexical.
        """
        space = self.models.space
        if self.models.embedder is None or space is None:
            return None
        parts = []
        for sid, index in zip(sessions, indexes, strict=True):
            with index.lock:
                parts.append((sid, index, np.arange(len(index.ranked_turns))))
        try:
            query_vector = yield from embed_query(query)
            yield from embed_missing_steps(self.session.store, space, self.session.namespace, parts)
        except (EmbeddingError, StoreError) as exc:
            logger.warning(
                "session %r: dense retrieval unavailable (%s); ranking with BM25 only",
                self.session.session_id,
                exc,
            )
            return None
        return query_vector

    # -- guided retrieval -------------------------------------------------------------------

    def _guided_or_ranked_steps(
        self,
        query: str,
        query_vector: list[float] | None,
        state: SessionIndex,
        order: Sequence[str],
    ) -> Steps[Found]:
        try:
            return (yield from self._guided_steps(query, query_vector, state, order))
        except ModelError as exc:
            logger.warning(
                "session %r: guided retrieval failed (%s); returning the no-LLM ranking",
                self.session.session_id,
                exc,
            )
            return dict.fromkeys(order[: self.config.no_llm_k], ("ranking",))

    def _line(self, number: int, turn: StoredTurn) -> str:
        return turn_line(number, turn, self.models.counter, self.config.max_line_tokens)

    def _guided_steps(
        self,
        question: str,
        query_vector: list[float] | None,
        state: SessionIndex,
        order: Sequence[str],
    ) -> Steps[Found]:
        cfg = self.config
        query = question
        if cfg.query_rewrite:
            query = yield from complete(
                REWRITE_PROMPT.format(question=question),
                lambda a: parse_rewrite(a, question),
                "higmem-retrieve",
            )
        found: Found = dict.fromkeys(order[: cfg.retrieval_turns], ("ranking",))
        events = yield from self._top_events_steps(state, query, query_vector)
        yield from self._predict_steps(question, events, state, found)
        return (yield from self._filter_steps(question, state, found))

    def _predict_steps(
        self, question: str, events: Sequence[Event], state: SessionIndex, found: Found
    ) -> Steps[None]:
        """Add the turns each event's prediction call names to ``found``."""
        by_id = {t.id: t for t in state.turns}
        prompts = [
            (event, members)
            for event in events
            if (members := [by_id[t] for t in event.turn_ids if t in by_id])
        ]
        calls = [
            ModelCall(
                PREDICT_PROMPT.format(
                    summary=event.summary,
                    turns="\n".join(self._line(n, t) for n, t in enumerate(members, 1)),
                    question=question,
                ),
                turn_list_parser(len(members)),
                "higmem-retrieve",
            )
            for event, members in prompts
        ]
        answers = yield from gather(calls)
        for (event, members), answer in zip(prompts, answers, strict=True):
            if isinstance(answer, Exception):
                logger.info("turn prediction for event %s failed: %s", event.id, answer)
                continue
            for n in answer:
                tid = members[n - 1].id
                found[tid] = (*found.get(tid, ()), f"event:{event.id}")

    def _filter_steps(self, question: str, state: SessionIndex, found: Found) -> Steps[Found]:
        """The turns of ``found`` the inclusive relevance filter keeps."""
        by_id = {t.id: t for t in state.turns}
        union = list(found)
        size = self.config.filter_chunk
        chunks = [union[i : i + size] for i in range(0, len(union), size)]
        calls = [
            ModelCall(
                FILTER_PROMPT.format(
                    question=question,
                    turns="\n".join(self._line(n, by_id[t]) for n, t in enumerate(chunk, 1)),
                ),
                turn_list_parser(len(chunk)),
                "higmem-retrieve",
            )
            for chunk in chunks
        ]
        verdicts = yield from gather(calls)
        kept: Found = {}
        failed = 0
        for chunk, verdict in zip(chunks, verdicts, strict=True):
            if isinstance(verdict, Exception):  # inclusive: an unjudged chunk is kept
                failed += 1
                logger.info("relevance filter of %d turns failed: %s", len(chunk), verdict)
                kept.update((t, found[t]) for t in chunk)
                continue
            for n in verdict:
                kept[chunk[n - 1]] = found[chunk[n - 1]]
        if failed:
            logger.warning(
                "session %r: the relevance filter failed on %d of %d chunks; their turns are "
                "kept unfiltered",
                self.session.session_id,
                failed,
                len(chunks),
            )
        return {t: kept[t] for t in union if t in kept}

    def _top_events_steps(
        self, state: SessionIndex, query: str, query_vector: list[float] | None
    ) -> Steps[list[Event]]:
        events = list(state.events.values())
        k = self.config.retrieval_events
        if len(events) <= k:
            return events
        space = self.models.space
        if query_vector is not None and space is not None:
            chosen = yield from nearest_events_steps(self.session, events, query_vector, k, space)
            if chosen:
                return chosen
        index = LexicalIndex([e.index_text for e in events])
        return [events[i] for i, _ in index.search(query, k)] or events[:k]
