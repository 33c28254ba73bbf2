"""Hybrid recall: the facts and archived turns of a session most relevant to a question.

Archived turns are ranked like HiGMem's no-LLM path, by the same code
(:mod:`..retrieval.ranking`): BM25 over each turn and over windows of its neighbours,
and, with an embedder, the question's cosine similarity with windows of neighbouring turns
(:mod:`..retrieval.windows`, embedded when a fold archives them), min-max normalised and
mixed, plus speaker and date cues. Facts are ranked by BM25 and embeddings, mixed the same
way (:mod:`..retrieval.facts`). Dense scores are exact cosine similarities over the
session's vectors (:mod:`..retrieval.dense`). Turns in the current window are excluded
(the model sees them anyway); items with no signal at all are left out. An embedder
failure falls back to BM25 with a warning.

The session's turns are ranked over its turn index, kept by :class:`~.archive.ArchiveIndex`
as the session grows (never rebuilt per read); the facts' BM25 index is rebuilt only when
they change.

**A user's sessions.** When the session belongs to a user, its facts are the user's (learned
in any of the user's sessions, see :meth:`~..storage.session_store.SessionFacts.get`): they are
recalled by default, read again whenever the user's facts change (its facts counter). Archived
turns come from this session only (``scope="session"``, the default: another
conversation's words only when asked) or from every session of the user
(``scope="user"``): the same ranking over the user's sessions as one pool
(:func:`~..retrieval.pool.user_pool_steps`), windows never crossing a session; a hit
from another session names it in ``metadata["session_id"]``. A user's fact names the
session that said its current wording there, and every session that stated it in
``"session_ids"``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cache import session_cache_key
from ..errors import EmbeddingError, InvalidInputError, StoreError
from ..facts import Fact
from ..retrieval.dense import Candidate, nearest_steps, unit
from ..retrieval.facts import fact_texts, rank_facts
from ..retrieval.hits import RecallHit
from ..retrieval.index import TurnIndex
from ..retrieval.lexical import LexicalIndex
from ..retrieval.pool import SCOPES, TurnPool, check_scope, embed_missing_steps
from ..retrieval.ranking import rank_of
from ..runtime.effects import Steps, embed_query, store_call
from ..session import Models, SessionRef, UserBinding
from ..storage import SessionState, StoredTurn, text_hash
from ..validation import check_count, check_text
from .archive import ArchiveIndex
from .context import ContextBuilder
from .derived import DerivedWriter

__all__ = [
    "DENSE_POOL_MIN",
    "DENSE_POOL_PER_K",
    "KINDS",
    "SCOPES",
    "Recaller",
    "check_kinds",
    "check_scope",
]

logger = logging.getLogger("langchain_recursive_memory")

KINDS = ("fact", "turn")

DENSE_POOL_PER_K = 4
"""Dense candidates kept per requested hit (plus the excluded window)."""
DENSE_POOL_MIN = 20
"""Fewest dense candidates kept."""


@dataclass
class _SessionRecall:
    """What recall keeps of a session's facts between calls (in this process).

    A fold stores its facts before it commits its version, so the facts read at a
    version (``facts_key``: the session's epoch and facts counter, and its user's) stay current
    until the next version or the next change of the user's facts.
    """

    facts_key: tuple[Any, ...] | None = None
    facts: tuple[Fact, ...] = ()
    fact_candidates: tuple[Candidate, ...] = ()
    facts_signature: tuple[Any, ...] = ()
    facts_index: LexicalIndex | None = None


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """``kinds`` without repeats, checked to be ``"fact"`` and/or ``"turn"``."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, Iterable):
        raise InvalidInputError.for_value("kinds", kinds, "must be a sequence of kinds")
    try:
        out = tuple(dict.fromkeys(kinds))
    except TypeError as exc:  # unhashable items
        raise InvalidInputError.for_value("kinds", kinds, "use 'fact' and/or 'turn'") from exc
    if not out or any(k not in KINDS for k in out):
        raise InvalidInputError.for_value("kinds", kinds, "use 'fact' and/or 'turn'")
    return out


class Recaller:
    """Recalls a session's facts and archived turns (see the module doc).

    Args:
        session: The session.
        models: Its embedder and vector space (as they are now).
        user: The session's user (its facts are recalled; ``scope="user"`` its sessions).
        builder: Tells which turns the window shows (they are not recalled).
        derived: Names the vector records of facts.
        archive: The session's turn log, ranker and window vectors.
    """

    def __init__(
        self,
        session: SessionRef,
        models: Models,
        user: UserBinding,
        builder: ContextBuilder,
        *,
        derived: DerivedWriter,
        archive: ArchiveIndex,
    ) -> None:
        self.session = session
        self.models = models
        self.user = user
        self.builder = builder
        self.derived = derived
        self.archive = archive
        self.params = archive.params
        self._key = session_cache_key(self.session.namespace, self.session.session_id)

    def _cache(self) -> _SessionRecall:
        cached: _SessionRecall = self.session.store.caches.facts.get_or_create(
            self._key, _SessionRecall
        )
        return cached

    def forget(self) -> None:
        """Drop what this process cached about the session."""
        self.session.store.caches.facts.pop(self._key)
        self.archive.forget()

    def recall_steps(
        self,
        query: str,
        k: int,
        kinds: tuple[str, ...],
        *,
        exclude: set[str] | None = None,
        state: SessionState | None = None,
        scope: str = "session",
        now: dt.date | None = None,
    ) -> Steps[list[RecallHit]]:
        """The ``k`` best hits for ``query`` (``exclude``: turn ids not to recall).

        ``now``: the day the question is asked (relative dates count from it; default:
        the newest turn's day).

        Raises:
            ConfigurationError: For ``scope="user"`` when the session has no user.
        """
        check_text("query", query)
        check_count("k", k)
        user = yield from self.user.scope_steps(scope)
        sid = self.session.session_id
        if state is None:
            state = yield from store_call(self.session.records.summaries.load)
        if exclude is None:
            exclude = {t.id for t in self.builder.build(state).window if t.id is not None}
        facts: Sequence[Fact] = ()
        if "fact" in kinds:
            facts = yield from self._facts_steps(state, user)
        parts: tuple[list[str], list[TurnIndex]] = ([], [])
        if "turn" in kinds and scope == "user" and user is not None:
            parts = yield from self.archive.user_steps(user, state)
        elif "turn" in kinds:
            own = yield from self.archive.sync_steps(state)
            parts = ([sid], [own])
        if not query.strip() or not (any(len(ix.ranked_turns) for ix in parts[1]) or facts):
            return []
        scored: list[tuple[float, RecallHit]] = []
        query_vector = yield from self._query_vector_steps(query)
        if parts[1]:
            scored = yield from self._turn_hits_steps(
                query, query_vector, parts, exclude, k=k, now=now
            )
        if facts:
            dense_pool = max(DENSE_POOL_PER_K * k, DENSE_POOL_MIN) + len(exclude)
            dense_facts = yield from self._dense_facts_steps(query_vector, facts, dense_pool)
            index = self._facts_index(facts)
            ranked = rank_facts(facts, index, query, dense_facts)
            ranked.sort(key=lambda r: (-r[0], r[1].key))  # the order of the final sort
            for score, fact, lex, dense in ranked[:k]:
                scored.append((score, _fact_hit(fact, score, lex, dense, user)))
        scored.sort(key=lambda p: (-p[0], p[1].kind, p[1].id))
        return [hit for _, hit in scored[:k]]

    def _query_vector_steps(self, query: str) -> Steps[list[float] | None]:
        """The query's embedding, or None (no embedder, or it failed: BM25 only)."""
        if self.models.embedder is None or self.models.space is None:
            return None
        try:
            return (yield from embed_query(query))
        except EmbeddingError as exc:
            self._dense_unavailable(exc)
            return None

    def _dense_unavailable(self, exc: Exception) -> None:
        logger.warning(
            "session %r: dense recall unavailable (%s); ranking with BM25 only",
            self.session.session_id,
            exc,
        )

    def _facts_steps(self, state: SessionState, user: str | None) -> Steps[Sequence[Fact]]:
        """The session's facts, read again only when they changed.

        Kept by the session's head, read with ``state``: its epoch, its facts counter and
        its user's; a session with no row reads them every time.
        """
        head = state.head
        key: tuple[Any, ...] | None = None
        if head is not None:
            key = (head.epoch, head.facts, user, head.user_facts if user is not None else 0)
            if not head.facts and not (user is not None and head.user_facts):
                return ()  # no fact was ever written for it: nothing to ask Chroma
        cache = self._cache()
        if key is None or cache.facts_key != key:
            session = self.session
            try:
                facts = yield from store_call(session.records.facts.get)
            except StoreError as exc:  # Chroma is down: recall the turns (in the database)
                logger.warning(
                    "session %r: facts unavailable (%s); recalling turns only",
                    session.session_id,
                    exc,
                )
                return cache.facts if cache.facts_key is not None else ()
            cache.facts = tuple(facts)
            cache.fact_candidates = tuple(
                Candidate(self.derived.fact_record_id(f), "fact", f.key, text_hash(f.text))
                for f in facts
            )
            cache.facts_key = key
        return cache.facts

    def _dense_facts_steps(
        self, query_vector: list[float] | None, facts: Sequence[Fact], pool: int
    ) -> Steps[dict[str, float]]:
        """Cosine similarity of the query with the facts (by key)."""
        space = self.models.space
        if query_vector is None or space is None:
            return {}
        cache = self._cache()
        wanted = (
            list(cache.fact_candidates)
            if len(cache.fact_candidates) == len(facts)
            else [
                Candidate(self.derived.fact_record_id(f), "fact", f.key, text_hash(f.text))
                for f in facts
            ]
        )
        scope = (self.session.namespace, self.session.session_id)
        try:
            near = yield from nearest_steps(
                self.session.store, space, scope, query_vector, wanted, n=pool
            )
        except StoreError as exc:
            self._dense_unavailable(exc)
            return {}
        return {cand.ref: similarity for cand, similarity in near}

    def _turn_hits_steps(
        self,
        query: str,
        query_vector: list[float] | None,
        parts: tuple[list[str], list[TurnIndex]],
        exclude: set[str],
        *,
        k: int,
        now: dt.date | None = None,
    ) -> Steps[list[tuple[float, RecallHit]]]:
        """The ``k`` best archived turns of the sessions' indexes as hits (with their ranks).

        The candidates are found once; their windows get their vectors (I/O, no lock
        held); then, under the indexes' locks, the pool is ranked and the hits are built.
        """
        sessions, indexes = parts
        own = self.session.session_id
        space = self.models.space
        query_unit = unit(query_vector) if query_vector is not None else None
        with TurnPool.locked(indexes):
            versions, masks = _candidates(sessions, indexes, own, exclude)
        if query_unit is not None and space is not None:
            wanted = [
                (sid, ix, np.flatnonzero(mask))
                for sid, ix, mask in zip(sessions, indexes, masks, strict=True)
            ]
            try:
                yield from embed_missing_steps(
                    self.session.store, space, self.session.namespace, wanted
                )
            except (EmbeddingError, StoreError) as exc:
                self._dense_unavailable(exc)
                query_unit = None
        with TurnPool.locked(indexes):
            if versions != [ix.version for ix in indexes]:  # changed while embedding
                versions, masks = _candidates(sessions, indexes, own, exclude)
            pool = TurnPool(indexes, sessions, self.params)
            keep = np.concatenate(masks or [np.zeros(0, bool)])
            dense = pool.similarity(query_unit, keep) if query_unit is not None else None
            top, scores = pool.select(query, k, dense=dense, now=now, keep=keep)
            lex_rank = rank_of(pool.ranker.lexical_scores(query), top)
            dense_rank: list[int | None] = [None] * len(top)
            if dense is not None:
                stacked = np.stack(list(dense.values()))
                best = np.where(np.isnan(stacked), -np.inf, stacked).max(axis=0)
                best = np.where(np.isfinite(best), best, np.nan)
                dense_rank = rank_of(best, top, positive=False)
            return [
                (
                    float(scores[i]),
                    _turn_hit(
                        pool.turn(i),
                        float(scores[i]),
                        lex,
                        dense_r,
                        pool.session_of(i) if pool.session_of(i) != own else None,
                    ),
                )
                for i, lex, dense_r in zip(top, lex_rank, dense_rank, strict=True)
            ]

    def _facts_index(self, facts: Sequence[Fact]) -> LexicalIndex:
        keys = [f"fact:{f.key}" for f in facts]
        texts = fact_texts(facts)
        signature = (len(keys), hash(tuple(keys)), hash(tuple(texts)))
        cache = self._cache()
        if cache.facts_index is None or cache.facts_signature != signature:
            cache.facts_index = LexicalIndex(texts)
            cache.facts_signature = signature
        return cache.facts_index


def _candidates(
    sessions: Sequence[str], indexes: Sequence[TurnIndex], own: str, exclude: set[str]
) -> tuple[list[int], list[np.ndarray]]:
    """The turns that may be recalled: a mask of each index's ranked turns, and its version.

    ``exclude``: the ids of turns of the ``own`` session not to recall. Call it holding
    the indexes' locks; the masks hold while the versions do.
    """
    masks = []
    for sid, index in zip(sessions, indexes, strict=True):
        keep = np.ones(len(index.ranked_turns), bool)
        for tid in exclude if sid == own else ():
            position = index.ranked_position(tid)
            if position is not None:
                keep[position] = False
        masks.append(keep)
    return [ix.version for ix in indexes], masks


def _fact_hit(
    fact: Fact, score: float, lex: int | None, dense: int | None, user: str | None
) -> RecallHit:
    metadata: dict[str, Any] = {"subject": fact.subject, "stated_time": fact.time}
    if fact.origins:  # a user's fact: the session of its wording, and all that stated it
        metadata.update(
            user_id=user, session_id=fact.origins[-1].session_id, session_ids=list(fact.session_ids)
        )
    return RecallHit(
        id=fact.key,
        kind="fact",
        text=fact.text,
        score=score,
        source_turn_ids=fact.source_turn_ids,
        time=fact.updated_at,
        lexical_rank=lex,
        dense_rank=dense,
        metadata=metadata,
    )


def _turn_hit(
    item: StoredTurn, score: float, lex: int | None, dense: int | None, session: str | None
) -> RecallHit:
    return RecallHit(
        id=item.id,
        kind="turn",
        text=item.turn.text,
        score=score,
        source_turn_ids=(item.id,),
        time=item.turn.created_at,
        role=item.turn.role,
        lexical_rank=lex,
        dense_rank=dense,
        metadata={"session_id": session} if session is not None else {},
    )
