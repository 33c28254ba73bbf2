"""The frameworks' current paths side by side, in one run: a LangChain v1 agent thread
(no middleware, ``SummarizationMiddleware``, our ``RecursiveMemoryMiddleware``) on each
checkpointer, and LlamaIndex ``Memory`` alone or with this package's memory blocks.

**Agent** (``--parts agent``): ``langchain.agents.create_agent`` with a scripted chat model
(``GenericFakeChatModel`` answering the next LoCoMo turn; ``bind_tools`` returns itself; no
tools), the system prompt ``SYSTEM_PROMPT``, a checkpointer (``--checkpointers``:
``memory`` = ``InMemorySaver``, ``sqlite`` = ``SqliteSaver`` on a file, from
``langgraph-checkpoint-sqlite``) and one of (``--agent-systems``):

* ``none``: no middleware (the checkpointer's state is the memory; it grows for good);
* ``summarization``: ``SummarizationMiddleware(<fake summarizer>, trigger=("tokens",
  2000), keep=("messages", 16))``; the summarizer (``FakeListChatModel``) answers a fixed
  summary of about 300 tokens, and its calls are counted;
* ``ours``: ``RecursiveMemoryMiddleware(store=MemoryStore.persistent(<tmpdir>),
  max_tokens=2000)`` (``--store memory``: ``MemoryStore.in_memory()``), no summarizer
  model (the no-LLM extractive one), each thread its own session (``thread_id``).

Each system has its own agent, checkpointer and store. One thread each: ``--turns`` (800)
invokes on the same ``thread_id``, each sending one new user message (LoCoMo's dev turns,
conversations one after another: user turn ``2i``, answer ``2i + 1``). The systems take
turns invoke by invoke (the order rotates), so the machine's load falls on all alike.
Measured: ms per ``invoke`` (p50 of the first and last ``EDGE`` = 50 invokes, p50/p90 of
all), the messages in the thread's state (``agent.get_state(config).values["messages"]``)
at the end, and the ratios last50/first50 and over ``SummarizationMiddleware`` on the same
checkpointer. Then, after the thread, ``--profile`` (20) more invokes of each system alone
with wall-clock timers around the framework's pieces (checkpointer ``get_tuple`` /
``put`` + ``put_writes``, of which the serializer's ``dumps_typed``/``loads_typed``; the
model call; ``SummarizationMiddleware.before_model``; our middleware's store writes
(``_store``: ``by_ids`` + ``add``), ``RecursiveMemory.context`` and request building
(``_prepare``, ``_view``, ``messages_to_log``, ``latest_question``), of which time inside
our SQL database and Chroma), and as many again under ``cProfile`` for ``ours`` (main
thread only: LangGraph writes checkpoints on a background thread) for its top functions.

**Memory** (``--parts memory``): ``llama_index.core.memory.Memory.from_defaults(
session_id, token_limit=2000, async_database_uri="sqlite+aiosqlite:///<file>")`` alone
(``memory``) and with one of this package's blocks in ``memory_blocks`` (``higmem``:
``HiGMemMemoryBlock``; ``recursive``: ``RecursiveSummaryMemoryBlock``; ``hybrid``:
``HybridMemoryBlock``; those not importable from ``llamaindex_higmem`` are reported as
skipped), each block built with ``from_defaults(store=<its own MemoryStore>)``. Per exchange
(``--exchanges``, 300): ``put_messages([user, assistant])`` then ``get()`` (the sync API),
interleaved as above; p50 per exchange and its ratio to ``Memory`` alone.

    python benchmarks/frameworks.py --quick                     # smoke run, < 1 min
    python benchmarks/frameworks.py --label before              # 800 turns, 300 exchanges
    python benchmarks/frameworks.py --parts agent --checkpointers sqlite --turns 2000

Writes ``<out>/frameworks-<label>.json`` and ``.png`` (``--out``: default benchmarks/results).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import inspect
import itertools
import json
import os
import pstats
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DEFAULT_LOCOMO,
    RESULTS,
    Lines,
    block_ratio,
    console,
    fmt_ms,
    fmt_ratio,
    library_version,
    pct,
    print_table,
    progress,
    pyplot,
    ratio,
    save_figure,
    sums,
    uptime,
    write_result_files,
)
from _measure import child_json, rss_bytes

AGENT_SYSTEMS = ("none", "summarization", "ours")
CHECKPOINTERS = ("memory", "sqlite")
MEMORY_SYSTEMS = ("memory", "static", "higmem", "recursive", "hybrid")
BLOCKS = {
    "higmem": "HiGMemMemoryBlock",
    "recursive": "RecursiveSummaryMemoryBlock",
    "hybrid": "HybridMemoryBlock",
}
PARTS = ("agent", "memory")
BASE_AGENT = "summarization"
BASE_MEMORY = "memory"
# LlamaIndex's own simplest block: what any block costs Memory (its get formats the blocks'
# text through a Jinja template, compiled at every call), the floor for ours.
STATIC_MEMORY = "static"
MAX_TOKENS = 2000
KEEP_MESSAGES = 16
SUMMARY_CHARS = 1200  # the fake summary: about 300 tokens, our max_summary_tokens default
EDGE = 50
BLOCK = 50
SMOOTH = 25
TOP = 15
SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."
THREAD = "thread-1"
SID = "chat"
CHILD = "--child"
SUMMARIZER_CALLS: dict[str, int] = {}


# -- the conversation ----------------------------------------------------------------------


# -- timers around the frameworks' pieces --------------------------------------------------


class Timers:
    """Wall-clock seconds inside wrapped functions, by category (outermost calls only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.on = False  # off: a wrapped function only pays one more call
        self._local = threading.local()

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def wrap(self, owner: Any, attr: str, category: str) -> None:
        """Replace ``owner.attr`` (a plain method or a module function) by a timed twin."""
        original = getattr(owner, attr, None)
        if original is None or getattr(original, "timed", False):
            return
        timers = self

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not timers.on:
                return original(*args, **kwargs)
            depth: dict[str, int] = timers._local.__dict__.setdefault("depth", {})
            level = depth.get(category, 0)
            depth[category] = level + 1
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                depth[category] = level
                if level == 0:
                    timers.seconds[category] = (
                        timers.seconds.get(category, 0.0) + time.perf_counter() - t0
                    )
                    timers.calls[category] = timers.calls.get(category, 0) + 1

        timed.timed = True  # type: ignore[attr-defined]
        setattr(owner, attr, timed)


TOP_LEVEL = (
    "checkpointer read",
    "checkpointer write",
    "model call",
    "SummarizationMiddleware.before_model",
    "ours: store writes",
    "ours: context read",
    "ours: request building",
)
NESTED = (
    "serializer (in checkpointer)",
    "our SQL (in ours)",
    "Chroma (in ours)",
    "our hooks (incl. model call)",
)
SHORT = {
    "checkpointer read": "ckpt read",
    "checkpointer write": "ckpt write",
    "model call": "model",
    "SummarizationMiddleware.before_model": "summ hook",
    "ours: store writes": "our writes",
    "ours: context read": "our context",
    "ours: request building": "our request",
    "serializer (in checkpointer)": "serde*",
    "our SQL (in ours)": "our SQL*",
    "Chroma (in ours)": "Chroma*",
    "our hooks (incl. model call)": "our hooks*",
}
ALIAS = {"summarization": "summ", "memory": "mem", "sqlite": "sql"}


def alias(name: str) -> str:
    """``summarization/memory`` -> ``summ/mem`` (the tables' first column)."""
    return "/".join(ALIAS.get(part, part) for part in name.split("/"))


def install_timers(timers: Timers, chat: type) -> None:
    """Wrap the pieces named in :data:`TOP_LEVEL` and :data:`NESTED`."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_recursive_memory.core.recursive import RecursiveMemory
    from langchain_recursive_memory.core.storage.database import Database
    from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

    agent_module = importlib.import_module("langchain_recursive_memory.middleware.agent")
    for saver in (InMemorySaver, SqliteSaver):
        timers.wrap(saver, "get_tuple", "checkpointer read")
        timers.wrap(saver, "put", "checkpointer write")
        timers.wrap(saver, "put_writes", "checkpointer write")
    timers.wrap(JsonPlusSerializer, "dumps_typed", "serializer (in checkpointer)")
    timers.wrap(JsonPlusSerializer, "loads_typed", "serializer (in checkpointer)")
    timers.wrap(chat, "_generate", "model call")
    timers.wrap(SummarizationMiddleware, "before_model", "SummarizationMiddleware.before_model")
    timers.wrap(RecursiveMemoryMiddleware, "_store", "ours: store writes")
    timers.wrap(RecursiveMemory, "context", "ours: context read")
    for method in ("_prepare", "_view"):
        timers.wrap(RecursiveMemoryMiddleware, method, "ours: request building")
    for function in ("messages_to_log", "latest_question"):
        timers.wrap(agent_module, function, "ours: request building")
    timers.wrap(Database, "_run", "our SQL (in ours)")
    for hook in ("wrap_model_call", "after_agent"):
        timers.wrap(RecursiveMemoryMiddleware, hook, "our hooks (incl. model call)")
    try:
        from langchain_recursive_memory.core.storage.client import StoreClient
    except ImportError:
        return
    timers.wrap(StoreClient, "call", "Chroma (in ours)")


# -- the agents ----------------------------------------------------------------------------


@functools.cache
def chat_class() -> type:
    """``GenericFakeChatModel`` whose ``bind_tools`` returns itself (an agent with no tools)."""
    from langchain_core.language_models import GenericFakeChatModel

    class ScriptedChat(GenericFakeChatModel):
        def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
            return self

    return ScriptedChat


@functools.cache
def summarizer_class() -> type:
    """``FakeListChatModel`` counting its calls in :data:`SUMMARIZER_CALLS` by ``tag``."""
    from langchain_core.language_models import FakeListChatModel

    class CountingSummarizer(FakeListChatModel):
        tag: str = ""

        def _call(self, *args: Any, **kwargs: Any) -> str:
            SUMMARIZER_CALLS[self.tag] = SUMMARIZER_CALLS.get(self.tag, 0) + 1
            return str(super()._call(*args, **kwargs))

    return CountingSummarizer


class AgentThread:
    """One system's agent, checkpointer and store, and its thread."""

    def __init__(self, name: str, root: Path, lines: Lines, store_kind: str) -> None:
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage

        self.name = name
        system, checkpointer = name.split("/")
        folder = root / name.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        self.conn: sqlite3.Connection | None = None
        self.db_path = folder / "checkpoints.db"
        answers: Iterator[Any] = (
            AIMessage(content=lines.turn(2 * i + 1)[2]) for i in itertools.count()
        )
        model = chat_class()(messages=answers)
        self.agent = create_agent(
            model,
            system_prompt=SYSTEM_PROMPT,
            middleware=self._middleware(system, folder, lines, store_kind),
            checkpointer=self._checkpointer(checkpointer),
        )
        self.config: Any = {"configurable": {"thread_id": THREAD}}

    def _checkpointer(self, kind: str) -> Any:
        if kind == "memory":
            from langgraph.checkpoint.memory import InMemorySaver

            return InMemorySaver()
        if kind == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.conn = sqlite3.connect(str(self.db_path), check_same_thread=False)
            return SqliteSaver(self.conn)
        raise SystemExit(f"unknown checkpointer {kind!r} (choose from {CHECKPOINTERS})")

    def _middleware(self, system: str, folder: Path, lines: Lines, store_kind: str) -> list[Any]:
        if system == "none":
            return []
        if system == "summarization":
            from langchain.agents.middleware import SummarizationMiddleware

            summarizer = summarizer_class()(responses=[lines.summary(SUMMARY_CHARS)], tag=self.name)
            SUMMARIZER_CALLS[self.name] = 0
            return [
                SummarizationMiddleware(
                    summarizer,
                    trigger=("tokens", MAX_TOKENS),
                    keep=("messages", KEEP_MESSAGES),
                )
            ]
        if system == "ours":
            from langchain_recursive_memory.core import MemoryStore
            from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

            store = (
                MemoryStore.in_memory()
                if store_kind == "memory"
                else MemoryStore.persistent(folder / "store")
            )
            return [RecursiveMemoryMiddleware(store=store, max_tokens=MAX_TOKENS)]
        raise SystemExit(f"unknown agent system {system!r} (choose from {AGENT_SYSTEMS})")

    def invoke(self, text: str) -> tuple[float, int]:
        """One turn: seconds, and the messages in the state the invoke returned."""
        from langchain_core.messages import HumanMessage

        message = HumanMessage(content=text)
        t0 = time.perf_counter()
        out = self.agent.invoke({"messages": [message]}, self.config)
        return time.perf_counter() - t0, len(out["messages"])

    def state_messages(self) -> int:
        return len(self.agent.get_state(self.config).values["messages"])

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def _short(path: str) -> str:
    """A source path from its package on (``langgraph/...``, ``langchain_recursive_memory/...``)."""
    for marker in ("site-packages/", "langchain_recursive_memory/", "llamaindex_higmem/"):
        if marker in path:
            return (marker if "site-packages" not in marker else "") + path.split(marker, 1)[1]
    return Path(path).name if path != "~" else ""


def breakdown(thread: AgentThread, timers: Timers, texts: Sequence[str]) -> dict[str, Any]:
    """``len(texts)`` more invokes of one system alone, timed piece by piece (ms/invoke)."""
    timers.reset()
    timers.on = True
    total = 0.0
    for text in texts:
        seconds, _ = thread.invoke(text)
        total += seconds
    timers.on = False
    n = max(len(texts), 1)
    pieces = {k: timers.seconds.get(k, 0.0) * 1000 / n for k in (*TOP_LEVEL, *NESTED)}
    invoke_ms = total * 1000 / n
    return {
        "invokes": len(texts),
        "invoke_ms": invoke_ms,
        "pieces_ms": {k: v for k, v in pieces.items() if v},
        "rest_ms": invoke_ms - sum(pieces[k] for k in TOP_LEVEL),
        "calls_per_invoke": {k: v / n for k, v in timers.calls.items()},
    }


def profile(thread: AgentThread, texts: Sequence[str]) -> dict[str, Any]:
    """``len(texts)`` more invokes under cProfile (main thread): the top functions."""
    prof = cProfile.Profile()
    total = 0.0
    for text in texts:
        prof.enable()
        seconds, _ = thread.invoke(text)
        prof.disable()
        total += seconds
    stats: Any = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    n = max(len(texts), 1)
    rows = [
        {
            "function": f"{func} {_short(file)}:{line}".strip().removesuffix(":0"),
            "own_ms": tt * 1000 / n,
            "cumulative_ms": ct * 1000 / n,
            "calls": nc / n,
        }
        for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.items()
    ]
    rows.sort(key=lambda r: -r["own_ms"])
    cumulative = sorted(rows, key=lambda r: -r["cumulative_ms"])
    return {
        "invokes": len(texts),
        "invoke_ms_profiled": total * 1000 / n,
        "top_own": rows[:TOP],
        "top_cumulative": cumulative[: 2 * TOP],
    }


def _thread_stats(times: Sequence[float], sizes: Sequence[int]) -> dict[str, Any]:
    w = min(EDGE, len(times))
    first, last = pct(times[:w], 50), pct(times[-w:], 50)
    return {
        "invokes": len(times),
        "first_p50_ms": first,
        "last_p50_ms": last,
        "p50_ms": pct(times, 50),
        "p90_ms": pct(times, 90),
        "mean_ms": statistics.fmean(times) * 1000 if times else 0.0,
        "last_over_first": last / first if first else None,
        "blocks_p50_ms": [pct(times[j : j + BLOCK], 50) for j in range(0, len(times), BLOCK)],
        "state_messages_min": min(sizes) if sizes else 0,
        "state_messages_max": max(sizes) if sizes else 0,
        "invoke_ms": [t * 1000 for t in times],
        "state_messages": list(sizes),
    }


def agent_child(spec: dict[str, Any]) -> dict[str, Any]:
    """One thread per system, interleaved invoke by invoke; then breakdowns and profiles."""
    lines = Lines(spec["data"])
    turns, extra = int(spec["turns"]), int(spec["profile"])
    names = [f"{s}/{c}" for c in spec["checkpointers"] for s in spec["systems"]]
    out: dict[str, Any] = {"load_start": os.getloadavg()}
    timers = Timers()
    if extra:  # before the agents are built: they bind their middleware's hooks then
        install_timers(timers, chat_class())
    with tempfile.TemporaryDirectory(prefix="lrm-frameworks-") as tmp:
        t0 = time.perf_counter()
        threads = {n: AgentThread(n, Path(tmp), lines, spec["store"]) for n in names}
        out["open_s"] = time.perf_counter() - t0
        times: dict[str, list[float]] = {n: [] for n in names}
        sizes: dict[str, list[int]] = {n: [] for n in names}
        loads: list[float] = []
        started = time.perf_counter()
        for i in range(turns):
            text = lines.turn(2 * i)[2]
            shift = i % len(names)
            for n in names[shift:] + names[:shift]:
                seconds, size = threads[n].invoke(text)
                times[n].append(seconds)
                sizes[n].append(size)
            if (i + 1) % BLOCK == 0:
                loads.append(os.getloadavg()[0])
            if (i + 1) % spec["progress"] == 0 or i + 1 == turns:
                progress("agent", f"{i + 1} turns", started, times, EDGE)
        out["seconds"] = time.perf_counter() - started
        out["load_end"] = os.getloadavg()
        out["load_per_block"] = loads
        out["rss_end_mb"] = rss_bytes() / 2**20
        out["systems"] = {}
        for n in names:
            row = _thread_stats(times[n], sizes[n])
            row["state_messages_end"] = threads[n].state_messages()
            if threads[n].conn is not None:
                row["checkpoint_db_mb"] = threads[n].db_path.stat().st_size / 2**20
            if n in SUMMARIZER_CALLS:
                row["summarizer_calls"] = SUMMARIZER_CALLS[n]
            out["systems"][n] = row
        if extra:
            texts = [lines.turn(2 * (turns + j))[2] for j in range(extra)]
            out["breakdown"] = {}
            for n in names:
                print(f"[agent] breakdown: {n}", file=sys.stderr, flush=True)
                out["breakdown"][n] = breakdown(threads[n], timers, texts)
            out["profile"] = {}
            more = [lines.turn(2 * (turns + extra + j))[2] for j in range(extra)]
            for n in names:
                if n.startswith("ours/"):
                    print(f"[agent] cProfile: {n}", file=sys.stderr, flush=True)
                    out["profile"][n] = profile(threads[n], more)
        for thread in threads.values():
            thread.close()
    return out


# -- LlamaIndex Memory ---------------------------------------------------------------------


def block_class(kind: str) -> Any:
    """The block class of ``kind`` in ``llamaindex_higmem``; LookupError when it is not there."""
    name = BLOCKS[kind]
    for module in ("llamaindex_higmem", "llamaindex_higmem.memory_blocks"):
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    raise LookupError(f"llamaindex_higmem has no {name}")


def open_memory(kind: str, folder: Path, store_kind: str) -> tuple[Any, dict[str, Any]]:
    """``Memory`` on its own SQLite file, with the block of ``kind`` (none for ``memory``)."""
    from llama_index.core.memory import Memory

    folder.mkdir(parents=True, exist_ok=True)
    blocks: list[Any] = []
    described: dict[str, Any] = {"memory_blocks": []}
    if kind == STATIC_MEMORY:
        from llama_index.core.memory import StaticMemoryBlock

        blocks.append(StaticMemoryBlock(static_content="The user is Ada; she lives in Oslo."))
        described["memory_blocks"].append({"class": "llama_index.core.memory.StaticMemoryBlock"})
    elif kind != BASE_MEMORY:
        from langchain_recursive_memory.core import MemoryStore

        cls = block_class(kind)
        store = (
            MemoryStore.in_memory()
            if store_kind == "memory"
            else MemoryStore.persistent(folder / "store")
        )
        block = cls.from_defaults(store=store)
        blocks.append(block)
        fields = getattr(type(block), "model_fields", {})
        described["memory_blocks"].append(
            {
                "class": f"{cls.__module__}.{cls.__qualname__}",
                "from_defaults": "store=<its own MemoryStore>",
                "signature": str(inspect.signature(cls.from_defaults)),
                "fields": {k: repr(getattr(block, k, None)) for k in fields},
            }
        )
    memory = Memory.from_defaults(
        session_id=SID,
        token_limit=MAX_TOKENS,
        memory_blocks=blocks or None,
        async_database_uri=f"sqlite+aiosqlite:///{folder / 'memory.db'}",
    )
    described["token_flush_size"] = memory.token_flush_size
    described["chat_history_token_ratio"] = memory.chat_history_token_ratio
    return memory, described


def _memory_stats(put: Sequence[float], get: Sequence[float]) -> dict[str, Any]:
    total = [a + b for a, b in zip(put, get, strict=True)]
    w = min(EDGE, len(total))
    return {
        "exchanges": len(total),
        "first_p50_ms": pct(total[:w], 50),
        "last_p50_ms": pct(total[-w:], 50),
        "p50_ms": pct(total, 50),
        "p90_ms": pct(total, 90),
        "mean_ms": statistics.fmean(total) * 1000 if total else 0.0,
        "put_p50_ms": pct(put, 50),
        "get_p50_ms": pct(get, 50),
        "put_mean_ms": statistics.fmean(put) * 1000 if put else 0.0,
        "get_mean_ms": statistics.fmean(get) * 1000 if get else 0.0,
        "blocks_p50_ms": [pct(total[j : j + BLOCK], 50) for j in range(0, len(total), BLOCK)],
        "exchange_ms": [t * 1000 for t in total],
    }


def memory_child(spec: dict[str, Any]) -> dict[str, Any]:
    """``exchanges`` exchanges on every Memory system that exists, interleaved."""
    from llama_index.core.llms import ChatMessage

    lines = Lines(spec["data"])
    n = int(spec["exchanges"])
    out: dict[str, Any] = {"load_start": os.getloadavg(), "skipped": {}, "settings": {}}
    with tempfile.TemporaryDirectory(prefix="lrm-frameworks-memory-") as tmp:
        opened: dict[str, Any] = {}
        for kind in spec["systems"]:
            try:
                opened[kind], out["settings"][kind] = open_memory(
                    kind, Path(tmp) / kind, spec["store"]
                )
            except (LookupError, ImportError) as exc:
                out["skipped"][kind] = f"{type(exc).__name__}: {exc}"
                print(f"[memory] skipped {kind}: {exc}", file=sys.stderr, flush=True)
        names = list(opened)
        puts: dict[str, list[float]] = {k: [] for k in names}
        gets: dict[str, list[float]] = {k: [] for k in names}
        started = time.perf_counter()
        for i in range(n):
            turns = lines.exchange(i)
            shift = i % max(len(names), 1)
            for kind in names[shift:] + names[:shift]:
                messages = [ChatMessage(role=r, content=t) for r, _, t in turns]
                a0 = time.perf_counter()
                opened[kind].put_messages(messages)
                a1 = time.perf_counter()
                opened[kind].get()
                a2 = time.perf_counter()
                puts[kind].append(a1 - a0)
                gets[kind].append(a2 - a1)
            if (i + 1) % spec["progress"] == 0 or i + 1 == n:
                recent = {k: sums(puts[k], gets[k], EDGE) for k in names}
                progress("memory", f"{i + 1} exchanges", started, recent, EDGE)
        out["seconds"] = time.perf_counter() - started
        out["load_end"] = os.getloadavg()
        out["systems"] = {k: _memory_stats(puts[k], gets[k]) for k in names}
    return out


CHILDREN: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "agent": agent_child,
    "memory": memory_child,
}


def run_child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), CHILD, kind, json.dumps(spec)]
    return child_json(command, f"{kind} child", stderr=False)


# -- report --------------------------------------------------------------------------------


def _clip(text: str, width: int = 80) -> str:
    """``text`` cut in the middle to ``width`` characters."""
    if len(text) <= width:
        return text
    half = (width - 1) // 2
    return f"{text[:half]}…{text[-(width - 1 - half) :]}"


def agent_rows(agent: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for name, row in agent["systems"].items():
        base = agent["systems"].get(f"{BASE_AGENT}/{name.split('/')[1]}")
        rows.append(
            [
                alias(name),
                fmt_ms(row["first_p50_ms"]),
                fmt_ms(row["last_p50_ms"]),
                fmt_ms(row["p50_ms"]),
                fmt_ms(row["p90_ms"]),
                fmt_ratio(row["last_over_first"]),
                fmt_ratio(ratio(row["p50_ms"], base and base["p50_ms"])),
                fmt_ratio(ratio(row["last_p50_ms"], base and base["last_p50_ms"])),
                fmt_ratio(block_ratio(row, base)),
                row["state_messages_end"],
                f"{row['state_messages_min']}-{row['state_messages_max']}",
                f"{row['checkpoint_db_mb']:.1f}" if "checkpoint_db_mb" in row else "-",
                row.get("summarizer_calls", "-"),
            ]
        )
    return rows


def report_agent(agent: dict[str, Any], label: str) -> None:
    console.print(
        f"first/last = p50 of the first/last {EDGE} invokes; all = over the whole thread; "
        f"/summ = over SummarizationMiddleware on the same checkpointer (all p50, last {EDGE} "
        f"p50, and blk: the median over blocks of {BLOCK} invokes of the blocks' p50 ratios); "
        "state msgs = messages in the thread's state at the end (min-max over the thread); "
        "ckpt MB = the SqliteSaver file; summ calls = summarizer calls"
    )
    first = next(iter(agent["systems"].values()), {"invokes": 0})
    print_table(
        f"LangChain v1 agent thread of {first['invokes']} invokes: ms per invoke; label {label}",
        [
            "system",
            "first p50",
            "last p50",
            "all p50",
            "all p90",
            "last/first",
            "/summ all",
            "/summ last",
            "/summ blk",
            "state msgs",
            "min-max",
            "ckpt MB",
            "summ calls",
        ],
        agent_rows(agent),
    )
    pieces = agent.get("breakdown") or {}
    if pieces:
        first = next(iter(pieces.values()))
        cols = [*TOP_LEVEL, *NESTED]
        console.print(
            "; ".join(f"{SHORT[c]} = {c}" for c in cols)
            + "; * = part of the columns before it (not in rest); rest = invoke minus the "
            "unstarred columns (LangGraph itself; checkpoint writes run on LangGraph's "
            "background thread, overlapping the rest, which can then go below 0)"
        )
        print_table(
            f"Where an invoke's time goes after the thread: {first['invokes']} more invokes "
            "of each system alone, wall ms per invoke",
            ["system", "invoke", *(SHORT[c] for c in cols), "rest"],
            [
                [
                    alias(n),
                    fmt_ms(b["invoke_ms"]),
                    *(fmt_ms(b["pieces_ms"][c]) if c in b["pieces_ms"] else "-" for c in cols),
                    fmt_ms(b["rest_ms"]),
                ]
                for n, b in pieces.items()
            ],
        )
    for n, prof in (agent.get("profile") or {}).items():
        print_table(
            f"cProfile of {alias(n)}: top own time, main thread, {prof['invokes']} invokes after "
            f"the thread ({prof['invoke_ms_profiled']:.1f} ms per invoke under the profiler)",
            ["function", "own ms/invoke", "cumulative ms/invoke", "calls/invoke"],
            [
                [_clip(r["function"]), r["own_ms"], r["cumulative_ms"], f"{r['calls']:.1f}"]
                for r in prof["top_own"]
            ],
        )


def report_memory(memory: dict[str, Any], label: str) -> None:
    base = memory["systems"].get(BASE_MEMORY)
    static = memory["systems"].get(STATIC_MEMORY)
    print_table(
        f"LlamaIndex Memory: ms per exchange (put_messages + get); label {label}",
        [
            "system",
            "exchanges",
            "first p50",
            "last p50",
            "all p50",
            "all p90",
            "mean",
            "put p50",
            "get p50",
            "/Memory p50",
            "/Memory mean",
            "/Memory blk",
            "/Static p50",
        ],
        [
            [
                k,
                row["exchanges"],
                fmt_ms(row["first_p50_ms"]),
                fmt_ms(row["last_p50_ms"]),
                fmt_ms(row["p50_ms"]),
                fmt_ms(row["p90_ms"]),
                fmt_ms(row["mean_ms"]),
                fmt_ms(row["put_p50_ms"]),
                fmt_ms(row["get_p50_ms"]),
                fmt_ratio(ratio(row["p50_ms"], base and base["p50_ms"])),
                fmt_ratio(ratio(row["mean_ms"], base and base["mean_ms"])),
                fmt_ratio(block_ratio(row, base)),
                fmt_ratio(ratio(row["p50_ms"], static and static["p50_ms"])),
            ]
            for k, row in memory["systems"].items()
        ],
    )
    for kind, why in memory.get("skipped", {}).items():
        console.print(f"skipped {kind}: {why}")


def report(result: dict[str, Any]) -> None:
    if result.get("agent"):
        report_agent(result["agent"], result["label"])
    if result.get("memory"):
        report_memory(result["memory"], result["label"])


def _smooth(values: Sequence[float], width: int = SMOOTH) -> list[float]:
    """The running median over a centred window of ``width``."""
    half = width // 2
    return [statistics.median(values[max(0, j - half) : j + half + 1]) for j in range(len(values))]


def draw(result: dict[str, Any]) -> Callable[[Path], None]:
    def plot(path: Path) -> None:
        plt = pyplot()
        agent = result.get("agent") or {}
        checkpointers = list(dict.fromkeys(n.split("/")[1] for n in agent.get("systems", {})))
        memory = result.get("memory") or {}
        panels = len(checkpointers) + (1 if memory.get("systems") else 0)
        fig, axes = plt.subplots(1, max(panels, 1), figsize=(6.5 * max(panels, 1), 4.6))
        axes = [axes] if panels <= 1 else list(axes)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for ax, cp in zip(axes, checkpointers, strict=False):
            for n, row in agent["systems"].items():
                system, checkpointer = n.split("/")
                if checkpointer != cp:
                    continue
                ys = row["invoke_ms"]
                xs = range(1, len(ys) + 1)
                color = colors[AGENT_SYSTEMS.index(system) % len(colors)]
                ax.scatter(xs, ys, s=2, alpha=0.15, color=color)
                ax.plot(xs, _smooth(ys), color=color, label=system)
            ax.set_yscale("log")
            ax.set_xlabel("invoke (turn of the thread)")
            ax.set_ylabel(f"ms per invoke (dots; line: centred running median of {SMOOTH})")
            ax.set_title(f"create_agent thread, {cp} checkpointer ({result['label']})")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        if memory.get("systems"):
            ax = axes[-1]
            for j, (k, row) in enumerate(memory["systems"].items()):
                ys = row["exchange_ms"]
                xs = range(1, len(ys) + 1)
                color = colors[j % len(colors)]
                ax.scatter(xs, ys, s=2, alpha=0.15, color=color)
                ax.plot(xs, _smooth(ys), color=color, label=k)
            ax.set_yscale("log")
            ax.set_xlabel("exchange")
            ax.set_ylabel(f"ms per exchange (dots; line: centred running median of {SMOOTH})")
            ax.set_title(f"LlamaIndex Memory + blocks ({result['label']})")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        save_figure(fig, path)

    return plot


# -- main ----------------------------------------------------------------------------------


def _names(value: str, allowed: Sequence[str], what: str) -> list[str]:
    got = [s.strip() for s in value.split(",") if s.strip()]
    for s in got:
        if s not in allowed:
            raise SystemExit(f"unknown {what} {s!r} (choose from {', '.join(allowed)})")
    return got


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == CHILD:
        got = CHILDREN[argv[1]](json.loads(argv[2]))
        print(json.dumps(got))
        return 0
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--label", default="run")
    p.add_argument("--parts", default=",".join(PARTS))
    p.add_argument("--checkpointers", default=",".join(CHECKPOINTERS))
    p.add_argument("--agent-systems", default=",".join(AGENT_SYSTEMS))
    p.add_argument("--memory-systems", default=",".join(MEMORY_SYSTEMS))
    p.add_argument("--turns", type=int, default=800, help="invokes per agent thread")
    p.add_argument("--exchanges", type=int, default=300, help="exchanges per Memory")
    p.add_argument(
        "--profile",
        type=int,
        default=20,
        help="invokes after the thread timed piece by piece (and as many under cProfile)",
    )
    p.add_argument(
        "--store",
        choices=("persistent", "memory"),
        default="persistent",
        help="our MemoryStore: persistent(<tmpdir>) or in_memory()",
    )
    p.add_argument("--out", default=str(RESULTS), help="directory of the JSON and PNG")
    p.add_argument("--data", default=str(DEFAULT_LOCOMO), help="a LoCoMo-format file")
    p.add_argument("--quick", action="store_true", help="a smoke run: 40 turns, 30 exchanges")
    p.add_argument(
        "--replot",
        action="store_true",
        help="print the tables and redraw the PNG of <out>/frameworks-<label>.json",
    )
    args = p.parse_args(argv)
    out_dir = Path(args.out)
    name = f"frameworks-{args.label}"
    if args.replot:
        path = out_dir / f"{name}.json"
        old = json.loads(path.read_text())
        draw(old)(path.with_suffix(".png"))
        report(old)
        console.print(f"load: start {old['uptime_start']}\n      end   {old['uptime_end']}")
        return 0
    parts = _names(args.parts, PARTS, "part")
    checkpointers = _names(args.checkpointers, CHECKPOINTERS, "checkpointer")
    agent_systems = _names(args.agent_systems, AGENT_SYSTEMS, "agent system")
    memory_systems = _names(args.memory_systems, MEMORY_SYSTEMS, "memory system")
    if args.quick:
        args.turns, args.exchanges, args.profile = 40, 30, 3
    data = str(Path(args.data).resolve())
    if not Path(data).exists():
        raise SystemExit(f"{data}: no such file (give --data)")
    result: dict[str, Any] = {
        "label": args.label,
        "code": library_version(),
        "settings": {
            "parts": parts,
            "checkpointers": checkpointers,
            "agent_systems": agent_systems,
            "memory_systems": memory_systems,
            "turns": args.turns,
            "exchanges": args.exchanges,
            "profile": args.profile,
            "store": args.store,
            "data": data,
            "max_tokens": MAX_TOKENS,
            "summarization": f'trigger=("tokens", {MAX_TOKENS}), keep=("messages", '
            f"{KEEP_MESSAGES}), a fixed ~{SUMMARY_CHARS}-char summary",
            "ours": f"RecursiveMemoryMiddleware(store=MemoryStore.{args.store}(...), "
            f"max_tokens={MAX_TOKENS}), no summarizer model",
            "system_prompt": SYSTEM_PROMPT,
            "edge": EDGE,
            "block": BLOCK,
            "quick": args.quick,
        },
        "uptime_start": uptime(),
    }
    t_start = time.perf_counter()

    def save() -> None:
        result["uptime_end"] = uptime()
        result["seconds"] = time.perf_counter() - t_start
        write_result_files(name, result, draw(result), directory=out_dir)

    common = {"data": data, "store": args.store}
    if "agent" in parts and agent_systems and checkpointers:
        console.print(
            f"agent: {args.turns} turns x {', '.join(agent_systems)} x "
            f"{', '.join(checkpointers)} (one process, interleaved)"
        )
        spec = {
            **common,
            "turns": args.turns,
            "systems": agent_systems,
            "checkpointers": checkpointers,
            "profile": args.profile,
            "progress": 10 if args.turns <= 100 else 50,
        }
        result["agent"] = run_child("agent", spec)
        save()
    if "memory" in parts and memory_systems:
        console.print(f"memory: {args.exchanges} exchanges x {', '.join(memory_systems)}")
        spec = {
            **common,
            "exchanges": args.exchanges,
            "systems": memory_systems,
            "progress": 10 if args.exchanges <= 100 else 50,
        }
        result["memory"] = run_child("memory", spec)
    save()
    report(result)
    console.print(f"load: start {result['uptime_start']}\n      end   {result['uptime_end']}")
    console.print(f"wrote {out_dir / (name + '.json')} and .png ({result['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
