"""The compare-and-set fold runner: runs the fold plan, one summary version per chunk.

A fold loads the session, asks :func:`~.planner.plan_fold` what to fold, summarizes each
chunk into the next summary version and commits it compare-and-set
(:meth:`~..storage.session_store.SessionSummaries.commit`): a writer that loses reloads and plans
again (at most :data:`MAX_FOLD_RELOADS` times), so concurrent folds of one session never
fold a message twice. A version is one transaction: its row and its turns marked
folded, so a reader sees each turn in the window or in the summary, never both or
neither. After each committed version the fold's facts and vectors are written (derived
state).

A failing summarizer or store never loses a message: the fold is abandoned, logged, and
retried on a later ``add`` after a cool-down that doubles with each consecutive failure;
the messages it could not fold stay recallable (their vectors are written anyway). The
fold health (failures, cool-down, the fold lock, this process's view of the window) is
shared by every memory object of the session in the process.

Under concurrency (several processes or machines on one session) two rules keep the
work useful (the database keeps the log in order: a turn's order key is given when its
write commits):

* **a fold lease**: a fold started by ``add`` first claims the session's lease in the
  store (:meth:`~..storage.session_store.SessionSummaries.claim_lease`); while another
  writer holds it, the fold is skipped (``skipped="leased"``) instead of summarizing
  what the holder is summarizing. A holder that dies holds it at most one lease period.
* **a deadline**: a fold started by ``add`` gives up after ``retry.fold_deadline``
  seconds (its turns wait, unfolded, for a later add), so a hanging summarizer cannot
  hold a chat turn for ``timeout x attempts``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..cache import session_cache_key
from ..config import MemoryConfig
from ..errors import ModelError, StoreError
from ..facts import Fact
from ..runtime.effects import Steps, store_call
from ..runtime.retry import RetryPolicy, deadline
from ..runtime.workers import stopping
from ..session import SessionRef, UserBinding
from ..storage import SessionState, StoredTurn, Summary
from ..tokenizer import TokenCounter
from .archive import ArchiveIndex
from .derived import DerivedWriter
from .planner import FoldPlan, fold_due, plan_fold
from .summarize import Summarizer
from .units import turn_tokens

__all__ = ["MAX_FOLD_RELOADS", "FoldHealth", "FoldResult", "FoldRunner"]

logger = logging.getLogger("langchain_recursive_memory")

MAX_FOLD_RELOADS = 5
"""Times a fold reloads and plans again after losing a compare-and-set to another writer."""
MIN_LEASE_SECONDS = 10.0
"""Shortest fold lease period (the period is the retry policy's timeout, at least this)."""


@dataclass(frozen=True, slots=True)
class FoldResult:
    """What a fold did.

    Attributes:
        versions: Summary versions written (0 when nothing was due).
        folded: Messages folded into the summary.
        summary: The latest summary after the fold.
        facts: Facts written or updated by the fold.
        error: The failure that stopped the fold, if any (the messages wait in the log).
        skipped: Why no fold was attempted (``"busy"``: this process folds the session;
            ``"cooldown"``: after a failure; ``"leased"``: another writer folds it), if so.
    """

    versions: int = 0
    folded: int = 0
    summary: Summary | None = None
    facts: int = 0
    error: Exception | None = None
    skipped: str | None = None


@dataclass
class FoldHealth:
    """A session's fold state in this process (shared by its memory objects)."""

    failures: int = 0
    retry_at: float = 0.0
    last_error: Exception | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # This process's view of the unfolded window: (tokens, messages), None when unknown.
    window: tuple[int, int] | None = None

    def reset(self) -> None:
        """Forget failures, cool-down and the window view (after a success or a clear)."""
        self.failures, self.retry_at, self.last_error, self.window = 0, 0.0, None, None


@dataclass
class _Progress:
    versions: int = 0
    folded: int = 0
    facts: int = 0
    summary: Summary | None = None
    pending: list[StoredTurn] = field(default_factory=list)


class _Lease:
    """One fold's claim on the session's fold lease (see the module doc)."""

    def __init__(self, runner: FoldRunner, holder: str) -> None:
        self.session = runner.session
        self.holder = holder
        self.period = max(MIN_LEASE_SECONDS, runner.retry.timeout)
        self.held = False
        self.refused = False

    def claim_steps(self) -> Steps[bool]:
        """Claim (or renew) the lease; whether this fold holds it."""
        session = self.session
        self.held = yield from store_call(
            session.records.summaries.claim_lease, self.holder, self.period
        )
        self.refused = not self.held
        return self.held

    def release_steps(self) -> Steps[None]:
        """Give the lease up (best effort: an unreleased lease expires)."""
        session = self.session
        try:
            yield from store_call(session.records.summaries.release_lease, self.holder, self.period)
        except StoreError as exc:
            logger.info("session %r: fold lease not released (%s)", session.session_id, exc)
        self.held = False


class FoldRunner:
    """Folds one session (see the module doc).

    Args:
        session: The session.
        user: The session's user (resolved before a fold: facts are the user's).
        summarizer: Summarizes the chunks (and extracts their facts).
        derived: Writes facts and vectors.
        archive: The session's turn index.
        config: The budgets.
        counter: Counts tokens.
        retry: Its cool-down applies after a failed fold.
    """

    def __init__(
        self,
        session: SessionRef,
        user: UserBinding,
        summarizer: Summarizer,
        derived: DerivedWriter,
        archive: ArchiveIndex,
        *,
        config: MemoryConfig,
        counter: TokenCounter,
        retry: RetryPolicy,
    ) -> None:
        self.summarizer = summarizer
        self.derived = derived
        self.archive = archive
        self.session = session
        self.user = user
        self.config = config
        self.counter = counter
        self.retry = retry
        session = self.session
        key = session_cache_key(session.namespace, session.session_id)
        self.health: FoldHealth = session.store.caches.health.get_or_create(key, FoldHealth)

    def clearly_not_due(self, tokens: int, messages: int, reserve: int = 0) -> bool:
        """Whether this process's view of the window says no fold is due after an add.

        The view comes from the last read or fold of the session in this process plus the
        turns added since; when it is unknown, or the add may reach the budget, the store is
        read and the fold decided on the real state. Another process's turns are seen at
        the next read (every read is budget-checked on its own).
        """
        view = self.health.window
        if view is None:
            return False
        tokens, messages = tokens + view[0], messages + view[1]
        if fold_due(tokens, messages, self.config, reserve) is not None:
            return False
        self.health.window = (tokens, messages)
        return True

    def observe(self, turns: Sequence[StoredTurn], question: StoredTurn | None = None) -> None:
        """Record this process's view of the window: the unfolded turns, and ``question``.

        ``question``: the current question when it is folded already (shown beside them).
        """
        shown = [*turns, question] if question is not None else list(turns)
        tokens = sum(turn_tokens(t, self.counter) for t in shown)
        self.health.window = (tokens, len(shown))

    def fold_steps(
        self,
        force: bool,
        from_add: bool,
        reserve: int = 0,
        *,
        inline: bool = False,
        keep: bool = True,
    ) -> Steps[FoldResult]:
        """Fold if due (or with ``force``); from ``add``, a cool-down, lease or lock skips.

        ``reserve``: tokens the caller's request uses now beside the memory's messages.
        ``inline``: the fold runs inside the caller's ``add``: ``retry.fold_deadline``
        bounds it. ``keep``: keep the recent messages verbatim (False: fold them too).

        Raises:
            ModelError: When the summarizer failed (not from ``add``).
            StoreError: When Chroma failed (not from ``add``).
        """
        health = self.health
        yield from self.user.resolve_steps()  # facts are the user's, if it has one
        if from_add and time.monotonic() < health.retry_at:
            return FoldResult(skipped="cooldown", error=health.last_error)
        if not health.lock.acquire(blocking=False):
            return FoldResult(skipped="busy")
        progress = _Progress()
        lease = _Lease(self, uuid.uuid4().hex) if from_add else None
        error: ModelError | StoreError | None = None
        try:
            with deadline(self.retry.fold_deadline if inline else None):
                for _ in range(MAX_FOLD_RELOADS):
                    lost = yield from self._attempt_steps(force, progress, reserve, lease, keep)
                    if not lost:
                        break
                    force = False
        except (ModelError, StoreError) as exc:
            error = exc
            yield from self._failed_steps(exc, progress)
        finally:
            health.lock.release()
        if lease is not None and lease.held:
            yield from lease.release_steps()
        if error is not None:
            if not from_add:
                raise error
            return self._result(progress, error)
        if lease is not None and lease.refused and not progress.versions:
            return FoldResult(skipped="leased", summary=progress.summary)
        health.failures, health.last_error, health.retry_at = 0, None, 0.0
        return self._result(progress, None)

    def _attempt_steps(
        self,
        force: bool,
        progress: _Progress,
        reserve: int,
        lease: _Lease | None,
        keep: bool = True,
    ) -> Steps[bool]:
        """Load, plan and fold; return whether another writer won a version first.

        One load and one plan: the lease is claimed after planning (a fold that is not
        due claims nothing), then the session's head is read once more: a writer that
        folded between the load and the claim makes the fold load and plan again
        (:data:`MAX_FOLD_RELOADS`) before any summarizer call, holding the lease.
        """
        session = self.session
        state = yield from store_call(session.records.summaries.load)
        progress.summary = state.summary
        plan = self._plan(state, force, reserve, keep)
        self.observe(state.turns, state.question)
        if plan is None or stopping():
            return False
        claimed = False
        if lease is not None and not lease.held:
            if not (yield from lease.claim_steps()):
                return False  # another writer folds the session now
            claimed = True
            head = yield from store_call(session.records.head)
            if head is None or head.version != (state.summary.version if state.summary else 0):
                return True  # a writer folded between the load and the claim: plan again
        progress.pending = list(plan.folded)
        done_ids: set[str] = set()
        for number, chunk in enumerate(plan.chunks):
            renew = not (number == 0 and claimed)  # just claimed: no second claim
            if stopping() or (lease is not None and renew and not (yield from lease.claim_steps())):
                return False  # the interpreter exits, or the lease passed to another writer
            new, facts = yield from self._version_steps(progress.summary, chunk, keep)
            stored_facts = yield from self.derived.facts_steps(facts, chunk)
            done_ids.update(new.turn_ids)
            won = yield from store_call(session.records.summaries.commit, new)
            if not won:
                return True
            progress.summary = new
            progress.versions += 1
            progress.folded += len(chunk)
            left = [t for t in state.turns if t.id not in done_ids]
            self.observe(left, self._shown_question(state, left, new))
            progress.pending = progress.pending[len(chunk) :]
            progress.facts += len(stored_facts)
            yield from self.derived.write_steps(chunk, stored_facts, replace(state, summary=new))
        return False

    def _plan(self, state: SessionState, force: bool, reserve: int, keep: bool) -> FoldPlan | None:
        """The fold plan of a loaded state (see :func:`~.planner.plan_fold`)."""
        return plan_fold(
            state.turns,
            self.config,
            self.counter,
            force=force,
            reserve=reserve,
            keep=keep,
            question=state.question,
        )

    @staticmethod
    def _shown_question(
        state: SessionState, left: Sequence[StoredTurn], summary: Summary
    ) -> StoredTurn | None:
        """The folded current question the context shows beside the ``left`` turns."""
        if summary.question_id is None or any(t.turn.role == "user" for t in left):
            return None
        if state.question is not None and state.question.id == summary.question_id:
            return state.question
        return next((t for t in state.turns if t.id == summary.question_id), None)

    def _version_steps(
        self, summary: Summary | None, chunk: Sequence[StoredTurn], keep: bool = True
    ) -> Steps[tuple[Summary, list[Fact] | None]]:
        """The next summary version (``summary`` with ``chunk`` folded in) and its facts.

        The version names the newest user message folded so far (``question_id``: shown
        while it is current), none when the fold ends the conversation (``keep=False``).
        """
        done = yield from self.summarizer.summarize_steps(summary, chunk)
        asked = [t.id for t in chunk if t.turn.role == "user"]
        question = asked[-1] if asked else (summary.question_id if summary else None)
        new = Summary(
            namespace=self.session.namespace,
            session_id=self.session.session_id,
            version=(summary.version if summary else 0) + 1,
            text=done.text,
            tokens=self.counter.count_text(done.text),
            turn_ids=tuple(t.id for t in chunk),
            first_turn_id=summary.first_turn_id if summary else chunk[0].id,
            last_turn_id=chunk[-1].id,
            covered=(summary.covered if summary else 0) + len(chunk),
            method=done.method,
            last_seq=max([summary.last_seq if summary else 0, *(t.seq for t in chunk)]),
            question_id=question if keep else None,
        )
        return new, done.facts

    def _failed_steps(self, exc: Exception, progress: _Progress) -> Steps[None]:
        health = self.health
        health.failures += 1
        health.last_error = exc
        health.retry_at = time.monotonic() + self.retry.cooldown_after(health.failures)
        logger.warning(
            "session %r: fold failed (%s); the messages stay unfolded in the log and the "
            "fold is retried later",
            self.session.session_id,
            exc,
        )
        # While the fold waits, the messages it could not fold stay recallable.
        yield from self.derived.write_steps(
            progress.pending, (), SessionState(progress.summary, tuple(progress.pending))
        )

    @staticmethod
    def _result(progress: _Progress, error: Exception | None) -> FoldResult:
        return FoldResult(
            progress.versions, progress.folded, progress.summary, progress.facts, error=error
        )
