"""The recursive summary and the hybrid memory as blocks of LlamaIndex's ``Memory``.

In chat engines and an agent, with a small FIFO: a fact said early reaches the model's
prompt 150 exchanges later (the messages the LLM receives are captured); one block shared
by sessions and users keeps them apart; sync and async paths; a failing summarizer loses
no message; the block's text stays within its ``token_limit``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from fakes import FactModel, FailingModel, prompt_messages, prompt_summary
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.chat_store.sql import MessageStatus
from llama_index.core.tools import FunctionTool

import llamaindex_higmem
from langchain_recursive_memory.core import (
    ConfigurationError,
    InvalidInputError,
    MemoryConfig,
    MemoryStore,
    RetryPolicy,
    TokenCounter,
)
from llamaindex_higmem import (
    HiGMemMemoryBlock,
    HybridMemoryBlock,
    RecursiveSummaryMemoryBlock,
    summary_blocks,
)

FAST = RetryPolicy(attempts=1, initial_delay=0.0, timeout=5.0, cooldown=0.0)
COUNTER = TokenCounter("gpt-4o")
EXCHANGES = 150
_STATEMENT = re.compile(r"\b[Mm]y [a-z ]+? (?:is|are) [^.?!\n]+")


# -- test doubles ---------------------------------------------------------------------------


class KeepingScript:
    """A summarizer that keeps every "my X is Y" statement: a summary that does not drift."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt: str) -> str:
        self.calls += 1
        if prompt.startswith("Shorten"):
            return prompt_summary(prompt)
        previous = prompt_summary(prompt)
        kept = [] if previous.startswith("(empty") else previous.splitlines()
        said = _STATEMENT.findall(prompt_messages(prompt))
        kept += [f"The user said: {s}." for s in said]
        return "\n".join(dict.fromkeys(kept)) or "Small talk only."


class ScriptedLLM(MockLLM):
    """A LlamaIndex LLM whose completions a script writes (reaches the core through llms.py)."""

    _script: Any = PrivateAttr(default=None)

    @classmethod
    def of(cls, script: Any) -> ScriptedLLM:
        llm = cls()
        llm._script = script
        return llm

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._script.complete(prompt))


class Recording(MockLLM):
    """The chat model: records the messages of every chat call, answers "Noted."."""

    prompts: list[list[ChatMessage]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.prompts.append(list(messages))
        return ChatResponse(message=ChatMessage(role="assistant", content="Noted."))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="What did the user ask?")  # a condensed question


class GymRetriever(BaseRetriever):
    """A retriever of one fixed document (the engines' own context)."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="The gym opens at 6 am."), score=1.0)]


def fifo(block: Any, session: str) -> Memory:
    """A ``Memory`` with a small FIFO (about 150 tokens) flushing to ``block``."""
    return Memory.from_defaults(
        session_id=session,
        token_limit=300,
        chat_history_token_ratio=0.5,
        token_flush_size=40,
        memory_blocks=[block],
    )


def block_part(messages: Sequence[ChatMessage], name: str) -> str:
    """The text of block ``name`` in the prompt ``Memory`` built ("" when absent)."""
    for message in messages:
        found = re.search(rf"<{name}>\s*(.*?)\s*</{name}>", message.content or "", re.S)
        if found:
            return found.group(1)
    return ""


def outside(messages: Sequence[ChatMessage], name: str) -> str:
    """Everything in the prompt but the block's text."""
    text = " ".join(str(m.content) for m in messages)
    return text.replace(block_part(messages, name), "")


def small_talk(i: int) -> str:
    return f"Small talk number {i} about the weather."


THROUGH_ENGINE = 20
"""Exchanges of the long conversations run through the engine or agent; the others are put
in the ``Memory`` as the engine puts them (a user message, then the answer): LlamaIndex's
own engines take 30-90 ms an exchange, too slow for 150 in the default test run."""


def put_exchanges(memory: Memory, start: int, stop: int) -> None:
    for i in range(start, stop):
        memory.put(ChatMessage(role="user", content=small_talk(i)))
        memory.put(ChatMessage(role="assistant", content="Noted."))


async def aput_exchanges(memory: Memory, start: int, stop: int) -> None:
    for i in range(start, stop):
        await memory.aput(ChatMessage(role="user", content=small_talk(i)))
        await memory.aput(ChatMessage(role="assistant", content="Noted."))


def summarizing(store: MemoryStore, script: Any) -> RecursiveSummaryMemoryBlock:
    llm = ScriptedLLM.of(script)
    return RecursiveSummaryMemoryBlock.from_defaults(
        store=store, llm=llm, token_limit=400, retry=FAST
    )


# -- a fact said early reaches the prompt 150 exchanges later ---------------------------------


def test_simple_chat_engine_with_the_recursive_block_keeps_an_early_fact(store):
    script = KeepingScript()
    block = summarizing(store, script)
    llm = Recording()
    memory = fifo(block, "ada")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    engine.chat("My locker code is 4471.")
    for i in range(THROUGH_ENGINE):
        engine.chat(small_talk(i))
        part = block_part(llm.prompts[-1], "recursive_summary")
        assert COUNTER.count_text(part) <= block.token_limit
    put_exchanges(memory, THROUGH_ENGINE, EXCHANGES)
    engine.chat("What is my locker code?")
    prompt = llm.prompts[-1]
    part = block_part(prompt, "recursive_summary")
    assert "4471" in part and "4471" not in outside(prompt, "recursive_summary")
    assert part.startswith("Summary of the earlier conversation:")
    assert script.calls >= 1
    summary = block.engine("ada").get_summary()
    assert summary is not None and "4471" in summary.text


async def test_condense_plus_context_engine_with_the_hybrid_block_recalls_an_early_fact(store):
    block = HybridMemoryBlock.from_defaults(store=store, token_limit=500)  # no LLM: BM25
    llm = Recording()
    memory = fifo(block, "ada")
    engine = CondensePlusContextChatEngine.from_defaults(
        retriever=GymRetriever(), llm=llm, memory=memory
    )
    await engine.achat("My locker code is 4471.")
    for i in range(THROUGH_ENGINE):
        await engine.achat(small_talk(i))
    await aput_exchanges(memory, THROUGH_ENGINE, EXCHANGES)
    await engine.achat(small_talk(EXCHANGES))
    assert "4471" not in " ".join(str(m.content) for m in llm.prompts[-1])  # folded away
    await engine.achat("What is my locker code?")
    prompt = llm.prompts[-1]
    part = block_part(prompt, "hybrid_memory")
    assert "user: My locker code is 4471." in part
    assert "4471" not in outside(prompt, "hybrid_memory")
    assert "The gym opens at 6 am." in outside(prompt, "hybrid_memory")
    assert COUNTER.count_text(part) <= block.token_limit


def _weather(city: str) -> str:
    """Get the weather of a city."""
    return f"Sunny in {city}."


@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")
async def test_function_agent_with_the_hybrid_block_and_facts_recalls_an_early_fact(store):
    facts = FactModel()
    block = HybridMemoryBlock.from_defaults(
        store=store, llm=ScriptedLLM.of(facts), token_limit=500, retry=FAST
    )
    seen: list[list[ChatMessage]] = []

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(list(messages))
        last = messages[-1]
        if last.role == MessageRole.USER and "Paris" in str(last.content):
            call = ToolCallBlock(
                tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Paris"}
            )
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content="Noted.")

    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(_weather, name="weather")],
        llm=MockFunctionCallingLLM(response_generator=respond),
    )
    memory = fifo(block, "ada")
    await agent.run("My locker code is 4471.", memory=memory)
    for i in range(THROUGH_ENGINE):
        text = "What is the weather in Paris?" if i % 10 == 0 else small_talk(i)
        await agent.run(text, memory=memory)
    await aput_exchanges(memory, THROUGH_ENGINE, EXCHANGES)
    await agent.run("What is my locker code?", memory=memory)
    part = block_part(seen[-1], "hybrid_memory")
    assert "fact: The user's locker code is 4471." in part
    assert "4471" not in outside(seen[-1], "hybrid_memory")
    assert facts.calls >= 1 and COUNTER.count_text(part) <= block.token_limit
    logged = block.engine("ada").turns()
    assert any(s.turn.tool_calls and s.turn.tool_calls[0].name == "weather" for s in logged)
    assert any(s.turn.role == "tool" and s.turn.text == "Sunny in Paris." for s in logged)


# -- isolation -----------------------------------------------------------------------------


async def test_a_block_shared_by_two_sessions_keeps_them_apart(store):
    block = HybridMemoryBlock.from_defaults(
        store=store, llm=ScriptedLLM.of(FactModel()), token_limit=500, retry=FAST
    )
    alice, mallory = fifo(block, "alice"), fifo(block, "mallory")
    await alice.aput(ChatMessage(role="user", content="My bank pin is 4471."))
    await mallory.aput(ChatMessage(role="user", content="My bank pin is 9999."))
    for i in range(30):
        for memory in (alice, mallory):
            await memory.aput_messages(
                [
                    ChatMessage(role="assistant", content="Noted."),
                    ChatMessage(role="user", content=small_talk(i)),
                ]
            )
    question = "What is my bank pin?"
    alice_text = block_part(await alice.aget(input=question), "hybrid_memory")
    mallory_text = block_part(await mallory.aget(input=question), "hybrid_memory")
    assert "4471" in alice_text and "9999" not in alice_text
    assert "9999" in mallory_text and "4471" not in mallory_text
    assert not any("9999" in s.turn.text for s in block.engine("alice").turns())
    assert not any("9999" in f.text for f in block.engine("alice").facts())


async def test_a_block_shared_by_two_users_recalls_only_each_users_sessions(store):
    block = HybridMemoryBlock.from_defaults(
        store=store, llm=ScriptedLLM.of(FactModel()), token_limit=500, scope="user", retry=FAST
    )
    users = {"ada-1": "ada", "ada-2": "ada", "bob-1": "bob"}
    memories = {session: fifo(block, session) for session in users}
    said = {"ada-1": "My locker code is 4471.", "bob-1": "My locker code is 9999."}
    for session, memory in memories.items():
        await memory.aget(user_id=users[session])  # the app names the session's user
        if session in said:
            await memory.aput(ChatMessage(role="user", content=said[session]))
        for i in range(30):
            await memory.aput_messages(
                [
                    ChatMessage(role="assistant", content="Noted."),
                    ChatMessage(role="user", content=small_talk(i)),
                ]
            )
    question = "What is my locker code?"
    ada = block_part(await memories["ada-2"].aget(input=question, user_id="ada"), "hybrid_memory")
    bob = block_part(await memories["bob-1"].aget(input=question, user_id="bob"), "hybrid_memory")
    assert "4471" in ada and "9999" not in ada  # from ada's other session
    assert "9999" in bob and "4471" not in bob
    assert block.engine("ada-2").user.user_id == "ada"
    with pytest.raises(ConfigurationError, match="belongs to user 'ada'"):
        await memories["ada-1"].aget(input=question, user_id="bob")
    fixed = HybridMemoryBlock.from_defaults(store=store, user_id="bob", scope="user")
    text = await fixed.aget([ChatMessage(role="user", content=question)], session_id="bob-2")
    assert "9999" in text and "4471" not in text


async def test_the_recursive_block_reads_only_its_session(store):
    block = summarizing(store, KeepingScript())
    one, two = fifo(block, "one"), fifo(block, "two")
    await one.aput(ChatMessage(role="user", content="My locker code is 4471."))
    for i in range(40):
        await one.aput_messages(
            [
                ChatMessage(role="assistant", content="Noted."),
                ChatMessage(role="user", content=small_talk(i)),
            ]
        )
        await two.aput_messages(
            [
                ChatMessage(role="assistant", content="Fine."),
                ChatMessage(role="user", content="Hello."),
            ]
        )
    assert "4471" in block_part(await one.aget(), "recursive_summary")
    assert "4471" not in block_part(await two.aget(), "recursive_summary")
    assert {s.turn.text for s in block.engine("two").turns()} <= {"Fine.", "Hello."}


async def test_a_block_needs_a_session(store):
    block = RecursiveSummaryMemoryBlock.from_defaults(store=store)
    with pytest.raises(InvalidInputError, match="session"):
        await block.aget([ChatMessage(role="user", content="anything")])
    fixed = RecursiveSummaryMemoryBlock.from_defaults(store=store, session_id="solo")
    await fixed.aput([ChatMessage(role="user", content="The boat is called Sea Otter.")])
    assert "Sea Otter" in await fixed.aget([])


async def test_a_block_keeps_a_bounded_number_of_engines(store, monkeypatch):
    monkeypatch.setattr(summary_blocks, "MAX_ENGINES", 3)
    block = HybridMemoryBlock.from_defaults(store=store, token_limit=300)
    first = block.engine("s0")
    for i in range(10):
        text = f"Session {i} keeps the code {4400 + i} in the drawer."
        await block.aput([ChatMessage(role="user", content=text)], session_id=f"s{i}")
        assert len(block._engines) <= 3
    assert block.engine("s0") is not first  # evicted, built again: its state is in the store
    text = await block.aget([ChatMessage(role="user", content="the code?")], session_id="s0")
    assert "4400" in text and "4409" not in text


# -- sync and async, failures, budgets -----------------------------------------------------


def _without_times(text: str) -> str:
    return re.sub(r"\[\d{4}-\d\d-\d\d[^\]]*\] ", "", text)


async def _async_conversation(memory: Memory) -> str:
    await memory.aput(ChatMessage(role="user", content="My locker code is 4471."))
    for i in range(40):
        await memory.aput_messages(
            [
                ChatMessage(role="assistant", content="Noted."),
                ChatMessage(role="user", content=small_talk(i)),
            ]
        )
    return block_part(await memory.aget(input="What is my locker code?"), "hybrid_memory")


def test_sync_and_async_paths_give_the_same_text(store):
    import asyncio

    block = HybridMemoryBlock.from_defaults(
        store=store, llm=ScriptedLLM.of(FactModel()), token_limit=500, retry=FAST
    )
    memory = fifo(block, "sync")
    memory.put(ChatMessage(role="user", content="My locker code is 4471."))
    for i in range(40):
        memory.put_messages(
            [
                ChatMessage(role="assistant", content="Noted."),
                ChatMessage(role="user", content=small_talk(i)),
            ]
        )
    sync_text = block_part(memory.get(input="What is my locker code?"), "hybrid_memory")
    async_text = asyncio.run(_async_conversation(fifo(block, "async")))
    assert "fact: The user's locker code is 4471." in sync_text
    assert _without_times(sync_text) == _without_times(async_text)


@pytest.mark.parametrize("kind", [RecursiveSummaryMemoryBlock, HybridMemoryBlock])
async def test_a_failing_summarizer_loses_no_message(store, kind):
    script = FailingModel()
    block = kind.from_defaults(store=store, llm=ScriptedLLM.of(script), token_limit=400, retry=FAST)
    memory = fifo(block, "s")
    await memory.aput(ChatMessage(role="user", content="My locker code is 4471."))
    for i in range(40):
        await memory.aput_messages(
            [
                ChatMessage(role="assistant", content="Noted."),
                ChatMessage(role="user", content=small_talk(i)),
            ]
        )
    text = block_part(await memory.aget(input="What is my locker code?"), block.name)
    archived = await memory.aget_all(status=MessageStatus.ARCHIVED)
    logged = block.engine("s").turns()
    assert [s.turn.text for s in logged] == [m.content for m in archived]
    assert len(logged) > 40 and script.failed_calls >= 1
    assert block.engine("s").get_summary() is None  # no failure written in as the summary
    assert block.engine("s").last_fold_error is not None
    assert COUNTER.count_text(text) <= block.token_limit
    if kind is HybridMemoryBlock:
        assert "My locker code is 4471." in text  # recalled from the log meanwhile
    script.failing = False
    for i in range(5):
        await memory.aput_messages(
            [
                ChatMessage(role="assistant", content="Back."),
                ChatMessage(role="user", content=small_talk(i)),
            ]
        )
    summary = block.engine("s").get_summary()
    assert summary is not None and len(block.engine("s").turns()) == len(
        await memory.aget_all(status=MessageStatus.ARCHIVED)
    )


@pytest.mark.parametrize("kind", [RecursiveSummaryMemoryBlock, HybridMemoryBlock])
async def test_the_text_stays_within_token_limit(store, kind):
    block = kind.from_defaults(store=store, token_limit=160)
    page = " ".join(f"Paragraph {i} of the report says the code is {4000 + i}." for i in range(400))
    call = ToolCallBlock(tool_call_id="c1", tool_name="fetch", tool_kwargs={"url": "x"})
    messages = [
        ChatMessage(role="user", content="Fetch the report. " * 200),
        ChatMessage(role="assistant", blocks=[call]),
        ChatMessage(role="tool", content=page, additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="assistant", content="The code is 4000. " * 100),
    ]
    for _ in range(5):
        await block.aput(messages, session_id="s")
        text = await block.aget([ChatMessage(role="user", content="the code?")], session_id="s")
        assert 0 < COUNTER.count_text(text) <= 160
    assert len(block.engine("s").turns()) == 20


async def test_memory_truncates_a_block_with_a_priority_from_its_end(store):
    block = RecursiveSummaryMemoryBlock.from_defaults(store=store, token_limit=400, priority=1)
    memory = Memory.from_defaults(
        session_id="s",
        token_limit=260,
        chat_history_token_ratio=0.5,
        token_flush_size=40,
        memory_blocks=[block],
    )
    for i in range(60):
        await memory.aput_messages(
            [
                ChatMessage(role="assistant", content="Noted."),
                ChatMessage(role="user", content=small_talk(i)),
            ]
        )
    full = await block.aget([], session_id="s")
    part = block_part(await memory.aget(), "recursive_summary")
    assert part and full.startswith(part) and len(part) < len(full)
    assert await block.atruncate(full, 10_000) is None


# -- construction ----------------------------------------------------------------------------


def test_construction_and_budgets(store):
    block = HybridMemoryBlock.from_defaults(store=store, token_limit=800, recall_tokens=150)
    assert block._config.recall_tokens == 150 and block._config.max_summary_tokens == 200
    assert HybridMemoryBlock.from_defaults(store=store)._config.recall_tokens == 500
    assert RecursiveSummaryMemoryBlock.from_defaults(store=store)._config.recall_tokens == 0
    assert block.class_name() == "HybridMemoryBlock" and block.name == "hybrid_memory"
    assert RecursiveSummaryMemoryBlock.class_name() == "RecursiveSummaryMemoryBlock"
    with pytest.raises(ConfigurationError, match="token_limit"):
        RecursiveSummaryMemoryBlock.from_defaults(store=store, token_limit=20)
    with pytest.raises(InvalidInputError, match="scope"):
        HybridMemoryBlock.from_defaults(store=store, scope="everyone")
    with pytest.raises(ConfigurationError, match="only one"):
        HybridMemoryBlock.from_defaults(store=store, path="/tmp/elsewhere")
    config = MemoryConfig(max_tokens=900, recall_tokens=100)
    given = HybridMemoryBlock.from_defaults(store=store, config=config)
    assert (given.token_limit, given.recall_tokens, given._config) == (900, 100, config)
    direct = RecursiveSummaryMemoryBlock(session_id="d", token_limit=300)  # pydantic fields
    assert direct.model_dump()["token_limit"] == 300


def test_the_blocks_are_exported():
    assert {"HybridMemoryBlock", "RecursiveSummaryMemoryBlock"} <= set(llamaindex_higmem.__all__)


@pytest.mark.parametrize(
    "kind", [RecursiveSummaryMemoryBlock, HybridMemoryBlock, HiGMemMemoryBlock]
)
def test_a_deep_copy_of_the_memory_shares_the_blocks_store(store, kind):
    import copy

    block = kind.from_defaults(store=store)
    block.engine("s")
    twin = copy.deepcopy(fifo(block, "s"))  # what a workflow's isolated state edit does
    copied = twin.memory_blocks[0]
    assert (
        copied is not block and copied._store is store and copied.engine("s") is block.engine("s")
    )
