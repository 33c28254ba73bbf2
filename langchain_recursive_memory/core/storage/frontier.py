"""What a read checks of several sessions at once: their heads and their open turns.

The two requests of the freshness rule (:mod:`.heads`), for as many sessions as a read
needs (one, or every session of a user): their stamps and chain links, read by id in one
request (:meth:`Frontier.heads`), and their open turns, in one filtered request
(:meth:`Frontier.open_turns`). What a head read learns of a session's stamp is taken in on
the way: which user the session belongs to, and whether this process must register it
again (its stamp is gone: another object or process cleared it).

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> from langchain_recursive_memory.core.storage.heads import HeadRequest
    >>> store = MemoryStore.in_memory()
    >>> session = store.session("default", "s1")
    >>> _ = session.turns.append([Turn(role="user", text="hi")], [2], "o200k_base")
    >>> owner = session.key_owner
    >>> head = store.parts.frontier.heads([HeadRequest(owner, "v", 0)])[owner.key]
    >>> head.stamp is not None, list(store.parts.frontier.open_turns({owner: "v"})[owner.key].seqs)
    (True, [...])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..cache import StoreCaches, session_cache_key
from .directory import UserDirectory
from .heads import Head, HeadRequest
from .keys import SessionOwner, UserOwner
from .repositories import Repositories
from .turns import OpenTurns

__all__ = ["Frontier"]


class Frontier:
    """The heads and open turns of several sessions (see the module doc).

    Args:
        repos: The store's repositories.
        directory: Which user each session belongs to (a stamp names it).
        caches: The store's caches (what this process registered).
    """

    def __init__(self, repos: Repositories, directory: UserDirectory, caches: StoreCaches) -> None:
        self.repos = repos
        self.directory = directory
        self.caches = caches

    def heads(self, requests: Sequence[HeadRequest]) -> dict[str, Head]:
        """The stamps and chain links of several sessions, read by id together.

        Returns:
            Session key -> :class:`~.heads.Head`.
        """
        return self.heads_of_user(requests, None)[0]

    def heads_of_user(
        self, requests: Sequence[HeadRequest], user: UserOwner | None
    ) -> tuple[dict[str, Head], str | None]:
        """:meth:`heads`, and the token of ``user``'s stamp record, in the same request.

        Returns:
            Session key -> :class:`~.heads.Head`, and the user's token (None: none).
        """
        found, token = self.repos.heads.read_heads_of_user(requests, user)
        for request in requests:
            stamp = found[request.owner.key].stamp
            self.directory.observe(request.owner, stamp)
            if stamp is None:
                self.forget_registration(request.owner)
        return found, token

    def forget_registration(self, owner: SessionOwner) -> None:
        """Forget that this process registered the session (its records may be gone)."""
        self.repos.session_list.forget(owner)
        self.repos.heads.forget_stamp(owner)
        self.caches.described.pop(session_cache_key(owner.namespace, owner.session_id))

    def open_turns(
        self,
        chains: Mapping[SessionOwner, str],
        held: Mapping[str, Mapping[str, int]] | None = None,
        exact: Iterable[str] = (),
    ) -> dict[str, OpenTurns]:
        """The open turns of several sessions (each in its chain's flag), read together.

        Args:
            chains: Each session and its chain (``"v"`` or ``"h"``).
            held: Session key -> turn id -> order key of the turns the caller holds; those
                are not read again (only their ids are).
            exact: Keys of sessions whose held open turns may have moved (their stamp's
                ``moved`` token changed): those are read again, with their order keys.

        Returns:
            Session key -> :class:`~.turns.OpenTurns`.
        """
        return self.repos.turn_log.open_turns(chains, held, exact)
