"""RecursiveMemoryRetriever: LangChain's standard retriever suite, metadata, embedders."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from conftest import FAST
from fakes import BagOfWordsEmbedder, FactModel
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_recursive_memory import (
    RecursiveMemoryRetriever,
    RecursiveSummaryChatMessageHistory,
)
from langchain_recursive_memory.core import (
    ConfigurationError,
    HybridMemory,
    MemoryStore,
    Turn,
)


def _filled_memory() -> HybridMemory:
    memory = HybridMemory(
        "standard-suite",
        store=MemoryStore.in_memory(),
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        max_tokens=600,
        max_summary_tokens=100,
        retry=FAST,
    )
    memory.add(Turn(role="user", text="My favourite hiking trail is the Besseggen ridge."))
    for i in range(40):
        memory.add(
            [
                Turn(role="user", text=f"Hiking trip {i}: we walked {i + 3} km on a trail."),
                Turn(role="assistant", text=f"Great hiking trail, {i + 3} km is a good walk."),
            ]
        )
    return memory


_MEMORY = None


def filled_memory() -> HybridMemory:
    global _MEMORY
    if _MEMORY is None:
        _MEMORY = _filled_memory()
    return _MEMORY


class TestRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RecursiveMemoryRetriever]:
        return RecursiveMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": filled_memory(), "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "which hiking trail did we walk?"


def test_documents_carry_provenance_metadata():
    memory = filled_memory()
    docs = RecursiveMemoryRetriever(memory=memory, k=5).invoke("favourite hiking trail")
    assert docs
    window = {t.id for t in memory.context().window}
    for doc in docs:
        meta = doc.metadata
        assert meta["session_id"] == "standard-suite"
        assert meta["kind"] in {"fact", "turn"}
        assert meta["source_turn_ids"] and isinstance(meta["source_turn_ids"], list)
        assert isinstance(meta["score"], float) and meta["time"].endswith("+00:00")
        assert not window & set(meta["source_turn_ids"]) or meta["kind"] == "fact"
    assert any("Besseggen" in d.page_content for d in docs)
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_kinds_and_max_tokens():
    memory = filled_memory()
    facts = RecursiveMemoryRetriever(memory=memory, k=5, kinds=("fact",)).invoke("hiking trail")
    assert facts and {d.metadata["kind"] for d in facts} == {"fact"}
    tight = RecursiveMemoryRetriever(memory=memory, k=10, max_tokens=30).invoke("hiking trail")
    assert sum(memory.counter.count_text(d.page_content) for d in tight) <= 30
    with pytest.raises(ConfigurationError, match="k=0"):
        RecursiveMemoryRetriever(memory=memory, k=0)


def test_no_other_sessions_data(store):
    mine = RecursiveSummaryChatMessageHistory(
        "mine", store=store, max_tokens=300, max_summary_tokens=60
    )
    theirs = RecursiveSummaryChatMessageHistory(
        "theirs", store=store, max_tokens=300, max_summary_tokens=60
    )
    theirs.add_messages([HumanMessage("Their bank PIN is 9999 and their secret is ostrich.")])
    for i in range(30):
        theirs.add_messages([HumanMessage(f"their filler {i} about the PIN and secrets")])
        mine.add_messages([HumanMessage(f"my filler {i} about the PIN and secrets")])
    docs = mine.as_retriever(k=20).invoke("bank PIN secret ostrich")
    assert docs
    assert all(d.metadata["session_id"] == "mine" for d in docs)
    assert all("their" not in d.page_content for d in docs)


class LangChainEmbedder(Embeddings):
    def __init__(self) -> None:
        self.inner = BagOfWordsEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _llamaindex_embedder() -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class LlamaEmbedder(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return BagOfWordsEmbedder()._vec(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return BagOfWordsEmbedder()._vec(text)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return LlamaEmbedder(model_name="bag-of-words")


class ChromaFunction:
    """Shaped like a chromadb EmbeddingFunction: called on a list, returns arrays."""

    def __call__(self, input: list[str]) -> list[Any]:
        import numpy as np

        return [np.array(v, dtype=np.float32) for v in BagOfWordsEmbedder().embed_documents(input)]


@pytest.mark.parametrize(
    "make",
    [
        LangChainEmbedder,
        _llamaindex_embedder,
        ChromaFunction,
        lambda: DeterministicFakeEmbedding(size=32),
    ],
    ids=["langchain", "llamaindex", "chroma-function", "langchain-fake"],
)
async def test_each_kind_of_embedder_works_sync_and_async(store, make):
    history = RecursiveSummaryChatMessageHistory(
        "emb", store=store, max_tokens=400, max_summary_tokens=60, embedder=make(), retry=FAST
    )
    history.add_messages([HumanMessage("The spare key is under the blue flowerpot.")])
    for i in range(30):
        history.add_messages([HumanMessage(f"Unrelated chat {i}."), AIMessage("ok")])
    docs = history.as_retriever(k=3).invoke("where is the spare key?")
    adocs = await history.as_retriever(k=3).ainvoke("where is the spare key?")
    assert [d.page_content for d in adocs] == [d.page_content for d in docs]
    assert any(d.metadata["dense_rank"] is not None for d in docs)
    if not isinstance(history.memory.embedder, DeterministicFakeEmbedding):
        # A semantic(-ish) embedder agrees with BM25 here; the fake one is random noise.
        assert docs[0].page_content == "The spare key is under the blue flowerpot."


def test_the_default_says_once_what_it_uses(store, caplog):
    from langchain_recursive_memory.core import embeddings

    embeddings._logged.clear()
    with caplog.at_level(logging.INFO, logger="langchain_recursive_memory"):
        for sid in ("a", "b", "c"):
            RecursiveSummaryChatMessageHistory(sid, store=store)
    assert caplog.text.count("no embedder configured: recall ranks with BM25 only") == 1


def test_a_bad_embedder_is_a_configuration_error(store):
    with pytest.raises(ConfigurationError, match="embedder"):
        RecursiveSummaryChatMessageHistory("s", store=store, embedder="not an embedder")


def _lcel(histories, seen):
    import warnings

    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough
    from langchain_core.runnables.history import RunnableWithMessageHistory

    def recall(inputs, config):
        sid = config["configurable"]["session_id"]
        return histories[sid].as_retriever(k=4).invoke(inputs["question"])

    def fmt(docs):
        return "\n".join(f"- {d.page_content}" for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Memories:\n<memories>\n{memories}\n</memories>"),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )

    def chat_model(value):
        seen.append(value.to_messages())
        return AIMessage(f"ok {len(seen)}")

    chain = (
        RunnablePassthrough.assign(memories=RunnableLambda(recall) | fmt)
        | prompt
        | RunnableLambda(chat_model)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return RunnableWithMessageHistory(
            chain,
            lambda session_id: histories[session_id],
            input_messages_key="question",
            history_messages_key="history",
        )


@pytest.mark.parametrize("use_async", [False, True])
async def test_lcel_chain_recalls_on_the_input_and_keeps_history(store, use_async):
    from langchain_recursive_memory.core import TokenCounter
    from langchain_recursive_memory.messages import message_to_turn

    histories = {
        "u": RecursiveSummaryChatMessageHistory(
            "u",
            store=store,
            llm=FactModel(),
            extract_facts=True,
            embedder=BagOfWordsEmbedder(),
            max_tokens=900,
            max_summary_tokens=120,
            recall_tokens=250,
            retry=FAST,
        )
    }
    seen: list = []
    chain = _lcel(histories, seen)
    cfg = {"configurable": {"session_id": "u"}}
    run = chain.ainvoke if use_async else None

    async def ask(question: str) -> None:
        if use_async:
            await run({"question": question}, cfg)
        else:
            chain.invoke({"question": question}, cfg)

    await ask("Hi, my name is Ada Quist and my locker code is 4471.")
    for i in range(60):
        await ask(f"Tell me about football match number {i}.")
    await ask("What is my locker code?")
    counter = TokenCounter()
    last = seen[-1]
    system, history_msgs = last[0].content, last[1:-1]
    assert "4471" in system  # recalled although long gone from the window and summary
    assert all("4471" not in m.content for m in history_msgs)
    memories = system.split("<memories>\n")[1].split("\n</memories>")[0]
    history_tokens = counter.count_turns([message_to_turn(m) for m in history_msgs])
    assert history_tokens + counter.count_text(memories) <= 900
    facts = {f.key for f in histories["u"].memory.facts()}
    assert {"user/name", "user/locker_code"} <= facts
