"""Drop-in details: messages come back as given, and a retriever follows the run's session."""

from __future__ import annotations

from operator import itemgetter

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_recursive_memory import (
    RecursiveMemoryRetriever,
    RecursiveSummaryChatMessageHistory,
)
from langchain_recursive_memory.core import MemoryStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_messages_come_back_as_they_were_given(store: MemoryStore) -> None:
    given = [HumanMessage("hello"), AIMessage("hi", id="run-1"), HumanMessage("bye", name="ada")]
    ours = RecursiveSummaryChatMessageHistory("s", store=store, messages=given)
    reference = InMemoryChatMessageHistory(messages=given)
    assert ours.messages == reference.messages == given
    assert ours.messages[0].id is None  # no generated id leaks out
    assert ours.memory.turns()[0].turn.id  # the log still has one
    again = RecursiveSummaryChatMessageHistory("s2", store=store, messages=given)
    assert ours == again and ours != RecursiveSummaryChatMessageHistory("s3", store=store)


def test_one_retriever_serves_every_user_of_a_chain(store: MemoryStore) -> None:
    histories: dict[str, RecursiveSummaryChatMessageHistory] = {}

    def get_history(session_id: str) -> RecursiveSummaryChatMessageHistory:
        if session_id not in histories:
            histories[session_id] = RecursiveSummaryChatMessageHistory(
                session_id, store=store, max_tokens=600, max_summary_tokens=60, recall_tokens=150
            )
        return histories[session_id]

    retriever = RecursiveMemoryRetriever(sessions=get_history, k=3)
    sent: list[str] = []

    def model(prompt_value) -> AIMessage:
        system = prompt_value.to_messages()[0].content
        sent.append(system)
        return AIMessage("ok")

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Memories:\n{memories}"), MessagesPlaceholder("history"), ("human", "{q}")]
    )
    chain = (
        RunnablePassthrough.assign(
            memories=itemgetter("q") | retriever | (lambda d: "\n".join(x.page_content for x in d))
        )
        | prompt
        | RunnableLambda(model)
    )
    with_history = RunnableWithMessageHistory(
        chain, get_history, input_messages_key="q", history_messages_key="history"
    )
    seven = {"configurable": {"session_id": "user-7"}}
    eight = {"configurable": {"session_id": "user-8"}}
    with_history.invoke({"q": "My locker code is 4471."}, seven)
    for i in range(25):
        with_history.invoke({"q": f"Chat about gardening, part {i}."}, seven)
        with_history.invoke({"q": f"Chat about lockers and codes, part {i}."}, eight)
    sent.clear()
    with_history.invoke({"q": "What is my locker code?"}, eight)
    with_history.invoke({"q": "What is my locker code?"}, seven)
    assert "4471" not in sent[0]  # user-8 never sees user-7's memories
    assert "4471" in sent[1]
    docs = retriever.invoke("locker code", {"configurable": {"session_id": "user-7"}})
    assert docs and all(d.metadata["session_id"] == "user-7" for d in docs)
