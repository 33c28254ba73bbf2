"""What an engine shares with its collaborators: the session, its models, its user.

An engine (:class:`~.engine.Engine`) hands its collaborators (the fold runner, recall, the
HiGMem indexer...) what they use, never itself:

* :class:`SessionRef`: the session of the store every read and write is addressed to;
* :class:`Models`: the model, the embedder (and the vector space it names) and the token
  counter, as they are now: the engine's ``model`` and ``embedder`` setters update it, so
  a model set after construction reaches every collaborator;
* :class:`UserBinding`: the session's user, checked against the one recorded, read once.

Example:
    >>> from langchain_recursive_memory.core.storage import MemoryStore
    >>> session = SessionRef(MemoryStore.in_memory(), "default", "s1")
    >>> session.key == UserBinding(session, "ada").session.key, UserBinding(session, "ada").user_id
    (True, 'ada')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .embeddings import embedder_name
from .errors import ConfigurationError
from .models import Embedder, TextModel
from .retrieval.pool import USER, check_scope
from .runtime.effects import Steps, store_call
from .runtime.runner import Runner
from .storage import MemoryStore, SessionStore, session_key
from .tokenizer import TokenCounter

__all__ = ["Models", "SessionRef", "UserBinding"]


@dataclass(frozen=True, slots=True)
class SessionRef:
    """One session of one store: what every read and write of an engine is scoped to.

    Attributes:
        store: The store.
        namespace: The namespace.
        session_id: The session id.
        records: The session in the store, bound once (``store.session(namespace,
            session_id)``): its turns, summaries, facts, vectors and nodes.
    """

    store: MemoryStore
    namespace: str
    session_id: str
    records: SessionStore = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "records", self.store.session(self.namespace, self.session_id))

    @property
    def key(self) -> str:
        """The session's record-id prefix (see :func:`~.storage.session_key`)."""
        return session_key(self.namespace, self.session_id)


class Models:
    """The models an engine's work uses, as they are now (shared with its collaborators).

    The model and the embedder are the runner's (it performs the calls): setting them here
    sets them there, so both always agree.

    Args:
        runner: The engine's runner.
        counter: The token counter.
    """

    def __init__(self, runner: Runner, counter: TokenCounter) -> None:
        self._runner = runner
        self.counter = counter
        self._space: str | None = None
        self.embedder = runner.embedder

    @property
    def model(self) -> TextModel | None:
        """The model (None: the no-LLM methods)."""
        return self._runner.model

    @model.setter
    def model(self, model: TextModel | None) -> None:
        self._runner.model = model

    @property
    def embedder(self) -> Embedder | None:
        """The embedder (None: lexical recall only)."""
        return self._runner.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        self._runner.embedder = embedder
        # The embedder's vector collection, named from the embedder alone, so that a new
        # object (a restart) finds the vectors already stored and embeds nothing twice.
        self._space = embedder_name(embedder) if embedder is not None else None

    @property
    def space(self) -> str | None:
        """The embedder's vector collection (None without an embedder)."""
        return self._space


class UserBinding:
    """The user a session belongs to: the one given, checked against the one recorded.

    A session's user is recorded at its first write and fixed from then on; a memory
    opened without a user on a session that has one uses the recorded one.

    Args:
        session: The session.
        given: The user the memory was opened with, or None.
    """

    def __init__(self, session: SessionRef, given: str | None) -> None:
        self.session = session
        self.given = given
        self._user: str | None = given
        self._resolved = False

    @property
    def user_id(self) -> str | None:
        """The session's user: the one given, or (once read) the one recorded; or None."""
        return self._user

    def resolve_steps(self) -> Steps[str | None]:
        """The session's user, checked against the one recorded (read once per process).

        Raises:
            ConfigurationError: When the session belongs to another user (both named).
        """
        if self._resolved:
            return self._user
        records, sid = self.session.records, self.session.session_id
        recorded = yield from store_call(records.recorded_user)
        given = self.given
        if given is not None and recorded is not None and recorded != given:
            raise ConfigurationError.for_value(
                "user_id",
                given,
                f"session {sid!r} belongs to user {recorded!r}; a session's "
                "user is fixed once recorded",
            )
        if given is not None and recorded is None:  # recorded at the first write
            yield from store_call(records.bind_user, given)
        self._user = given if given is not None else recorded
        self._resolved = True
        return self._user

    def scope_steps(self, scope: str, setting: str = "scope") -> Steps[str | None]:
        """The session's user, for a read (or rebuild) of ``scope``: the one check of it.

        Args:
            scope: ``"session"`` or ``"user"``.
            setting: What the caller calls the scope, for the error (``"recall_scope"``).

        Raises:
            InvalidInputError: For a scope that is not ``"session"`` or ``"user"``.
            ConfigurationError: For ``"user"`` when the session belongs to no user.
        """
        check_scope(scope)
        user = yield from self.resolve_steps()
        if scope == USER and user is None:
            raise ConfigurationError.for_value(
                setting,
                scope,
                f"session {self.session.session_id!r} belongs to no user_id: give user_id "
                f"(or {setting}='session')",
            )
        return user

    def reset(self) -> None:
        """Read the recorded user again at the next :meth:`resolve_steps` (after a clear)."""
        self._user, self._resolved = self.given, False
