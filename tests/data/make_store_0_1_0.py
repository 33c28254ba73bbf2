"""Write ``tests/data/store-0.1.0``: a Chroma store written by langchain-recursive-memory 0.1.0.

The store is a fixture of ``tests/test_upgrade.py``, which opens a copy of it with today's
code. It must be written BY THE 0.1.0 RELEASE (commit ``eadefe5``, 2026-11-29) and NEVER
regenerated with newer code: a store written by newer code would no longer test an
upgrade. The script refuses to run unless the package it imports is 0.1.0 from the
release checkout it is given, and refuses to write into an existing directory.

It uses only 0.1.0's public API and offline, deterministic stand-ins: the scripted models
and the embedder of 0.1.0's own ``tests/fakes.py`` (``KeywordSummarizer``, ``FactModel``,
``HiGMemModel``, ``BagOfWordsEmbedder``), imported from the release checkout. Nothing is
downloaded (every record has an explicit embedding; tiktoken files ship with 0.1.0).

What it writes (collection prefix ``lrm``, the default), one session per thing an
upgrade must keep:

* ``default/recursive``: ``RecursiveMemory`` with a summarizer, folded several times;
* ``default/tools-会話``: tool calls and their results, content blocks (an image, a
  thinking block), unicode, store-assigned turn ids, a ``name`` and ``extra`` fields;
* ``default/hybrid-ada-1``: ``HybridMemory`` (``extract_facts=True``, combined facts)
  with an embedder (turn and fact vectors); one fact updated (``previous``);
* ``default/hybrid-ada-2``: a second hybrid session of the same person (0.1.0 has no
  ``user_id``: today's test joins both sessions to one user);
* ``default/higmem-plain``: ``HiGMem`` without a model (heuristic nodes, session events
  from a session label and a time gap);
* ``default/higmem-llm``: ``HiGMem`` with a scripted model answering the index prompt, and
  an embedder (event vectors);
* ``default/lc-history``: LangChain ``RecursiveSummaryChatMessageHistory`` messages (tool
  calls, ``additional_kwargs``, ``response_metadata``, ``usage_metadata``, message ids);
* ``default/li-memory``: LlamaIndex ``RecursiveSummaryMemory`` messages;
* ``tenant-b/recursive``: the same session id in another namespace, folded by the no-LLM
  extractive summarizer.

Then a fresh process (``read`` below) reads everything back with 0.1.0 and writes
``expected.json`` into the store directory: every turn, summary version, the loaded
state, facts, HiGMem events and turn nodes, vector records, usage, the sessions list and
the adapters' messages.

How it was run (2026-12, from a checkout of the release; pip from PyPI)::

    git -C /work/main worktree add --detach /tmp/v010 eadefe5
    python3 -m venv /tmp/v010/.venv
    /tmp/v010/.venv/bin/pip install -e "/tmp/v010[all]"   # chromadb 1.5.9
    cd /tmp && /tmp/v010/.venv/bin/python \\
        /work/wt/fixture/tests/data/make_store_0_1_0.py write \\
        --release /tmp/v010 --out /work/wt/fixture/tests/data/store-0.1.0
    git -C /work/main worktree remove --force /tmp/v010
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
BASE = 1761984000.0  # 2025-11-01 08:00 UTC: every turn's created_at is BASE + offset
EMBED_DIM = 16
RELEASE_COMMIT = "eadefe5"

# How each session's memory was made (its budget): the test opens them the same way.
CONFIGS: dict[str, dict[str, int]] = {
    "default/recursive": {"max_tokens": 300, "max_summary_tokens": 80},
    "default/tools-会話": {"max_tokens": 400, "max_summary_tokens": 80},
    "default/hybrid-ada-1": {"max_tokens": 800, "max_summary_tokens": 120},
    "default/hybrid-ada-2": {"max_tokens": 500, "max_summary_tokens": 100},
    "default/higmem-plain": {},
    "default/higmem-llm": {"batch_size": 4},
    "default/lc-history": {"max_tokens": 4000},
    "default/li-memory": {"max_tokens": 4000},
    "tenant-b/recursive": {"max_tokens": 200, "max_summary_tokens": 60},
}


# -- checks ----------------------------------------------------------------------------------


def import_release(release: Path) -> Any:
    """Import 0.1.0 from ``release`` (its tests folder too, for the stand-ins)."""
    sys.path.insert(0, str(release / "tests"))
    import langchain_recursive_memory as lrm

    where = Path(lrm.__file__).resolve()
    if lrm.__version__ != "0.1.0" or release.resolve() not in where.parents:
        raise SystemExit(
            f"refusing to run: imported langchain_recursive_memory {lrm.__version__} from "
            f"{where}; this fixture must be written by 0.1.0 from {release}"
        )
    return lrm


# -- writing ---------------------------------------------------------------------------------


def at(minutes: float) -> float:
    return BASE + 60.0 * minutes


def write(release: Path, out: Path) -> None:
    import_release(release)
    from fakes import BagOfWordsEmbedder, FactModel, HiGMemModel, KeywordSummarizer

    from langchain_recursive_memory.core import (
        HiGMem,
        HybridMemory,
        MemoryStore,
        RecursiveMemory,
        RetryPolicy,
        ToolCall,
        Turn,
    )

    if out.exists():
        raise SystemExit(f"refusing to overwrite {out}: the fixture is never regenerated")
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

    # default/tools-会話: tool calls, content blocks, unicode, assigned ids, extra fields.
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
        Turn(
            role="assistant",
            text="The ticket shows platform 7.\nPlatform 7, départ 09:41.",
            blocks=(
                {
                    "type": "thinking",
                    "thinking": "The ticket shows platform 7.",
                    "signature": "c2ln",
                },
                {"type": "text", "text": "Platform 7, départ 09:41."},
            ),
            id="t-think",
            created_at=at(5),
        )
    )
    for i in range(12):  # store-assigned ids (id=None), no created_at: the write time
        role = "user" if i % 2 == 0 else "assistant"
        tools.add(Turn(role=role, text=f"Small talk {i}: café, naïve, Ørsted, 😀 number {i}."))

    # default/hybrid-ada-1: facts (one updated) and vectors.
    embedder = BagOfWordsEmbedder(dim=EMBED_DIM)
    hybrid = HybridMemory(
        "hybrid-ada-1",
        store=store,
        model=FactModel(),
        embedder=embedder,
        retry=retry,
        **CONFIGS["default/hybrid-ada-1"],
    )
    minute = 0

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

    add_hybrid(hybrid, "user", "Hi! My name is Ada Quist.", "h1-name")
    add_hybrid(hybrid, "user", "My home city is Oslo.", "h1-city")
    filler(hybrid, "h1-f1", 14)
    add_hybrid(hybrid, "user", "Update: my home city is Bergen now.", "h1-city2")
    add_hybrid(hybrid, "user", "My favourite tea is oolong.", "h1-tea")
    filler(hybrid, "h1-f2", 14)

    # default/hybrid-ada-2: the same person's second conversation, no embedder.
    minute = 500
    hybrid2 = HybridMemory(
        "hybrid-ada-2",
        store=store,
        model=FactModel(),
        retry=retry,
        **CONFIGS["default/hybrid-ada-2"],
    )
    add_hybrid(hybrid2, "user", "My home city is Trondheim.", "h2-city")
    add_hybrid(hybrid2, "user", "My locker code is 4471.", "h2-code")
    filler(hybrid2, "h2-f1", 16)

    # default/higmem-plain: no model; a labelled session, then a time gap.
    heuristic = HiGMem("higmem-plain", store=store, retry=retry)
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
            Turn(role=role, text=text, id=f"hp-2-{i}", created_at=at(24 * 60 + i))
            for i, (role, text) in enumerate(day2)
        ]
    )

    # default/higmem-llm: the scripted index model, event vectors.
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


# -- reading (a fresh process) ---------------------------------------------------------------

SESSIONS: dict[str, str] = {
    "default/recursive": "recursive",
    "default/tools-会話": "recursive",
    "default/hybrid-ada-1": "hybrid",
    "default/hybrid-ada-2": "hybrid",
    "default/higmem-plain": "higmem",
    "default/higmem-llm": "higmem",
    "default/lc-history": "langchain",
    "default/li-memory": "llamaindex",
    "tenant-b/recursive": "recursive",
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
    expected: dict[str, Any] = {
        "written_by": {
            "langchain_recursive_memory": lrm.__version__,
            "release_commit": RELEASE_COMMIT,
            "chromadb": chromadb.__version__,
            "python": platform.python_version(),
            "script": "tests/data/make_store_0_1_0.py",
        },
        "prefix": PREFIX,
        "absent_in_0_1_0": {
            "users": "0.1.0 has no user_id: no users, no user facts",
            "session settings": "0.1.0 records no settings (memory kind, budget) per session",
        },
        "collections": {name: client.get_collection(name).count() for name in collections},
        "sessions_list": plain(store.sessions()),
        "activity": [
            {"namespace": ns, "session_id": sid, "last": last}
            for (ns, sid), last in sorted(store.activity().items())
        ],
        "sessions": {},
    }
    for key, kind in SESSIONS.items():
        namespace, session_id = key.split("/", 1)
        state = store.load(namespace, session_id)
        latest = store.latest_summary(namespace, session_id)
        entry: dict[str, Any] = {
            "namespace": namespace,
            "session_id": session_id,
            "kind": kind,
            "config": CONFIGS[key],
            "turns": [stored_turn(s) for s in store.turns(namespace, session_id)],
            "count_turns": store.count_turns(namespace, session_id),
            "summaries": plain(store.summaries(namespace, session_id)),
            "latest_summary_version": latest.version if latest else None,
            "state": {
                "summary_version": state.summary.version if state.summary else None,
                "unfolded_ids": [t.id for t in state.turns],
                "repair_ids": list(state.repair_ids),
            },
            "facts": plain(store.get_facts(namespace, session_id)),
            "usage": plain(store.usage(namespace, session_id)),
            "vectors": {
                space: sorted(
                    [
                        {"id": r.id, "kind": r.kind, "ref": r.ref, "text_hash": r.text_hash}
                        for r in store.get_vectors(
                            space,
                            namespace,
                            session_id,
                            ["turn", "fact", "hg_event", "hg_w1", "hg_w2"],
                        )
                    ],
                    key=lambda r: r["id"],
                )
                for space in spaces
            },
        }
        if kind in ("recursive", "hybrid"):
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
            higmem = HiGMem(session_id, store=store, namespace=namespace)
            entry["events"] = plain(higmem.events())
            entry["nodes"] = plain(higmem.notes())
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
    parser.add_argument("step", choices=["write", "read"])
    parser.add_argument("--release", type=Path, required=True, help="the 0.1.0 checkout")
    parser.add_argument("--out", type=Path, required=True, help="the store directory")
    args = parser.parse_args()
    if args.step == "write":
        write(args.release, args.out)
        # Read back in a fresh process: what 0.1.0 reads from disk, no cache involved.
        subprocess.run(
            [
                sys.executable,
                __file__,
                "read",
                "--release",
                str(args.release),
                "--out",
                str(args.out),
            ],
            check=True,
        )
    else:
        read(args.release, args.out)


if __name__ == "__main__":
    main()
