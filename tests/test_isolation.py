"""Isolation, deletion and bad input: property-based (hypothesis) and read back from Chroma."""

from __future__ import annotations

import time

import pytest
from conftest import FAST, session_records
from fakes import BagOfWordsEmbedder, FactModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    HybridMemory,
    InvalidInputError,
    MemoryConfig,
    MemoryStore,
    RecursiveMemory,
    RecursiveMemoryError,
    ToolCall,
    Turn,
)

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

session_ids = st.one_of(
    st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s and s.strip()),
    st.sampled_from(['{"$ne": ""}', "' OR 1=1 --", "$and", "a\nb", "x" * 1024, " a ", "🙂"]),
)
texts = st.text(max_size=300)
blocks = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, texts),
        st.builds(
            lambda d: {"type": "image_url", "image_url": {"url": "data:image/png;base64," + d}},
            st.text(alphabet="AB", min_size=0, max_size=5000),
        ),
        st.builds(lambda t: {"type": "thinking", "thinking": t}, texts),
    ),
    max_size=3,
)


@st.composite
def turns(draw):
    kind = draw(st.sampled_from(["text", "blocks", "call", "huge", "empty"]))
    if kind == "blocks":
        return Turn(role="user", text=draw(texts), blocks=tuple(draw(blocks)))
    if kind == "call":
        call = ToolCall(draw(st.text(min_size=1, max_size=20)), {"q": draw(texts)}, "c1")
        return Turn(role="assistant", tool_calls=(call,))
    if kind == "huge":
        return Turn(role="user", text=draw(texts) * 50 + "x" * 20000)
    if kind == "empty":
        return Turn(role=draw(st.sampled_from(["user", "assistant", "system"])), text="")
    return Turn(role=draw(st.sampled_from(["user", "assistant", "system"])), text=draw(texts))


@SETTINGS
@given(sid=session_ids, items=st.lists(turns(), min_size=1, max_size=6))
def test_any_message_and_session_id_is_stored_and_isolated(sid, items):
    store = MemoryStore.in_memory()
    victim = RecursiveMemory(
        "victim", store=store, retry=FAST, max_tokens=600, max_summary_tokens=60
    )
    victim.add(Turn(role="user", text="victim secret " + (items[0].text or "x")))
    mine = RecursiveMemory(sid, store=store, retry=FAST, max_tokens=600, max_summary_tokens=60)
    mine.add(items)
    stored = [t.turn for t in mine.turns()]
    assert len(stored) == len(items)
    for original, back in zip(items, stored, strict=True):
        assert (back.role, back.text, back.blocks, back.tool_calls) == (
            original.role,
            original.text,
            original.blocks,
            original.tool_calls,
        )
    ctx = mine.context()
    assert ctx.tokens <= 600
    assert all("victim secret" not in t.text for t in ctx.turns)
    assert all(t.turn.text.startswith("victim secret") for t in victim.turns())
    if sid != "victim":
        hits = mine.recall("victim secret", k=10)
        assert all("victim secret" not in h.text for h in hits)


@SETTINGS
@given(
    max_tokens=st.integers(-10, 3000),
    cap=st.integers(-5, 3000),
    keep=st.one_of(st.none(), st.integers(-5, 5000)),
    max_messages=st.one_of(st.none(), st.integers(-2, 50)),
)
def test_any_configuration_is_valid_or_a_clear_error(max_tokens, cap, keep, max_messages):
    try:
        cfg = MemoryConfig(
            max_tokens=max_tokens,
            max_summary_tokens=cap,
            keep_tokens=keep,
            max_messages=max_messages,
        )
    except ConfigurationError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        assert "=" in message  # names the bad value
        return
    assert cfg.window_budget >= 16 and cfg.max_summary_tokens < cfg.max_tokens
    store = MemoryStore.in_memory()
    memory = RecursiveMemory("s", store=store, config=cfg, retry=FAST)
    memory.add([Turn(role="user", text="a message longer than a tiny window " * 20)] * 3)
    assert memory.context().tokens <= cfg.max_tokens
    assert len(memory.turns()) == 3  # a window smaller than one message loses nothing


def test_repeated_turn_objects_without_ids_are_three_turns(store):
    turn = Turn(role="user", text="same object")
    memory = RecursiveMemory("s", store=store, retry=FAST)
    memory.add([turn, turn, turn])
    assert len(memory.turns()) == 3


@pytest.mark.parametrize("bad", ["", "a\x00b", "x" * 1025, None, 3])
def test_bad_session_ids_raise_from_the_hierarchy(store, bad):
    for factory in (RecursiveMemory, HybridMemory, HiGMem):
        with pytest.raises(InvalidInputError):
            factory(bad, store=store)


def test_errors_leave_stored_data_intact(store):
    memory = RecursiveMemory("s", store=store, retry=FAST)
    memory.add(Turn(role="user", text="keep me"))
    for bad in (["not a turn"], [Turn(role="user", text="ok"), 42]):
        with pytest.raises(RecursiveMemoryError):
            memory.add(bad)  # type: ignore[arg-type]
    with pytest.raises(RecursiveMemoryError):
        memory.recall(None)  # type: ignore[arg-type]
    assert [t.turn.text for t in memory.turns()] == ["keep me"]


def _everything(store: MemoryStore, sid: str) -> dict[str, int]:
    """Count a session's records in every table and collection of the store."""
    return session_records(store, sid)


def _fill(store: MemoryStore, sid: str) -> None:
    hybrid = HybridMemory(
        sid,
        store=store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        retry=FAST,
        max_tokens=500,
        max_summary_tokens=80,
    )
    hybrid.add(Turn(role="user", text="My locker code is 4471."))
    for i in range(30):
        hybrid.add(Turn(role="user", text=f"Chat number {i} about gardens."))
    higmem = HiGMem(sid, store=store, embedder=BagOfWordsEmbedder())
    higmem.retrieve("locker code")  # builds nodes, events and window vectors


def test_clear_removes_turns_summaries_facts_events_and_vectors():
    store = MemoryStore.in_memory()
    _fill(store, "gone")
    _fill(store, "kept")
    before = _everything(store, "gone")
    for kind in ("turns", "summaries", "facts", "turn_nodes", "events", "sessions"):
        assert before[f"{store.prefix}_{kind}"] > 0, kind
    assert any(n.startswith(f"{store.prefix}_vec_") and c > 0 for n, c in before.items())
    RecursiveMemory("gone", store=store).clear()
    assert set(_everything(store, "gone").values()) == {0}
    kept = _everything(store, "kept")
    for kind in ("turns", "summaries", "facts", "turn_nodes", "events", "sessions"):
        assert kept[f"{store.prefix}_{kind}"] > 0, kind


def test_expire_deletes_inactive_sessions_only():
    store = MemoryStore.in_memory()
    _fill(store, "old")
    time.sleep(0.05)
    cutoff_now = time.time()
    _fill(store, "fresh")
    expired = store.expire(older_than=0.01, now=cutoff_now + 0.01)
    assert expired == [("default", "old")]
    assert set(_everything(store, "old").values()) == {0}
    assert _everything(store, "fresh")[f"{store.prefix}_turns"] == 31
    with pytest.raises(ConfigurationError):
        store.expire(older_than=0)


@SETTINGS
@given(
    secret=st.text(alphabet="abcdefghij", min_size=6, max_size=10),
    ns_pair=st.sampled_from([("a", "b"), ("tenant-1", "tenant-1 "), ("x", "X")]),
)
def test_no_api_returns_another_namespaces_data(secret, ns_pair):
    store = MemoryStore.in_memory()
    mine_ns, other_ns = ns_pair
    other = HybridMemory(
        "same-session",
        store=store,
        namespace=other_ns,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=60,
    )
    other.add(Turn(role="user", text=f"My password is {secret}."))
    for i in range(12):
        other.add(Turn(role="user", text=f"filler {i} about the password {secret}"))
    mine = HybridMemory(
        "same-session",
        store=store,
        namespace=mine_ns,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=60,
    )
    mine.add(Turn(role="user", text="my password question"))
    leaks = [
        *(h.text for h in mine.recall(f"password {secret}", k=20)),
        *(t.text for t in mine.context(f"password {secret}").turns),
        *(f.text for f in mine.facts()),
        *(t.turn.text for t in mine.turns()),
        *(
            r.turn.text
            for r in HiGMem("same-session", store=store, namespace=mine_ns).retrieve(
                f"password {secret}"
            )
        ),
    ]
    assert all(secret not in text for text in leaks)
