"""Upkeep usage: append-only, one record per operation that called a model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..usage import Usage, UsageRecord
from .keys import SessionOwner, new_usage_id
from .repository import Repository, decoded, placeholders

__all__ = ["UsageLog"]


def _usage_metadata(
    record: UsageRecord, scope_of: Callable[[str, str], SessionOwner]
) -> dict[str, Any]:
    """Return the Chroma metadata of a usage record (validating its owner)."""
    owner = scope_of(record.namespace, record.session_id)
    return {
        **owner.metadata(),
        "purpose": record.purpose,
        "calls": record.usage.calls,
        "failed": record.usage.failed_calls,
        "in": record.usage.input_tokens,
        "out": record.usage.output_tokens,
        "reported": record.usage.reported_calls,
        "created": record.created_at,
    }


def _usage_of(meta: Mapping[str, Any]) -> tuple[str, Usage]:
    usage = Usage(
        calls=int(meta["calls"]),
        failed_calls=int(meta["failed"]),
        input_tokens=int(meta["in"]),
        output_tokens=int(meta["out"]),
        reported_calls=int(meta["reported"]),
    )
    return str(meta["purpose"]), usage


class UsageLog(Repository):
    """The ``{prefix}_usage`` collection: LLM calls and tokens of memory upkeep."""

    name = "usage"
    label = "usage"

    def add(
        self,
        records: Sequence[UsageRecord],
        scope_of: Callable[[str, str], SessionOwner] = SessionOwner.of,
    ) -> None:
        """Append usage records (of any sessions).

        Args:
            records: The records.
            scope_of: The owner of a ``(namespace, session_id)`` (it validates them and
                tags the records of a user's session with the user).

        Raises:
            InvalidInputError: When a record has a bad owner (nothing is written).
        """
        if not records:
            return
        metas = [_usage_metadata(r, scope_of) for r in records]
        self.chroma.call(
            "write usage",
            lambda: self.collection.add(
                ids=[new_usage_id() for _ in records],
                documents=[r.purpose for r in records],
                metadatas=metas,
                embeddings=placeholders(len(records)),
            ),
        )

    def totals(self, owner: SessionOwner) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        got = self.chroma.call(
            "read usage",
            lambda: self.collection.get(where=owner.where, include=["metadatas"]),
        )
        out: dict[str, Usage] = {}
        owned = [m for m in got["metadatas"] or [] if owner.owns(m)]
        for purpose, usage in decoded("usage", owned, _usage_of):
            out.setdefault(purpose, Usage()).add(usage)
        return out
