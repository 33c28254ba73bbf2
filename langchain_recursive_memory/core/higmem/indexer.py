"""HiGMem construction: turns without a turn node are indexed, in batches.

**With an LLM.** One call per batch of ``batch_size`` turns sees the batch (and the
``context_turns`` before it), the candidate events (:mod:`.affiliation`) and answers, per
turn, keywords, tags, context and affiliation, and, per affiliated event with fewer than
``rewrite_limit`` turns, its rewritten summary, keywords, tags and new facts
(:mod:`.merge`). The official code spends about 3 calls per turn; here it is one call per
batch (0.25 per turn with the default batch of 4). A model that offers structured output
(:func:`~..models.offers_json`) is asked for :data:`~..prompts.INDEX_SCHEMA`-shaped JSON,
as the official code asks for a JSON schema; any other for JSON lines. A line that cannot
be used is skipped (a turn without one gets a no-LLM node in the events of the turn before
it); an answer with no usable turn line is asked again once with the error quoted (the
runner's repair prompt), then the batch is indexed without the LLM (logged); no turn is
ever dropped.

**Without an LLM**, :mod:`.heuristic`, once :data:`HEURISTIC_BATCH` turns wait (or on a
flush): an ``add`` then only stores its turns, and retrieval ranks the waiting turns with
the others (the ranking needs no node).

Each indexing writes its events and its turn nodes in one transaction, a
compare-and-set on the session's indexing number
(:meth:`~..storage.session_store.SessionNodes.commit`): every reader of the session, in
any process, takes them in with ``link > position`` (:mod:`.state`). An indexing that
loses the number to another process's writes nothing and reads the nodes again whole.

Only one indexing of a session runs at a time in a process (a shared lock); a caller that
finds it busy goes on with what is indexed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from ..errors import EmbeddingError, ModelError, StoreError
from ..events import Event, TurnNode
from ..models import offers_json
from ..prompts import (
    ANALYSE_PROMPT,
    ANSWER_AS_LINES,
    ANSWER_AS_OBJECT,
    index_parser,
    turn_line,
)
from ..runtime.effects import Steps, complete, embed_documents, store_call
from ..session import Models, SessionRef
from ..storage import VectorRecord, text_hash
from ..storage.keys import EVENT_KIND, event_vector_id
from .affiliation import Aliases, candidate_events_steps
from .config import HiGMemConfig
from .heuristic import index_heuristically
from .merge import Batch, batch_nodes, merge_events
from .state import SessionIndex, session_index, sync_steps

__all__ = ["HEURISTIC_BATCH", "Indexer"]

logger = logging.getLogger("langchain_recursive_memory")

HEURISTIC_BATCH = 16
"""Turns indexed together without an LLM (fewer wait for a flush or for more turns)."""


class Indexer:
    """Indexes one session's new turns (see the module doc).

    Args:
        session: The session (the memory's, or another session of its user).
        models: The model (None: no-LLM nodes), embedder and token counter, as they are now.
        config: The memory's settings.
    """

    def __init__(self, session: SessionRef, models: Models, config: HiGMemConfig) -> None:
        self.session = session
        self.models = models
        self.config = config

    def state(self) -> SessionIndex:
        """The session's shared state (in the store's caches)."""
        cfg = self.config
        return session_index(self.session, cfg.ranker, cfg.session_gap, cfg.max_event_turns)

    def due(self, state: SessionIndex, flush: bool) -> bool:
        """Whether this process knows of enough waiting turns to index now (no I/O)."""
        state.take_added()
        size = HEURISTIC_BATCH if self.models.model is None else self.config.batch_size
        return bool(state.pending) and (flush or len(state.pending) >= size)

    def index_steps(
        self, flush: bool, limit: int | None = None, *, synced: bool = False
    ) -> Steps[int]:
        """Index the turns that have no turn node yet; return how many were indexed.

        Without ``flush``, turns are indexed in full batches only (``batch_size`` with an
        LLM, :data:`HEURISTIC_BATCH` without): the rest wait for more turns. ``limit``:
        index at most that many (oldest first). The state is brought up to the store
        first (:func:`~.state.sync_steps`), once; ``synced``: the caller just did.
        """
        state = self.state()
        if not state.lock.acquire(blocking=False):
            if not synced:
                yield from sync_steps(self.session, state)
            return 0  # another call of this process is indexing the session
        try:
            if not synced:
                yield from sync_steps(self.session, state)
            if not self.due(state, flush):
                return 0
            pending = state.pending_positions(limit)
            if self.models.model is None:
                yield from self._heuristic_steps(state, pending)
                return len(pending)
            return (yield from self._batches_steps(state, pending, flush))
        finally:
            state.lock.release()

    def _batches_steps(
        self, state: SessionIndex, pending: Sequence[int], flush: bool
    ) -> Steps[int]:
        size = self.config.batch_size
        done = 0
        for start in range(0, len(pending), size):
            batch = list(pending[start : start + size])
            if len(batch) < size and not flush:
                break
            try:
                yield from self._llm_batch_steps(state, batch)
            except (ModelError, EmbeddingError) as exc:
                logger.warning(
                    "session %r: HiGMem analysis of %d turns failed (%s); they are "
                    "indexed without the LLM",
                    self.session.session_id,
                    len(batch),
                    exc,
                )
                yield from self._heuristic_steps(state, batch)
            done += len(batch)
        return done

    def _heuristic_steps(self, state: SessionIndex, positions: Sequence[int]) -> Steps[None]:
        nodes, events = index_heuristically(state, positions, self.models.counter)
        yield from self._write_steps(state, nodes, events)

    def _prompt(
        self, state: SessionIndex, positions: Sequence[int], aliases: Aliases, last: Event | None
    ) -> str:
        cfg, counter = self.config, self.models.counter
        batch = [state.turns[i] for i in positions]
        first = positions[0]
        context = state.turns[max(0, first - cfg.context_turns) : first]
        return ANALYSE_PROMPT.format(
            events="\n".join(
                f"{aliases.of_id[e.id]} ({len(e.turn_ids)} turns): {e.summary}"
                for e in aliases.events
            )
            or "(none yet)",
            last_event=aliases.of_id[last.id] if last is not None else "none",
            context="\n".join(turn_line("-", t, counter, cfg.max_line_tokens) for t in context)
            or "(start of conversation)",
            turns="\n".join(
                turn_line(n, t, counter, cfg.max_line_tokens) for n, t in enumerate(batch, start=1)
            ),
            rewrite_limit=cfg.rewrite_limit,
            answer_format=ANSWER_AS_OBJECT if offers_json(self.models.model) else ANSWER_AS_LINES,
        )

    def _llm_batch_steps(self, state: SessionIndex, positions: Sequence[int]) -> Steps[None]:
        with state.index.lock:
            turns = [state.turns[i] for i in positions]
            segs = [state.index.segments[i] for i in positions]
            known = dict(state.events)
        candidates = yield from candidate_events_steps(
            self.session,
            list(known.values()),
            " ".join(t.turn.text for t in turns),
            self.config.candidate_events,
            self.models.space,
        )
        last = max(known.values(), key=lambda e: e.updated_at, default=None)
        if last is not None and last not in candidates:
            candidates = [*candidates, last]
        aliases = Aliases(candidates, last)
        prompt = self._prompt(state, positions, aliases, last)
        analysis = yield from complete(prompt, index_parser(len(turns)), "higmem-index")
        affiliation = aliases.affiliate(analysis, len(turns), known)
        if affiliation.unanalysed:
            logger.info(
                "session %r: the index answer has no line for turns %s of the batch; they "
                "get no-LLM turn nodes",
                self.session.session_id,
                affiliation.unanalysed,
            )
        batch = Batch(turns, segs, analysis, affiliation, self.models.counter)
        nodes, members = batch_nodes(batch)
        updates = merge_events(
            batch,
            nodes,
            members,
            known,
            rewrite_limit=self.config.rewrite_limit,
            now=time.time(),
        )
        yield from self._write_steps(state, nodes, updates)

    def _write_steps(
        self, state: SessionIndex, nodes: Sequence[TurnNode], events: Sequence[Event]
    ) -> Steps[None]:
        """Write the events and turn nodes as the next indexing (one transaction); take them in.

        Another process that indexed meanwhile wins the number: nothing is written here,
        and the state reads what it wrote (the turns that still wait are indexed again).
        """
        session = self.session
        number = state.position + 1
        won = yield from store_call(session.records.nodes.commit, number, nodes, events)
        if not won:
            state.generation = -1  # another process indexed meanwhile: read its nodes
            return
        state.apply(nodes, events)
        with state.index.lock:
            state.position = max(state.position, number)
        yield from self._embed_events_steps(events)

    def _embed_events_steps(self, events: Sequence[Event]) -> Steps[None]:
        space = self.models.space
        if space is None or not events:
            return
        session = self.session
        try:
            vectors = yield from embed_documents([e.index_text for e in events])
            records = [
                VectorRecord(
                    event_vector_id(session.key, e.id), EVENT_KIND, e.id, v, text_hash(e.index_text)
                )
                for e, v in zip(events, vectors, strict=True)
            ]
            yield from store_call(session.records.vectors.put, space, records)
        except (EmbeddingError, StoreError) as exc:  # derived: embedded again when missing
            logger.warning("session %r: event vectors not written (%s)", session.session_id, exc)
