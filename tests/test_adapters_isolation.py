"""Users stay apart through the frameworks' current paths too (issue 34, item 5).

The same property as ``test_users_isolation.py`` (two users whose ids, namespaces and
thread or session ids are drawn to look alike, the same attribute, values alike in form),
driven through the agent middleware (the user from the run's config) and through
LlamaIndex's ``Memory`` with the hybrid block (the user named at ``aget``): nothing one
user said reaches the other, neither in what the chat model is sent nor in a recall, and
forgetting one user leaves the other whole, read back from the database and Chroma.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from conftest import FAST, chroma_records, database_rows
from fakes import FactModel
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from llama_index.core.llms import ChatMessage
from pydantic import Field
from test_llamaindex_blocks import ScriptedLLM, block_part, fifo
from test_users_isolation import SETTINGS, attributes, ids, namespaces

from langchain_recursive_memory.core import MemoryStore
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
from llamaindex_higmem import HybridMemoryBlock

SMALL_TALK = "Small talk number {} about the weather."


class RecordingChat(GenericFakeChatModel):
    """A chat model that answers "Noted." and keeps the text of every request it is sent."""

    sent: list[str] = Field(default_factory=list)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        self.sent.append(" ".join(str(m.content) for m in messages))
        return super()._generate(messages, stop, run_manager, **kw)


def _everything(store: MemoryStore) -> str:
    """Every row of the database and every Chroma record of the store, as one text."""
    rows = {"db": database_rows(store), "chroma": chroma_records(store)}
    return json.dumps(rows, ensure_ascii=False, default=str)


def _forgetting_keeps_the_other_whole(store, victim, attacker, mine, theirs) -> None:
    (vns, vuser), (ans, auser) = victim, attacker
    before = store.user_facts(vns, vuser)
    store.forget_user(ans, auser)
    assert before and store.user_facts(vns, vuser) == before
    assert mine in _everything(store) and theirs not in _everything(store)
    store.forget_user(vns, vuser)
    assert mine not in _everything(store)


def _middleware(store: MemoryStore, namespace: str) -> RecursiveMemoryMiddleware:
    return RecursiveMemoryMiddleware(
        store=store,
        namespace=namespace,
        llm=FactModel(),
        extract_facts=True,
        recall_scope="user",
        max_tokens=500,
        max_summary_tokens=80,
        retry=FAST,
    )


@SETTINGS
@given(
    victim=st.tuples(namespaces, ids),
    attacker=st.tuples(namespaces, ids),
    thread=ids,
    attribute=attributes,
    secrets=st.lists(st.integers(100, 999), min_size=2, max_size=2, unique=True),
)
def test_the_middleware_never_hands_one_user_another_users_memory(
    victim, attacker, thread, attribute, secrets
):
    if victim == attacker:
        return
    store = MemoryStore.in_memory()
    mine, theirs = f"Zq{secrets[0]}", f"Zq{secrets[1]}"
    (vns, _), (ans, auser) = victim, attacker
    other = thread if vns != ans else thread + "\u200b"  # a thread has one user
    chat = RecordingChat(messages=itertools.repeat(AIMessage("Noted.")))
    for (ns, user), tid, secret in ((victim, thread, mine), (attacker, other, theirs)):
        mw = _middleware(store, ns)
        agent = create_agent(chat, middleware=[mw])
        config = {"configurable": {"thread_id": tid, "user_id": user}}
        for text in [f"My {attribute} is {secret}.", *map(SMALL_TALK.format, range(6))]:
            agent.invoke({"messages": [HumanMessage(text)]}, config)
        mw.get_memory(tid, user_id=user).fold(force=True, keep=False)

    mw = _middleware(store, ans)
    agent = create_agent(chat, middleware=[mw])
    chat.sent.clear()
    new = {"configurable": {"thread_id": other + "-new", "user_id": auser}}
    agent.invoke({"messages": [HumanMessage(f"What is my {attribute}?")]}, new)
    assert not any(mine in text for text in chat.sent), chat.sent
    assert any(theirs in text for text in chat.sent)  # the attacker's own memory is there
    memory = mw.get_memory(other + "-new", user_id=auser)
    question = f"What is my {attribute}? {mine}"
    seen = [
        h.text for scope in ("session", "user") for h in memory.recall(question, 8, scope=scope)
    ]
    seen += [f.text for f in memory.facts()] + [t.text for t in memory.context(question).turns]
    assert not any(mine in text for text in seen), seen
    _forgetting_keeps_the_other_whole(store, victim, attacker, mine, theirs)


@SETTINGS
@given(
    victim=st.tuples(namespaces, ids),
    attacker=st.tuples(namespaces, ids),
    session=ids,
    attribute=attributes,
    secrets=st.lists(st.integers(100, 999), min_size=2, max_size=2, unique=True),
)
def test_the_blocks_never_hand_one_user_another_users_memory(
    victim, attacker, session, attribute, secrets
):
    if victim == attacker:
        return
    asyncio.run(_blocks(victim, attacker, session, attribute, secrets))


async def _blocks(victim, attacker, session, attribute, secrets) -> None:
    store = MemoryStore.in_memory()
    mine, theirs = f"Zq{secrets[0]}", f"Zq{secrets[1]}"
    (vns, _), (ans, auser) = victim, attacker
    other = session if vns != ans else session + "\u200b"  # a session has one user

    def block(namespace: str) -> HybridMemoryBlock:
        return HybridMemoryBlock.from_defaults(
            store=store,
            namespace=namespace,
            llm=ScriptedLLM.of(FactModel()),
            token_limit=500,
            scope="user",
            retry=FAST,
        )

    for (ns, user), sid, secret in ((victim, session, mine), (attacker, other, theirs)):
        shared = block(ns)
        memory = fifo(shared, sid)
        await memory.aget(user_id=user)  # the application names the session's user
        await memory.aput(ChatMessage(role="user", content=f"My {attribute} is {secret}."))
        for i in range(30):
            await memory.aput_messages(
                [
                    ChatMessage(role="assistant", content="Noted."),
                    ChatMessage(role="user", content=SMALL_TALK.format(i)),
                ]
            )
        await shared.engine(sid).afold(force=True, keep=False)

    asked = fifo(block(ans), other + "-new")
    got = await asked.aget(input=f"What is my {attribute}? {mine}", user_id=auser)
    text = block_part(got, "hybrid_memory")
    assert mine not in text and theirs in text, text
    _forgetting_keeps_the_other_whole(store, victim, attacker, mine, theirs)
