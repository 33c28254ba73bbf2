"""Repeated questions do not crowd out the answer (issue 30, item 2).

The story of the issue: a user says their locker code once, early, then chats about
other things and asks "What is my locker code?" again every few hundred exchanges. Ranked
by relevance alone, the earlier copies of the question fill the retriever's top k (they
match the question word for word) and the turn that answered falls out of it. Here the
story runs through the application paths the docs show: LCEL with
``RunnableWithMessageHistory`` and ``RecursiveMemoryRetriever`` (hybrid), and LlamaIndex's
``RetrieverQueryEngine`` over ``llamaindex_higmem.HiGMemRetriever``, each with a scripted
model, at a few hundred exchanges.
"""

from __future__ import annotations

import re
import warnings
from operator import itemgetter
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import RetrieverQueryEngine

from langchain_recursive_memory import RecursiveMemoryRetriever, RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import HiGMem, MemoryStore, Turn
from llamaindex_higmem import HiGMemRetriever

CODE = "4471"
STATEMENT = f"Please remember: my locker code is {CODE}."
QUESTION = "What is my locker code?"
TOPICS = ("football", "the weather", "a recipe for soup", "my new bike", "a film I saw")


def _filler(i: int) -> str:
    return f"Let's talk about {TOPICS[i % len(TOPICS)]}, part {i}."


def _quote_first_memory(prompt_value: Any) -> AIMessage:
    """The scripted chat model: it answers with the first memory recalled."""
    system = prompt_value.to_messages()[0].content
    recalled = system.split("<memories>\n")[1].splitlines()[0]
    return AIMessage(f"From memory: {recalled}")


def test_repeated_questions_do_not_hide_the_answer_in_an_lcel_chain():
    store = MemoryStore.in_memory()

    def get_history(session_id: str) -> RecursiveSummaryChatMessageHistory:
        return RecursiveSummaryChatMessageHistory(
            session_id,
            store=store,
            max_tokens=600,
            max_summary_tokens=150,
            recall_tokens=200,
            recall_in_messages=False,
        )

    retriever = RecursiveMemoryRetriever(sessions=get_history, k=4)
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Recalled memories:\n<memories>\n{memories}\n</memories>"),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    chain = (
        RunnablePassthrough.assign(
            memories=itemgetter("question")
            | retriever
            | (lambda docs: "\n".join(d.page_content for d in docs) or "(none)")
        )
        | prompt
        | RunnableLambda(_quote_first_memory)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chat = RunnableWithMessageHistory(
            chain, get_history, input_messages_key="question", history_messages_key="history"
        )
    config = {"configurable": {"session_id": "locker"}}
    chat.invoke({"question": STATEMENT}, config)
    answers = []
    for i in range(1, 241):
        question = QUESTION if i % 24 == 0 else _filler(i)
        answer = chat.invoke({"question": question}, config).content
        if question == QUESTION:
            answers.append(answer)
    assert all(CODE in a for a in answers), answers  # every time, not only the first few
    docs = retriever.invoke(QUESTION, config=config)
    texts = [d.page_content for d in docs]
    assert texts.count(QUESTION) <= 1, texts  # the copies of the question count once
    assert STATEMENT in texts, texts


class _FirstLineLLM(CustomLLM):
    """A scripted LLM: it answers with the first context line (not metadata) with a digit."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="first-line")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        lines = [
            line
            for line in prompt.splitlines()
            if any(c.isdigit() for c in line) and not re.match(r"\w+: ", line)
        ]
        return CompletionResponse(text=lines[0] if lines else "I don't know.")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_repeated_questions_do_not_fill_a_llamaindex_query_engine():
    turns = [Turn(role="user", text=STATEMENT), Turn(role="assistant", text="Noted.")]
    for i in range(1, 301):
        if i % 30 == 0:
            turns += [
                Turn(role="user", text=QUESTION),
                Turn(role="assistant", text="Let me look that up for you."),
            ]
        else:
            turns += [
                Turn(role="user", text=_filler(i)),
                Turn(role="assistant", text=f"Sure, happy to talk about it ({i})."),
            ]
    memory = HiGMem("locker", store=MemoryStore.in_memory())
    for start in range(0, len(turns), 50):
        memory.add(turns[start : start + 50])
    engine = RetrieverQueryEngine.from_args(HiGMemRetriever(memory, k=2), llm=_FirstLineLLM())
    response = engine.query(QUESTION)
    texts = [n.node.get_content() for n in response.source_nodes]
    assert len(texts) == len(set(texts)), texts  # no two copies of one turn
    assert any(CODE in t for t in texts), texts
    assert CODE in str(response)
