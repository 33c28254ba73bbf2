"""Provider message formats: OpenAI, Anthropic, LangChain and LlamaIndex shapes as turns.

Also the grounding check: a summarizer answering an error text instead of raising.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from conftest import COUNTER, FAST, write_jsonl
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ToolCallBlock

from langchain_recursive_memory.core import (
    FunctionTextModel,
    InvalidInputError,
    MemoryStore,
    ModelOutputError,
    RecursiveMemory,
    Turn,
)
from langchain_recursive_memory.core.ingest import read_jsonl, turns_from_dicts
from langchain_recursive_memory.messages import message_to_turn, turn_to_message
from llamaindex_higmem.messages import chat_message_to_turn, turn_to_chat_message

IMAGE = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 160).decode()


def test_an_openai_transcript_with_an_image_and_a_tool_call_is_read_as_structured_turns(
    tmp_path: Path, store: MemoryStore
) -> None:
    records = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture, and how warm is Oslo?"},
                {"type": "image_url", "image_url": {"url": IMAGE}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "4 C and cloudy"},
    ]
    user, assistant, result = read_jsonl(write_jsonl(tmp_path / "t.jsonl", records))
    assert user.text == "What is in this picture, and how warm is Oslo?"
    assert user.blocks is not None and user.blocks[1]["type"] == "image_url"
    assert COUNTER.count_turn(user) < 800  # the image costs 765, not its 54k base64 tokens
    assert assistant.text == "" and assistant.tool_calls[0].name == "weather"
    assert dict(assistant.tool_calls[0].args) == {"city": "Oslo"}
    assert result.role == "tool" and result.tool_call_id == "call_1"
    memory = RecursiveMemory("s", store=store, max_tokens=2000)
    memory.add([user, assistant, result])
    assert [t.role for t in memory.context().window] == ["user", "assistant", "tool"]


def test_anthropic_blocks_thinking_tool_use_results_and_compaction() -> None:
    records = [
        {"role": "user", "content": [{"type": "compaction", "content": "Earlier: Ada likes tea."}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "The user wants the weather.",
                    "signature": "c2ln",
                },
                {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Lima"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "19 C"},
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ]
    compaction, assistant, result, follow_up = turns_from_dicts(records)
    assert compaction.text == "Earlier: Ada likes tea." and compaction.blocks is not None
    assert assistant.tool_calls[0].id == "toolu_1" and assistant.tool_calls[0].args == {
        "city": "Lima"
    }
    assert "Let me check." in assistant.text
    kinds = [b["type"] for b in assistant.blocks or ()]
    assert kinds == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert result.role == "tool" and result.tool_call_id == "toolu_1" and result.text == "19 C"
    assert follow_up.role == "user" and follow_up.text == "And tomorrow?"
    tokens = COUNTER.count_turn(assistant)
    assert tokens >= COUNTER.count_text("The user wants the weather.")  # thinking counted as text


def test_malformed_arguments_make_an_invalid_call_never_a_dropped_one() -> None:
    record = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c9", "function": {"name": "lookup", "arguments": '{"key": "Al'}}],
    }
    [turn] = turns_from_dicts([record])
    assert turn.tool_calls[0].id == "c9" and turn.tool_calls[0].error is not None


def test_langchain_messages_round_trip_through_their_dict_and_openai_shapes() -> None:
    messages = [
        SystemMessage("Be brief.", id="m0"),
        HumanMessage("Weather in Oslo?", id="m1"),
        AIMessage(
            "", id="m2", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}]
        ),
        ToolMessage("4 C", tool_call_id="c1", id="m3"),
        AIMessage("It is 4 C.", id="m4"),
    ]
    via_dict = turns_from_dicts(messages_to_dict(messages))
    assert [turn_to_message(t) for t in via_dict] == messages_from_dict(messages_to_dict(messages))
    via_openai = turns_from_dicts(convert_to_openai_messages(messages))
    for got, message in zip(via_openai, messages, strict=True):
        want = message_to_turn(message)
        assert (got.role, got.text, got.tool_call_id) == (want.role, want.text, want.tool_call_id)
        assert [(c.name, dict(c.args), c.id) for c in got.tool_calls] == [
            (c.name, dict(c.args), c.id) for c in want.tool_calls
        ]


def test_llamaindex_messages_round_trip_through_model_dump() -> None:
    messages = [
        ChatMessage(
            role="user", blocks=[TextBlock(text="Look:"), ImageBlock(url="http://x/y.png")]
        ),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})],
        ),
        ChatMessage(role="tool", content="2", additional_kwargs={"tool_call_id": "c1"}),
    ]
    turns = turns_from_dicts([m.model_dump(mode="json") for m in messages])
    assert [t.role for t in turns] == ["user", "assistant", "tool"]
    assert turns[0].text == "Look:" and COUNTER.count_turn(turns[0]) > 765
    assert turns[1].tool_calls[0].name == "add" and turns[2].tool_call_id == "c1"
    for got, message in zip(turns, messages, strict=True):
        want = chat_message_to_turn(message)
        assert (got.role, got.text, got.tool_call_id) == (want.role, want.text, want.tool_call_id)
        assert turn_to_chat_message(got).role == message.role


def test_unreadable_records_name_the_record() -> None:
    with pytest.raises(InvalidInputError, match=r"^record 2: unknown role 'robot'"):
        turns_from_dicts([{"role": "user", "content": "hi"}, {"role": "robot", "content": "?"}])
    with pytest.raises(InvalidInputError, match=r"^record 1: content must be"):
        turns_from_dicts([{"role": "user", "content": 42}])


# -- the grounding check -----------------------------------------------------------------------


def test_a_summarizer_answering_an_error_text_is_a_failed_fold(store: MemoryStore) -> None:
    answers = {"text": "Error generating summary: 429 Too Many Requests. Please retry later."}
    model = FunctionTextModel(lambda prompt: answers["text"])
    memory = RecursiveMemory("s", store=store, model=model, retry=FAST, max_tokens=400)
    for i in range(30):
        memory.add(Turn(role="user", text=f"Ada planted {i} tulips in the garden today."))
    assert memory.get_summary() is None  # never written in as the summary
    assert isinstance(memory.last_fold_error, ModelOutputError)
    assert len(memory.turns()) == 30 and memory.context().tokens <= 400
    answers["text"] = "Ada planted tulips in the garden, day after day."
    assert memory.fold().versions >= 1
    assert memory.get_summary() is not None and "tulips" in memory.get_summary().text


def test_one_role_alias_table_for_dicts_langchain_messages_and_summary_role(tmp_path):
    from langchain_core.messages import ChatMessage as LangChainChatMessage

    from langchain_recursive_memory.core.builder import MemoryOptions, build_memory
    from langchain_recursive_memory.core.turn import ROLE_ALIASES, ROLES

    for name, role in [*ROLE_ALIASES.items(), *((r, r) for r in ROLES)]:
        assert turns_from_dicts([{"role": name.upper(), "content": "x"}])[0].role == role
        assert message_to_turn(LangChainChatMessage(role=name, content="x")).role == role
    with pytest.raises(InvalidInputError, match="chatbot"):  # the error lists every name
        message_to_turn(LangChainChatMessage(role="wizard", content="x"))
    memory = build_memory("s", MemoryOptions(summary_role="human"), store=MemoryStore.in_memory())
    assert memory.config.summary_role == "user"
