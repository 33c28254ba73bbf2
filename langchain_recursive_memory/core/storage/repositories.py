"""The store's repositories, one per collection, opened together over one client.

:class:`Repositories` is what the parts of a store (:class:`~.session_store.StoreParts`)
and its sessions' handles (:class:`~.session_store.SessionStore`) share: each holds the
same bundle, built once per store object.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> repos = MemoryStore.in_memory().parts.repos
    >>> type(repos.turn_log).__name__, repos.turn_log is repos.turn_log
    ('TurnLog', True)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..cache import StoreCaches
from .client import StoreClient
from .facts import FactTable
from .heads import SessionHeads
from .nodes import EventNodes, TurnNodes
from .repository import Repository
from .sessions import SessionList
from .summaries import SummaryLog
from .turns import TurnLog
from .usage import UsageLog
from .users import UserList
from .vectors import VectorSpaces

__all__ = ["Repositories"]


@dataclass(frozen=True, slots=True)
class Repositories:
    """Every repository of one store (``{prefix}_*`` collections), over one client.

    Attributes:
        client: The retried chromadb client they share (:class:`~.client.StoreClient`).
        turn_log: ``{prefix}_turns``, the source of truth.
        summary_log: ``{prefix}_summaries`` (versions, the ``current`` hint, leases).
        heads: ``{prefix}_summaries`` too: the sessions' stamp records and HiGMem's index
            links (:mod:`.heads`).
        fact_table: ``{prefix}_facts``.
        turn_nodes: ``{prefix}_hg_turns`` (HiGMem's turn nodes, its index head).
        event_nodes: ``{prefix}_hg_events``.
        usage_log: ``{prefix}_usage``.
        session_list: ``{prefix}_sessions``.
        user_list: ``{prefix}_users``.
        vector_spaces: ``{prefix}_vec_{space}``, one collection per embedder.
    """

    client: StoreClient
    turn_log: TurnLog
    summary_log: SummaryLog
    heads: SessionHeads
    fact_table: FactTable
    turn_nodes: TurnNodes
    event_nodes: EventNodes
    usage_log: UsageLog
    session_list: SessionList
    user_list: UserList
    vector_spaces: VectorSpaces

    @classmethod
    def open(cls, client: StoreClient, prefix: str, caches: StoreCaches) -> Repositories:
        """Open (or create) every collection of ``prefix``.

        Args:
            client: The retried chromadb client.
            prefix: The collection name prefix (validated by the caller).
            caches: The store's caches (what the repositories remember of their writes).

        Raises:
            StoreError: When a collection cannot be opened.
        """
        # The order chromadb sees them created in stays the one it always was.
        turn_log = TurnLog(client, prefix, caches)
        sessions = SessionList(client, prefix, caches)
        summary_log = SummaryLog(client, prefix, caches)
        heads = SessionHeads(client, prefix, caches)
        sessions.joined = heads.advance_user  # a user's set of sessions changed
        return cls(
            client=client,
            turn_log=turn_log,
            summary_log=summary_log,
            heads=heads,
            fact_table=FactTable(client, prefix),
            turn_nodes=TurnNodes(client, prefix),
            event_nodes=EventNodes(client, prefix),
            usage_log=UsageLog(client, prefix),
            vector_spaces=VectorSpaces(client, prefix),
            user_list=UserList(client, prefix, caches),
            session_list=sessions,
        )

    def scoped(self) -> Iterator[Repository]:
        """The repositories whose records carry a session or user key (not the vectors)."""
        yield self.turn_log
        yield self.summary_log
        yield self.fact_table
        yield self.turn_nodes
        yield self.event_nodes
        yield self.usage_log
        yield self.session_list
        yield self.user_list
