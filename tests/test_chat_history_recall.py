"""The chat history uses its recall share (issue 22, item 3).

``messages`` has no question of its own: it recalls for the newest user message of the
history (as the middleware recalls for the request's newest human message), so the facts
a hybrid history extracts reach the model. ``recall_in_messages=False`` leaves the share
free for a retriever on the current question (the LCEL pattern).
"""

from __future__ import annotations

from conftest import COUNTER
from fakes import FactModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.messages import is_summary_message, message_to_turn


def fill(history: RecursiveSummaryChatMessageHistory, exchanges: int = 120) -> None:
    history.add_messages([HumanMessage("My locker code is 4471."), AIMessage("Noted.")])
    for i in range(exchanges):
        history.add_messages(
            [
                HumanMessage(f"Small talk number {i} about the spring weather in town."),
                AIMessage(f"Reply {i}: indeed, a pleasant season for a walk."),
            ]
        )
    history.add_messages([HumanMessage("What was my locker code again?")])


def tokens(messages) -> int:
    return COUNTER.count_turns([message_to_turn(m) for m in messages])


def test_messages_fill_the_recall_share_for_the_newest_user_message(store):
    history = RecursiveSummaryChatMessageHistory(
        "h", store=store, llm=FactModel(), extract_facts=True, max_tokens=1000
    )
    fill(history)
    messages = history.messages
    assert tokens(messages) <= 1000
    with_question = history.memory.context("What was my locker code again?")
    assert tokens(messages) == with_question.tokens  # the share is used, as context(q) uses it
    assert tokens(messages) > history.memory.context().tokens + 50  # the share was empty
    first = messages[0]
    assert is_summary_message(first) and "4471" in first.text and "<memories>" in first.text


async def test_aget_messages_does_the_same(store):
    history = RecursiveSummaryChatMessageHistory(
        "ha", store=store, llm=FactModel(), extract_facts=True, max_tokens=1000
    )
    fill(history, 60)
    assert [m.content for m in await history.aget_messages()] == [
        m.content for m in history.messages
    ]
    assert "4471" in (await history.aget_messages())[0].text


def test_the_share_can_be_left_to_a_retriever(store):
    history = RecursiveSummaryChatMessageHistory(
        "r",
        store=store,
        llm=FactModel(),
        extract_facts=True,
        max_tokens=1000,
        recall_in_messages=False,
    )
    fill(history)
    messages = history.messages
    assert "<memories>" not in messages[0].text
    assert tokens(messages) <= 1000 - history.memory.config.recall_tokens
