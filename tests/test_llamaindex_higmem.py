"""HiGMem in LlamaIndex: the retriever in engines and as an agent tool, the Memory block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from conftest import FAST
from fakes import HiGMemModel
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from llama_index.core.tools import RetrieverTool

from langchain_recursive_memory import HiGMemRetriever as LangChainHiGMemRetriever
from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    MemoryStore,
    Turn,
)
from llamaindex_higmem.memory_blocks import HiGMemMemoryBlock
from llamaindex_higmem.retrievers import HiGMemRetriever

LINES = [
    ("Ada", "I adopted a cat called Miso last week."),
    ("Bob", "Lovely! My sister moved to Porto in March."),
    ("Ada", "I started violin lessons on Tuesday."),
    ("Bob", "I am training for the Berlin marathon."),
]


def filled(store: MemoryStore, session: str = "s", **kwargs: Any) -> HiGMem:
    memory = HiGMem(session, store=store, retry=FAST, **kwargs)
    memory.add(
        [
            Turn(
                role="user" if who == "Ada" else "assistant",
                name=who,
                text=text,
                id=f"t{i}",
                created_at=1_700_000_000.0 + 60 * i,
            )
            for i, (who, text) in enumerate(LINES)
        ],
        flush=True,
    )
    return memory


def test_nodes_carry_metadata_and_hide_bookkeeping(store):
    memory = filled(store)
    nodes = HiGMemRetriever(memory, k=2).retrieve("What is the name of the cat?")
    assert len(nodes) == 2
    top = next(n for n in nodes if n.node.metadata["turn_id"] == "t0")
    meta = top.node.metadata
    assert meta["session_id"] == "s" and meta["speaker"] == "Ada"
    assert meta["time"] == "2023-11-14 22:13 UTC" and meta["event_ids"] == ["seg:s1"]
    llm_text = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "speaker: Ada" in llm_text and "t0" not in llm_text and "seg:s1" not in llm_text
    assert "session_id" not in top.node.get_content(metadata_mode=MetadataMode.EMBED)
    assert [n.node.metadata["rank"] for n in nodes] == [1, 2]  # best first
    assert nodes[0].score >= nodes[1].score
    with pytest.raises(ConfigurationError, match="k=0"):
        HiGMemRetriever(memory, k=0)


async def test_async_retrieve_matches_sync(store):
    memory = filled(store)
    retriever = HiGMemRetriever(memory, k=3)
    sync = [n.node.node_id for n in retriever.retrieve("violin lessons")]
    assert sync == [n.node.node_id for n in await retriever.aretrieve("violin lessons")]


def test_in_a_retriever_query_engine(store):
    memory = filled(store)
    llm = MockLLM()  # echoes its prompt: the answer shows what the LLM was given
    engine = RetrieverQueryEngine.from_args(HiGMemRetriever(memory, k=2), llm=llm)
    response = engine.query("Which city did Bob's sister move to?")
    assert "Porto" in str(response)
    assert {n.node.metadata["turn_id"] for n in response.source_nodes} >= {"t1"}


@pytest.mark.parametrize("engine_cls", [ContextChatEngine, CondensePlusContextChatEngine])
def test_in_context_chat_engines(store, engine_cls):
    memory = filled(store)
    engine = engine_cls.from_defaults(retriever=HiGMemRetriever(memory, k=2), llm=MockLLM())
    reply = engine.chat("Which marathon is Bob training for?")
    assert "Berlin marathon" in str(reply)
    assert any(n.node.metadata["turn_id"] == "t3" for n in reply.source_nodes)


def test_guided_retrieval_in_a_query_engine(store):
    model = HiGMemModel()
    memory = filled(store, model=model)
    engine = RetrieverQueryEngine.from_args(HiGMemRetriever(memory), llm=MockLLM())
    response = engine.query("What is the cat called?")
    assert "Miso" in str(response)
    assert model.calls["filter"] >= 1
    assert all("found_by" in n.node.metadata for n in response.source_nodes)


@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")
async def test_as_a_retriever_tool_for_a_function_agent(store):
    memory = filled(store)
    tool = RetrieverTool.from_defaults(
        HiGMemRetriever(memory, k=2),
        name="recall_conversation",
        description="Recall what was said earlier in this conversation.",
    )
    seen: list[list[ChatMessage]] = []

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(list(messages))
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content=f"From memory: {last.content}")
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(
                    tool_call_id="c1",
                    tool_name="recall_conversation",
                    tool_kwargs={"input": str(last.content)},
                )
            ],
        )

    agent = FunctionAgent(tools=[tool], llm=MockFunctionCallingLLM(response_generator=respond))
    answer = await agent.run("What instrument did Ada start learning?")
    assert "violin" in str(answer)
    assert len(seen) == 2


def _memory(block: HiGMemMemoryBlock, session: str) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        token_limit=200,
        chat_history_token_ratio=0.1,
        token_flush_size=20,
        memory_blocks=[block],
    )


async def test_memory_block_indexes_flushed_turns_without_cross_session_leaks(store):
    block = HiGMemMemoryBlock.from_defaults(store=store, k=3)
    alice, mallory = _memory(block, "alice"), _memory(block, "mallory")
    await alice.aput(ChatMessage(role="user", content="My bank PIN is 4471, keep it secret."))
    await mallory.aput(ChatMessage(role="user", content="My bank PIN is 9999 by the way."))
    for i in range(12):
        for who, memory in (("Alice", alice), ("Mallory", mallory)):
            await memory.aput(ChatMessage(role="assistant", content=f"{who} reply number {i}."))
            await memory.aput(ChatMessage(role="user", content=f"{who} small talk number {i}."))
    await alice.aget()  # flushes old messages to the block
    await mallory.aget()
    indexed = {t.turn.text for t in block.engine("alice").turns()}
    assert "My bank PIN is 4471, keep it secret." in indexed
    assert not any("9999" in t for t in indexed)
    alice_view = await alice.aget(input="what is my bank PIN?")
    mallory_view = await mallory.aget(input="what is my bank PIN?")
    alice_text = " ".join(str(m.content) for m in alice_view)
    mallory_text = " ".join(str(m.content) for m in mallory_view)
    assert "4471" in alice_text and "9999" not in alice_text
    assert "9999" in mallory_text and "4471" not in mallory_text


async def test_memory_block_needs_a_session(store):
    from langchain_recursive_memory.core import InvalidInputError

    block = HiGMemMemoryBlock.from_defaults(store=store)
    with pytest.raises(InvalidInputError, match="session"):
        await block.aget([ChatMessage(role="user", content="anything")])
    fixed = HiGMemMemoryBlock.from_defaults(store=store, session_id="solo")
    await fixed.aput([ChatMessage(role="user", content="The boat is called Sea Otter.")])
    text = await fixed.aget([ChatMessage(role="user", content="name of the boat")])
    assert "Sea Otter" in text


async def test_memory_block_keeps_a_bounded_number_of_engines(store, monkeypatch):
    from llamaindex_higmem import memory_blocks

    assert memory_blocks.MAX_ENGINES == 256  # documented, as the middleware's max_sessions
    monkeypatch.setattr(memory_blocks, "MAX_ENGINES", 3)
    block = HiGMemMemoryBlock.from_defaults(store=store, k=2)
    first = block.engine("s0")
    for i in range(10):
        text = f"Session {i} keeps the code {4400 + i} in the drawer."
        await block.aput([ChatMessage(role="user", content=text)], session_id=f"s{i}")
        assert len(block._engines) <= 3
    assert len(block._engines) == 3 and block.engine("s0") is not first  # evicted, rebuilt
    text = await block.aget([ChatMessage(role="user", content="the code?")], session_id="s0")
    assert "4400" in text and "4409" not in text  # its state is in the store
    assert len(block._engines) == 3


def test_langchain_higmem_retriever(store):
    memory = filled(store)
    docs = LangChainHiGMemRetriever(memory=memory, k=2).invoke("What is the cat called?")
    assert docs[0].page_content == "I adopted a cat called Miso last week."
    meta = docs[0].metadata
    assert meta["speaker"] == "Ada" and meta["kind"] == "turn" and meta["event_ids"]
    assert len(LangChainHiGMemRetriever(memory=memory).invoke("cat", k=1)) == 1


def test_memory_block_in_a_simple_chat_engine_retrieves_for_the_question_just_put(store):
    """SimpleChatEngine calls get() without input: Memory hands its blocks the history,
    whose newest user message is the question just put (issue 28, item 2)."""
    from llama_index.core.base.llms.types import ChatResponse
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms.callbacks import llm_chat_callback

    class Recording(MockLLM):
        prompts: list[list[ChatMessage]] = Field(default_factory=list)

        @llm_chat_callback()
        def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            self.prompts.append(list(messages))
            return ChatResponse(message=ChatMessage(role="assistant", content="Noted."))

    block = HiGMemMemoryBlock.from_defaults(store=store, k=3)
    llm = Recording()
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=_memory(block, "engine"))
    engine.chat("My locker code is 4471.")
    for i in range(30):
        engine.chat(f"Small talk number {i} about the weather.")
    assert "4471" not in " ".join(str(m.content) for m in llm.prompts[-1])
    engine.chat("What is my locker code?")
    assert "4471" in " ".join(str(m.content) for m in llm.prompts[-1])
