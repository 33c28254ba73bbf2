"""The facts: one record per fact key and session (or user), each naming its source turns.

A session's facts are keyed by the session (:func:`~.keys.fact_record_id`); the facts of
a user, shared by its sessions, by the user (:func:`~.keys.user_fact_record_id`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..facts import Fact
from .keys import AnyScope, UserOwner, fact_record_id, user_fact_record_id
from .repository import Repository, decoded

__all__ = ["FactTable"]


class FactTable(Repository):
    """The ``{prefix}_facts`` collection (derived: rebuildable from the turn log)."""

    name = "facts"
    label = "facts"

    def ids(self, owner: AnyScope, facts: Sequence[Fact]) -> list[str]:
        """Return the record ids of facts (one per key and session, or key and user)."""
        build = user_fact_record_id if isinstance(owner, UserOwner) else fact_record_id
        return [build(owner.key, f.key_hash) for f in facts]

    def get(self, owner: AnyScope, ids: Sequence[str] | None = None) -> list[Fact]:
        """Return the facts of ``owner`` (or those with the given record ids), oldest first."""
        if ids is not None:
            rows = self.read("read facts", owner, ids=list(ids))
        else:
            rows = self.read("read facts", owner, where=owner.where)
        out = decoded("fact", rows, lambda r: Fact.from_metadata(*r))
        out.sort(key=lambda f: (f.created_at, f.key))
        return out

    def put(self, owner: AnyScope, facts: Sequence[Fact]) -> None:
        """Write (or overwrite) facts, each under its key's record id."""
        docs = [f.text for f in facts]
        metas = [f.to_metadata() for f in facts]
        self.upsert("write facts", owner, self.ids(owner, facts), docs, metas)
