"""RecursiveSummaryChatMessageHistory inside LangChain, with scripted models."""

from __future__ import annotations

import warnings

import pytest
from conftest import FAST
from fakes import KeywordSummarizer, prompt_messages
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import (
    ConfigurationError,
    MemoryStore,
    TokenCounter,
)
from langchain_recursive_memory.messages import message_to_turn

BUDGET = 800


def _answers(n: int) -> GenericFakeChatModel:
    return GenericFakeChatModel(
        messages=iter(AIMessage(f"Noted point {i}: value {i * 7} for Ada.") for i in range(n))
    )


def _chain(histories: dict[str, RecursiveSummaryChatMessageHistory], n: int, seen: list):
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a helpful assistant."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )

    def spy(value):
        seen.append(value.to_messages())
        return value

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return RunnableWithMessageHistory(
            prompt | spy | _answers(n),
            lambda session_id: histories[session_id],
            input_messages_key="question",
            history_messages_key="history",
        )


def _history(store: MemoryStore, model: object) -> RecursiveSummaryChatMessageHistory:
    return RecursiveSummaryChatMessageHistory(
        "conv-1",
        llm=model,
        store=store,
        max_tokens=BUDGET,
        max_summary_tokens=150,
        retry=FAST,
    )


def _check_prompt(messages: list[BaseMessage], counter: TokenCounter) -> None:
    history = messages[1:-1]
    turns = [message_to_turn(m) for m in history]
    assert counter.count_turns(turns) <= BUDGET
    # Exactly one system message, and it is the first.
    assert [i for i, m in enumerate(messages) if isinstance(m, SystemMessage)] == [0]


def test_200_exchanges_in_runnable_with_message_history(store):
    model = KeywordSummarizer()
    histories = {"conv-1": _history(store, model)}
    seen: list = []
    chain = _chain(histories, 200, seen)
    counter = TokenCounter()
    cfg = {"configurable": {"session_id": "conv-1"}}
    for i in range(200):
        out = chain.invoke({"question": f"Remember that item {i} weighs {i + 3} kg, Bob."}, cfg)
        assert out.content.startswith(f"Noted point {i}")
        _check_prompt(seen[-1], counter)
        assert histories["conv-1"].context().tokens <= BUDGET
    history = histories["conv-1"]
    assert len(history.all_messages()) == 400
    assert history.summary is not None
    assert 0 < model.calls < 200  # folded a window at a time, not every turn
    messages = history.messages
    assert messages[0].response_metadata["lrm_kind"] == "summary"
    assert isinstance(messages[0], HumanMessage)
    assert messages[-1].content.startswith("Noted point 199")


async def test_200_exchanges_async(store):
    model = KeywordSummarizer()
    histories = {"conv-1": _history(store, model)}
    seen: list = []
    chain = _chain(histories, 200, seen)
    counter = TokenCounter()
    cfg = {"configurable": {"session_id": "conv-1"}}
    for i in range(200):
        await chain.ainvoke({"question": f"Remember that item {i} weighs {i + 3} kg."}, cfg)
        _check_prompt(seen[-1], counter)
    history = histories["conv-1"]
    assert len(await history.aall_messages()) == 400
    messages = await history.aget_messages()
    assert counter.count_turns([message_to_turn(m) for m in messages]) <= BUDGET
    assert history.summary is not None


def test_drop_in_for_in_memory_history(store):
    """Below the budget it behaves exactly like InMemoryChatMessageHistory."""
    ours = _history(store, KeywordSummarizer())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = InMemoryChatMessageHistory()
    batch = [
        SystemMessage("Be brief."),
        HumanMessage("hi", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "t1", "type": "tool_call"}],
        ),
        ToolMessage("found x", tool_call_id="t1", id="tm1"),
        AIMessage([{"type": "text", "text": "Here is x."}], id="a2"),
    ]
    for history in (ours, theirs):
        history.add_messages(batch)
        history.add_user_message("thanks")
    assert [(type(m), m.content) for m in ours.messages] == [
        (type(m), m.content) for m in theirs.messages
    ]
    assert ours.messages[2].tool_calls[0]["args"] == {"q": "x"}
    assert ours.messages[3].tool_call_id == "t1"
    ours.clear()
    assert ours.messages == [] and ours.all_messages() == []


def test_summary_message_passed_back_is_not_stored(store):
    history = _history(store, KeywordSummarizer())
    for i in range(40):
        history.add_messages(
            [HumanMessage(f"Fact {i}: Zed owns {i} cats.", id=f"h{i}"), AIMessage("ok", id=f"a{i}")]
        )
    current = history.messages
    assert current[0].response_metadata.get("lrm_kind") == "summary"
    before = len(history.all_messages())
    history.add_messages(current)  # e.g. a user re-saving what they read
    assert len(history.all_messages()) == before  # summary skipped, ids deduplicated
    # Messages given without an id come back without one (as InMemoryChatMessageHistory
    # gives them back): passed in again, they are new messages.
    history.add_messages([HumanMessage("no id")])
    assert history.messages[-1].id is None


def test_summary_role_is_configurable(store):
    history = RecursiveSummaryChatMessageHistory(
        "s", store=store, llm=KeywordSummarizer(), max_tokens=400, summary_role="system", retry=FAST
    )
    for i in range(30):
        history.add_messages([HumanMessage(f"Number {i} is lucky for Eve."), AIMessage("Sure.")])
    first = history.messages[0]
    assert isinstance(first, SystemMessage)
    assert sum(isinstance(m, SystemMessage) for m in history.messages) == 1


def test_a_langchain_chat_model_is_the_summarizer(store):
    summarizer = FakeListChatModel(responses=["Ada owns 3 cats and lives in Oslo."] * 50)
    history = RecursiveSummaryChatMessageHistory(
        "s", store=store, llm=summarizer, max_tokens=400, max_summary_tokens=100, retry=FAST
    )
    for i in range(20):
        history.add_messages([HumanMessage(f"Message {i} " * 5), AIMessage("ok " * 5)])
    assert history.summary == "Ada owns 3 cats and lives in Oslo."
    assert history.get_summary().method == "llm"


def test_constructor_errors_name_the_value(store, tmp_path):
    with pytest.raises(ConfigurationError, match="llm=42"):
        RecursiveSummaryChatMessageHistory("s", store=store, llm=42)
    with pytest.raises(ConfigurationError, match="store"):
        RecursiveSummaryChatMessageHistory("s", store=store, path=tmp_path)
    with pytest.raises(ConfigurationError, match="max_tokens=-5"):
        RecursiveSummaryChatMessageHistory("s", store=store, max_tokens=-5)


def test_persistent_path_and_client(tmp_path):
    import chromadb
    from chromadb.config import Settings

    history = RecursiveSummaryChatMessageHistory("s", path=tmp_path / "db")
    history.add_messages([HumanMessage("persist me")])
    client = chromadb.PersistentClient(
        path=str(tmp_path / "db"), settings=Settings(anonymized_telemetry=False)
    )
    again = RecursiveSummaryChatMessageHistory("s", client=client)
    assert [m.content for m in again.messages] == ["persist me"]


def test_restart_from_the_same_path_makes_no_llm_call(tmp_path):
    model = KeywordSummarizer()
    history = RecursiveSummaryChatMessageHistory(
        "s", llm=model, path=tmp_path, max_tokens=500, max_summary_tokens=100, retry=FAST
    )
    for i in range(30):
        history.add_messages([HumanMessage(f"Item {i} is for Nora."), AIMessage("Noted.")])
    before = history.messages
    assert before[0].response_metadata["lrm_kind"] == "summary"

    fresh = KeywordSummarizer()
    again = RecursiveSummaryChatMessageHistory(
        "s", llm=fresh, path=tmp_path, max_tokens=500, max_summary_tokens=100, retry=FAST
    )
    assert [m.content for m in again.messages] == [m.content for m in before]
    assert fresh.calls == 0  # resumed: nothing re-summarized on start or read
    for i in range(10):
        again.add_messages([HumanMessage(f"More {i} for Nora."), AIMessage("Noted.")])
    # Later folds continue from the stored summary; they never see the folded turns again.
    assert fresh.calls >= 1
    assert all("(empty" not in p for p in fresh.prompts)
    assert all("Item 0 " not in prompt_messages(p) for p in fresh.prompts)


def test_streamed_answers_are_stored(store):
    """RunnableWithMessageHistory.stream hands the history an AIMessageChunk."""
    history = RecursiveSummaryChatMessageHistory("s", store=store, retry=FAST)
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = RunnableWithMessageHistory(
            prompt | _answers(3),
            lambda session_id: history,
            input_messages_key="question",
            history_messages_key="history",
        )
    chunks = list(chain.stream({"question": "hello"}, {"configurable": {"session_id": "s"}}))
    assert len(chunks) > 1
    stored = history.all_messages()
    assert [type(m).__name__ for m in stored] == ["HumanMessage", "AIMessage"]
    assert stored[1].content == "Noted point 0: value 0 for Ada."


async def test_context_and_usage_have_async_twins(store):
    history = _history(store, KeywordSummarizer())
    for i in range(40):
        history.add_messages(
            [HumanMessage(f"Item {i} of the garden plan?"), AIMessage(f"Item {i}: plant beans.")]
        )
    history.fold(force=True)
    assert await history.acontext() == history.context()
    assert await history.ausage() == history.usage() and history.usage().calls >= 1
