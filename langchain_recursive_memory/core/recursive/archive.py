"""The archive of a session: its turns as recall ranks them, kept current at constant cost.

Recall ranks a session's archived turns with the same multi-scale ranking as HiGMem, over
the session's view (:class:`~..retrieval.view.SessionView`, in the store's caches, shared
with every reader of the session in the process). The view follows the session by the one
freshness rule (:mod:`..storage`) without reading its whole log again:

* the turns this process appends are put in as it writes them
  (:meth:`ArchiveIndex.appended`);
* every read brings the session's state (:meth:`~..storage.session_store.SessionSummaries.load`:
  the head, the latest summary and the unfolded turns: what the context needs anyway);
  :meth:`ArchiveIndex.sync_steps` checks the view against its head and reads only the
  turns after the view's ``last_seq``;
* only a process that has never seen the session, or a session that started again (its
  epoch changed), is read whole, once.

So a read costs the same at 10,000 turns as at 1,000. A fold embeds the windows of the
turns it archives (:meth:`ArchiveIndex.embed_steps`), so recall finds them stored and
only reads them. A user's sessions are ranked as one pool
(:func:`~..retrieval.pool.user_pool_steps`): their views are brought up to date together,
with one read of their heads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..retrieval.index import TurnIndex
from ..retrieval.pool import user_pool_steps
from ..retrieval.ranking import RankerParams
from ..retrieval.view import SessionView, account, session_view, sync_steps
from ..runtime.effects import Steps
from ..session import SessionRef
from ..storage import SessionHead, SessionState, StoredTurn

__all__ = ["ArchiveIndex"]


class ArchiveIndex:
    """A session's view as the recursive memory keeps it (see the module doc).

    Args:
        session: The session.
        params: The ranking's weights and window radii.
    """

    def __init__(self, session: SessionRef, params: RankerParams | None = None) -> None:
        self.session = session
        self.params = params or RankerParams()

    def view(self) -> SessionView:
        """The session's view (in the store's caches)."""
        s = self.session
        return session_view(s.store, s.namespace, s.session_id, self.params)

    def forget(self) -> None:
        """Drop what this process keeps of the session."""
        self.view().reset()

    # -- what this process writes -----------------------------------------------------------

    def appended(self, turns: Sequence[StoredTurn]) -> None:
        """Put in turns this process has just appended to the log.

        Nothing while no read of this process has built the view: its first read reads the
        log whole (a memory that never recalls never indexes its turns).
        """
        view = self.view()
        if not view.read:
            return
        view.appended(turns)
        account(self.session.store, view)

    # -- reads --------------------------------------------------------------------------------

    def given(self, state: SessionState) -> dict[str, SessionHead | None]:
        """The head ``state`` (a fresh ``load``) read: the view needs no read of its own."""
        return {self.session.session_id: state.head}

    def sync_steps(self, state: SessionState) -> Steps[TurnIndex]:
        """The session's index, brought up to ``state`` (a fresh ``summaries.load()``).

        Reads nothing when the view holds the session as ``state``'s head shows it; the
        turns after the view's ``last_seq`` when it is behind; the whole log once when it
        has never seen the session or the session started again.
        """
        view = self.view()
        s = self.session
        yield from sync_steps(s.store, s.namespace, {s.session_id: view}, self.given(state))
        return view.index

    def user_steps(
        self, user_id: str, state: SessionState
    ) -> Steps[tuple[list[str], list[TurnIndex]]]:
        """The user's sessions and their indexes (this one's brought up to ``state``)."""
        s = self.session
        return (
            yield from user_pool_steps(
                s.store, s.namespace, s.session_id, user_id, self.view(), heads=self.given(state)
            )
        )

    def embed_steps(self, state: SessionState, space: str, turn_ids: Sequence[str]) -> Steps[int]:
        """Embed the windows of the given turns that have no current vector (a fold's).

        Args:
            state: The session's state after the fold (its latest version and the
                unfolded turns): the windows are read from the log as it stands.
            space: The embedder's vector collection.
            turn_ids: The turns whose windows to embed.

        Returns:
            How many window vectors were written.
        """
        if not turn_ids:
            return 0
        index = yield from self.sync_steps(state)
        with index.lock:
            found = [index.ranked_position(t) for t in turn_ids]
            positions = np.array([p for p in found if p is not None], np.int64)
        if not len(positions):
            return 0
        session = self.session
        written = yield from index.windows.embed_steps(
            session.store, space, (session.namespace, session.session_id), positions
        )
        account(session.store, self.view())
        return written
