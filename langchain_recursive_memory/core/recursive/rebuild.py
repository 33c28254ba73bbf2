"""Rebuild a session's (or a user's) facts and vectors from the turn log.

Facts and vectors are derived: after changing the summarizer or the embedder, a rebuild
derives them again from the log, the source of truth. Per session:

1. its facts are deleted (its own, and its statements of its user's facts) and its vectors
   of the current embedder, unless a rebuild of it had already started;
2. for each summary version, oldest first, the facts of the turns that version folded are
   extracted again (one facts call per version, as ``fact_mode="separate"``: the summaries
   stay as they are) and merged as a fold merges them;
3. the windows of its folded turns are embedded again, then its facts (for a user, every
   fact of the user, once all its sessions are done).

**Resumable.** Progress markers in the store say where a rebuild is: the session's
record holds the last version whose facts were extracted again, the user's record the
sessions done. A rebuild that stops (a crash, a failed model call, an interrupt) continues
there when called again; at most the one version it was extracting is extracted twice
(its facts merge into themselves). Vectors are idempotent: a window or fact that has a
vector of its current text is not embedded again. Without a model (or with
``extract_facts`` off) the facts are kept as they are and only the vectors are rebuilt.
Turns not folded yet have no facts: their fold extracts them. Folds that run meanwhile
write facts as usual; the rebuild extracts their versions too.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..rebuild import OnProgress, RebuildResult, RebuildRun
from ..runtime.effects import Steps, store_call
from ..session import Models, SessionRef, UserBinding
from ..storage import UserStore
from .archive import ArchiveIndex
from .derived import DerivedWriter, stated
from .summarize import Summarizer

__all__ = ["FACTS_TASK", "Rebuilder"]

FACTS_TASK = "facts"
"""The rebuild task of the recursive memory's markers (see :func:`~..storage.keys.rebuild_key`)."""


class Rebuilder:
    """Rebuilds a recursive memory's facts and vectors (see the module doc).

    Args:
        session: The memory's session.
        models: Its model (extracts facts) and embedder (embeds), as they are now.
        user: The session's user (resolved before a rebuild starts).
        summarizer: Extracts the facts of a folded chunk (when its facts are enabled).
        derived: Embeds facts and windows.
        archive: The memory's own archive index.
    """

    def __init__(
        self,
        session: SessionRef,
        models: Models,
        user: UserBinding,
        summarizer: Summarizer,
        *,
        derived: DerivedWriter,
        archive: ArchiveIndex,
    ) -> None:
        self.session = session
        self.models = models
        self.user = user
        self.summarizer = summarizer
        self.derived = derived
        self.archive = archive

    @property
    def facts_on(self) -> bool:
        """Whether facts are extracted again (a model, and ``extract_facts``)."""
        return self.summarizer.facts.enabled and self.models.model is not None

    def rebuild_steps(
        self, sessions: Sequence[str], whole_user: bool, on_progress: OnProgress
    ) -> Steps[RebuildResult]:
        """Rebuild the facts and vectors of ``sessions``, resuming where a rebuild stopped.

        ``whole_user``: they are every session of the session's user (its facts are derived
        again from all of them, its earlier session facts included).

        Raises:
            ModelError: When a facts call failed (call again: it resumes).
            StoreError: When Chroma failed (call again: it resumes).
        """
        user = self.user.user_id
        done: list[str] = []
        resumed = False
        if whole_user:
            assert user is not None
            done, resumed = yield from self._start_user_steps(user, sessions)
        run = yield from self._plan_steps(sessions, on_progress)
        run.resumed = resumed
        for session_id in sessions:
            if session_id in done:
                continue
            yield from self._session_steps(session_id, run, statements=not whole_user)
            if whole_user:
                done.append(session_id)
                yield from store_call(self._user_store().set_marker, FACTS_TASK, done)
        yield from self._facts_vectors_steps(run)
        if whole_user:
            yield from store_call(self._user_store().set_marker, FACTS_TASK, None)
        return run.result(sessions)

    def _plan_steps(self, sessions: Sequence[str], on_progress: OnProgress) -> Steps[RebuildRun]:
        """The steps ahead: each session's versions not done yet, its vectors, the facts'."""
        store, ns = self.session.store, self.session.namespace
        total = 1
        for session_id in sessions:
            records = store.session(ns, session_id)
            marker = yield from store_call(records.marker, FACTS_TASK)
            versions = yield from store_call(records.summaries.versions)
            after = int(marker or 0)
            total += 1 + (sum(v.version > after for v in versions) if self.facts_on else 0)
        return RebuildRun(total, on_progress)

    def _start_user_steps(
        self, user: str, sessions: Sequence[str]
    ) -> Steps[tuple[list[str], bool]]:
        """The sessions a stopped rebuild of the user did (and True); or, starting, none.

        A user's rebuild that starts wipes the user's facts and the markers of any stopped
        rebuild of one of its sessions: each session is derived again from its first
        version (a session's marker would skip the versions whose facts were wiped).
        """
        store, ns = self.session.store, self.session.namespace
        owner = store.user(ns, user)
        done = yield from store_call(owner.marker, FACTS_TASK)
        if done is not None:
            return [str(s) for s in done], True
        if self.facts_on:
            yield from store_call(owner.drop_facts)
        for session_id in sessions:
            yield from store_call(store.session(ns, session_id).set_marker, FACTS_TASK, None)
        yield from store_call(owner.set_marker, FACTS_TASK, [])
        return [], False

    def _user_store(self) -> UserStore:
        user = self.user.user_id
        assert user is not None
        return self.session.store.user(self.session.namespace, user)

    def _session_steps(self, session_id: str, run: RebuildRun, *, statements: bool) -> Steps[None]:
        """Rebuild one session's facts and window vectors (resuming from its marker)."""
        space = self.models.space
        records = self.session.store.session(self.session.namespace, session_id)
        marker = yield from store_call(records.marker, FACTS_TASK)
        if marker is not None:
            run.resumed = True
        else:
            if self.facts_on:
                yield from store_call(records.facts.drop, statements=statements)
            if space is not None:
                yield from store_call(records.vectors.drop, space)
            marker = 0
            yield from store_call(records.set_marker, FACTS_TASK, 0)
        if self.facts_on:
            versions = yield from store_call(records.summaries.versions)
            for version in [v for v in versions if v.version > int(marker)]:
                chunk = yield from store_call(records.turns.by_ids, version.turn_ids)
                facts = yield from self.summarizer.facts_steps(chunk)
                if facts:
                    merged = yield from store_call(records.facts.upsert, stated(facts, chunk))
                    run.facts += len(merged)
                run.versions += 1
                yield from store_call(records.set_marker, FACTS_TASK, version.version)
                run.step(session_id, "facts")
        run.vectors += yield from self._windows_steps(session_id)
        yield from store_call(records.set_marker, FACTS_TASK, None)
        run.step(session_id, "vectors")

    def _windows_steps(self, session_id: str) -> Steps[int]:
        """Embed the windows of the session's folded turns that lack a current vector."""
        store, ns, space = self.session.store, self.session.namespace, self.models.space
        if space is None:
            return 0
        archive = self.archive
        if session_id != self.session.session_id:
            archive = ArchiveIndex(SessionRef(store, ns, session_id), self.archive.params)
        records = archive.session.records
        state = yield from store_call(records.summaries.load)
        log = yield from store_call(records.turns.all)
        folded = [t.id for t in log if t.folded_in and t.turn.text.strip()]
        return (yield from archive.embed_steps(state, space, folded))

    def _facts_vectors_steps(self, run: RebuildRun) -> Steps[None]:
        """Embed the facts the memory sees (its user's too) again."""
        session = self.session
        if self.models.space is not None:
            facts = yield from store_call(session.records.facts.get)
            run.vectors += yield from self.derived.index_steps((), facts, None)
        run.step(session.session_id, "vectors")
