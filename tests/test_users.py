"""Memory across a user's conversations (issue 16): user facts, user-scope recall, erasure.

Every check of what is stored reads Chroma directly (``_records``), not through the API.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest
from conftest import FAST, chroma_records, database_rows, fact_record_id
from fakes import BagOfWordsEmbedder, FactModel, KeywordSummarizer

from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    HybridMemory,
    InvalidInputError,
    MemoryStore,
    RecursiveMemory,
    Turn,
)
from langchain_recursive_memory.core.retrieval.ranking import (
    RankedIndex,
    RankedTurn,
    RankerParams,
    TurnRanker,
    window_texts,
)
from langchain_recursive_memory.core.storage.keys import session_key, user_key

DAY = 86400.0


def memory(store, sid, user="ada", *, model=None, embedder=None, **kw) -> HybridMemory:
    kw.setdefault("max_tokens", 500)
    kw.setdefault("max_summary_tokens", 80)
    return HybridMemory(
        sid,
        store=store,
        model=model or FactModel(),
        embedder=embedder,
        retry=FAST,
        user_id=user,
        **kw,
    )


def chat(mem, *lines: str, at: float | None = None, filler: int = 0) -> None:
    """Add ``lines`` (then ``filler`` small-talk turns), and end the conversation."""
    start = at if at is not None else time.time()
    turns = [Turn(role="user", text=t, created_at=start + i) for i, t in enumerate(lines)]
    small_talk = "Small talk number {} about the weather."
    turns += [
        Turn(role="user", text=small_talk.format(i), created_at=start + 99 + i)
        for i in range(filler)
    ]
    for turn in turns:
        mem.add(turn)
    mem.fold(force=True, keep=False)  # the conversation ends: its facts reach the user now


def _records(store: MemoryStore, where: dict | None = None) -> dict[str, list[tuple]]:
    """Every record of the store (id, document, metadata): Chroma's, and (without
    ``where``) every row of the database, as ``(table, None, row)``."""
    out = chroma_records(store, where)
    if where is None:
        for name, rows in database_rows(store).items():
            out[name] = [(name, None, row) for row in rows]
    return out


def _text_of(records: dict[str, list[tuple]]) -> str:
    return json.dumps(records, ensure_ascii=False, default=str)


# -- 1. a user scope ---------------------------------------------------------------------------


def test_facts_of_one_conversation_are_recalled_in_a_new_one(store):
    chat(memory(store, "monday"), "My home city is Oslo.", "My diet is vegetarian.")
    fresh = memory(store, "next-week")
    hits = fresh.recall("What is my home city?", k=3)
    assert [h.text for h in hits if h.kind == "fact"][:1] == ["The user's home city is Oslo."]
    assert hits[0].metadata["user_id"] == "ada"
    assert hits[0].metadata["session_ids"] == ["monday"]
    recalled = fresh.context("Which diet do I follow?").recalled
    assert any("vegetarian" in h.text for h in recalled)
    assert {f.key for f in fresh.facts()} == {"user/home_city", "user/diet"}
    assert fresh.turns() == []  # reading wrote nothing


def test_a_correction_in_a_later_session_updates_the_users_fact(store):
    chat(memory(store, "s1"), "My home city is Oslo.", at=1_000 * DAY)
    chat(memory(store, "s2"), "Update: my home city is Berlin now.", at=1_007 * DAY)
    facts = [f for f in store.user_facts("default", "ada") if f.key == "user/home_city"]
    assert len(facts) == 1
    assert facts[0].text == "The user's home city is Berlin now."
    assert facts[0].previous == ("The user's home city is Oslo.",)
    assert facts[0].session_ids == ("s1", "s2")
    assert len(facts[0].source_turn_ids) == 2
    stored = _records(store)[f"{store.prefix}_facts"]
    assert len(stored) == 1  # one record per (namespace, user, key)
    assert stored[0][0].startswith(user_key("default", "ada") + ":uf:")


def test_the_newest_statement_wins_whatever_order_sessions_fold_in(store):
    late = memory(store, "late")  # the later conversation folds first
    chat(late, "My home city is Porto.", at=2_000 * DAY)
    chat(memory(store, "early"), "My home city is Lisbon.", at=1_000 * DAY)
    (fact,) = [f for f in store.user_facts("default", "ada") if f.key == "user/home_city"]
    assert fact.text == "The user's home city is Porto."
    assert fact.previous == ("The user's home city is Lisbon.",)
    assert fact.session_ids == ("early", "late")  # in the order they were said


def test_archived_turns_of_other_sessions_only_with_scope_user(store):
    old = memory(store, "old", model=KeywordSummarizer(), extract_facts=False)
    chat(old, "My locker code is 4471.", filler=30)
    new = memory(store, "new", model=KeywordSummarizer(), extract_facts=False)
    new.add(Turn(role="user", text="hello again"))
    assert not [h for h in new.recall("locker code", k=4) if "4471" in h.text]
    hits = new.recall("locker code", k=4, scope="user")
    assert hits[0].text == "My locker code is 4471."
    assert hits[0].metadata["session_id"] == "old"
    scoped = memory(store, "other", recall_scope="user", model=KeywordSummarizer())
    assert any("4471" in h.text for h in scoped.context("what is my locker code?").recalled)
    with pytest.raises(InvalidInputError):
        new.recall("x", scope="everyone")


def test_scope_user_reuses_the_ranking_and_windows_never_cross_a_session():
    a = [RankedTurn("1", "Ada", "where did I leave the keys", "1")]
    b = [RankedTurn("1", "Ada", "under the mat", "1"), RankedTurn("2", "Bot", "noted", "1")]
    params = RankerParams()
    parts = [RankedIndex(params, a), RankedIndex(params, b)]
    assert [window_texts(p.turns, 2) for p in parts] == [
        ["Ada: where did I leave the keys"],
        ["Ada: under the mat Bot: noted", "Ada: under the mat Bot: noted"],
    ]
    pooled = TurnRanker.of(parts, params)
    # The pool scores as one session whose two parts are separate segments.
    one = TurnRanker([*a, *(replace(t, event="2") for t in b)], params)
    question = "where are the keys, under the mat?"
    assert pooled.scores(question).tolist() == pytest.approx(one.scores(question).tolist())
    assert [t.id for t in pooled.turns] == ["1", "1", "2"] and pooled.size == 3


def test_dense_scope_user_reads_each_sessions_own_window_vectors(store):
    embedder = BagOfWordsEmbedder()
    chat(memory(store, "a", embedder=embedder), "My locker code is 4471.", filler=30)
    chat(memory(store, "b", embedder=embedder), "My bike is a red Brompton.", filler=30)
    fresh = memory(store, "c", embedder=embedder)
    before = embedder.calls
    hits = fresh.recall("which bike do I ride", k=3, kinds=("turn",), scope="user")
    assert hits[0].text == "My bike is a red Brompton." and hits[0].dense_rank is not None
    assert embedder.calls == before + 1  # only the question: the windows were stored


def test_without_user_id_nothing_changes(store):
    plain = memory(store, "solo", user=None)
    chat(plain, "My home city is Oslo.")
    assert plain.user_id is None and store.users() == []
    facts = _records(store)[f"{store.prefix}_facts"]
    assert facts and all(r[0].startswith(session_key("default", "solo")) for r in facts)
    assert all("uid" not in r[2] for rs in _records(store).values() for r in rs)
    other = memory(store, "elsewhere", user=None)
    assert other.recall("home city") == [] and other.facts() == []
    with pytest.raises(ConfigurationError, match="no user"):
        other.recall("home city", scope="user")


@pytest.mark.parametrize("bad", ["", " ", "a\x00b", "x" * 1025, 3, b"ada"])
def test_user_ids_are_validated_like_session_ids(store, bad):
    for engine in (RecursiveMemory, HybridMemory, HiGMem):
        with pytest.raises(InvalidInputError, match="user_id"):
            engine("s", store=store, user_id=bad)
    with pytest.raises(InvalidInputError, match="user_id"):
        store.user_facts("default", bad)


def test_a_sessions_user_is_fixed_once_recorded(store):
    chat(memory(store, "s1"), "My home city is Oslo.")
    intruder = memory(store, "s1", user="bob")
    with pytest.raises(ConfigurationError, match=r"'bob'.*'ada'"):
        intruder.add(Turn(role="user", text="hi"))
    with pytest.raises(ConfigurationError, match=r"'bob'.*'ada'"):
        memory(store, "s1", user="bob").recall("home city")
    with pytest.raises(ConfigurationError, match=r"'bob'.*'ada'"):
        store.session("default", "s1").join_user("bob")
    assert [s.user_id for s in store.sessions()] == ["ada"]


def test_a_session_opened_without_its_user_uses_the_recorded_one(store):
    chat(memory(store, "s1"), "My home city is Oslo.")
    reopened = HybridMemory("s1", store=store, model=FactModel(), retry=FAST, max_tokens=500)
    assert [f.key for f in reopened.facts()] == ["user/home_city"]
    assert reopened.recall("home city", k=1)[0].kind == "fact"
    assert reopened.user_id == "ada"  # read from the session's record
    chat(reopened, "My diet is vegan.")
    assert {f.key for f in store.user_facts("default", "ada")} == {"user/home_city", "user/diet"}


def test_a_session_stored_before_users_joins_its_first_user(store):
    legacy = memory(store, "legacy", user=None)
    chat(legacy, "My home city is Oslo.")
    joined = memory(store, "legacy")  # the same conversation, now with its user
    chat(joined, "My diet is vegan.")
    assert [s.user_id for s in store.sessions()] == ["ada"]
    assert {f.key for f in joined.facts()} == {"user/home_city", "user/diet"}
    assert [f.key for f in store.user_facts("default", "ada")] == ["user/diet"]
    # its earlier (session) facts become the user's with a rebuild
    joined.rebuild(scope="user")
    assert {f.key for f in store.user_facts("default", "ada")} == {"user/home_city", "user/diet"}
    assert {f.key for f in memory(store, "other").facts()} == {"user/home_city", "user/diet"}


def test_records_of_a_users_session_carry_the_user(store):
    mem = memory(store, "s1", embedder=BagOfWordsEmbedder())
    chat(mem, "My home city is Oslo.", filler=30)
    HiGMem("s1", store=store, user_id="ada").retrieve("home city")
    ukey = user_key("default", "ada")
    for name, rows in _records(store).items():
        for rid, _doc, meta in rows:
            if name.endswith(("_meta", "_pending")):
                continue
            assert meta.get("uid") == "ada", (name, rid, meta)
            assert meta.get("uk", meta.get("ukey")) == ukey or "session" in meta, (name, meta)
    own = _records(store, {"uo": ukey})
    assert own[f"{store.prefix}_facts"] and [u.user_id for u in store.users()] == ["ada"]
    assert any(n.startswith(f"{store.prefix}_vec_") and rows for n, rows in own.items())
    for rows in own.values():
        assert all("sid" not in meta for _, _, meta in rows)  # the user's own: no session


def test_the_same_user_id_in_two_namespaces_is_two_users(store):
    chat(memory(store, "s", namespace="tenant-a"), "My home city is Oslo.")
    chat(memory(store, "s", namespace="tenant-b"), "My home city is Lima.")
    a = memory(store, "new", namespace="tenant-a").recall("home city", k=1)
    assert [h.text for h in a] == ["The user's home city is Oslo."]
    assert {(u.namespace, u.user_id) for u in store.users()} == {
        ("tenant-a", "ada"),
        ("tenant-b", "ada"),
    }
    assert [u.user_id for u in store.users("tenant-a")] == ["ada"]


async def test_async_twins_see_the_users_facts(store):
    first = memory(store, "s1")
    await first.aadd(Turn(role="user", text="My home city is Oslo."))
    await first.afold(force=True, keep=False)
    hits = await memory(store, "s2").arecall("home city", k=1)
    assert hits[0].text == "The user's home city is Oslo."
    assert await memory(store, "s3").aforget_user() == ["s1"]


# -- 3. clear, expire, forget_user --------------------------------------------------------------


def test_clearing_a_session_takes_its_statements_out_of_the_users_facts(store):
    embedder = BagOfWordsEmbedder()
    chat(memory(store, "s1", embedder=embedder), "My home city is Oslo.", at=1_000 * DAY)
    s2 = memory(store, "s2", embedder=embedder)
    chat(s2, "Update: my home city is Berlin now.", "My diet is vegan.", at=1_007 * DAY)
    s2.clear()
    (fact,) = store.user_facts("default", "ada")
    assert (fact.text, fact.previous, fact.session_ids) == (
        "The user's home city is Oslo.",
        (),
        ("s1",),
    )
    everything = _text_of(_records(store))
    assert "Berlin" not in everything and "vegan" not in everything
    vectors = [rid for n, rows in _records(store).items() if "_vec_" in n for rid, _, _ in rows]
    assert fact_record_id(store, "default", "s1", fact) not in vectors  # re-embedded later
    memory(store, "s1", embedder=embedder).reindex()
    assert store.vector_spaces.existing(
        [fact_record_id(store, "default", "s1", fact)], memory(store, "s1", embedder=embedder).space
    )
    RecursiveMemory("s1", store=store).clear()  # the user's last session: the user goes
    assert store.users() == [] and store.user_facts("default", "ada") == []
    assert all(rows == [] for rows in _records(store).values())


def test_expire_applies_the_same_rule(store):
    chat(memory(store, "old"), "My home city is Oslo.", "My diet is vegan.")
    time.sleep(0.05)
    cutoff = time.time()
    chat(memory(store, "recent"), "My home city is Rome.")
    assert store.expire(older_than=0.01, now=cutoff + 0.01) == [("default", "old")]
    (fact,) = store.user_facts("default", "ada")
    assert fact.text == "The user's home city is Rome." and fact.session_ids == ("recent",)
    assert "vegan" not in _text_of(_records(store))


def _fill_user(store: MemoryStore, user: str, namespace: str = "default", tag: str = "") -> None:
    embedder = BagOfWordsEmbedder()
    for n, sid in enumerate((f"{tag}chat-1", f"{tag}chat-2")):
        mem = memory(store, sid, user=user, namespace=namespace, embedder=embedder)
        chat(mem, f"My home city is Oslo{n}.", "My locker code is 4471.", filler=30)
        hg = HiGMem(sid, store=store, namespace=namespace, user_id=user, embedder=embedder)
        hg.retrieve("locker code")


def test_forget_user_deletes_every_record_of_the_user_read_back_from_chroma(store):
    _fill_user(store, "ada")
    _fill_user(store, "bob", tag="b-")
    _fill_user(store, "ada", namespace="other")
    before = _records(store)
    assert any(m.get("purpose") for _, _, m in before[f"{store.prefix}_usage"])
    deleted = store.forget_user("default", "ada")
    assert deleted == ["chat-1", "chat-2"]
    after = _records(store)
    ukey = user_key("default", "ada")
    for name, rows in after.items():
        for rid, _doc, meta in rows:
            mine = meta.get("ns") == "default" and (
                meta.get("uid") == "ada" or meta.get("sid") in deleted
            )
            assert not mine and not rid.startswith(ukey), (name, rid, meta)

    def of(records, ns, user):
        return [
            r
            for rows in records.values()
            for r in rows
            if (r[2]["ns"], r[2].get("uid")) == (ns, user)
        ]

    for ns, user in (("default", "bob"), ("other", "ada")):
        assert len(of(after, ns, user)) == len(of(before, ns, user)) > 0
    left = {(u.namespace, u.user_id) for u in store.users()}
    assert left == {("default", "bob"), ("other", "ada")}
    assert store.forget_user("default", "ada") == []  # nothing left to delete
    assert memory(store, "fresh").recall("locker code 4471", k=5, scope="user") == []


def test_forget_user_from_a_memory(store):
    chat(memory(store, "s1"), "My home city is Oslo.")
    mem = memory(store, "s2")
    assert mem.forget_user() == ["s1"]
    with pytest.raises(ConfigurationError, match="no user"):
        RecursiveMemory("x", store=store).forget_user()


# -- found in review: live handles, concurrent folds, many restatements ----------------------


@pytest.mark.parametrize("how", ["forget_user", "clear"])
def test_a_live_memory_keeps_writing_its_session_as_the_users_after_another_handle(store, how):
    live = memory(store, "s1")
    chat(live, "My home city is Oslo.")
    chat(memory(store, "s2"), "My pet is a cat named Rex.")
    if how == "forget_user":
        store.forget_user("default", "ada")
    else:
        memory(store, "s1").clear()  # another request's handle on the same session
    chat(live, "My locker code is 4471.")  # the handle opened before goes on
    assert store.session_user("default", "s1") == "ada"
    assert "The user's locker code is 4471." in [f.text for f in store.user_facts("default", "ada")]
    erased = store.forget_user("default", "ada")
    assert "s1" in erased
    assert "4471" not in _text_of(_records(store))


def test_concurrent_folds_of_one_users_sessions_keep_every_statement(store):
    import re
    import threading

    from langchain_recursive_memory.core import FunctionTextModel

    line = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?user: (.*)$", re.M)
    statement = re.compile(r"\bMy (\w+) is (\w+)")
    barrier = threading.Barrier(2)

    def summarize(prompt: str) -> str:  # both folds merge into the user's facts at once
        said = line.findall(prompt)
        facts = [
            {"key": f"user/{a}", "fact": f"The user's {a} is {v}.", "sources": [int(n)]}
            for n, text in said
            for a, v in statement.findall(text)
        ]
        barrier.wait(timeout=10)
        body = "\n".join(json.dumps(f) for f in facts)
        return f"<summary>{' '.join(t for _, t in said)}</summary>\n<facts>\n{body}\n</facts>"

    keys = [f"k{i}" for i in range(12)]
    mems = {}
    for sid, word, at in (("old", "Lisbon", 1_000 * DAY), ("new", "Porto", 1_001 * DAY)):
        mems[sid] = memory(store, sid, model=FunctionTextModel(summarize))
        for i, key in enumerate(keys):
            mems[sid].add(Turn(role="user", text=f"My {key} is {word}.", created_at=at + i))
    threads = [
        threading.Thread(target=m.fold, kwargs={"force": True, "keep": False})
        for m in mems.values()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    facts = {f.key: f for f in store.user_facts("default", "ada")}
    assert len(facts) == len(keys)
    for fact in facts.values():
        assert set(fact.session_ids) == {"old", "new"}, fact
        assert "Porto" in fact.text  # the newest statement wins


def test_clearing_a_session_that_restated_a_fact_often_keeps_the_other_sessions_statement(store):
    chat(memory(store, "a"), "My home city is Oslo.", at=1_000 * DAY)
    chatty = memory(store, "b")
    for n in range(8):  # more restatements than a fact keeps wordings
        chat(chatty, f"My home city is Bergen, district {n}.", at=(1_001 + n) * DAY)
    memory(store, "b").clear()
    facts = [f for f in store.user_facts("default", "ada") if f.key == "user/home_city"]
    assert [f.text for f in facts] == ["The user's home city is Oslo."]


def test_clearing_a_session_keeps_the_vector_of_a_fact_another_session_stated_alike(store):
    embedder = BagOfWordsEmbedder()
    chat(memory(store, "a1", embedder=embedder), "My pet name is Rex.", "My job is pilot.")
    chat(memory(store, "a2", embedder=embedder), "My pet name is Rex.")
    memory(store, "a2", embedder=embedder).clear()
    hits = memory(store, "a3", embedder=embedder).recall("pet name Rex", k=3, kinds=("fact",))
    assert hits and hits[0].text == "The user's pet name is Rex."
    assert hits[0].dense_rank == 1  # still embedded: not ranked by its words alone


def test_a_users_facts_wait_for_another_process_merging_them(store):
    """Another process holds the user's merge lease: a fold waits for it, then merges."""
    import threading

    from langchain_recursive_memory.core.storage.keys import UserOwner
    from langchain_recursive_memory.core.storage.sessions import claim_lease, release_lease
    from langchain_recursive_memory.core.storage.user_facts import USER_LEASE_PERIOD

    user = UserOwner.of("default", "ada")
    mem = memory(store, "s1")
    mem.add(Turn(role="user", text="My home city is Oslo."))
    assert store.db.write(
        lambda c: claim_lease(
            c, store.db.tables, user, "other-process", period=USER_LEASE_PERIOD, now=time.time()
        )
    )
    folding = threading.Thread(target=mem.fold, kwargs={"force": True, "keep": False})
    folding.start()
    time.sleep(1.0)
    assert folding.is_alive()  # waiting for the lease
    assert store.user_facts("default", "ada") == []
    store.db.write(lambda c: release_lease(c, store.db.tables, user, "other-process"))
    folding.join(timeout=30)
    assert [f.text for f in store.user_facts("default", "ada")] == ["The user's home city is Oslo."]
    rows = {r["uid"]: r for r in database_rows(store)[f"{store.prefix}_users"]}
    assert rows["ada"]["lease_holder"] is None  # released
