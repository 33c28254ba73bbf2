"""Derived state of a fold: the facts it extracted and the vectors of what it archived.

Facts and vectors can be rebuilt from the turn log, so writing them never fails a fold.
A version's facts are stored before the version commits, its vectors after:
a failure is logged and :meth:`~.memory.RecursiveMemory.reindex` rebuilds the vectors.
The windows of the turns a fold archives (each turn with its neighbours, see
:mod:`..retrieval.windows`) and its facts are embedded when the fold archives them, not at
recall; a window that already has a vector of its current text is not embedded again, a
fact the fold has just changed is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from ..errors import EmbeddingError, StoreError
from ..facts import Fact
from ..runtime.effects import Steps, embed_documents, store_call
from ..session import Models, SessionRef, UserBinding
from ..storage import SessionState, StoredTurn, VectorRecord, text_hash
from ..storage.keys import owned_fact_record_id
from .archive import ArchiveIndex

__all__ = ["DerivedWriter", "stated"]

logger = logging.getLogger("langchain_recursive_memory")


class _ToEmbed(NamedTuple):
    id: str
    kind: str
    ref: str
    text: str


def stated(facts: Sequence[Fact], chunk: Sequence[StoredTurn]) -> list[Fact]:
    """``facts`` stamped with when their newest source turn of ``chunk`` was said.

    A fact naming no turn of the chunk gets the chunk's newest time.
    """
    when = {t.id: t.turn.created_at or t.seq / 1e9 for t in chunk}
    if not when:
        return list(facts)
    newest = max(when.values())
    return [
        replace(f, stated_at=max((when[t] for t in f.source_turn_ids if t in when), default=newest))
        for f in facts
    ]


class DerivedWriter:
    """Writes a session's facts and vectors (see the module doc).

    Args:
        session: The session.
        models: Its embedder and vector space (as they are now).
        user: The session's user (a user's facts are the user's records).
        archive: The session's archive index (it embeds the windows).
    """

    def __init__(
        self, session: SessionRef, models: Models, user: UserBinding, archive: ArchiveIndex
    ) -> None:
        self.session = session
        self.models = models
        self.user = user
        self.archive = archive

    def fact_record_id(self, fact: Fact) -> str:
        """The vector record id of a fact (the same as its fact record): the user's, if any.

        The user must be resolved (:meth:`~..session.UserBinding.resolve_steps`).
        """
        session = self.session
        return owned_fact_record_id(
            session.namespace, session.session_id, self.user.user_id, fact.key_hash
        )

    def facts_steps(
        self, facts: list[Fact] | None, chunk: Sequence[StoredTurn] = ()
    ) -> Steps[list[Fact]]:
        """Store a fold's facts (before its version commits); return them as stored.

        Written first, a version's facts are in the store whenever the version is visible,
        so a reader may cache a session's facts per summary version. A failure is logged,
        never raised: the facts are extracted again by a later fold. Each fact is stamped
        with when its newest source turn of ``chunk`` was said (``stated_at``): across a
        user's sessions the newest statement wins, whatever order they fold in.
        """
        session = self.session
        if not facts:
            return []
        facts = stated(facts, chunk)
        try:
            return (yield from store_call(session.records.facts.upsert, facts))
        except StoreError as exc:
            logger.warning(
                "session %r: facts of a fold not written (%s); a later fold extracts them",
                session.session_id,
                exc,
            )
            return []

    def write_steps(
        self, turns: Sequence[StoredTurn], facts: Sequence[Fact], state: SessionState
    ) -> Steps[int]:
        """Write the vectors of a fold's archived turns (their windows) and stored facts.

        ``state`` is the session as the fold leaves it (its latest version and the
        unfolded turns known): the windows are read from it (see
        :meth:`.ArchiveIndex.embed_steps`). Failures are logged, never raised: the turns
        are safe in the log.

        Returns:
            How many vectors were written.
        """
        session = self.session
        if self.models.embedder is None or not (turns or facts):
            return 0
        try:
            return (yield from self.index_steps(turns, facts, state))
        except (StoreError, EmbeddingError) as exc:
            logger.warning(
                "session %r: vectors of a fold not written (%s); the messages are safe in "
                "the log and reindex() rebuilds the vectors",
                session.session_id,
                exc,
            )
            return 0

    def index_steps(
        self,
        turns: Sequence[StoredTurn],
        facts: Sequence[Fact],
        state: SessionState | None,
        *,
        refresh_facts: bool = True,
    ) -> Steps[int]:
        """Embed the windows of the turns and the facts without a vector; return how many.

        With ``refresh_facts`` the given facts are re-embedded even if they have a vector
        (a fold may have just changed their text). ``state``: the session's (needed when
        ``turns`` are given).
        """
        session = self.session
        space = self.models.space
        if space is None:
            return 0
        ids = [t.id for t in turns if t.turn.text.strip()]
        written = 0
        if ids and state is not None:
            written = yield from self.archive.embed_steps(state, space, ids)
        records = [_ToEmbed(self.fact_record_id(f), "fact", f.key, f.text) for f in facts]
        if not records:
            return written
        have = yield from store_call(
            session.records.vectors.existing, space, [r.id for r in records]
        )
        records = [r for r in records if r.id not in have or refresh_facts]
        if not records:
            return written
        vectors = yield from embed_documents([r.text for r in records])
        yield from store_call(
            session.records.vectors.put,
            space,
            [
                VectorRecord(r.id, r.kind, r.ref, v, text_hash(r.text))
                for r, v in zip(records, vectors, strict=True)
            ],
        )
        return written + len(records)
