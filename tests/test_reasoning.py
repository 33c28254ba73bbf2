"""Reasoning is not speech (issue 22, item 4).

Reasoning (Anthropic ``thinking`` / ``redacted_thinking`` blocks, LangChain ``reasoning``
blocks, OpenAI reasoning items with their summaries) is stored and replayed to the
provider unchanged, but it is not what the assistant said: it stays out of recall, the
lexical and dense indexes, summaries and facts, unless asked for.
"""

from __future__ import annotations

import pytest
from fakes import FactModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import HiGMem, HybridMemory, Turn
from langchain_recursive_memory.core.message_dicts import turns_from_dict
from langchain_recursive_memory.core.turn import blocks_text, reasoning_text
from langchain_recursive_memory.messages import message_to_turn, turn_to_message

SECRET = "zeppelin"  # a word only the reasoning holds
THINKING = {
    "type": "thinking",
    "thinking": f"The user may want the {SECRET} schedule; I should not guess it.",
    "signature": "EqQBCkYIBBgCKkD2sig",
}
REDACTED = {"type": "redacted_thinking", "data": f"EmwKAhgBEgy{SECRET}encrypted"}
LC_REASONING = {"type": "reasoning", "reasoning": f"Weighing the {SECRET} option first."}
OPENAI_REASONING = {
    "type": "reasoning",
    "id": "rs_123",
    "summary": [{"type": "summary_text", "text": f"Considered the {SECRET} route."}],
}
REASONING_BLOCKS = [THINKING, REDACTED, LC_REASONING, OPENAI_REASONING]


def reply(i: int, block: dict) -> AIMessage:
    return AIMessage(
        content=[block, {"type": "text", "text": f"Reply {i}: the ferry leaves at nine."}],
        id=f"a{i}",
    )


@pytest.mark.parametrize("block", REASONING_BLOCKS, ids=lambda b: b["type"] + str(len(b)))
def test_a_turns_text_is_what_was_said_and_the_message_comes_back_whole(block):
    message = reply(1, block)
    turn = message_to_turn(message)
    assert turn.text == "Reply 1: the ferry leaves at nine."
    assert SECRET not in turn.text
    assert turn_to_message(turn).content == message.content  # replayable, signature and all
    assert SECRET in reasoning_text(turn.blocks or ()) or block is REDACTED


def test_blocks_text_leaves_reasoning_out_and_reasoning_text_has_it():
    blocks = [THINKING, {"type": "text", "text": "Hi."}]
    assert blocks_text(blocks) == "Hi."
    assert reasoning_text(blocks) == THINKING["thinking"]
    assert reasoning_text([OPENAI_REASONING]) == f"Considered the {SECRET} route."


def test_an_anthropic_transcript_line_keeps_its_thinking_out_of_the_text():
    record = {"role": "assistant", "content": [THINKING, {"type": "text", "text": "Nine."}]}
    (turn,) = turns_from_dict(record)
    assert turn.text == "Nine." and turn.blocks is not None and turn.blocks[0] == THINKING


def test_the_history_replays_reasoning_but_never_recalls_or_summarizes_it(store):
    model = FactModel()
    history = RecursiveSummaryChatMessageHistory(
        "r", store=store, llm=model, extract_facts=True, max_tokens=600
    )
    for i in range(40):
        block = REASONING_BLOCKS[i % len(REASONING_BLOCKS)]
        history.add_messages(
            [HumanMessage(f"Question {i} about the ferry?", id=f"u{i}"), reply(i, block)]
        )
    memory = history.memory
    assert memory.get_summary() is not None  # folds happened
    prompts = "\n".join(model.prompts)
    assert "ferry leaves at nine" in prompts  # what was said reached the summarizer ...
    assert SECRET not in prompts  # ... the reasoning never did
    assert all(SECRET not in f.text for f in memory.facts())
    assert all(SECRET not in (s.text or "") for s in [memory.get_summary()])
    hits = memory.recall(f"{SECRET} schedule route option", k=8)
    assert all(SECRET not in h.text for h in hits)
    assert not any(h.score > 0 and SECRET in h.text for h in hits)
    # Replayed whole: every stored reply comes back with its reasoning block.
    logged = [turn_to_message(t.turn) for t in memory.turns() if t.turn.role == "assistant"]
    assert [m.content for m in logged] == [
        reply(i, REASONING_BLOCKS[i % 4]).content for i in range(40)
    ]


def test_lexical_recall_does_not_match_reasoning(store):
    memory = HybridMemory("lex", store=store, max_tokens=400)
    memory.add([message_to_turn(reply(0, THINKING)), message_to_turn(reply(1, LC_REASONING))])
    for i in range(30):
        memory.add(Turn(role="user", text=f"Small talk {i} about the weather."))
    assert [h for h in memory.recall(SECRET, k=5) if h.kind == "turn" and h.score > 0] == []


def test_higmem_indexes_what_was_said_not_the_reasoning(store):
    memory = HiGMem("h", store=store)
    memory.add(
        [Turn(role="user", text="When does the ferry leave?"), message_to_turn(reply(1, THINKING))]
    )
    memory.flush()
    found = memory.retrieve(SECRET, k=3, use_llm=False)
    assert all(SECRET not in f.turn.text for f in found)
