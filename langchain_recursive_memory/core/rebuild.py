"""What both engines' rebuilds share: their progress, their result, a run in progress.

A rebuild (:meth:`~.engine.Engine.rebuild`) derives a session's derived state again from
its turn log; the recursive memory's :class:`~.recursive.rebuild.Rebuilder` and HiGMem's
:class:`~.higmem.rebuild.NodeRebuilder` count their steps in a :class:`RebuildRun`.

Example:
    >>> run = RebuildRun(total=2, on_progress=print)
    >>> run.step("s1", "vectors")
    RebuildProgress(done=1, total=2, session_id='s1', step='vectors')
    >>> run.result(["s1"]).sessions
    ('s1',)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .runtime.effects import Steps

__all__ = ["OnProgress", "RebuildProgress", "RebuildResult", "RebuildRun", "Rebuilds"]


@dataclass(frozen=True, slots=True)
class RebuildProgress:
    """How far a rebuild is (given to its ``on_progress``).

    Attributes:
        done: Steps done (a summary version's facts, a session's vectors, a batch of
            HiGMem turns...).
        total: Steps in all (as planned when it started or resumed).
        session_id: The session the last step was of.
        step: What it did (``"facts"``, ``"vectors"``, ``"nodes"``).
    """

    done: int
    total: int
    session_id: str
    step: str


@dataclass(frozen=True, slots=True)
class RebuildResult:
    """What a rebuild re-derived from the turn log.

    Attributes:
        sessions: The sessions rebuilt.
        versions: Summary versions whose facts were extracted again.
        facts: Facts written.
        vectors: Vectors written.
        nodes: HiGMem turns indexed again.
        resumed: Whether it continued a rebuild that had stopped (its progress markers).
    """

    sessions: tuple[str, ...] = ()
    versions: int = 0
    facts: int = 0
    vectors: int = 0
    nodes: int = 0
    resumed: bool = False


OnProgress = Callable[[RebuildProgress], None] | None
"""A rebuild's progress callback (or None)."""


class Rebuilds(Protocol):
    """What rebuilds an engine's derived state (each engine has one)."""

    def rebuild_steps(
        self, sessions: Sequence[str], whole_user: bool, on_progress: OnProgress
    ) -> Steps[RebuildResult]:
        """Rebuild ``sessions`` (``whole_user``: they are every session of the user)."""
        ...


@dataclass
class RebuildRun:
    """A rebuild in progress (both engines'): its plan, what it did, whom to tell."""

    total: int
    on_progress: OnProgress
    done: int = 0
    versions: int = 0
    facts: int = 0
    vectors: int = 0
    nodes: int = 0
    resumed: bool = False

    def step(self, session_id: str, what: str) -> None:
        """Count one step done and tell ``on_progress``."""
        self.done += 1
        if self.on_progress is not None:
            total = max(self.total, self.done)
            self.on_progress(RebuildProgress(self.done, total, session_id, what))

    def result(self, sessions: Sequence[str]) -> RebuildResult:
        """What the rebuild did, over ``sessions``."""
        return RebuildResult(
            tuple(sessions), self.versions, self.facts, self.vectors, self.nodes, self.resumed
        )
