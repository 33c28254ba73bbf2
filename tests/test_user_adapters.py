"""Every adapter exposes the user scope the way its framework does (issue 16, item 2)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import FAST
from fakes import FactModel, KeywordSummarizer
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from llama_index.core.llms import ChatMessage

from langchain_recursive_memory import (
    ConfigurationError,
    HiGMemRetriever,
    RecursiveMemoryRetriever,
    RecursiveSummaryChatMessageHistory,
)
from langchain_recursive_memory.core import HiGMem, RecursiveMemory, Turn
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
from llamaindex_higmem import HiGMemMemoryBlock, RecursiveSummaryMemory
from llamaindex_higmem import HiGMemRetriever as LlamaHiGMemRetriever

FILLER = [f"Small talk number {i} about the weather." for i in range(30)]


def history(store, sid: str, user: str | None = "ada", **kw: Any):
    kw.setdefault("max_tokens", 500)
    kw.setdefault("max_summary_tokens", 80)
    kw.setdefault("llm", FactModel())
    kw.setdefault("extract_facts", True)
    return RecursiveSummaryChatMessageHistory(sid, user_id=user, store=store, retry=FAST, **kw)


def ended(h, *lines: str) -> None:
    h.add_messages([HumanMessage(t) for t in lines])
    h.fold(force=True, keep=False)


# -- LangChain ---------------------------------------------------------------------------------


def test_the_chat_history_takes_user_id_and_recalls_the_users_facts(store):
    ended(history(store, "monday"), "My home city is Oslo.")
    fresh = history(store, "next-week")
    assert fresh.user_id == "ada"
    docs = fresh.as_retriever(k=2, kinds=("fact",)).invoke("What is my home city?")
    assert docs[0].page_content == "The user's home city is Oslo."
    assert docs[0].metadata["user_id"] == "ada"
    assert history(store, "other", user="bob").as_retriever(k=2).invoke("home city") == []
    assert fresh.forget_user() == ["monday"]  # next-week wrote nothing
    assert store.user_facts("default", "ada") == []


def test_retriever_scope_user_reads_archived_turns_of_other_sessions(store):
    old = history(store, "old", extract_facts=False, llm=KeywordSummarizer())
    ended(old, "My locker code is 4471.", *FILLER)
    new = history(store, "new", extract_facts=False, llm=KeywordSummarizer())
    assert new.as_retriever(k=3).invoke("locker code") == []
    docs = new.as_retriever(k=3, scope="user").invoke("locker code")
    assert docs[0].page_content == "My locker code is 4471."
    assert docs[0].metadata["session_id"] == "old"
    with pytest.raises(Exception, match="scope"):
        new.as_retriever(scope="everyone")


def test_a_retriever_with_sessions_and_user_key_builds_each_runs_memory(store):
    calls = []

    def get_history(session_id: str, user_id: str):
        calls.append((session_id, user_id))
        return history(store, session_id, user=user_id)

    ended(history(store, "s1"), "My home city is Oslo.", "My diet is vegan.")
    retriever = RecursiveMemoryRetriever(sessions=get_history, user_key="user_id", k=1)
    cfg = {"configurable": {"session_id": "s2", "user_id": "ada"}}
    assert retriever.invoke("my diet", cfg)[0].page_content == "The user's diet is vegan."
    assert calls == [("s2", "ada")]
    with pytest.raises(ConfigurationError, match="user_id"):
        retriever.invoke("my diet", {"configurable": {"session_id": "s3"}})


def test_langchain_higmem_retriever_takes_scope(store):
    HiGMem("a", store=store, user_id="ada").add(
        Turn(role="user", name="Ada", text="My cat is called Miso.")
    )
    mine = HiGMem("b", store=store, user_id="ada")
    mine.add(Turn(role="user", name="Ada", text="Hello again."))
    assert "Miso" not in str(HiGMemRetriever(memory=mine, k=2).invoke("cat name"))
    docs = HiGMemRetriever(memory=mine, k=1, scope="user").invoke("cat name")
    assert docs[0].page_content == "My cat is called Miso."
    assert docs[0].metadata["session_id"] == "a"


def test_the_middleware_reads_the_user_from_the_runs_config(store):
    mw = RecursiveMemoryMiddleware(
        store=store, llm=FactModel(), extract_facts=True, max_tokens=800, retry=FAST
    )
    answers = iter([AIMessage("Noted."), AIMessage("Oslo.")])
    chat = GenericFakeChatModel(messages=answers)
    agent = create_agent(chat, middleware=[mw])
    first = {"configurable": {"thread_id": "t1", "user_id": "ada"}}
    agent.invoke({"messages": [HumanMessage("My home city is Oslo.")]}, first)
    mw.get_memory("t1").fold(force=True, keep=False)
    assert mw.get_memory("t1").user_id == "ada"
    second = {"configurable": {"thread_id": "t2", "user_id": "ada"}}
    agent.invoke({"messages": [HumanMessage("What is my home city?")]}, second)
    assert {f.key for f in mw.get_memory("t2").facts()} == {"user/home_city"}


def test_the_middleware_reads_the_user_from_the_runtime_context(store):
    from dataclasses import dataclass

    @dataclass
    class Context:
        user_id: str

    mw = RecursiveMemoryMiddleware(store=store, max_tokens=800, retry=FAST)
    chat = GenericFakeChatModel(messages=iter([AIMessage("Hi.")]))
    agent = create_agent(chat, middleware=[mw], context_schema=Context)
    agent.invoke(
        {"messages": [HumanMessage("Hi")]},
        {"configurable": {"thread_id": "t9"}},
        context=Context(user_id="bob"),
    )
    assert store.session("default", "t9").recorded_user() == "bob"
    fixed = RecursiveMemoryMiddleware(store=store, user_id="carol", max_tokens=800)
    assert fixed.get_memory("t10").user_id == "carol"  # the fixed user
    assert [u.user_id for u in store.users("default")] == ["bob"]


# -- LlamaIndex --------------------------------------------------------------------------------


def test_the_llamaindex_memory_takes_user_id(store):
    first = RecursiveSummaryMemory.from_defaults(
        session_id="m1", user_id="ada", store=store, llm=FactModel(), extract_facts=True
    )
    first.put(ChatMessage(role="user", content="My home city is Oslo."))
    first.put(ChatMessage(role="user", content="My diet is vegetarian."))
    first.fold(force=True, keep=False)
    second = RecursiveSummaryMemory.from_defaults(
        session_id="m2", user_id="ada", store=store, llm=FactModel(), extract_facts=True
    )
    assert second.user_id == "ada" and second.to_dict()["user_id"] == "ada"
    text = str(second.get(input="Which diet do I follow?")[0].content)
    assert "vegetarian" in text


def test_the_higmem_block_and_retriever_take_user_id_and_scope(store):
    block = HiGMemMemoryBlock.from_defaults(store=store, user_id="ada", scope="user", k=2)
    asyncio.run(block.aput([ChatMessage(role="user", content="My cat is Miso.")], session_id="a"))
    asyncio.run(block.aput([ChatMessage(role="user", content="Hello.")], session_id="b"))
    got = asyncio.run(block.aget([ChatMessage(role="user", content="cat name?")], session_id="b"))
    assert "My cat is Miso." in got
    retriever = LlamaHiGMemRetriever(block.engine("b"), k=1, scope="user")
    (node,) = retriever.retrieve("cat name")
    assert node.node.metadata["session_id"] == "a"
    assert node.node.id_ == f"a:{node.node.metadata['turn_id']}"
    alone = HiGMemMemoryBlock.from_defaults(store=store, k=2)
    assert "Miso" not in asyncio.run(
        alone.aget([ChatMessage(role="user", content="cat name?")], session_id="c")
    )


def test_the_runs_user_can_be_fixed_or_a_function_and_must_be_a_string():
    from langchain_recursive_memory.middleware.sessions import run_user

    assert run_user("ada", None) == "ada"
    assert run_user(lambda config, runtime: "zed", None) == "zed"
    assert run_user(None, None) is None  # a run that names no user: the thread alone
    with pytest.raises(ConfigurationError, match=r"user_id function's result=\[1\]"):
        run_user(lambda config, runtime: [1], None)


def test_recall_scope_user_is_the_default_of_the_historys_retriever(store):
    old = history(store, "old", extract_facts=False, llm=KeywordSummarizer())
    ended(old, "My locker code is 4471.", *FILLER)
    new = history(store, "new", extract_facts=False, llm=KeywordSummarizer(), recall_scope="user")
    assert new.memory.recall_scope == "user"
    assert new.as_retriever(k=1).invoke("locker code")[0].page_content == (
        "My locker code is 4471."
    )
    assert new.as_retriever(k=1, scope="session").invoke("locker code") == []


# -- issue 28: user scope alone recalls; facts name the session they came from ----------------


def plain(store, sid: str, **kw: Any) -> RecursiveSummaryChatMessageHistory:
    """A history with no model, no facts and no embedder: only the user scope asks for recall."""
    return RecursiveSummaryChatMessageHistory(sid, user_id="ada", store=store, max_tokens=500, **kw)


def test_recall_scope_user_alone_fills_messages_with_what_the_user_scope_recalls(store):
    old = plain(store, "old")
    ended(old, "My locker code is 4471.", *FILLER)
    new = plain(store, "new", recall_scope="user")
    assert new.memory.config.recall_tokens == 125  # a quarter: recall was asked for
    new.add_messages([HumanMessage("What is my locker code?")])
    first = new.messages[0].content
    assert "My locker code is 4471." in first
    recalled = new.memory.context("What is my locker code?").recalled
    assert {h.metadata["session_id"] for h in recalled} == {"old"}
    core = RecursiveMemory("core", store=store, user_id="ada", max_tokens=500, recall_scope="user")
    assert core.config.recall_tokens == 125  # the core follows the same rule
    assert plain(store, "same").memory.config.recall_tokens == 0  # session scope: as before
    given = plain(store, "given", recall_scope="user", recall_tokens=0)
    assert given.memory.config.recall_tokens == 0  # an explicit share wins
    found = {
        d.page_content: d.metadata["session_id"]
        for d in given.as_retriever(k=3).invoke("locker code")
    }  # the retriever still reads the user's sessions
    assert found["My locker code is 4471."] == "old"
    nobody = RecursiveSummaryChatMessageHistory("nobody", store=store, recall_scope="user")
    nobody.add_messages([HumanMessage("What is my locker code?")])
    with pytest.raises(ConfigurationError, match="recall_scope='user': session 'nobody'"):
        nobody.messages  # noqa: B018  # no user: the setting cannot work, and says so


def test_llamaindex_recall_scope_user_alone_recalls_the_users_sessions(store):
    ended(plain(store, "old"), "My locker code is 4471.", *FILLER)
    memory = RecursiveSummaryMemory.from_defaults(
        session_id="li", user_id="ada", store=store, token_limit=500, recall_scope="user"
    )
    assert memory.recall_tokens == 125
    memory.put(ChatMessage(role="user", content="What is my locker code?"))
    assert "4471" in str(memory.get(input="What is my locker code?")[0].content)


def test_recalled_facts_name_the_session_they_came_from(store):
    ended(history(store, "ada-3"), "My home city is Oslo.", "My diet is vegan.")
    ended(history(store, "ada-9"), "My home city is Berlin.")
    reader = history(store, "ada-21")
    for scope in ("session", "user"):
        retriever = reader.as_retriever(k=1, kinds=("fact",), scope=scope)
        (city,) = retriever.invoke("What is my home city?")
        assert city.metadata["session_id"] == "ada-9"  # the session of its wording
        assert city.metadata["session_ids"] == ["ada-3", "ada-9"]
        (diet,) = retriever.invoke("What is my diet?")
        assert diet.metadata["session_id"] == "ada-3"
        assert diet.metadata["user_id"] == "ada"
    li = RecursiveSummaryMemory.from_defaults(
        session_id="ada-22", user_id="ada", store=store, llm=FactModel(), extract_facts=True
    )
    hits = li.context("What is my diet?").recalled
    assert [(h.id, h.metadata["session_id"]) for h in hits] == [("user/diet", "ada-3")]
    alone = history(store, "solo", user=None)
    ended(alone, "My home city is Rome.")
    (doc,) = alone.as_retriever(k=1, kinds=("fact",)).invoke("home city")
    assert doc.metadata["session_id"] == "solo"  # a session's own fact: its session
