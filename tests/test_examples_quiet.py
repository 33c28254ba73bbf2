"""The examples run without "fold failed" warnings (issue 22, item 8).

Their scripted stand-in summarizers must behave like the models they stand in for: a fold
updates the previous summary (``S_k = LLM(S_{k-1} + overflow)``), so the summary-loss
guard never rejects it.
"""

from __future__ import annotations

import logging
import runpy

from conftest import ROOT
from langchain_core.messages import AIMessage, HumanMessage

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import FunctionTextModel

CITIES = ["Lisbon", "Porto", "Braga", "Faro", "Evora", "Coimbra", "Sintra", "Tavira", "Lagos"]


def test_the_user_memory_stand_in_keeps_the_previous_summary_over_many_folds(store, caplog):
    stand_in = runpy.run_path(str(ROOT / "examples" / "user_memory.py"))["stand_in_summarizer"]
    history = RecursiveSummaryChatMessageHistory(
        "long",
        store=store,
        llm=FunctionTextModel(stand_in),
        extract_facts=True,
        max_tokens=500,
    )
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        for i in range(60):
            city = CITIES[i % len(CITIES)]
            history.add_messages(
                [
                    HumanMessage(f"Day {i}: we visited {city} and paid {40 + i} euros."),
                    AIMessage(f"Noted day {i} in {city}."),
                ]
            )
    assert history.memory.get_summary().version >= 3  # several folds
    assert "fold failed" not in caplog.text, caplog.text
    assert "Lisbon" in history.summary  # the first fold's names are still there


# Every example runs without a fold failure or any other warning of the library:
# tests/test_docs.py::test_every_example_runs_offline (one run of each example checks both).
