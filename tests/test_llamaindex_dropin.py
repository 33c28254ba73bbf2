"""``RecursiveSummaryMemory`` against the contract of the ``ChatMemoryBuffer`` it replaces.

LlamaIndex publishes no tests on PyPI, so these follow the behaviours llama-index-core's
own ``ChatMemoryBuffer`` tests check, built our way (``from_defaults`` with a store).
Documented differences: token counts are exact (each message's overhead counted, which
``ChatMemoryBuffer`` leaves out), so the limits of the summary tests here are scaled up; a
budget too small for a summary (under about 80 tokens) behaves as ``ChatMemoryBuffer``
(its own tests, with ``token_limit=5``, are at the end); the memory is a handle on a
Chroma store and does not pickle; ``from_dict`` reopens the same session from its store.
"""

from __future__ import annotations

import pytest
from conftest import COUNTER
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer

from langchain_recursive_memory.core import (
    ConfigurationError,
    InvalidInputError,
    MemoryStore,
)
from llamaindex_higmem import RecursiveSummaryMemory

FIRST = ChatMessage(role=MessageRole.USER, content="first message")
ANSWER = ChatMessage(role=MessageRole.ASSISTANT, content="first answer")
SECOND = ChatMessage(role=MessageRole.USER, content="second message")
SECOND_ANSWER = ChatMessage(role=MessageRole.ASSISTANT, content="second answer")


def cost(*messages: ChatMessage) -> int:
    from llamaindex_higmem.messages import chat_message_to_turn

    return sum(COUNTER.count_turn(chat_message_to_turn(m)) for m in messages)


def memory(store: MemoryStore, **kw: object) -> RecursiveSummaryMemory:
    return RecursiveSummaryMemory.from_defaults(store=store, **kw)  # type: ignore[arg-type]


def test_from_defaults_needs_no_session_like_chat_memory_buffer(store: MemoryStore) -> None:
    ours = memory(store, chat_history=[FIRST])
    assert ours.session_id == "chat_history" == ChatMemoryBuffer.from_defaults().chat_store_key
    assert [m.content for m in ours.get()] == ["first message"]


def test_small_limits_are_taken_with_a_scaled_summary_cap(store: MemoryStore) -> None:
    small = memory(store, session_id="small", token_limit=256)
    assert small.memory.config.max_summary_tokens == 64
    small.put_messages([FIRST, ANSWER])
    assert len(small.get()) == 2
    assert memory(store, session_id="tiny", token_limit=40).buffered  # see the buffer tests
    with pytest.raises(ConfigurationError, match="token_limit=40") as error:
        memory(store, session_id="tinier", token_limit=40, max_summary_tokens=16)
    assert "max_tokens" not in str(error.value)  # the parameter the user passed


def test_initial_tokens_below_the_limit_keep_the_history(store: MemoryStore) -> None:
    ours = memory(store, session_id="a", token_limit=1000, chat_history=[FIRST])
    assert ours.get(initial_token_count=5) == [FIRST]


def test_initial_tokens_over_the_limit_raise_like_chat_memory_buffer(store: MemoryStore) -> None:
    ours = memory(store, session_id="b", token_limit=100)
    with pytest.raises(ValueError, match=r"^Initial token count exceeds token limit"):
        ours.get(initial_token_count=101)
    with pytest.raises(InvalidInputError):
        ours.get(initial_token_count=101)


def test_initial_tokens_equal_to_the_limit_leave_no_history(store: MemoryStore) -> None:
    ours = memory(store, session_id="c", token_limit=100, chat_history=[FIRST])
    assert ours.get(initial_token_count=100) == []


def test_the_oldest_messages_give_way_to_the_prefix(store: MemoryStore) -> None:
    history = [FIRST, ANSWER, SECOND, SECOND_ANSWER]
    ours = memory(store, session_id="d", token_limit=400, chat_history=history)
    room = 400 - 3 - COUNTER.message_overhead("system")
    initial = room - cost(SECOND, SECOND_ANSWER)  # room for the last exchange only
    assert ours.get(initial_token_count=initial) == [SECOND, SECOND_ANSWER]
    assert ours.get() == history


def test_set_replaces_and_put_appends(store: MemoryStore) -> None:
    ours = memory(store, session_id="e", chat_history=[FIRST])
    ours.put(FIRST)
    assert len(ours.get()) == 2
    ours.set([FIRST])
    assert len(ours.get()) == 1


def test_the_limit_keeps_the_newest_and_get_all_keeps_everything(store: MemoryStore) -> None:
    ours = memory(store, session_id="f", token_limit=120, max_summary_tokens=16)
    for _ in range(12):
        ours.put(FIRST)
    ours.put(ChatMessage(role=MessageRole.USER, content="test message2"))
    got = ours.get()
    assert got[-1].content == "test message2" and len(got) < 13
    assert len(ours.get_all()) == 13


def test_dict_round_trip_reopens_the_same_session(tmp_path) -> None:
    ours = RecursiveSummaryMemory.from_defaults(
        session_id="g", path=str(tmp_path), token_limit=500, chat_history=[FIRST]
    )
    again = RecursiveSummaryMemory.from_dict(ours.to_dict())
    assert again.token_limit == 500 and len(again.get()) == 1
    assert RecursiveSummaryMemory.from_string(ours.to_string()).get() == [FIRST]


# -- llama-index-core's own ChatMemoryBuffer tests with token_limit=5 (issue 22, item 15) ------
# (tests/memory/test_chat_memory_buffer.py, the same steps and assertions, built our way.) A
# budget too small for a summary makes a buffer: the newest messages that fit, counted as
# ChatMemoryBuffer counts them (content only), no summary, and one warning saying so.

SECOND_ANSWER_AS_USER = ChatMessage(role=MessageRole.USER, content="second answer")


def content_tokens(*messages: ChatMessage) -> int:
    return len(COUNTER.encoding.encode(" ".join(str(m.content) for m in messages)))


def test_buffer_max_tokens(store: MemoryStore, caplog) -> None:
    with caplog.at_level("WARNING", logger="langchain_recursive_memory"):
        ours = memory(store, chat_history=[FIRST], token_limit=5)
        ours.put(FIRST)
        assert len(ours.get()) == 2
        ours.put(FIRST)
        ours.put(FIRST)
        assert len(ours.get()) == 2
        assert len(ours.get_all()) == 4
        ours.put(ChatMessage(role=MessageRole.USER, content="test message2"))
        assert ours.get()[-1].content == "test message2"
        assert len(ours.get()) == 2
    warned = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1, warned
    text = warned[0].getMessage()
    assert "token_limit=5" in text and "no summary" in text


def test_buffer_string_save_load(store: MemoryStore, tmp_path) -> None:
    ours = RecursiveSummaryMemory.from_defaults(
        path=str(tmp_path), chat_history=[FIRST], token_limit=5
    )
    again = RecursiveSummaryMemory.from_string(ours.to_string())
    assert len(again.get()) == 1
    assert again.token_limit == 5


def test_buffer_dict_save_load(store: MemoryStore, tmp_path) -> None:
    ours = RecursiveSummaryMemory.from_defaults(
        path=str(tmp_path), chat_history=[FIRST], token_limit=5
    )
    again = RecursiveSummaryMemory.from_dict(ours.to_dict())
    assert len(again.get()) == 1
    assert again.token_limit == 5


def test_buffer_initial_tokens_same_as_limit_removes_message(store: MemoryStore) -> None:
    ours = memory(store, token_limit=5, chat_history=[FIRST])
    assert len(ours.get(initial_token_count=5)) == 0


def test_buffer_space_for_assistant_message_removes_it_at_the_start(store: MemoryStore) -> None:
    initial = 5 - content_tokens(FIRST)
    ours = memory(store, token_limit=5, chat_history=[FIRST, ANSWER])
    assert len(ours.get(initial_token_count=initial)) == 0


def test_buffer_space_for_second_message_and_answer(store: MemoryStore) -> None:
    initial = 5 - content_tokens(FIRST) - content_tokens(ANSWER)
    history = [FIRST, ANSWER, SECOND, SECOND_ANSWER_AS_USER]
    ours = memory(store, token_limit=5, chat_history=history)
    assert ours.get(initial_token_count=initial) == [SECOND, SECOND_ANSWER_AS_USER]


def test_buffer_space_for_all_but_first_message(store: MemoryStore) -> None:
    initial = 10 - content_tokens(ANSWER) - content_tokens(FIRST) - content_tokens(SECOND_ANSWER)
    history = [FIRST, ANSWER, SECOND, SECOND_ANSWER_AS_USER]
    ours = memory(store, token_limit=10, chat_history=history)
    assert ours.get(initial_token_count=initial) == [SECOND, SECOND_ANSWER_AS_USER]


def test_a_buffer_never_calls_the_summarizer_and_loses_nothing(store: MemoryStore) -> None:
    from fakes import KeywordSummarizer

    from langchain_recursive_memory.core import FunctionTextModel

    summarizer = KeywordSummarizer()
    ours = memory(store, token_limit=40, llm=FunctionTextModel(summarizer.complete))
    for i in range(200):
        ours.put(ChatMessage(role=MessageRole.USER, content=f"message number {i}"))
    assert summarizer.calls == 0
    assert len(ours.get_all()) == 200
    got = ours.get()
    assert got[-1].content == "message number 199" and content_tokens(*got) <= 40
    newest = [f"message number {i}" for i in range(200 - len(got), 200)]
    assert [m.content for m in got] == newest  # what was put, and nothing else (no summary)
