"""Write ``tests/data/store-0.2.0``: a Chroma store written by langchain-recursive-memory 0.2.0.

The store is a fixture of the upgrade tests: a release after 0.2.0 (which moves the turn
log from Chroma into a SQL database) must open a copy of it and read what 0.2.0 read. It
must be written BY THE 0.2.0 RELEASE (commit ``74f87b1``, 2026-12-04) and NEVER
regenerated with newer code: a store written by newer code would no longer test an
upgrade. The script refuses to run unless the package it imports is 0.2.0 from the
release checkout it is given, and refuses to write into an existing directory.

It uses only 0.2.0's public API and offline, deterministic stand-ins: the scripted models
and the embedder of 0.2.0's own ``tests/fakes.py`` (``KeywordSummarizer``, ``FactModel``,
``HiGMemModel``, ``StructuredChatModel``, ``BagOfWordsEmbedder``), imported from the
release checkout, and for the agent's own chat model langchain-core's
``GenericFakeChatModel`` answering from a fixed script. Nothing is downloaded (every
record has an explicit embedding; tiktoken files ship with 0.2.0).

What it writes (collection prefix ``lrm``, the default), one session per thing an
upgrade must keep. What 0.1.0's fixture covers:

* ``default/recursive``: ``RecursiveMemory`` with a summarizer, folded several times;
* ``default/tools-会話``: tool calls and their results, an invalid tool call (0.2.0's
  ``ToolCall.error``, no result stored), content blocks (an image, a thinking and a
  redacted-thinking block), unicode, store-assigned turn ids, a ``name`` and ``extra``;
* ``default/hybrid-ada-1``: ``HybridMemory`` (``extract_facts=True``, combined facts)
  with an embedder (turn, window and fact vectors), no user; one fact updated
  (``previous``);
* ``default/higmem-plain``: ``HiGMem`` without a model (heuristic nodes, session events
  from a session label and a time gap; 0.2.0 indexes in batches of 16, so ``flush()``);
* ``default/higmem-llm``: ``HiGMem`` with a scripted model answering the index prompt, and
  an embedder (event and window vectors); one guided retrieval (its usage);
* ``default/lc-history``: LangChain ``RecursiveSummaryChatMessageHistory`` messages (tool
  calls, ``additional_kwargs``, ``response_metadata``, ``usage_metadata``, message ids);
* ``default/li-memory``: LlamaIndex ``RecursiveSummaryMemory`` messages;
* ``tenant-b/recursive``: the same session id in another namespace, folded by the no-LLM
  extractive summarizer; its settings also described by hand
  (``MemoryStore.describe_session``, merged with what the engine recorded).

What 0.2.0 added:

* user ``default/ada``: two ``HybridMemory`` sessions with ``user_id="ada"``:
  ``default/ada-trip`` (an embedder; user facts and their vectors; ended with
  ``fold(force=True, keep=False)``, so its current question is folded) and
  ``default/ada-home`` a week later (no embedder, ``recall_scope="user"``; corrects the
  user's home city: a user fact with ``previous`` and two sessions);
* user ``tenant-b/ada``: the same user id in another namespace (another user), session
  ``tenant-b/ada-trip`` (the same session id as ``default/ada-trip``);
* user ``default/bo``: ``default/agent-thread-1``, a LangChain v1 agent thread
  (``create_agent`` + ``InMemorySaver``, a ``lookup`` tool) through
  ``RecursiveMemoryMiddleware`` (``extract_facts=True``, the run's ``user_id`` from
  ``config["configurable"]``), folded; the tool results' ids are LangGraph's (random);
* ``default/higmem-structured``: ``HiGMem`` with ``LangChainTextModel`` over a chat model
  with structured output (usage with provider-reported tokens), one retrieval;
* ``default/higmem-waiting``: ``HiGMem`` without a model whose turns still wait to be
  indexed (fewer than a batch of 16, not flushed): the read below does not ask for its
  events or nodes, which would index them (a write);
* ``default/cleared``: a summarized session cleared (``clear()``) and written again with
  partly the same turn ids;
* session settings (``SessionInfo.settings``), which every engine records at its first
  write; usage records of every session with a model (folds, facts, HiGMem indexing and
  retrieval).

Then a fresh process (``read`` below) reads everything back with 0.2.0 and writes
``expected.json`` into the store directory: every turn, summary version, the loaded
state, facts (the users' facts included), HiGMem events and turn nodes, vector records
(the sessions' and the users' own), usage, the sessions list with settings and users,
the users list, and the adapters' messages. ``write`` writes in a child process too, so
no process holds the store while it is read. ``.lrm-process.lock`` in the store
directory is 0.2.0's (an empty file it locks while a process has the store open).

How it was run (2026-12, from a checkout of the release; pip from PyPI)::

    git -C /work/main worktree add --detach /tmp/v020 74f87b1
    python3 -m venv /tmp/v020/.venv
    /tmp/v020/.venv/bin/pip install -e "/tmp/v020[all]"   # chromadb 1.5.9
    cd /tmp && /tmp/v020/.venv/bin/python \\
        /work/main/tests/data/make_store_0_2_0.py write \\
        --release /tmp/v020 --out /work/main/tests/data/store-0.2.0
    git -C /work/main worktree remove --force /tmp/v020
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

PREFIX = "lrm"
BASE = 1761984000.0  # 2025-11-01 08:00 UTC: every given created_at is BASE + offset
DAY = 24 * 60.0  # minutes
EMBED_DIM = 16
RELEASE_COMMIT = "74f87b1"
VERSION = "0.2.0"

# How each session's memory was made (the keyword arguments of its engine or adapter):
# the test opens them the same way.
CONFIGS: dict[str, dict[str, Any]] = {
    "default/recursive": {"max_tokens": 300, "max_summary_tokens": 80},
    "default/tools-会話": {"max_tokens": 400, "max_summary_tokens": 80},
    "default/hybrid-ada-1": {"max_tokens": 800, "max_summary_tokens": 120},
    "default/higmem-plain": {},
    "default/higmem-waiting": {},
    "default/higmem-llm": {"batch_size": 4},
    "default/higmem-structured": {"batch_size": 4},
    "default/lc-history": {"max_tokens": 4000},
    "default/li-memory": {"max_tokens": 4000},
    "default/ada-trip": {"max_tokens": 500, "max_summary_tokens": 100},
    "default/ada-home": {"max_tokens": 500, "max_summary_tokens": 100, "recall_scope": "user"},
    "default/cleared": {"max_tokens": 250, "max_summary_tokens": 60},
    "default/agent-thread-1": {"max_tokens": 700, "max_summary_tokens": 100},
    "tenant-b/recursive": {"max_tokens": 200, "max_summary_tokens": 60},
    "tenant-b/ada-trip": {"max_tokens": 500, "max_summary_tokens": 100},
}

# The user each session was written for (``user_id=``); the others have none.
USERS: dict[str, str] = {
    "default/ada-trip": "ada",
    "default/ada-home": "ada",
    "default/agent-thread-1": "bo",
    "tenant-b/ada-trip": "ada",
}

# Settings described by hand (merged into what the engine recorded).
DESCRIBED: dict[str, dict[str, str | int | float]] = {
    "tenant-b/recursive": {"app": "fixture-0.2.0", "tokenizer_model": "gpt-4o"},
}

AGENT_SYSTEM = "You are a careful warehouse assistant."


# -- checks ----------------------------------------------------------------------------------


def import_release(release: Path) -> Any:
    """Import 0.2.0 from ``release`` (its tests folder too, for the stand-ins)."""
    sys.path.insert(0, str(release / "tests"))
    import langchain_recursive_memory as lrm

    where = Path(lrm.__file__).resolve()
    if lrm.__version__ != VERSION or release.resolve() not in where.parents:
        raise SystemExit(
            f"refusing to run: imported langchain_recursive_memory {lrm.__version__} from "
            f"{where}; this fixture must be written by {VERSION} from {release}"
        )
    return lrm


def refuse_existing(out: Path) -> None:
    if out.exists():
        raise SystemExit(f"refusing to overwrite {out}: the fixture is never regenerated")


# -- writing ---------------------------------------------------------------------------------


def at(minutes: float) -> float:
    return BASE + 60.0 * minutes


def write(release: Path, out: Path) -> None:
    import_release(release)
    from fakes import (
        BagOfWordsEmbedder,
        FactModel,
        HiGMemModel,
        KeywordSummarizer,
        StructuredChatModel,
    )

    from langchain_recursive_memory import LangChainTextModel
    from langchain_recursive_memory.core import (
        HiGMem,
        HybridMemory,
        MemoryStore,
        RecursiveMemory,
        RetryPolicy,
        ToolCall,
        Turn,
    )

    refuse_existing(out)
    store = MemoryStore.persistent(out, prefix=PREFIX)
    retry = RetryPolicy(attempts=2, initial_delay=0.0, timeout=10.0, cooldown=0.0)

    # default/recursive: a summarizer, several folds.
    memory = RecursiveMemory(
        "recursive",
        store=store,
        model=KeywordSummarizer(max_words=40),
        retry=retry,
        **CONFIGS["default/recursive"],
    )
    places = ["Lisbon", "Porto", "Madrid", "Seville", "Valencia", "Bilbao", "Granada"]
    for i in range(28):
        place = places[i % len(places)]
        if i % 2 == 0:
            text = f"Day {i // 2 + 1}: we could visit {place}; it costs {40 + i} euros."
        else:
            text = f"{place} is lovely in November; day {i // 2 + 1} booked for {40 + i} euros."
        role = "user" if i % 2 == 0 else "assistant"
        memory.add(Turn(role=role, text=text, id=f"r-{i:02d}", created_at=at(i)))

    # default/tools-会話: tool calls, an invalid call, content blocks, unicode, assigned ids.
    tools = RecursiveMemory(
        "tools-会話",
        store=store,
        model=KeywordSummarizer(max_words=40),
        retry=retry,
        **CONFIGS["default/tools-会話"],
    )
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    tools.add(
        [
            Turn(
                role="system",
                text="You are a travel assistant.",
                id="t-sys",
                created_at=at(0),
            ),
            Turn(
                role="user",
                text="Wie ist das Wetter in Zürich und 東京? 🌧️ שלום",
                id="t-q1",
                name="ada",
                created_at=at(1),
            ),
            Turn(
                role="assistant",
                text="",
                tool_calls=(
                    ToolCall("weather", {"city": "Zürich"}, "call_zrh"),
                    ToolCall("weather", {"city": "東京", "units": "metric"}, "call_tyo"),
                ),
                id="t-calls",
                created_at=at(2),
                extra={
                    "response_metadata": {"model_name": "stand-in", "finish_reason": "tool_calls"}
                },
            ),
            Turn(
                role="tool",
                text="Zürich: 4 °C, Nebel",
                tool_call_id="call_zrh",
                name="weather",
                id="t-res-zrh",
                created_at=at(2.1),
            ),
            Turn(
                role="tool",
                text="東京: 12 °C, 晴れ",
                tool_call_id="call_tyo",
                name="weather",
                id="t-res-tyo",
                created_at=at(2.2),
            ),
            Turn(
                role="assistant",
                text="Zürich ist neblig (4 °C); in 東京 ist es sonnig (12 °C). ☀️",
                id="t-a1",
                created_at=at(3),
            ),
        ]
    )
    tools.add(
        Turn(
            role="user",
            text="Here is my ticket.\nWhich platform is it?",
            blocks=(
                {"type": "text", "text": "Here is my ticket."},
                image,
                {"type": "text", "text": "Which platform is it?"},
            ),
            id="t-img",
            created_at=at(4),
        )
    )
    tools.add(
        Turn(  # 0.2.0: reasoning is not speech, so the text is the text block only
            role="assistant",
            text="Platform 7, départ 09:41.",
            blocks=(
                {
                    "type": "thinking",
                    "thinking": "The ticket shows platform 7.",
                    "signature": "c2ln",
                },
                {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
                {"type": "text", "text": "Platform 7, départ 09:41."},
            ),
            id="t-think",
            created_at=at(5),
        )
    )
    tools.add(
        [
            Turn(role="user", text="Book the 09:41 for me, please.", id="t-q2", created_at=at(6)),
            Turn(  # an invalid call (malformed arguments): kept as a call, no result stored
                role="assistant",
                text="",
                tool_calls=(
                    ToolCall(
                        "book",
                        {},
                        "call_bad",
                        error='malformed arguments: \'{"train": "09:41", \'',
                    ),
                ),
                id="t-bad-call",
                created_at=at(6.5),
            ),
            Turn(
                role="assistant",
                text="Sorry, booking failed; please try again later.",
                id="t-a2",
                created_at=at(7),
            ),
        ]
    )
    for i in range(12):  # store-assigned ids (id=None), no created_at: the write time
        role = "user" if i % 2 == 0 else "assistant"
        tools.add(Turn(role=role, text=f"Small talk {i}: café, naïve, Ørsted, 😀 number {i}."))

    # Hybrid memories: statements, then small talk that folds them (FactModel's facts).
    minute = 0.0

    def add_hybrid(mem: Any, role: str, text: str, turn_id: str) -> None:
        nonlocal minute
        minute += 1
        mem.add(Turn(role=role, text=text, id=turn_id, created_at=at(minute)))

    def filler(mem: Any, tag: str, rounds: int) -> None:
        topics = ["weather", "football", "recipes", "music", "traffic", "gardening", "movies"]
        for i in range(rounds):
            topic = topics[i % len(topics)]
            add_hybrid(
                mem, "user", f"Let's chat about {topic} again, round {i}.", f"{tag}-u{i:02d}"
            )
            add_hybrid(mem, "assistant", f"Sure, {topic} is fine for round {i}.", f"{tag}-a{i:02d}")

    # default/hybrid-ada-1: no user; facts (one updated) and vectors.
    hybrid = HybridMemory(
        "hybrid-ada-1",
        store=store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(dim=EMBED_DIM),
        retry=retry,
        **CONFIGS["default/hybrid-ada-1"],
    )
    add_hybrid(hybrid, "user", "Hi! My name is Ada Quist.", "h1-name")
    add_hybrid(hybrid, "user", "My home city is Oslo.", "h1-city")
    filler(hybrid, "h1-f1", 14)
    add_hybrid(hybrid, "user", "Update: my home city is Bergen now.", "h1-city2")
    add_hybrid(hybrid, "user", "My favourite tea is oolong.", "h1-tea")
    filler(hybrid, "h1-f2", 14)

    # default/ada-trip: user ada's first conversation, with an embedder; it ends (folded).
    minute = 2 * DAY
    trip = HybridMemory(
        "ada-trip",
        store=store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(dim=EMBED_DIM),
        retry=retry,
        user_id=USERS["default/ada-trip"],
        **CONFIGS["default/ada-trip"],
    )
    add_hybrid(trip, "user", "My name is Ada Quist.", "at-name")
    add_hybrid(trip, "user", "My home city is Oslo.", "at-city")
    add_hybrid(trip, "user", "My passport number is X1234567.", "at-passport")
    filler(trip, "at-f1", 10)
    add_hybrid(trip, "user", "What should I pack for Kyoto?", "at-q")
    add_hybrid(trip, "assistant", "Pack layers and an umbrella for Kyoto.", "at-a")
    trip.fold(force=True, keep=False)  # the conversation ends: its facts reach the user now

    # default/ada-home: a week later, no embedder, recall from every session of the user.
    minute = 9 * DAY
    home = HybridMemory(
        "ada-home",
        store=store,
        model=FactModel(),
        retry=retry,
        user_id=USERS["default/ada-home"],
        **CONFIGS["default/ada-home"],
    )
    add_hybrid(home, "user", "Update: my home city is Bergen now.", "ah-city")
    add_hybrid(home, "user", "My favourite tea is sencha.", "ah-tea")
    filler(home, "ah-f1", 12)

    # tenant-b/ada-trip: the same user id and session id in another namespace.
    minute = 3 * DAY
    other = HybridMemory(
        "ada-trip",
        store=store,
        namespace="tenant-b",
        model=FactModel(),
        retry=retry,
        user_id=USERS["tenant-b/ada-trip"],
        **CONFIGS["tenant-b/ada-trip"],
    )
    add_hybrid(other, "user", "My home city is Reykjavik.", "bt-city")
    filler(other, "bt-f1", 10)

    # default/higmem-plain: no model; a labelled session, then a time gap.
    heuristic = HiGMem("higmem-plain", store=store, retry=retry, **CONFIGS["default/higmem-plain"])
    day1 = [
        ("user", "Caroline went to the LGBTQ support group on Monday."),
        ("assistant", "That sounds meaningful. How did it go for Caroline?"),
        ("user", "She said the transgender stories were inspiring."),
        ("assistant", "Support groups like that help a lot."),
    ]
    day2 = [
        ("user", "Melanie painted a sunrise over the lake last weekend."),
        ("assistant", "A sunrise painting! Which colours did Melanie use?"),
        ("user", "Mostly orange and violet, on a 40 by 60 canvas."),
        ("assistant", "Orange and violet suit a lake at dawn."),
    ]
    heuristic.add(
        [
            Turn(
                role=role,
                text=text,
                id=f"hp-1-{i}",
                name="Caroline" if role == "user" else "Melanie",
                created_at=at(i),
                extra={"session": "session_1"},
            )
            for i, (role, text) in enumerate(day1)
        ]
    )
    heuristic.add(
        [
            Turn(role=role, text=text, id=f"hp-2-{i}", created_at=at(DAY + i))
            for i, (role, text) in enumerate(day2)
        ]
    )
    heuristic.flush()  # 0.2.0 indexes without a model in batches of 16: index the 8 now

    # default/higmem-waiting: no model, turns not indexed yet (fewer than 16, no flush).
    waiting = HiGMem(
        "higmem-waiting", store=store, retry=retry, **CONFIGS["default/higmem-waiting"]
    )
    waiting.add(
        [
            Turn(
                role="user" if i % 2 == 0 else "assistant",
                text=text,
                id=f"hw-{i}",
                name="Nate" if i % 2 == 0 else "Joanna",
                created_at=at(2 * DAY + i),
            )
            for i, text in enumerate(
                [
                    "Nate adopted two turtles called Shelly and Flash.",
                    "Turtles! How old are they, Nate?",
                    "Shelly is 3 and Flash is 5.",
                    "Joanna wrote a screenplay about a lighthouse keeper.",
                    "A lighthouse keeper story sounds moving.",
                ]
            )
        ]
    )

    # default/higmem-llm: the scripted index model, event and window vectors, a retrieval.
    guided = HiGMem(
        "higmem-llm",
        store=store,
        model=HiGMemModel(),
        embedder=BagOfWordsEmbedder(dim=EMBED_DIM),
        retry=retry,
        **CONFIGS["default/higmem-llm"],
    )
    lines = [
        "Jon lost his job at the bank in January.",
        "Sorry to hear that Jon; what will you do next?",
        "Jon wants to open a dance studio downtown.",
        "A dance studio is a brave plan.",
        "Gina opened her clothing store online in 2023.",
        "Gina's store sells vintage jackets.",
        "The dance studio lease costs 1200 dollars a month.",
        "Jon signed the studio lease on Friday.",
        "Gina will sell jackets at the studio opening.",
        "Studio opening party is on 20 June.",
    ]
    guided.add(
        [
            Turn(
                role="user" if i % 2 == 0 else "assistant",
                text=text,
                id=f"hl-{i:02d}",
                name="Jon" if i % 2 == 0 else "Gina",
                created_at=at(i * 10),
            )
            for i, text in enumerate(lines)
        ]
    )
    guided.flush()
    guided.retrieve("When is the studio opening party?", k=3)  # usage: higmem-retrieve

    # default/higmem-structured: a LangChain chat model with structured output (usage as
    # the provider reports it).
    structured = HiGMem(
        "higmem-structured",
        store=store,
        model=LangChainTextModel(StructuredChatModel()),
        retry=retry,
        **CONFIGS["default/higmem-structured"],
    )
    structured.add(
        [
            Turn(
                role="user",
                name="Ada",
                text="I adopted a cat called Miso last week.",
                id="hs-0",
                created_at=at(3 * DAY),
            ),
            Turn(
                role="assistant",
                name="Bot",
                text="Congratulations on Miso! How old is Miso?",
                id="hs-1",
                created_at=at(3 * DAY + 1),
            ),
            Turn(
                role="user",
                name="Ada",
                text="Miso is 2 years old and loves tuna.",
                id="hs-2",
                created_at=at(3 * DAY + 2),
            ),
            Turn(
                role="assistant",
                name="Bot",
                text="Tuna is a classic favourite for cats.",
                id="hs-3",
                created_at=at(3 * DAY + 3),
            ),
            Turn(
                role="user",
                name="Ada",
                text="Also, my sister moved to Porto in 2024.",
                id="hs-4",
                created_at=at(3 * DAY + 4),
            ),
        ]
    )
    structured.flush()
    structured.retrieve("How old is Miso?", k=2)

    # default/lc-history: the LangChain chat history's messages.
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from langchain_recursive_memory import RecursiveSummaryChatMessageHistory

    history = RecursiveSummaryChatMessageHistory(
        "lc-history", store=store, **CONFIGS["default/lc-history"]
    )
    history.add_messages(
        [
            SystemMessage("Be brief.", id="lc-sys"),
            HumanMessage(
                "What's 2+2? Ça va? 🙂",
                id="lc-q",
                additional_kwargs={"client_ref": "abc"},
            ),
            AIMessage(
                "",
                id="lc-call",
                tool_calls=[{"name": "add", "args": {"a": 2, "b": 2}, "id": "call_add"}],
                response_metadata={"model_name": "stand-in", "finish_reason": "tool_calls"},
                usage_metadata={"input_tokens": 12, "output_tokens": 5, "total_tokens": 17},
            ),
            ToolMessage("4", tool_call_id="call_add", name="add", id="lc-res"),
            AIMessage(
                [{"type": "text", "text": "It is 4."}],
                id="lc-a",
                response_metadata={"model_name": "stand-in", "finish_reason": "stop"},
            ),
        ]
    )

    # default/li-memory: the LlamaIndex memory's messages.
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from llamaindex_higmem import RecursiveSummaryMemory

    li = RecursiveSummaryMemory.from_defaults(
        session_id="li-memory", store=store, token_limit=CONFIGS["default/li-memory"]["max_tokens"]
    )
    li.put_messages(
        [
            ChatMessage(role=MessageRole.USER, content="Book a table for two in Kraków."),
            ChatMessage(
                role=MessageRole.ASSISTANT,
                content="",
                additional_kwargs={
                    "tool_calls": [
                        {
                            "id": "call_book",
                            "type": "function",
                            "function": {
                                "name": "book",
                                "arguments": '{"city": "Kraków", "people": 2}',
                            },
                        }
                    ]
                },
            ),
            ChatMessage(
                role=MessageRole.TOOL,
                content="booked: 19:30",
                additional_kwargs={"tool_call_id": "call_book", "name": "book"},
            ),
            ChatMessage(role=MessageRole.ASSISTANT, content="Booked for 19:30 in Kraków."),
        ]
    )

    # default/cleared: summarized, cleared, then written again (partly the same turn ids).
    cleared = RecursiveMemory(
        "cleared",
        store=store,
        model=KeywordSummarizer(max_words=30),
        retry=retry,
        **CONFIGS["default/cleared"],
    )
    for i in range(14):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"Old note {i}: parcel P-{500 + i} went to Gdansk."
        cleared.add(Turn(role=role, text=text, id=f"c-{i:02d}", created_at=at(i)))
    cleared.clear()
    for i in range(18):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"New note {i}: ticket T-{700 + i} for Tallinn."
        cleared.add(Turn(role=role, text=text, id=f"c-{i:02d}", created_at=at(DAY + i)))

    # tenant-b/recursive: same session id, another namespace, the extractive summarizer.
    tenant = RecursiveMemory(
        "recursive",
        store=store,
        namespace="tenant-b",
        retry=retry,
        **CONFIGS["tenant-b/recursive"],
    )
    for i in range(16):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"Tenant B note {i}: invoice INV-{1000 + i} is due on day {i + 1}."
        tenant.add(Turn(role=role, text=text, id=f"b-{i:02d}", created_at=at(i)))
    for key, settings in DESCRIBED.items():
        namespace, session_id = key.split("/", 1)
        store.describe_session(namespace, session_id, settings)

    write_agent_thread(store, retry)


def write_agent_thread(store: Any, retry: Any) -> None:
    """``default/agent-thread-1``: a LangChain v1 agent through the middleware (user bo)."""
    from fakes import FactModel
    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_recursive_memory import RecursiveMemoryMiddleware

    class ScriptedAgentModel(GenericFakeChatModel):
        """langchain-core's fake chat model (answers from a fixed list), with tools bound."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedAgentModel:  # type: ignore[override]
            return self

    @tool
    def lookup(key: str) -> str:
        """Look up where a warehouse item is stored."""
        return f"Item {key} is in bay {sum(map(ord, key)) % 97}."

    questions = [
        "Hi, I'm Bo. My desk number is 42. Where is item A-1?",
        "My favourite colour is teal. Where is item B-2?",
        "Thanks. My team name is Falcons.",
        "Where is item C-3?",
        "Where is item D-4?",
        "Update: my desk number is 17 now. Where is item E-5?",
        "Where is item F-6?",
        "Where is item G-7?",
        "Thanks, that's all for today.",
    ]
    script: list[AIMessage] = []
    for n, question in enumerate(questions, 1):
        if "item " in question:
            item = question.rsplit("item ", 1)[1].rstrip("?")
            call = {"name": "lookup", "args": {"key": item}, "id": f"call_ag{n}"}
            script.append(AIMessage("", tool_calls=[call], id=f"ag-call-{n}"))
            script.append(AIMessage(f"Item {item} is where the lookup says.", id=f"ag-a-{n}"))
        else:
            script.append(AIMessage("Noted, thank you.", id=f"ag-a-{n}"))
    middleware = RecursiveMemoryMiddleware(
        store=store,
        llm=FactModel(),
        extract_facts=True,
        retry=retry,
        **CONFIGS["default/agent-thread-1"],
    )
    agent = create_agent(
        ScriptedAgentModel(messages=iter(script)),
        tools=[lookup],
        system_prompt=AGENT_SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {
        "configurable": {"thread_id": "agent-thread-1", "user_id": USERS["default/agent-thread-1"]}
    }
    for n, question in enumerate(questions, 1):
        agent.invoke({"messages": [HumanMessage(question, id=f"ag-q-{n}")]}, config)


# -- reading (a fresh process) ---------------------------------------------------------------

SESSIONS: dict[str, str] = {
    "default/recursive": "recursive",
    "default/tools-会話": "recursive",
    "default/hybrid-ada-1": "hybrid",
    "default/ada-trip": "hybrid",
    "default/ada-home": "hybrid",
    "default/higmem-plain": "higmem",
    "default/higmem-waiting": "higmem-waiting",
    "default/higmem-llm": "higmem",
    "default/higmem-structured": "higmem",
    "default/lc-history": "langchain",
    "default/li-memory": "llamaindex",
    "default/cleared": "recursive",
    "default/agent-thread-1": "agent",
    "tenant-b/recursive": "recursive",
    "tenant-b/ada-trip": "hybrid",
}


def plain(value: Any) -> Any:
    """Dataclasses, tuples and mappings as JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def stored_turn(s: Any) -> dict[str, Any]:
    return {
        "id": s.turn.id,
        "role": s.turn.role,
        "text": s.turn.text,
        "payload": s.turn.payload(),
        "created_at": s.turn.created_at,
        "seq": s.seq,
        "tokens": s.tokens,
        "encoding": s.encoding,
        "folded_in": s.folded_in,
    }


def vector_records(client: Any, spaces: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every record of each embedder's vector collection, read with chromadb.

    0.2.0 has no API listing a session's vectors (``MemoryStore.get_vectors`` is deprecated,
    "reading the vector collection with chromadb" is its replacement). The record fields
    are :class:`VectorRecord`'s (``id``, ``kind``, ``ref``, ``text_hash``) and its owner.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for space in spaces:
        got = client.get_collection(f"{PREFIX}_vec_{space}").get(include=["metadatas"])
        out[space] = [
            {
                "id": rid,
                "kind": str(meta["kind"]),
                "ref": str(meta["ref"]),
                "text_hash": str(meta.get("h", "")),
                "namespace": meta.get("ns"),
                "session_id": meta.get("sid"),
                "user_id": meta.get("uid"),
                "user_owned": "uo" in meta,
            }
            for rid, meta in zip(got["ids"], got["metadatas"] or [], strict=True)
        ]
    return out


def owned_by(records: dict[str, list[dict[str, Any]]], **owner: Any) -> dict[str, Any]:
    fields = ("id", "kind", "ref", "text_hash")
    return {
        space: sorted(
            ({f: r[f] for f in fields} for r in rows if all(r[k] == v for k, v in owner.items())),
            key=lambda r: r["id"],
        )
        for space, rows in records.items()
    }


def read(release: Path, out: Path) -> None:
    lrm = import_release(release)
    import chromadb
    from langchain_core.messages import messages_to_dict

    from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
    from langchain_recursive_memory.core import HiGMem, HybridMemory, MemoryStore, RecursiveMemory
    from llamaindex_higmem import RecursiveSummaryMemory

    store = MemoryStore.persistent(out, prefix=PREFIX)
    client = store.client
    collections = sorted(c if isinstance(c, str) else c.name for c in client.list_collections())
    spaces = [c[len(f"{PREFIX}_vec_") :] for c in collections if c.startswith(f"{PREFIX}_vec_")]
    vectors = vector_records(client, spaces)
    users = store.users()
    expected: dict[str, Any] = {
        "written_by": {
            "langchain_recursive_memory": lrm.__version__,
            "release_commit": RELEASE_COMMIT,
            "chromadb": chromadb.__version__,
            "python": platform.python_version(),
            "script": "tests/data/make_store_0_2_0.py",
        },
        "prefix": PREFIX,
        "new_in_0_2_0": {
            "users": "user_id on sessions; user facts (their own records and vectors)",
            "session settings": "SessionInfo.settings, recorded by each engine's first write",
            "records": "stamp records, HiGMem index links and open flags, fold leases",
            "higmem-waiting": "a HiGMem session whose turns wait to be indexed: its events "
            "and nodes are not read here (reading them indexes the turns, a write)",
            "agent": "default/agent-thread-1, written through RecursiveMemoryMiddleware",
        },
        "collections": {name: client.get_collection(name).count() for name in collections},
        "sessions_list": plain(store.sessions()),
        "activity": [
            {"namespace": ns, "session_id": sid, "last": last}
            for (ns, sid), last in sorted(store.activity().items())
        ],
        "activity_created": [
            {"namespace": ns, "session_id": sid, "last": last}
            for (ns, sid), last in sorted(store.activity(by="created").items())
        ],
        "users_list": plain(users),
        "users": {},
        "sessions": {},
    }
    for user in users:
        expected["users"][f"{user.namespace}/{user.user_id}"] = {
            "namespace": user.namespace,
            "user_id": user.user_id,
            "sessions": plain(store.user_sessions(user.namespace, user.user_id)),
            "facts": plain(store.user_facts(user.namespace, user.user_id)),
            "vectors": owned_by(
                vectors, namespace=user.namespace, user_id=user.user_id, user_owned=True
            ),
        }
    for key, kind in SESSIONS.items():
        namespace, session_id = key.split("/", 1)
        session = store.session(namespace, session_id)
        state = session.summaries.load()
        latest = store.latest_summary(namespace, session_id)
        entry: dict[str, Any] = {
            "namespace": namespace,
            "session_id": session_id,
            "kind": kind,
            "config": CONFIGS[key],
            "written_for_user": USERS.get(key),
            "user_id": store.session_user(namespace, session_id),
            "settings": store.session_settings(namespace, session_id),
            "turns": [stored_turn(s) for s in store.turns(namespace, session_id)],
            "count_turns": store.count_turns(namespace, session_id),
            "summaries": plain(store.summaries(namespace, session_id)),
            "latest_summary_version": latest.version if latest else None,
            "state": {
                "summary_version": state.summary.version if state.summary else None,
                "unfolded_ids": [t.id for t in state.turns],
                "repair_ids": list(state.repair_ids),
                "question_id": state.question.id if state.question else None,
                "stamp_memory": state.stamp.memory if state.stamp else None,
                "stamp_user_id": state.stamp.user_id if state.stamp else None,
            },
            "facts": plain(session.facts.get()),
            "usage": plain(store.usage(namespace, session_id)),
            "vectors": owned_by(
                vectors, namespace=namespace, session_id=session_id, user_owned=False
            ),
        }
        if kind in ("recursive", "hybrid", "agent"):
            engine = RecursiveMemory if kind == "recursive" else HybridMemory
            memory = engine(session_id, store=store, namespace=namespace, **CONFIGS[key])
            context = memory.context()
            entry["context"] = {
                "summary_version": context.summary.version if context.summary else None,
                "window_ids": [t.id for t in context.window],
                "tokens": context.tokens,
                "max_tokens": context.max_tokens,
                "hidden": context.hidden,
            }
        if kind == "higmem":
            higmem = HiGMem(session_id, store=store, namespace=namespace, **CONFIGS[key])
            entry["events"] = plain(higmem.events())
            entry["nodes"] = plain(higmem.turn_nodes())  # 0.1.0's notes()
        if kind == "langchain":
            history = RecursiveSummaryChatMessageHistory(session_id, store=store, **CONFIGS[key])
            entry["messages"] = messages_to_dict(history.messages)
        if kind == "llamaindex":
            li = RecursiveSummaryMemory.from_defaults(
                session_id=session_id, store=store, token_limit=CONFIGS[key]["max_tokens"]
            )
            entry["messages"] = [m.model_dump(mode="json") for m in li.get_all()]
        expected["sessions"][key] = entry
    text = json.dumps(expected, ensure_ascii=False, indent=1, sort_keys=True)
    (out / "expected.json").write_text(text + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "step",
        choices=["write", "write-only", "read"],
        help="write: write-only then read, each in a fresh process",
    )
    parser.add_argument("--release", type=Path, required=True, help="the 0.2.0 checkout")
    parser.add_argument("--out", type=Path, required=True, help="the store directory")
    args = parser.parse_args()
    if args.step == "write":
        import_release(args.release)  # refuse here already, not only in the children
        refuse_existing(args.out)
        # Write in a child, then read back in another: what 0.2.0 reads from disk, with no
        # cache involved and no other process holding the store.
        for step in ("write-only", "read"):
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    step,
                    "--release",
                    str(args.release),
                    "--out",
                    str(args.out),
                ],
                check=True,
            )
    elif args.step == "write-only":
        write(args.release, args.out)
    else:
        read(args.release, args.out)


if __name__ == "__main__":
    main()
