"""What the agent's model is sent: the memory's view of a ``ModelRequest``. Pure helpers.

* :func:`messages_to_log` - the state's messages to store (with ``create_agent``'s
  answers to invalid tool calls);
* :func:`request_overhead` - the tokens of the request's system prompt and tool schemas,
  counted inside ``max_tokens`` by default;
* :func:`bounded_request` - the request with the memory's context instead of the
  history, and exactly one system message, first;
* :func:`newest_not_sent` - whether the newest message reached the model whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

from ..core.recursive import Context, RecursiveMemory
from ..messages import is_summary_message, message_to_turn, turn_to_message

__all__ = [
    "bounded_request",
    "latest_question",
    "merge_system",
    "messages_to_log",
    "newest_not_sent",
    "request_overhead",
    "state_messages",
]


def state_messages(state: Any) -> list[BaseMessage]:
    """The messages of an agent's state (a mapping or an object with ``messages``)."""
    if isinstance(state, Mapping):
        messages = state.get("messages") or []
    else:  # a state schema that is not a TypedDict
        messages = getattr(state, "messages", None) or []
    return [m for m in messages if isinstance(m, BaseMessage)]


def messages_to_log(request: ModelRequest[Any]) -> list[BaseMessage]:
    """The state's messages to log, with ``create_agent``'s answers to invalid tool calls.

    ``create_agent`` answers an invalid tool call with an error ``ToolMessage`` it also
    writes to the state; it is logged right after its call, like in the state.
    """
    state = state_messages(request.state)
    patches = {
        m.tool_call_id: m
        for m in request.messages
        if isinstance(m, ToolMessage) and not m.id and m.tool_call_id
    }
    if not patches:
        return state
    out: list[BaseMessage] = []
    for message in state:
        out.append(message)
        if isinstance(message, AIMessage):
            for call in message.invalid_tool_calls:
                patch = patches.pop(call.get("id") or "", None)
                if patch is not None:
                    out.append(patch)
    return out


def latest_question(request: ModelRequest[Any], memory: RecursiveMemory) -> str | None:
    """The latest human message of the request, when the memory recalls for questions."""
    if memory.config.recall_tokens == 0:
        return None
    for message in reversed(request.messages):
        if isinstance(message, HumanMessage) and not is_summary_message(message):
            return message.text or None
    return None


def request_system(request: ModelRequest[Any]) -> SystemMessage | None:
    """The one system message sent: the agent's, then the state's system messages."""
    return merge_system(
        request.system_message, [m for m in request.messages if isinstance(m, SystemMessage)]
    )


def request_overhead(request: ModelRequest[Any], memory: RecursiveMemory) -> int:
    """Tokens of the request's system message and tool schemas, as the provider is sent them.

    Tools are converted to OpenAI function definitions (dicts are taken as given) and
    counted as their JSON (:meth:`~..core.TokenCounter.count_tools`): the conservative
    count.
    """
    counter = memory.counter
    system = request_system(request)
    tokens = counter.count_turn(message_to_turn(system)) if system is not None else 0
    tools = [t if isinstance(t, dict) else convert_to_openai_tool(t) for t in request.tools]
    return tokens + counter.count_tools(tools)


def bounded_request(
    request: ModelRequest[Any], memory: RecursiveMemory, context: Context | None, reserve: int
) -> tuple[ModelRequest[Any], Context]:
    """The request with the memory's context and the single, first system message.

    ``context`` None (Chroma failed): the newest messages of the request that fit.

    Returns:
        The request to send and the context it holds (with its token count).
    """
    if context is None:
        candidates = [
            m
            for m in request.messages
            if not isinstance(m, SystemMessage) and not is_summary_message(m)
        ]
        turns = [message_to_turn(m) for m in candidates]
        context = memory.context_builder.fit(turns, reserve=reserve)
    head = [turn_to_message(context.summary_turn)] if context.summary_turn else []
    window = [turn_to_message(t) for t in context.window if t.role != "system"]
    bounded = request.override(
        messages=cast("list[AnyMessage]", head + window), system_message=request_system(request)
    )
    return bounded, context


def newest_not_sent(request: ModelRequest[Any], bounded: ModelRequest[Any]) -> str | None:
    """How the request's newest message fails to reach the model whole, or None if it does.

    ``"sent cut (the log keeps it whole)"`` when it was cut to fit (a tool result larger
    than the budget: the documented behaviour), ``"not sent to the model"`` when it is
    missing.
    """
    newest = next((m for m in reversed(request.messages) if not isinstance(m, SystemMessage)), None)
    if newest is None or not newest.id:
        return None
    sent = next((m for m in bounded.messages if m.id == newest.id), None)
    if sent is not None and sent.content == newest.content:
        return None
    return "not sent to the model" if sent is None else "sent cut (the log keeps it whole)"


def _blocks(content: str | list[str | dict[Any, Any]]) -> list[str | dict[Any, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def merge_system(
    base: SystemMessage | None, extra: Sequence[SystemMessage]
) -> SystemMessage | None:
    """One system message: the agent's (unchanged when alone), then the state's ones."""
    if not extra:
        return base
    parts = ([base] if base is not None else []) + list(extra)
    if all(isinstance(p.content, str) for p in parts):
        content: str | list[str | dict[Any, Any]] = "\n\n".join(
            cast("str", p.content) for p in parts
        )
    else:
        content = [block for p in parts for block in _blocks(p.content)]
    first = parts[0]
    return SystemMessage(
        content=content,
        id=first.id,
        additional_kwargs=dict(first.additional_kwargs),
        response_metadata=dict(first.response_metadata),
    )
