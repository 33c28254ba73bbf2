"""How the middleware gets each session's memory: built by the one builder, or given.

The summarizer runs inside the agent's model node: its LangChain calls are tagged
``nostream`` (as langchain's own ``SummarizationMiddleware`` does), so its tokens stay out
of the agent's ``stream_mode="messages"`` stream.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables.config import RunnableConfig, ensure_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from ..core.builder import MemoryOptions, build_memory
from ..core.errors import ConfigurationError
from ..core.models import TextModel
from ..core.recursive import RecursiveMemory
from ..core.storage import MemoryStore, validate_session
from ..language_models import LangChainTextModel

__all__ = [
    "USER_KEY",
    "MemoryFactory",
    "SessionResolver",
    "UserResolver",
    "check_role",
    "given_memory",
    "memory_factory",
    "run_user",
    "warn_store",
]

logger = logging.getLogger("langchain_recursive_memory")

SessionResolver = Callable[[RunnableConfig, "Runtime[Any] | None"], str]
"""A function ``(config, runtime) -> session_id`` (for example a user id from the context)."""

UserResolver = Callable[[RunnableConfig, "Runtime[Any] | None"], "str | None"]
"""A function ``(config, runtime) -> user_id`` (None: the run's session has no user)."""

MemoryFactory = Callable[[str, "str | None"], RecursiveMemory]
"""``(session_id, user_id) -> memory``: how the middleware gets a session's memory."""

USER_KEY = "user_id"
"""Where a run names its user: ``runtime.context.user_id`` (or ``context["user_id"]``),
else ``config["configurable"]["user_id"]``."""

_SUMMARIZER_CONFIG: dict[str, Any] = {
    "tags": [TAG_NOSTREAM],
    "metadata": {"lc_source": "recursive_memory"},
}


def memory_factory(
    options: MemoryOptions, model: TextModel | None, store: MemoryStore, namespace: str
) -> MemoryFactory:
    """The memory of each session, built by the one builder from the middleware's options."""
    validate_session(namespace, "probe")
    config = options.memory_config()  # validated once, shared by every session
    if config.summary_role == "system":
        raise ConfigurationError.for_value(
            "summary_role",
            "system",
            "the agent's system prompt comes first; use 'human' (default) or 'ai'",
        )
    if isinstance(model, LangChainTextModel) and model.config is None:
        model.config = dict(_SUMMARIZER_CONFIG)
    shared = options.model_copy(update={"config": config})

    def factory(session_id: str, user_id: str | None) -> RecursiveMemory:
        return build_memory(
            session_id, shared, model=model, store=store, namespace=namespace, user_id=user_id
        )

    return factory


def given_memory(
    memory: RecursiveMemory | Callable[[str], RecursiveMemory],
    session_id: str | SessionResolver | None,
) -> tuple[str | SessionResolver | None, MemoryFactory]:
    """The session and memory factory of a ready memory (or of a memory function).

    A memory function names its memories' users itself (the run's user is not passed).
    """
    if not isinstance(memory, RecursiveMemory):
        if not callable(memory):
            raise ConfigurationError.for_value(
                "memory", memory, "must be a RecursiveMemory or a function session_id -> memory"
            )
        function = memory
        return session_id, lambda sid, _user: function(sid)
    if isinstance(session_id, str) and session_id != memory.session_id:
        raise ConfigurationError.for_value(
            "session_id",
            session_id,
            f"differs from the given memory's session {memory.session_id!r}",
        )
    if session_id is not None and not isinstance(session_id, str):
        raise ConfigurationError.for_value(
            "session_id", session_id, "a ready memory= has a fixed session"
        )
    check_role(memory)
    return memory.session_id, lambda _sid, _user: memory


def run_user(given: str | UserResolver | None, runtime: Runtime[Any] | None) -> str | None:
    """The user of the current run: fixed, from the function, or named by the run.

    By default (``given`` None) the run names it as it names its thread: in the runtime's
    context (``context.user_id`` or ``context["user_id"]``), else in
    ``config["configurable"]["user_id"]``; a run that names none has no user.

    Raises:
        ConfigurationError: For a user id that is not a string (named).
    """
    if isinstance(given, str):
        return given
    value: Any
    if given is not None:
        value, what = given(ensure_config(), runtime), "the user_id function's result"
    else:
        context = getattr(runtime, "context", None)
        if isinstance(context, Mapping):
            value = context.get(USER_KEY)
        else:
            value = getattr(context, USER_KEY, None)
        if value is None:
            value = (ensure_config().get("configurable") or {}).get(USER_KEY)
        what = USER_KEY
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | uuid.UUID):
        return str(value)
    raise ConfigurationError.for_value(what, value, "must be a str")


def check_role(memory: RecursiveMemory) -> None:
    """Refuse a memory whose summary would be a second system message."""
    if memory.config.summary_role == "system":
        raise ConfigurationError.for_value(
            "summary_role",
            "system",
            "the agent's system prompt comes first; give the memory summary_role='user'",
        )


def warn_store(memory: RecursiveMemory, exc: Exception) -> None:
    """Log that Chroma failed and the request goes ahead with the newest messages."""
    logger.warning(
        "session %r: the memory store failed (%s); the model is sent the newest messages "
        "that fit max_tokens, and the messages are stored at a later call",
        memory.session_id,
        exc,
    )
