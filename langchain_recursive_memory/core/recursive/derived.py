"""Derived state of a fold: the facts it extracted and the vectors of what it archived.

Facts and vectors can be rebuilt from the turn log, so writing them never fails a fold:
a failure is logged and :meth:`~.memory.RecursiveMemory.reindex` rebuilds the vectors.
Turns and facts are embedded when a fold archives them (not at recall); a record that
already has a vector is not embedded again, except a fact the fold has just changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..errors import EmbeddingError, StoreError
from ..facts import Fact
from ..runtime.effects import Steps, embed_documents, store_call
from ..storage import StoredTurn, VectorRecord, text_hash
from ..storage.keys import fact_vector_id, turn_vector_id

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["DerivedWriter"]

logger = logging.getLogger("langchain_recursive_memory")


class _ToEmbed(NamedTuple):
    id: str
    kind: str
    ref: str
    text: str


class DerivedWriter:
    """Writes a session's facts and vectors (see the module doc).

    Args:
        engine: The engine whose store, embedder and vector space are used.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def turn_record_id(self, turn_id: str) -> str:
        """The vector record id of an archived turn."""
        return turn_vector_id(self.engine.scope.key, turn_id)

    def fact_record_id(self, fact: Fact) -> str:
        """The vector record id of a fact (the same as its fact record)."""
        return fact_vector_id(self.engine.scope.key, fact.key_hash)

    def write_steps(self, turns: Sequence[StoredTurn], facts: list[Fact] | None) -> Steps[int]:
        """Write a fold's facts and the vectors of its turns and facts; return facts written.

        Failures are logged, never raised: the turns are safe in the log.
        """
        scope = self.engine.scope
        written: list[Fact] = []
        try:
            if facts:
                written = yield from store_call(
                    scope.store.upsert_facts, scope.namespace, scope.session_id, facts
                )
            if self.engine.embedder is not None and (turns or written):
                yield from self.index_steps(turns, written)
        except (StoreError, EmbeddingError) as exc:
            logger.warning(
                "session %r: facts or vectors of a fold not written (%s); the messages are "
                "safe in the log and reindex() rebuilds the vectors",
                scope.session_id,
                exc,
            )
        return len(written)

    def index_steps(
        self, turns: Sequence[StoredTurn], facts: Sequence[Fact], *, refresh_facts: bool = True
    ) -> Steps[int]:
        """Embed the turns (and facts) without a vector; return how many were written.

        With ``refresh_facts`` the given facts are re-embedded even if they have a vector
        (a fold may have just changed their text).
        """
        engine, scope = self.engine, self.engine.scope
        records = [
            _ToEmbed(self.turn_record_id(t.id), "turn", t.id, t.turn.text)
            for t in turns
            if t.turn.text.strip()
        ] + [_ToEmbed(self.fact_record_id(f), "fact", f.key, f.text) for f in facts]
        space = engine.space
        if not records or space is None:
            return 0
        have = yield from store_call(scope.store.vector_ids, space, [r.id for r in records])
        records = [r for r in records if r.id not in have or (refresh_facts and r.kind == "fact")]
        if not records:
            return 0
        vectors = yield from embed_documents([r.text for r in records])
        yield from store_call(
            scope.store.add_vectors,
            space,
            scope.namespace,
            scope.session_id,
            [
                VectorRecord(r.id, r.kind, r.ref, v, text_hash(r.text))
                for r, v in zip(records, vectors, strict=True)
            ],
        )
        return len(records)
