"""Hybrid recall: the facts and archived turns of a session most relevant to a question.

Archived turns are ranked like HiGMem's no-LLM path (:mod:`..retrieval.ranking`): BM25
over each turn and over windows of its neighbours, embeddings when an embedder is
configured, min-max normalised and mixed, plus speaker and date cues. Facts are ranked by
BM25 and embeddings, mixed the same way (:mod:`..retrieval.facts`). Dense scores are exact
cosine similarities over the session's vectors (:mod:`..retrieval.dense`). Turns in the
current window are excluded (the model sees them anyway); items with no signal at all are
left out. An embedder failure falls back to BM25 with a warning.

The session's turn log is read again only after a fold (folded turns change only when a
summary version commits), and its BM25 indexes are rebuilt only when its texts change:
both are cached per process (:mod:`..cache`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cache import SESSION_CACHE_ENTRIES, SessionCache, session_cache_key
from ..errors import EmbeddingError, InvalidInputError, StoreError
from ..facts import Fact
from ..retrieval.dense import Candidate, nearest_steps
from ..retrieval.facts import fact_texts, rank_facts
from ..retrieval.hits import RecallHit
from ..retrieval.lexical import LexicalIndex
from ..retrieval.ranking import TurnRanker
from ..retrieval.turns import ranked_turns
from ..runtime.effects import Steps, embed_query, store_call
from ..storage import SessionState, StoredTurn, text_hash
from ..validation import check_count, check_text
from .context import ContextBuilder
from .derived import DerivedWriter

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["DENSE_POOL_MIN", "DENSE_POOL_PER_K", "KINDS", "Recaller", "check_kinds"]

logger = logging.getLogger("langchain_recursive_memory")

KINDS = ("fact", "turn")
DENSE_POOL_PER_K = 4
"""Dense candidates kept per requested hit (plus the excluded window)."""
DENSE_POOL_MIN = 20
"""Fewest dense candidates kept."""


@dataclass
class _SessionRecall:
    """What recall keeps of a session between calls (in this process)."""

    # The turn log as read at summary version ``turns_key`` (version, fold id): while no
    # fold commits, the log only grows by unfolded turns, which load() returns.
    turns_key: tuple[int, str] | None = None
    turns: tuple[StoredTurn, ...] = ()
    # Text hashes of turns (turn id -> hash), to match their vectors; ids are reused only
    # after clear(), which also changes ``turns_key``.
    turn_hashes: dict[str, str] = field(default_factory=dict)
    ranker_signature: tuple[Any, ...] = ()
    ranker: TurnRanker | None = None
    facts_signature: tuple[Any, ...] = ()
    facts_index: LexicalIndex | None = None


_RECALL: SessionCache[_SessionRecall] = SessionCache("recall", max_entries=SESSION_CACHE_ENTRIES)


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
        engine: The engine (store, embedder, vector space).
        builder: Tells which turns the window shows (they are not recalled).
        derived: Names the vector records.
    """

    def __init__(self, engine: Engine, builder: ContextBuilder, derived: DerivedWriter) -> None:
        self.engine = engine
        self.scope = engine.scope
        self.builder = builder
        self.derived = derived
        self._key = session_cache_key(self.scope.store, self.scope.namespace, self.scope.session_id)

    def _cache(self) -> _SessionRecall:
        return _RECALL.get_or_create(self._key, _SessionRecall)

    def forget(self) -> None:
        """Drop what this process cached about the session."""
        _RECALL.pop(self._key)

    def steps(
        self,
        query: str,
        k: int,
        kinds: tuple[str, ...],
        exclude: set[str] | None = None,
        state: SessionState | None = None,
    ) -> Steps[list[RecallHit]]:
        """The ``k`` best hits for ``query`` (``exclude``: turn ids not to recall)."""
        check_text("query", query)
        check_count("k", k)
        scope = self.scope
        if state is None:
            state = yield from store_call(scope.store.load, scope.namespace, scope.session_id)
        everything = yield from self._session_turns_steps(state)
        if exclude is None:
            exclude = {t.id for t in self.builder.build(state).window if t.id is not None}
        facts: list[Fact] = []
        if "fact" in kinds:
            facts = yield from store_call(scope.store.get_facts, scope.namespace, scope.session_id)
        archived = set()
        if "turn" in kinds:
            archived = {t.id for t in everything if t.id not in exclude and t.turn.text.strip()}
        if not query.strip() or not (archived or facts):
            return []
        pool = max(DENSE_POOL_PER_K * k, DENSE_POOL_MIN) + len(exclude)
        dense_turns, dense_facts = yield from self._dense_steps(
            query, [t for t in everything if t.id in archived], facts, pool
        )
        scored = self._turn_hits(query, everything, archived, dense_turns) if archived else []
        if facts:
            index = self._facts_index(facts)
            for score, fact, lex, dense in rank_facts(facts, index, query, dense_facts):
                scored.append((score, _fact_hit(fact, score, lex, dense)))
        scored.sort(key=lambda p: (-p[0], p[1].kind, p[1].id))
        return [hit for _, hit in scored[:k]]

    def _session_turns_steps(self, state: SessionState) -> Steps[list[StoredTurn]]:
        """The session's whole turn log, oldest first, read again only after a fold.

        Folded turns change only when a fold commits a summary version, so the log read at
        the current version (named by its fold id) is reused; turns added since then are
        unfolded, and ``state`` (just loaded) holds them. No summary yet: nothing is folded
        and ``state`` holds every turn.
        """
        summary = state.summary
        if summary is None:
            return list(state.turns)
        key = (summary.version, summary.fold_id)
        cache = self._cache()
        if cache.turns_key != key:
            scope = self.scope
            everything = yield from store_call(scope.store.turns, scope.namespace, scope.session_id)
            cache.turns_key, cache.turns = key, tuple(everything)
            cache.turn_hashes = {}
        cached = cache.turns
        known = {t.id for t in cached}
        extra = [t for t in state.turns if t.id not in known]
        if not extra:
            return list(cached)
        return sorted([*cached, *extra], key=lambda t: (t.seq, t.id))

    def _dense_steps(
        self, query: str, turns: Sequence[StoredTurn], facts: Sequence[Fact], pool: int
    ) -> Steps[tuple[dict[str, float], dict[str, float]]]:
        """Cosine similarity of the query with archived turns and facts (by id, by key)."""
        space = self.engine.space
        dense: dict[str, dict[str, float]] = {"turn": {}, "fact": {}}
        if self.engine.embedder is None or space is None:
            return dense["turn"], dense["fact"]
        hashes = self._cache().turn_hashes
        wanted = [
            Candidate(self.derived.turn_record_id(t.id), "turn", t.id, _turn_hash(hashes, t))
            for t in turns
        ] + [
            Candidate(self.derived.fact_record_id(f), "fact", f.key, text_hash(f.text))
            for f in facts
        ]
        scope = (self.scope.namespace, self.scope.session_id)
        try:
            vector = yield from embed_query(query)
            near = yield from nearest_steps(self.scope.store, space, scope, vector, wanted, pool)
        except (EmbeddingError, StoreError) as exc:
            logger.warning(
                "session %r: dense recall unavailable (%s); ranking with BM25 only",
                self.scope.session_id,
                exc,
            )
            return dense["turn"], dense["fact"]
        for cand, similarity in near:
            dense[cand.kind][cand.ref] = similarity
        return dense["turn"], dense["fact"]

    def _turn_hits(
        self,
        query: str,
        everything: Sequence[StoredTurn],
        archived: set[str],
        dense_turns: dict[str, float],
    ) -> list[tuple[float, RecallHit]]:
        ranker = self._ranker(everything)
        dense = None
        if dense_turns:
            dense = np.array([dense_turns.get(t.id, np.nan) for t in ranker.turns], np.float32)
        scores = ranker.scores(query, None, dense=dense)
        lex_rank = {tid: r for r, tid in enumerate(ranker.lexical_order(query), start=1)}
        dense_order = sorted(dense_turns, key=lambda t: -dense_turns[t])
        dense_rank = {tid: r for r, tid in enumerate(dense_order, start=1)}
        by_id = {t.id: t for t in everything}
        return [
            (
                float(score),
                _turn_hit(by_id[r.id], float(score), lex_rank.get(r.id), dense_rank.get(r.id)),
            )
            for r, score in zip(ranker.turns, scores, strict=True)
            if r.id in archived and score > 0
        ]

    def _ranker(self, turns: Sequence[StoredTurn]) -> TurnRanker:
        """The multi-scale turn ranker of the session (cached while its turns are the same)."""
        signature = (tuple(t.id for t in turns), hash(tuple(t.turn.text for t in turns)))
        cache = self._cache()
        if cache.ranker is None or cache.ranker_signature != signature:
            cache.ranker = TurnRanker(ranked_turns(turns))
            cache.ranker_signature = signature
        return cache.ranker

    def _facts_index(self, facts: Sequence[Fact]) -> LexicalIndex:
        keys = [f"fact:{f.key}" for f in facts]
        texts = fact_texts(facts)
        signature = (len(keys), hash(tuple(keys)), hash(tuple(texts)))
        cache = self._cache()
        if cache.facts_index is None or cache.facts_signature != signature:
            cache.facts_index = LexicalIndex(texts)
            cache.facts_signature = signature
        return cache.facts_index


def _turn_hash(memo: dict[str, str], turn: StoredTurn) -> str:
    digest = memo.get(turn.id)
    if digest is None:
        digest = memo[turn.id] = text_hash(turn.turn.text)
    return digest


def _fact_hit(fact: Fact, score: float, lex: int | None, dense: int | None) -> RecallHit:
    return RecallHit(
        id=fact.key,
        kind="fact",
        text=fact.text,
        score=score,
        source_turn_ids=fact.source_turn_ids,
        time=fact.updated_at,
        lexical_rank=lex,
        dense_rank=dense,
        metadata={"subject": fact.subject, "stated_time": fact.time},
    )


def _turn_hit(item: StoredTurn, score: float, lex: int | None, dense: int | None) -> RecallHit:
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
    )
