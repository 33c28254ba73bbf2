"""RecursiveSummaryMemory inside LlamaIndex chat engines and agents, with scripted models."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from conftest import COUNTER, FAST
from fakes import FactModel, FailingModel, KeywordSummarizer, prompt_messages
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    ChatResponse,
    CitableBlock,
    CompletionResponse,
    DocumentBlock,
    ImageBlock,
    LLMMetadata,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.llms import CustomLLM, MockFunctionCallingLLM, MockLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import FunctionTool

from langchain_recursive_memory.core import (
    ConfigurationError,
    HybridMemory,
    InvalidInputError,
    MemoryStore,
    RecursiveMemory,
    RecursiveMemoryError,
    ToolCall,
    Turn,
)
from langchain_recursive_memory.core.turn import group_tool_calls
from llamaindex_higmem import LlamaIndexTextModel, RecursiveSummaryMemory
from llamaindex_higmem.messages import (
    SummaryMessage,
    chat_message_to_turn,
    is_summary_message,
    turn_to_chat_message,
)

BUDGET = 700
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


# -- scripted stand-ins -------------------------------------------------------------------


class ScriptedSummarizer(CustomLLM):
    """A LlamaIndex LLM answering summary prompts with a fakes.KeywordSummarizer."""

    _model: Any = PrivateAttr()
    _sync: int = PrivateAttr(default=0)
    _async: int = PrivateAttr(default=0)

    def __init__(self, model: Any = None) -> None:
        super().__init__()
        self._model = model if model is not None else KeywordSummarizer()

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-summarizer")

    @property
    def sync_calls(self) -> int:
        return self._sync

    @property
    def async_calls(self) -> int:
        return self._async

    @property
    def calls(self) -> int:
        return self._sync + self._async

    @property
    def prompts(self) -> list[str]:
        return self._model.prompts

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self._sync += 1
        return CompletionResponse(text=self._model.complete(prompt))

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        self._async += 1
        return CompletionResponse(text=await self._model.acomplete(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


class ScriptedChatLLM(CustomLLM):
    """A chat model that records every prompt and answers ``Noted point <n>...``."""

    _prompts: list[list[ChatMessage]] = PrivateAttr(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True, model_name="scripted-chat")

    @property
    def prompts(self) -> list[list[ChatMessage]]:
        return self._prompts

    def _answer(self, messages: Sequence[ChatMessage]) -> ChatResponse:
        self._prompts.append(list(messages))
        n = len(self._prompts)
        return ChatResponse(
            message=ChatMessage(role="assistant", content=f"Noted point {n}: value {n * 7}.")
        )

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._answer(messages)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._answer(messages)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="unused")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


class StoreHoursRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="The store opens at 9 and closes at 5."))]


def _memory(store: MemoryStore, llm: Any, session_id: str = "conv-1", **kwargs: Any):
    kwargs.setdefault("token_limit", BUDGET)
    kwargs.setdefault("max_summary_tokens", 150)
    return RecursiveSummaryMemory.from_defaults(
        session_id=session_id, store=store, llm=llm, retry=FAST, **kwargs
    )


def _tokens(messages: Sequence[ChatMessage]) -> int:
    return COUNTER.count_turns([chat_message_to_turn(m) for m in messages])


def _question(i: int) -> str:
    return f"Remember that item {i} weighs {i + 3} kg, Bob."


def _check_pairs(messages: Sequence[ChatMessage]) -> None:
    """Every tool result follows its call and every call has its result, in one list."""
    calls: list[str] = []
    results: list[str] = []
    for m in messages:
        ids = [b.tool_call_id for b in m.blocks if isinstance(b, ToolCallBlock)]
        calls += [i for i in ids if i]
        if m.role == MessageRole.TOOL:
            call_id = m.additional_kwargs["tool_call_id"]
            assert call_id in calls, f"tool result {call_id} without its call"
            results.append(call_id)
    assert sorted(calls) == sorted(results)


def _check_single_leading_system(messages: Sequence[ChatMessage]) -> None:
    systems = [i for i, m in enumerate(messages) if m.role == MessageRole.SYSTEM]
    assert systems in ([], [0]), [m.role for m in messages]


# -- message conversion -------------------------------------------------------------------

ROUND_TRIP = [
    ChatMessage(role="user", content="plain text"),
    ChatMessage(role="user", content=""),
    ChatMessage(role="assistant", blocks=[]),
    ChatMessage(role="user", blocks=[TextBlock(text="first"), TextBlock(text="second")]),
    ChatMessage(role="user", blocks=[TextBlock(text="look at this"), ImageBlock(image=PNG)]),
    ChatMessage(role="user", blocks=[ImageBlock(url="https://example.org/cat.png", detail="low")]),
    ChatMessage(
        role="user",
        blocks=[
            DocumentBlock(data=b"%PDF-1.4 tiny", document_mimetype="application/pdf"),
            AudioBlock(audio=b"\x00\x01\xfe\xff", format="wav"),
        ],
    ),
    ChatMessage(
        role="assistant",
        blocks=[
            ThinkingBlock(content="need the sum", additional_information={"signature": "s1"}),
            TextBlock(text="Let me add."),
            ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1, "b": 2}),
            ToolCallBlock(tool_call_id="c2", tool_name="add", tool_kwargs='{"a": 3}'),
        ],
    ),
    ChatMessage(role="tool", content="3", additional_kwargs={"tool_call_id": "c1"}),
    ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ]
        },
    ),
    ChatMessage(role="developer", content="Answer in French."),
    ChatMessage(role="chatbot", content="Bonjour"),
    ChatMessage(role="model", content="Salut"),
    ChatMessage(role="function", content="42", additional_kwargs={"name": "answer"}),
    ChatMessage(role="system", content="Be brief.", additional_kwargs={"cache": {"ttl": 5}}),
    ChatMessage(
        role="user",
        blocks=[CitableBlock(title="Doc", source="s://1", content=[TextBlock(text="cited")])],
    ),
]


@pytest.mark.parametrize("message", ROUND_TRIP, ids=lambda m: f"{m.role.value}-{len(m.blocks)}")
def test_round_trip_through_json_is_lossless(message):
    turn = chat_message_to_turn(message)
    again = Turn.from_json(turn.to_json())
    assert turn_to_chat_message(again) == message


def test_round_trip_through_the_store(store):
    memory = _memory(store, None, token_limit=8000, max_summary_tokens=100)
    memory.put_messages(ROUND_TRIP)
    assert memory.get_all() == ROUND_TRIP
    assert memory.get() == ROUND_TRIP  # all fit: nothing folded, same messages


def test_roles_map_to_core_roles_and_back():
    expected = {
        "user": "user",
        "assistant": "assistant",
        "system": "system",
        "tool": "tool",
        "developer": "system",
        "function": "tool",
        "chatbot": "assistant",
        "model": "assistant",
    }
    for role, core_role in expected.items():
        turn = chat_message_to_turn(ChatMessage(role=role, content="x"))
        assert turn.role == core_role
        assert turn_to_chat_message(turn).role == MessageRole(role)


def test_text_is_the_message_content_and_blocks_are_json_dicts():
    msg = ROUND_TRIP[7]  # thinking + text + two tool calls
    turn = chat_message_to_turn(msg)
    assert turn.text == "Let me add." == msg.content
    assert [b["type"] for b in turn.blocks] == ["thinking", "text", "tool_call", "tool_call"]
    assert turn.tool_calls == (
        ToolCall("add", {"a": 1, "b": 2}, "c1"),
        ToolCall("add", {"a": 3}, "c2"),
    )
    assert chat_message_to_turn(ChatMessage(role="user", content="hi")).blocks is None


def test_tool_calls_from_additional_kwargs_and_tool_results_group_with_them():
    openai_style = chat_message_to_turn(ROUND_TRIP[9])
    assert openai_style.tool_calls == (ToolCall("weather", {"city": "Oslo"}, "call_9"),)
    anthropic_style = chat_message_to_turn(
        ChatMessage(
            role="assistant",
            content="",
            additional_kwargs={
                "tool_calls": [{"id": "tu_1", "name": "search", "input": {"q": "x"}}]
            },
        )
    )
    assert anthropic_style.tool_calls == (ToolCall("search", {"q": "x"}, "tu_1"),)
    legacy = chat_message_to_turn(
        ChatMessage(
            role="assistant",
            content="",
            additional_kwargs={"function_call": {"name": "f", "arguments": '{"n": 1}'}},
        )
    )
    assert legacy.tool_calls == (ToolCall("f", {"n": 1}, None),)
    result = chat_message_to_turn(ROUND_TRIP[8])
    assert result.role == "tool" and result.tool_call_id == "c1"
    user = chat_message_to_turn(ChatMessage(role="user", content="add 1 and 2"))
    call = chat_message_to_turn(ROUND_TRIP[7])
    second = chat_message_to_turn(
        ChatMessage(role="tool", content="3", additional_kwargs={"tool_call_id": "c2"})
    )
    assert [len(g) for g in group_tool_calls([user, call, result, second])] == [1, 3]


def test_media_blocks_cost_a_fixed_amount_not_their_base64():
    big = os.urandom(30_000)
    msg = ChatMessage(
        role="user",
        blocks=[TextBlock(text="What is this?"), ImageBlock(image=big, image_mimetype="image/png")],
    )
    turn = chat_message_to_turn(msg)
    assert turn.blocks[1]["type"] == "image"
    cost = COUNTER.count_turn(turn)
    assert COUNTER.media_tokens < cost < COUNTER.media_tokens + 20
    assert COUNTER.count_text(turn.blocks[1]["image"]) > 10 * cost  # what it would have cost
    for block in (
        DocumentBlock(data=big, document_mimetype="application/pdf"),
        AudioBlock(audio=big, format="wav"),
    ):
        t = chat_message_to_turn(ChatMessage(role="user", blocks=[block]))
        assert COUNTER.count_turn(t) < COUNTER.media_tokens + 10


def test_an_image_message_fits_the_budget_of_the_memory(store):
    memory = _memory(store, None, token_limit=1200, max_summary_tokens=100)
    msg = ChatMessage(
        role="user",
        blocks=[TextBlock(text="Describe it."), ImageBlock(image=os.urandom(60_000))],
    )
    memory.put(msg)
    got = memory.get()
    assert got == [msg]  # counted at ~770 tokens, so it is shown, image bytes intact
    assert memory.context().tokens <= 1200


def test_turns_of_other_adapters_become_native_llamaindex_messages():
    call = Turn(
        role="assistant",
        text="",
        tool_calls=(ToolCall("search", {"q": "tea"}, "t1"),),
        extra={"additional_kwargs": {"refusal": None}, "response_metadata": {"x": 1}},
    )
    msg = turn_to_chat_message(call)
    assert msg.role == MessageRole.ASSISTANT
    assert msg.additional_kwargs == {}  # LangChain fields are not sent to a LlamaIndex LLM
    assert msg.blocks == [
        ToolCallBlock(tool_call_id="t1", tool_name="search", tool_kwargs={"q": "tea"})
    ]
    result = turn_to_chat_message(Turn(role="tool", text="found", tool_call_id="t1"))
    assert result.additional_kwargs == {"tool_call_id": "t1"} and result.content == "found"
    image = turn_to_chat_message(
        Turn(
            role="user",
            text="see",
            blocks=(
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}},
            ),
        )
    )
    assert [type(b) for b in image.blocks] == [TextBlock, ImageBlock]
    assert str(image.blocks[1].url) == "https://example.org/a.png"
    summary = turn_to_chat_message(
        Turn(role="user", text="Summary: ...", extra={"lrm_kind": "summary", "lrm_version": 2})
    )
    assert isinstance(summary, SummaryMessage) and is_summary_message(summary)
    assert summary.additional_kwargs == {}  # nothing unknown reaches the provider


def test_conversion_rejects_other_objects():
    with pytest.raises(InvalidInputError, match="message='hi'"):
        chat_message_to_turn("hi")
    with pytest.raises(InvalidInputError):
        turn_to_chat_message(ChatMessage(role="user", content="x"))


# -- chat engines -------------------------------------------------------------------------


def test_simple_chat_engine_120_exchanges_whole_prompt_within_budget(store):
    summarizer = ScriptedSummarizer()
    memory = _memory(store, summarizer)
    llm = ScriptedChatLLM()
    engine = SimpleChatEngine.from_defaults(
        llm=llm, memory=memory, system_prompt="You are a terse assistant."
    )
    n = 120
    for i in range(n):
        reply = engine.chat(_question(i))
        assert str(reply) == f"Noted point {i + 1}: value {(i + 1) * 7}."
        prompt = llm.prompts[-1]
        # The whole request, system prompt included: the engine passes the system prompt's
        # tokens as initial_token_count because the memory has a tokenizer_fn.
        assert _tokens(prompt) <= BUDGET
        _check_single_leading_system(prompt)
        assert prompt[-1].content == _question(i)
        if i:
            assert prompt[-2].content == f"Noted point {i}: value {i * 7}."
    every = memory.get_all()
    assert len(every) == 2 * n
    assert [m.content for m in every[::2]] == [_question(i) for i in range(n)]
    assert memory.summary is not None
    assert 0 < summarizer.calls < n // 2  # folded a window at a time, not every turn
    assert summarizer.async_calls == 0
    first = memory.get()[0]
    assert isinstance(first, SummaryMessage) and first.role == MessageRole.USER
    assert len(memory.get()) < len(every)


@pytest.mark.parametrize("engine_cls", [ContextChatEngine, CondensePlusContextChatEngine])
def test_context_engines_110_exchanges_history_within_budget(store, engine_cls):
    summarizer = ScriptedSummarizer()
    memory = _memory(store, summarizer)
    llm = ScriptedChatLLM()
    engine = engine_cls.from_defaults(StoreHoursRetriever(), llm=llm, memory=memory)
    n = 110
    answers = 0
    for i in range(n):
        engine.chat(_question(i))
        prompt = llm.prompts[-1]  # the answer's prompt (after any condense call)
        assert prompt[0].role == MessageRole.SYSTEM
        assert "opens at 9" in prompt[0].content
        _check_single_leading_system(prompt)
        history = prompt[1:-1]
        assert _tokens(history) <= BUDGET
        assert _question(i) in prompt[-1].content
        answers += 1
    every = memory.get_all()
    assert len(every) == 2 * n == 2 * answers
    assert [m.content for m in every[::2]] == [_question(i) for i in range(n)]
    assert memory.summary is not None and 0 < summarizer.calls < n // 2
    assert isinstance(memory.get()[0], SummaryMessage)


async def test_async_context_engine_uses_the_async_path(store):
    summarizer = ScriptedSummarizer()
    memory = _memory(store, summarizer)
    llm = ScriptedChatLLM()
    engine = ContextChatEngine.from_defaults(StoreHoursRetriever(), llm=llm, memory=memory)
    n = 110
    for i in range(n):
        await engine.achat(_question(i))
        assert _tokens(llm.prompts[-1][1:-1]) <= BUDGET
    assert len(await memory.aget_all()) == 2 * n
    assert summarizer.async_calls > 0 and summarizer.sync_calls == 0
    got = await memory.aget()
    assert got == memory.get()
    assert _tokens(got) <= BUDGET and isinstance(got[0], SummaryMessage)


def test_drop_in_for_chat_memory_buffer_below_the_budget(store):
    ours = _memory(store, ScriptedSummarizer(), token_limit=3000)
    theirs = ChatMemoryBuffer.from_defaults(token_limit=3000)
    batch = [*ROUND_TRIP[7:9], ChatMessage(role="user", content="thanks")]
    for memory in (ours, theirs):
        memory.put(ChatMessage(role="user", content="add 1 and 2"))
        memory.put_messages(batch)
    assert ours.get() == theirs.get()
    assert ours.get_all() == theirs.get_all()


# -- agents -------------------------------------------------------------------------------


def _weigh(item: int) -> str:
    """Weigh an item and return its weight."""
    return f"{item * 3} kg"


def _scripted_tool_caller(seen: list[list[ChatMessage]]):
    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(list(messages))
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content=f"It weighs {last.content}.")
        item = int(last.content.rsplit(" ", 1)[-1].rstrip("?"))
        return ChatMessage(
            role="assistant",
            blocks=[
                TextBlock(text="Let me weigh it."),
                ToolCallBlock(
                    tool_call_id=f"call-{len(seen)}", tool_name="_weigh", tool_kwargs={"item": item}
                ),
            ],
        )

    return respond


@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")  # workflows
async def test_function_agent_keeps_tool_call_pairs_and_the_budget(store):
    seen: list[list[ChatMessage]] = []
    llm = MockFunctionCallingLLM(response_generator=_scripted_tool_caller(seen))
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(_weigh)], llm=llm, system_prompt="Be brief."
    )
    summarizer = ScriptedSummarizer()
    memory = _memory(store, summarizer, token_limit=500, max_summary_tokens=100)
    runs = 40
    for i in range(runs):
        answer = await agent.run(f"How heavy is item {i}?", memory=memory)
        assert str(answer) == f"It weighs {i * 3} kg."
        got = await memory.aget()
        assert _tokens(got) <= 500
        _check_pairs(got)
        _check_single_leading_system(got)
    assert len(seen) == 2 * runs
    for prompt in seen:
        _check_pairs(prompt)  # what the model saw: no orphan tool result or call
        _check_single_leading_system(prompt)
    every = await memory.aget_all()
    assert len(every) == 4 * runs  # user, assistant call, tool result, answer
    _check_pairs(every)
    assert memory.summary is not None and summarizer.async_calls > 0
    got = memory.get()
    assert isinstance(got[0], SummaryMessage)
    assert any(m.role == MessageRole.TOOL for m in got)  # recent tool pairs stay verbatim


# -- persistence, sessions, set/reset -------------------------------------------------------


def test_restart_from_the_same_chroma_path_makes_no_llm_call(tmp_path):
    summarizer = ScriptedSummarizer()
    memory = _memory(None, summarizer, path=tmp_path / "db", token_limit=500)
    engine = SimpleChatEngine.from_defaults(llm=ScriptedChatLLM(), memory=memory)
    for i in range(40):
        engine.chat(f"Item {i} is for Nora.")
    before = memory.get()
    version = memory.get_summary().version
    assert isinstance(before[0], SummaryMessage) and summarizer.calls > 0

    fresh = ScriptedSummarizer()
    again = _memory(None, fresh, path=tmp_path / "db", token_limit=500)
    assert again.path == str(tmp_path / "db")
    assert again.get() == before
    assert len(again.get_all()) == 80
    assert fresh.calls == 0  # resumed: nothing re-summarized on start or read
    engine = SimpleChatEngine.from_defaults(llm=ScriptedChatLLM(), memory=again)
    for i in range(15):
        engine.chat(f"More {i} for Nora.")
    assert fresh.calls >= 1 and again.get_summary().version > version
    # Later folds continue from the stored summary and never see folded turns again.
    assert all("Item 0 " not in prompt_messages(p) for p in fresh.prompts)


def test_chat_history_preload_is_idempotent(tmp_path):
    history = [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"Line {i} about Oslo.")
        for i in range(60)
    ]
    first = ScriptedSummarizer()
    memory = _memory(None, first, path=tmp_path, chat_history=history, token_limit=400)
    assert memory.get_all() == history and memory.summary is not None
    second = ScriptedSummarizer()
    again = _memory(None, second, path=tmp_path, chat_history=history, token_limit=400)
    assert again.get_all() == history
    assert second.calls == 0  # the same history again: nothing cleared, nothing re-summarized


def test_two_sessions_on_one_store_are_isolated(store):
    a = _memory(store, ScriptedSummarizer(), session_id="alice", token_limit=400)
    b = _memory(store, ScriptedSummarizer(), session_id="bob", token_limit=400)
    other_ns = _memory(store, ScriptedSummarizer(), session_id="alice", namespace="app-2")
    for i in range(40):
        a.put(ChatMessage(role="user", content=f"Alice secret {i} is Lima."))
        b.put(ChatMessage(role="user", content=f"Bob note {i} is Quito."))
    other_ns.put(ChatMessage(role="user", content="Other app."))
    assert all("Alice" in m.content for m in a.get_all())
    assert all("Bob" in m.content for m in b.get_all())
    assert "Quito" not in a.summary and "Lima" not in b.summary
    assert all("Quito" not in (m.content or "") for m in a.get())
    assert [m.content for m in other_ns.get_all()] == ["Other app."]
    a.reset()
    assert a.get() == [] and a.get_all() == [] and a.summary is None
    assert len(b.get_all()) == 40 and b.summary is not None
    assert len(other_ns.get_all()) == 1


def test_set_replaces_and_reset_clears(store):
    memory = _memory(store, ScriptedSummarizer())
    memory.put_messages([ChatMessage(role="user", content=f"old {i}") for i in range(3)])
    new = [ChatMessage(role="user", content="new a"), ChatMessage(role="assistant", content="b")]
    memory.set(new)
    assert memory.get_all() == new and memory.get() == new
    memory.set([])
    assert memory.get_all() == []
    memory.put(ChatMessage(role="user", content="x"))
    memory.reset()
    assert memory.get_all() == [] and memory.get() == []


def test_set_with_the_stored_log_as_prefix_keeps_the_summary(store):
    summarizer = ScriptedSummarizer()
    memory = _memory(store, summarizer, token_limit=400)
    for i in range(30):
        memory.put(ChatMessage(role="user", content=f"Point {i} about Kyoto."))
    version, calls = memory.get_summary().version, summarizer.calls
    extra = ChatMessage(role="assistant", content="All noted.")
    memory.set([*memory.get_all(), extra])
    assert memory.get_all()[-1] == extra and len(memory.get_all()) == 31
    assert memory.get_summary().version == version and summarizer.calls == calls
    # A different history is a real replacement.
    memory.set([ChatMessage(role="user", content="Fresh start.")])
    assert [m.content for m in memory.get_all()] == ["Fresh start."]
    assert memory.summary is None


def test_summary_message_handed_back_is_never_stored(store):
    memory = _memory(store, ScriptedSummarizer(), token_limit=400)
    for i in range(30):
        memory.put(ChatMessage(role="user", content=f"Fact {i}: Zed owns {i} cats."))
    current = memory.get()
    assert isinstance(current[0], SummaryMessage)
    before = len(memory.get_all())
    memory.put(current[0])
    assert len(memory.get_all()) == before
    memory.set(current)  # e.g. engine.chat(q, chat_history=memory.get())
    stored = memory.get_all()
    assert stored == current[1:]
    assert not any(m.content.startswith("Summary of the earlier") for m in stored)


async def test_async_set_put_reset(store):
    memory = _memory(store, ScriptedSummarizer())
    await memory.aput(ChatMessage(role="user", content="one"))
    await memory.aput_messages([ChatMessage(role="assistant", content="two")])
    assert [m.content for m in await memory.aget()] == ["one", "two"]
    await memory.aset([ChatMessage(role="user", content="three")])
    assert [m.content for m in await memory.aget_all()] == ["three"]
    await memory.areset()
    assert await memory.aget_all() == [] and await memory.aget() == []


# -- budgets, recall, failures ----------------------------------------------------------------


def test_initial_token_count_leaves_room_for_the_prefix(store):
    memory = _memory(store, ScriptedSummarizer(), token_limit=600)
    for i in range(40):
        memory.put(ChatMessage(role="user", content=f"Note {i} about the garden in Bergen."))
    full = memory.get()
    overhead = COUNTER.message_overhead("system")
    prefix = 600 - _tokens(full) + 40  # a system prompt that does not fit beside ``full``
    assert _tokens(full) + prefix + overhead > 600
    reduced = memory.get(initial_token_count=prefix)
    assert isinstance(reduced[0], SummaryMessage) and reduced[0] == full[0]
    assert len(reduced) < len(full) and reduced[-1] == full[-1]
    assert reduced[1:] == full[len(full) - len(reduced) + 1 :]  # the newest ones, in order
    assert _tokens(reduced) + prefix + overhead <= 600
    with pytest.raises(InvalidInputError, match="initial_token_count=601"):
        memory.get(initial_token_count=601)


def test_hybrid_memory_recalls_facts_for_the_question(store):
    memory = RecursiveSummaryMemory.from_defaults(
        session_id="h",
        store=store,
        llm=ScriptedSummarizer(FactModel()),
        extract_facts=True,
        token_limit=800,
        max_summary_tokens=100,
        retry=FAST,
    )
    assert isinstance(memory.memory, HybridMemory) and memory.recall_tokens == 200
    memory.put(ChatMessage(role="user", content="My locker code is 4471."))
    for i in range(40):
        memory.put_messages(
            [
                ChatMessage(role="user", content=f"Small talk number {i} about the weather."),
                ChatMessage(role="assistant", content="Indeed, lovely."),
            ]
        )
    plain = memory.get()
    asked = memory.get(input="What is my locker code?")
    assert "4471" not in plain[0].content  # the drifting summary lost it
    assert "4471" in asked[0].content  # recalled for the question
    assert asked[1:] == plain[1:]  # same window either way
    assert _tokens(asked) <= 800
    assert [f.text for f in memory.memory.facts()] == ["The user's locker code is 4471."]


def test_a_failing_summarizer_loses_nothing_and_keeps_the_budget(store):
    failing = FailingModel(mode="raise")
    summarizer = ScriptedSummarizer(failing)
    memory = _memory(store, summarizer, token_limit=400)
    for i in range(40):
        memory.put(ChatMessage(role="user", content=f"Offline note {i} for Ivo."))
        assert _tokens(memory.get()) <= 400
    assert memory.summary is None and failing.failed_calls > 0
    assert len(memory.get_all()) == 40
    failing.failing = False
    memory.put(ChatMessage(role="user", content="Back online."))
    assert memory.summary is not None
    assert memory.get()[-1].content == "Back online."


def test_an_llamaindex_llm_is_the_summarizer(store):
    memory = _memory(store, MockLLM(max_tokens=20), token_limit=400, max_summary_tokens=50)
    assert isinstance(memory.memory.model, LlamaIndexTextModel)
    for i in range(30):
        memory.put(ChatMessage(role="user", content=f"Message {i} " * 5))
    assert memory.summary == " ".join(["text"] * 20)  # MockLLM's answer
    assert memory.get_summary().method == "llm"


async def test_llamaindex_text_model():
    model = LlamaIndexTextModel(MockLLM())
    assert model.complete("echo") == "echo"
    assert await model.acomplete("echo async") == "echo async"
    with pytest.raises(ConfigurationError, match="llm="):
        LlamaIndexTextModel(object())  # type: ignore[arg-type]


# -- settings and errors ------------------------------------------------------------------


def test_settings_are_pydantic_fields_and_read_only(store):
    memory = _memory(store, None, token_limit=900, summary_role="system", max_messages=20)
    assert RecursiveSummaryMemory.class_name() == "RecursiveSummaryMemory"
    data = memory.to_dict()
    assert data["class_name"] == "RecursiveSummaryMemory"
    assert data["token_limit"] == 900 and data["session_id"] == "conv-1"
    assert data["summary_role"] == MessageRole.SYSTEM and data["max_messages"] == 20
    assert memory.memory.config.max_tokens == 900
    assert type(memory.memory) is RecursiveMemory
    described = RecursiveSummaryMemory.model_fields
    assert all(described[name].description for name in described)
    with pytest.raises(ValueError, match="frozen"):
        memory.token_limit = 10
    assert memory.tokenizer_fn("hello world") == COUNTER.encoding.encode("hello world")
    wrapped = RecursiveSummaryMemory(memory=memory.memory)
    assert wrapped.token_limit == 900 and wrapped.memory is memory.memory


def test_to_dict_and_back_reopens_the_same_session(tmp_path):
    memory = _memory(None, None, path=tmp_path, token_limit=900, recall_k=5)
    memory.put(ChatMessage(role="user", content="Kept across serialization."))
    again = RecursiveSummaryMemory.from_dict(memory.to_dict())
    assert again.recall_k == 5 and again.token_limit == 900 and again.path == str(tmp_path)
    assert again.get_all() == memory.get_all()
    assert again.memory is not memory.memory


def test_a_deep_copy_shares_the_store_handle(store):
    import copy

    memory = _memory(store, None)
    twin = copy.deepcopy(memory)  # what a workflow's isolated state edit does
    assert twin.memory is memory.memory
    twin.put(ChatMessage(role="user", content="seen by both"))
    assert [m.content for m in memory.get()] == ["seen by both"]


def test_summary_role_system_gives_one_leading_system_message(store):
    memory = _memory(store, ScriptedSummarizer(), token_limit=400, summary_role="system")
    for i in range(30):
        memory.put_messages(
            [
                ChatMessage(role="user", content=f"Number {i} is lucky for Eve."),
                ChatMessage(role="assistant", content="Sure."),
            ]
        )
    got = memory.get()
    assert got[0].role == MessageRole.SYSTEM and isinstance(got[0], SummaryMessage)
    _check_single_leading_system(got)


def test_errors_come_from_the_package_hierarchy(store, tmp_path):
    memory = _memory(store, None)
    bad_calls = [
        (lambda: memory.put("hello"), InvalidInputError, "message='hello'"),
        (lambda: memory.put_messages(ChatMessage(content="x")), InvalidInputError, "messages="),
        (lambda: memory.put_messages("abc"), InvalidInputError, "messages="),
        (lambda: memory.set([ChatMessage(content="ok"), 42]), InvalidInputError, "message=42"),
        (lambda: memory.get(input=42), InvalidInputError, "input=42"),
        (lambda: memory.get(initial_token_count=-1), InvalidInputError, "initial_token_count"),
        (lambda: _memory(store, None, session_id=""), InvalidInputError, "session_id"),
        (lambda: _memory(store, None, token_limit=-5), ConfigurationError, "token_limit=-5"),
        (lambda: _memory(store, 42), ConfigurationError, "llm=42"),
        (lambda: _memory(store, None, summary_role="tool"), ConfigurationError, "summary_role"),
        (lambda: _memory(store, None, path=tmp_path), ConfigurationError, "path"),
        (lambda: _memory(store, None, chat_store_key="k"), ConfigurationError, "chat_store_key"),
        (lambda: RecursiveSummaryMemory(session_id=123), ConfigurationError, "session_id"),
        (lambda: _memory(store, None, recall_k=0), ConfigurationError, "recall_k"),
        (
            lambda: RecursiveSummaryMemory(memory=memory.memory, token_limit=5),
            ConfigurationError,
            "token_limit=5",
        ),
    ]
    for call, error, match in bad_calls:
        with pytest.raises(error, match=match) as info:
            call()
        assert isinstance(info.value, RecursiveMemoryError)
    assert memory.get_all() == []  # the bad set() stored nothing


def test_package_imports_and_works_without_langchain_core():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('langchain_core', 'langchain'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from llama_index.core.llms import ChatMessage\n"
        "from langchain_recursive_memory.core import MemoryStore\n"
        "from llamaindex_higmem import RecursiveSummaryMemory\n"
        "m = RecursiveSummaryMemory.from_defaults(session_id='s', store=MemoryStore.in_memory())\n"
        "m.put(ChatMessage(role='user', content='hi'))\n"
        "print([x.content for x in m.get()])\n"
        "bad = [n for n in sys.modules if n.split('.')[0] in ('langchain_core', 'langchain')]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("['hi']")


async def test_context_and_usage_have_async_twins(store):
    memory = _memory(store, ScriptedSummarizer(), recall_tokens=200)
    for i in range(40):
        memory.put(ChatMessage(role="user", content=_question(i)))
    memory.fold(force=True)
    question = "How much does item 7 weigh?"
    assert await memory.acontext(question) == memory.context(question)
    assert await memory.ausage() == memory.usage() and memory.usage().calls >= 1


# -- recall without an input (issue 28, item 2) -----------------------------------------------

LOCKER = "My locker code is 4471."


def _filler(i: int) -> str:
    return f"Small talk number {i} about the weather."


def _prompt_text(prompt: Sequence[ChatMessage]) -> str:
    return " ".join(str(m.content) for m in prompt)


def _forgetful(store: MemoryStore, session_id: str = "locker", **kwargs: Any):
    """A memory whose summary drifts (only the newest chunk): recall must bring facts back."""
    kwargs.setdefault("recall_tokens", 200)
    return _memory(store, ScriptedSummarizer(FactModel()), session_id, token_limit=800, **kwargs)


def test_simple_chat_engine_gets_recall_for_the_question_just_put(store):
    memory = _forgetful(store)
    llm = ScriptedChatLLM()
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Be brief.")
    engine.chat(LOCKER)
    for i in range(60):
        engine.chat(_filler(i))
    assert LOCKER not in [str(m.content) for m in memory.get()]  # folded out of the window
    assert "4471" not in _prompt_text(llm.prompts[-1])  # and out of the drifting summary
    engine.chat("What is my locker code?")
    prompt = llm.prompts[-1]
    assert "4471" in _prompt_text(prompt)  # recalled for the newest user message
    assert _tokens(prompt) <= 800
    assert prompt[-1].content == "What is my locker code?"
    assert memory.get() == memory.get(input="What is my locker code?")


async def test_async_simple_chat_engine_gets_recall_too(store):
    memory = _forgetful(store, "alocker")
    llm = ScriptedChatLLM()
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    await engine.achat(LOCKER)
    for i in range(60):
        await engine.achat(_filler(i))
    assert "4471" not in _prompt_text(llm.prompts[-1])
    await engine.achat("What is my locker code?")
    assert "4471" in _prompt_text(llm.prompts[-1])
    assert await memory.aget() == memory.get()
    assert memory.context() == memory.context("What is my locker code?")


def test_get_without_input_recalls_nothing_when_recall_is_off(store):
    memory = _forgetful(store, "off", recall_tokens=0)
    memory.put(ChatMessage(role="user", content=LOCKER))
    for i in range(60):
        memory.put(ChatMessage(role="user", content=_filler(i)))
    memory.put(ChatMessage(role="user", content="What is my locker code?"))
    assert "4471" not in _prompt_text(memory.get())
