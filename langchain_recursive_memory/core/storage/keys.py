"""Every name the store gives: owners and their keys, Chroma record ids and filters.

A session's key (:func:`session_key`) is a hash of namespace *and* session id, so equal
session ids in two namespaces never meet: it is the session row's unique key in the
database, and every Chroma record id of the session starts with it. Chroma's records are
read back by these formats, so none of them may change without a new :data:`SCHEMA`.

The builders take the session key (not the namespace and session id) so that a caller
building many ids hashes the owner once.

Example:
    >>> skey = session_key("default", "s1")
    >>> skey
    'c138377a1bfbbf2dfdece3c1'
    >>> fact_record_id(skey, "9f2c")
    'c138377a1bfbbf2dfdece3c1:f:9f2c'
    >>> window_vector_id(skey, 2, "m-1"), window_kind(2)
    ('c138377a1bfbbf2dfdece3c1:hw2:m-1', 'hg_w2')
    >>> kinds_filter(skey, ["turn", "fact"])
    {'skk': {'$in': ['c138377a1bfbbf2dfdece3c1:turn', 'c138377a1bfbbf2dfdece3c1:fact']}}

A user (:class:`UserOwner`) has a key of its own (:func:`user_key`, hashed in another
domain, so it never equals a session key); the user's own records in Chroma (its facts
and their vectors) are keyed by it and carry ``uo`` (user-owned), and every Chroma record
of a session that belongs to a user carries ``uid`` and ``uk`` besides its session keys:

    >>> ukey = user_key("default", "ada")
    >>> user_fact_record_id(ukey, "9f2c") == f"{ukey}:uf:9f2c"
    True
    >>> ukey != session_key("default", "ada")
    True
    >>> SessionOwner.of("default", "s1", "ada").metadata()["uk"] == ukey
    True
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError, InvalidInputError
from ..validation import check_text

__all__ = [
    "DEFAULT_NAMESPACE",
    "EVENT_KIND",
    "MAX_ID_LENGTH",
    "PREFIX_RE",
    "SCHEMA",
    "SPACE_RE",
    "SessionOwner",
    "UserOwner",
    "VECTOR_COLLECTION_PREFIX",
    "collection_name",
    "event_vector_id",
    "fact_record_id",
    "kind_key",
    "kinds_filter",
    "new_turn_id",
    "owned_fact_record_id",
    "session_filter",
    "session_key",
    "text_hash",
    "user_fact_record_id",
    "user_filter",
    "user_key",
    "user_owned",
    "validate_name",
    "validate_prefix",
    "validate_session",
    "validate_space",
    "vector_collection_name",
    "window_kind",
    "window_vector_id",
]

SCHEMA = 2
"""Version of the record layout (2: selective session keys ``sk``/``open``/``skk``).

Users added metadata without changing the layout: ``uid``/``uk`` on the records of a
user's sessions, ``uo`` on the user's own records, a ``users`` collection. A record
without them belongs to no user, so stores written before users open and read unchanged
(a new schema number would make every existing store refuse to open)."""

DEFAULT_NAMESPACE = "default"
"""The namespace used when none is given."""

MAX_ID_LENGTH = 1024
"""The longest namespace or session id accepted."""

PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$")
"""What a collection name prefix may look like."""

SPACE_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")
"""What the name of an embedder's vector space may look like."""

VECTOR_COLLECTION_PREFIX = "vec_"
"""Vector collections are named ``{prefix}_vec_{space}``."""

EVENT_KIND = "hg_event"
"""The vector kind of a HiGMem event node."""

# -- validation -------------------------------------------------------------------------


def validate_session(namespace: str, session_id: str) -> None:
    """Check a namespace and session id.

    Both must be strings of 1 to 1,024 characters, not only whitespace, without NUL
    characters and encodable as UTF-8 (no lone surrogates). Any other content (quotes,
    ``$and``, JSON) is fine: values are never interpolated into queries.

    Raises:
        InvalidInputError: Naming the bad value.
    """
    validate_name("namespace", namespace)
    validate_name("session_id", session_id)


def validate_name(name: str, value: object) -> str:
    """Check one name of an owner (a namespace, a session id, a user id).

    See :func:`validate_session`.

    Raises:
        InvalidInputError: Naming the bad value.
    """
    text = check_text(name, value)
    if not text.strip():
        raise InvalidInputError.for_value(name, text, "must not be empty or only whitespace")
    if len(text) > MAX_ID_LENGTH:
        raise InvalidInputError.for_value(
            name, text, f"is {len(text)} characters long; the limit is {MAX_ID_LENGTH}"
        )
    if "\x00" in text:
        raise InvalidInputError.for_value(name, text, "must not contain NUL characters")
    return text


def validate_prefix(prefix: str) -> None:
    """Check a collection name prefix.

    Raises:
        ConfigurationError: Unless it is 1-41 letters, digits, ``.``, ``_`` or ``-``,
            starting with a letter or digit.
    """
    if not isinstance(prefix, str) or not PREFIX_RE.match(prefix):
        raise ConfigurationError.for_value(
            "prefix", prefix, "use 1-41 letters, digits, '.', '_' or '-', starting alnum"
        )


def validate_space(space: str) -> None:
    """Check the name of a vector space.

    Raises:
        ConfigurationError: Unless it is 1-60 lowercase letters, digits or ``-``.
    """
    if not SPACE_RE.match(space):
        raise ConfigurationError.for_value(
            "space", space, "use 1-60 lowercase letters, digits or '-'"
        )


# -- hashes -----------------------------------------------------------------------------


def session_key(namespace: str, session_id: str) -> str:
    """Return the short, fixed-length key that prefixes a session's record ids."""
    digest = hashlib.blake2b(f"{namespace}\x00{session_id}".encode(), digest_size=12)
    return digest.hexdigest()


def user_key(namespace: str, user_id: str) -> str:
    """Return the key of a user (hashed in its own domain: never a session's key)."""
    digest = hashlib.blake2b(
        f"{namespace}\x00{user_id}".encode(), digest_size=12, person=b"lrm-user"
    )
    return digest.hexdigest()


def text_hash(text: str) -> str:
    """Return the short hash stored with a vector to tell when its text has changed."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# -- collection names -------------------------------------------------------------------


def collection_name(prefix: str, name: str) -> str:
    """Return the Chroma name of collection ``name`` (``"turns"``...) under ``prefix``."""
    return f"{prefix}_{name}"


def vector_collection_name(space: str) -> str:
    """Return the collection name (after the prefix) of an embedder's vector space."""
    return f"{VECTOR_COLLECTION_PREFIX}{space}"


# -- record ids -------------------------------------------------------------------------


def new_turn_id(seq: int) -> str:
    """Return a new, time-ordered id for a turn whose order key is ``seq``."""
    return f"{seq:019d}-{uuid.uuid4().hex[:8]}"


def fact_record_id(skey: str, key_hash: str) -> str:
    """Return the id of a fact's record, from the fact's ``key_hash`` (also its vector's id)."""
    return f"{skey}:f:{key_hash}"


def user_fact_record_id(ukey: str, key_hash: str) -> str:
    """Return the id of a user's fact record (one per user and fact key), from its key hash.

    Also the id of the fact's vector in each vector collection.
    """
    return f"{ukey}:uf:{key_hash}"


def owned_fact_record_id(
    namespace: str, session_id: str, user_id: str | None, key_hash: str
) -> str:
    """Return the id of a fact of a session, as stored (and of its vector).

    The user's fact (:func:`user_fact_record_id`) when the session has a user
    (``user_id``), else the session's own (:func:`fact_record_id`).
    """
    if user_id is not None:
        return user_fact_record_id(user_key(namespace, user_id), key_hash)
    return fact_record_id(session_key(namespace, session_id), key_hash)


def user_owned(ukey: str, record_id: str) -> bool:
    """Whether ``record_id`` is one of the user's own records (its facts and their vectors)."""
    return record_id.startswith(f"{ukey}:")


# -- vector record ids and kinds --------------------------------------------------------


def window_vector_id(skey: str, radius: int, turn_id: str) -> str:
    """Return the id of the vector of the HiGMem window of ``radius`` around a turn."""
    return f"{skey}:hw{radius}:{turn_id}"


def window_kind(radius: int) -> str:
    """Return the vector kind of HiGMem windows of ``radius`` (``"hg_w1"``...)."""
    return f"hg_w{radius}"


def event_vector_id(skey: str, event_id: str) -> str:
    """Return the id of an event node's vector."""
    return f"{skey}:he:{event_id}"


# -- metadata keys and filters ----------------------------------------------------------


def session_filter(skey: str) -> dict[str, Any]:
    """Return the filter of a session's records: one equality on the session key.

    Chroma's metadata filter cost grows with the records each predicate matches, so an
    unselective ``{"ns": ...}`` would make every read slow down as the whole database
    grows. Results are re-checked on namespace and session id (:meth:`SessionOwner.owns`).
    """
    return {"sk": skey}


def user_filter(ukey: str) -> dict[str, Any]:
    """Return the filter of every record of a user: its sessions' records and its own."""
    return {"uk": ukey}


def kind_key(skey: str, kind: str) -> str:
    """Return the ``skk`` metadata value (session and kind) of a vector record."""
    return f"{skey}:{kind}"


def kinds_filter(skey: str, kinds: Sequence[str]) -> dict[str, Any]:
    """Return the filter of the session's vector records of the given kinds."""
    keys = [kind_key(skey, kind) for kind in kinds]
    return {"skk": keys[0]} if len(keys) == 1 else {"skk": {"$in": keys}}


@dataclass(frozen=True, slots=True)
class SessionOwner:
    """A checked namespace and session id, with its session key (and its user, if known).

    Build it with :meth:`of`, which validates; the repositories take an owner, so every
    read and write they do is scoped to one session (no API returns another session's
    data, but another session of the same user when asked for the user's scope). An
    owner that knows the session's user tags every record it writes with it (``uid``,
    ``uk``); reads never depend on it.

    Attributes:
        namespace: The namespace.
        session_id: The session id.
        key: :func:`session_key` of both.
        user_id: The user the session belongs to, or None (none, or not known here).
    """

    namespace: str
    session_id: str
    key: str
    user_id: str | None = None

    @classmethod
    def of(cls, namespace: str, session_id: str, user_id: str | None = None) -> SessionOwner:
        """Validate a namespace, session id (and user id) and return their owner.

        Raises:
            InvalidInputError: For a bad namespace, session id or user id.
        """
        validate_session(namespace, session_id)
        if user_id is not None:
            validate_name("user_id", user_id)
        return cls(namespace, session_id, session_key(namespace, session_id), user_id)

    @property
    def where(self) -> dict[str, Any]:
        """The metadata filter of the session's records (:func:`session_filter`)."""
        return session_filter(self.key)

    def metadata(self) -> dict[str, Any]:
        """The metadata every record of the session carries: namespace, session, key, user."""
        meta: dict[str, Any] = {"ns": self.namespace, "sid": self.session_id, "sk": self.key}
        if self.user_id is not None:
            meta["uid"] = self.user_id
            meta["uk"] = user_key(self.namespace, self.user_id)
        return meta

    def owns(self, meta: Mapping[str, Any]) -> bool:
        """Whether a record's metadata names this very namespace and session id."""
        return meta.get("sid") == self.session_id and meta.get("ns") == self.namespace


@dataclass(frozen=True, slots=True)
class UserOwner:
    """A checked namespace and user id, with the user's key: the owner of its own records.

    Those are the user's facts, their vectors and its record in the user list.
    It offers what the repositories use of a :class:`SessionOwner` (``namespace``, ``key``,
    ``where``, ``metadata()``, ``owns()``), so the facts and vector repositories serve both.

    Attributes:
        namespace: The namespace.
        user_id: The user id (any string a session id may be; exact: ``"Ada"`` and
            ``"ada"`` are two users).
        key: :func:`user_key` of both.
    """

    namespace: str
    user_id: str
    key: str

    @classmethod
    def of(cls, namespace: str, user_id: str) -> UserOwner:
        """Validate a namespace and user id and return their owner.

        Raises:
            InvalidInputError: For a bad namespace or user id.
        """
        validate_name("namespace", namespace)
        validate_name("user_id", user_id)
        return cls(namespace, user_id, user_key(namespace, user_id))

    @property
    def where(self) -> dict[str, Any]:
        """The metadata filter of the user's own records (not its sessions')."""
        return {"uo": self.key}

    @property
    def everything(self) -> dict[str, Any]:
        """The metadata filter of every record of the user (:func:`user_filter`)."""
        return user_filter(self.key)

    def metadata(self) -> dict[str, Any]:
        """The metadata of the user's own records: namespace, user, user key, ``uo``."""
        return {"ns": self.namespace, "uid": self.user_id, "uk": self.key, "uo": self.key}

    def owns(self, meta: Mapping[str, Any]) -> bool:
        """Whether a record is one of this very user's own records."""
        return (
            meta.get("uo") == self.key
            and meta.get("uid") == self.user_id
            and meta.get("ns") == self.namespace
        )


AnyScope = SessionOwner | UserOwner
"""The owner of records: a session or a user."""
