"""Rebuild HiGMem's turn and event nodes (and their vectors) from the turn log.

The nodes are derived: after changing the model or the embedder, a rebuild indexes every
turn again. Per session, the turn nodes, events and event vectors are deleted (unless a
rebuild of it had already started: a marker on the session's record says so), the turns
are indexed again in batches as :meth:`~.memory.HiGMem.add` indexes them, then the turn
windows are embedded. Resumable by construction: a turn counts as indexed once its node is
stored, so a rebuild that stops continues with the turns that have none; vectors of
current text are not embedded again.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..rebuild import OnProgress, RebuildResult, RebuildRun
from ..runtime.effects import Steps, store_call
from ..session import Models, SessionRef
from .config import HiGMemConfig
from .indexer import Indexer
from .state import sync_steps

__all__ = ["NODES_TASK", "REBUILD_BATCHES", "NodeRebuilder"]

NODES_TASK = "nodes"
"""The rebuild task of HiGMem's markers (see :func:`~..storage.keys.rebuild_key`)."""
REBUILD_BATCHES = 8
"""Indexing batches per progress step of a rebuild."""


class NodeRebuilder:
    """Rebuilds a HiGMem memory's nodes (see the module doc).

    Args:
        session: The memory's session (its store and namespace hold the sessions rebuilt).
        models: The model (indexes) and embedder (embeds), as they are now.
        config: The memory's settings.
    """

    def __init__(self, session: SessionRef, models: Models, config: HiGMemConfig) -> None:
        self.session = session
        self.models = models
        self.config = config

    def rebuild_steps(
        self, sessions: Sequence[str], whole_user: bool, on_progress: OnProgress
    ) -> Steps[RebuildResult]:
        """Index the turns of ``sessions`` again (``whole_user``: all of the user's).

        Raises:
            StoreError: When Chroma failed (call again: it resumes).
        """
        store, ns = self.session.store, self.session.namespace
        batch = self.config.batch_size * REBUILD_BATCHES
        total = 0
        for session_id in sessions:
            turns = yield from store_call(store.session(ns, session_id).turns.count)
            total += 1 + -(-turns // batch)
        run = RebuildRun(total, on_progress)
        for session_id in sessions:
            yield from self._session_steps(SessionRef(store, ns, session_id), run, batch)
        return run.result(sessions)

    def _session_steps(self, session: SessionRef, run: RebuildRun, batch: int) -> Steps[None]:
        records, sid = session.records, session.session_id
        marker = yield from store_call(records.marker, NODES_TASK)
        if marker is not None:
            run.resumed = True
        else:
            yield from store_call(records.nodes.drop)
            Indexer(session, self.models, self.config).state().forget()
            yield from store_call(records.set_marker, NODES_TASK, 0)
        indexer = Indexer(session, self.models, self.config)
        while True:
            indexed = yield from indexer.index_steps(flush=True, limit=batch)
            if not indexed:
                break
            run.nodes += indexed
            run.step(sid, "nodes")
        run.vectors += yield from self._windows_steps(session, indexer)
        yield from store_call(records.set_marker, NODES_TASK, None)
        run.step(sid, "vectors")

    def _windows_steps(self, session: SessionRef, indexer: Indexer) -> Steps[int]:
        """Embed the session's turn windows that lack a current vector."""
        space = self.models.space
        if space is None:
            return 0
        state = indexer.state()
        yield from sync_steps(session, state)
        with state.index.lock:
            positions = list(range(len(state.index.ranked_turns)))
        key = (session.namespace, session.session_id)
        return (yield from state.index.windows.embed_steps(session.store, space, key, positions))
