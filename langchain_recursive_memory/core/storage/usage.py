"""Upkeep usage: append-only, one record per operation that called a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..usage import Usage, UsageRecord
from .keys import Scope, new_usage_id
from .repository import Repository, placeholders

__all__ = ["UsageLog"]


def _usage_metadata(record: UsageRecord) -> dict[str, Any]:
    """Return the Chroma metadata of a usage record (validating its scope)."""
    scope = Scope.of(record.namespace, record.session_id)
    return {
        **scope.metadata(),
        "purpose": record.purpose,
        "calls": record.usage.calls,
        "failed": record.usage.failed_calls,
        "in": record.usage.input_tokens,
        "out": record.usage.output_tokens,
        "reported": record.usage.reported_calls,
        "created": record.created_at,
    }


class UsageLog(Repository):
    """The ``{prefix}_usage`` collection: LLM calls and tokens of memory upkeep."""

    name = "usage"
    label = "usage"

    def add(self, records: Sequence[UsageRecord]) -> None:
        """Append usage records (of any sessions).

        Raises:
            InvalidInputError: When a record has a bad scope (nothing is written).
        """
        if not records:
            return
        metas = [_usage_metadata(r) for r in records]
        self.chroma.call(
            "write usage",
            lambda: self.collection.add(
                ids=[new_usage_id() for _ in records],
                documents=[r.purpose for r in records],
                metadatas=metas,
                embeddings=placeholders(len(records)),
            ),
        )

    def totals(self, scope: Scope) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        got = self.chroma.call(
            "read usage",
            lambda: self.collection.get(where=scope.where, include=["metadatas"]),
        )
        out: dict[str, Usage] = {}
        for m in got["metadatas"] or []:
            if not scope.owns(m):
                continue
            out.setdefault(str(m["purpose"]), Usage()).add(
                Usage(
                    calls=int(m["calls"]),
                    failed_calls=int(m["failed"]),
                    input_tokens=int(m["in"]),
                    output_tokens=int(m["out"]),
                    reported_calls=int(m["reported"]),
                )
            )
        return out
