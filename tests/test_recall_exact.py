"""Recall scores archived turns and facts by exact search, with caches that never go stale."""

from __future__ import annotations

import numpy as np
from conftest import fact_record_id, filler, hybrid, stored_vectors
from fakes import BagOfWordsEmbedder, FactModel

from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn
from langchain_recursive_memory.core.cache import CacheLimits
from langchain_recursive_memory.core.recursive import recall
from langchain_recursive_memory.core.retrieval.ranking import RankerParams
from langchain_recursive_memory.core.storage import StoredTurn, text_hash
from langchain_recursive_memory.core.storage.keys import window_kind


def brute_force_similarity(memory: HybridMemory, query: str, refs: set[str]) -> dict[str, float]:
    """Each archived turn's best window similarity to ``query`` (numpy, no cache)."""
    space = memory.space
    kinds = [window_kind(r) for r in RankerParams().dense_radii]
    records = stored_vectors(memory.store, space, "default", memory.session_id, kinds)
    q = np.asarray(memory.embedder.embed_query(query), np.float64)  # type: ignore[union-attr]
    q /= np.linalg.norm(q)
    best: dict[str, float] = {}
    for r in records:
        if r.ref in refs:
            v = np.asarray(r.vector, np.float64)
            best[r.ref] = max(best.get(r.ref, -2.0), float(v @ q / np.linalg.norm(v)))
    return best


def test_dense_ranks_are_those_of_exact_search(store: MemoryStore) -> None:
    memory = hybrid(store, embedder=BagOfWordsEmbedder())
    memory.add(Turn(role="user", text="The spare key hangs in the blue garden shed.", id="key"))
    for i in range(40):
        memory.add(filler(i))
    window = {t.id for t in memory.context().window}
    archived = {t.id for t in memory.turns() if t.id not in window}
    assert len(archived) > 30
    query = "where is the garden key"
    similarity = brute_force_similarity(memory, query, archived)
    assert set(similarity) == archived  # every archived turn's windows were embedded
    expected = sorted(similarity, key=lambda ref: -similarity[ref])
    hits = memory.recall(query, k=10, kinds=["turn"])
    assert hits[0].id == "key"
    for hit in hits:
        assert hit.dense_rank is not None
        # Ties in similarity may be ordered either way; the similarity itself must match.
        ranked_there = expected[hit.dense_rank - 1]
        assert np.isclose(similarity[hit.id], similarity[ranked_there], atol=1e-5)


def test_a_fold_by_another_memory_object_is_recalled_at_once(store: MemoryStore) -> None:
    reader = hybrid(store, embedder=BagOfWordsEmbedder())
    for i in range(30):
        reader.add(filler(i))
    # Caches the log at this version (dense hash collisions may still bring filler).
    assert all("Nimbus" not in h.text for h in reader.recall("sailing boat Nimbus"))
    # Another writer (a new object on a new store handle, as another request would use)
    # adds a turn and folds it away; the reader's cached log must not hide it.
    writer = hybrid(MemoryStore(store.client, prefix=store.prefix), embedder=BagOfWordsEmbedder())
    writer.add(Turn(role="user", text="Our sailing boat is called Nimbus.", id="boat"))
    for i in range(30, 45):
        writer.add(filler(i))
    assert "boat" not in {t.id for t in writer.context().window}
    hits = reader.recall("sailing boat Nimbus", k=3)
    assert hits and hits[0].id == "boat"


def test_turns_added_since_the_cached_read_are_recalled(store: MemoryStore) -> None:
    memory = hybrid(store, max_tokens=400)
    for i in range(30):
        memory.add(filler(i))
    memory.recall("anything at all")
    # Unfolded turns older than the window (folds failing or not yet run) count as archived.
    memory.add(Turn(role="user", text="The wifi password is tulip-42.", id="wifi"), fold=False)
    for i in range(30, 40):
        memory.add(filler(i), fold=False)
    assert "wifi" not in {t.id for t in memory.context().window}
    hits = memory.recall("wifi password", k=3)
    assert hits and hits[0].id == "wifi"


def test_a_corrected_fact_is_scored_with_its_new_vector(store: MemoryStore) -> None:
    memory = hybrid(store, model=FactModel(), embedder=BagOfWordsEmbedder(dim=997))
    memory.add(Turn(role="user", text="My home city is Oslo.", id="city"))
    memory.add(
        Turn(
            role="user",
            text="My favourite weekend place is the old harbour district of Oslo.",
            id="place",
        )
    )
    for i in range(20):
        memory.add(filler(i))
    keys = {f.key for f in memory.facts()}
    assert {"user/home_city", "user/favourite_weekend_place"} <= keys
    before = {h.id: h for h in memory.recall("Oslo", k=10, kinds=["fact"])}
    assert before["user/home_city"].dense_rank == 1  # the short fact is nearer; now cached
    memory.add(Turn(role="user", text="Update: my home city is Berlin now.", id="moved"))
    for i in range(20, 45):
        memory.add(filler(i))
    city = next(f for f in memory.facts() if f.key == "user/home_city")
    assert city.text == "The user's home city is Berlin now."
    space = memory.space
    stored = stored_vectors(memory.store, space, "default", "s", ["fact"])
    record = fact_record_id(memory.store, "default", "s", city)
    assert {r.id: r.text_hash for r in stored}[record] == text_hash(city.text)
    after = {h.id: h for h in memory.recall("Oslo", k=10, kinds=["fact"])}
    assert after["user/favourite_weekend_place"].dense_rank == 1
    # The new text shares nothing with "Oslo": with its stale vector it would still rank 1.
    assert "user/home_city" not in after


def test_the_turn_indexes_keep_to_their_byte_budget() -> None:
    # A budget of about two of these sessions' indexes (turns and 64-float window vectors).
    store = MemoryStore.in_memory(cache=CacheLimits(nbytes=160_000))
    indexes = store.caches.sessions
    budget = indexes.max_bytes
    memories = [hybrid(store, f"user-{n}", embedder=BagOfWordsEmbedder()) for n in range(6)]
    for n, memory in enumerate(memories):
        memory.add(Turn(role="user", text=f"My locker number is {1000 + n}.", id=f"locker-{n}"))
        for i in range(25):
            memory.add(filler(i))
    for _ in range(2):
        for n, memory in enumerate(memories):
            hits = memory.recall("locker number", k=1, kinds=["turn"])
            assert [h.id for h in hits] == [f"locker-{n}"]  # an evicted session reads again
            assert indexes.nbytes <= budget or len(indexes) == 1
            assert 1 <= len(indexes) < len(memories)


def test_turn_ids_reused_after_clear_are_scored_with_their_new_text(store: MemoryStore) -> None:
    memory = hybrid(store, embedder=BagOfWordsEmbedder(dim=997), max_tokens=300)
    memory.add(Turn(role="user", text="The treasure is buried under the old oak.", id="t0"))
    for i in range(30):
        memory.add([Turn(role="user", text=f"Filler line number {i}.", id=f"f{i}")])
    hits = memory.recall("treasure oak", k=1, kinds=["turn"])
    assert hits[0].id == "t0" and hits[0].dense_rank == 1  # its vectors are now cached
    memory.clear()
    # The same ids again, other texts: the cached vectors of "t0" must not be used.
    memory.add(Turn(role="user", text="Lunch is at noon in the canteen.", id="t0"))
    for i in range(30):
        memory.add([Turn(role="user", text=f"Filler line number {i}.", id=f"f{i}")])
    memory.add(Turn(role="user", text="The treasure map hangs by the oak door.", id="t1"))
    for i in range(30, 60):
        memory.add([Turn(role="user", text=f"Filler line number {i}.", id=f"f{i}")])
    archived = {t.id for t in memory.turns() if t.folded_in}
    assert {"t0", "t1"} <= archived
    hits = memory.recall("treasure oak", k=5, kinds=["turn"])
    dense = {h.id: h.dense_rank for h in hits}
    assert hits[0].id == "t1" and dense["t1"] is not None
    # t0's windows now hold lunch and filler: far below the treasure map's.
    similarity = brute_force_similarity(memory, "treasure oak", archived)
    assert similarity["t0"] < similarity["t1"]
    assert "t0" not in dense


def test_an_index_that_grows_while_windows_are_embedded_is_read_again(store, monkeypatch):
    """The candidates are found once, before the windows are embedded (no lock held); an
    index that changed meanwhile has them found again, so the pool and masks agree."""
    memory = hybrid(store, embedder=BagOfWordsEmbedder())
    memory.add(Turn(role="user", text="My locker code is 4471."))
    for i in range(20):
        memory.add(filler(i))
    window = {t.id for t in memory.context().window}
    embed = recall.embed_missing_steps

    def embed_then_grow(source, space, namespace, parts):
        written = yield from embed(source, space, namespace, parts)
        index = parts[0][1]
        late = Turn(role="user", text="A locker arrived late.", id="late", created_at=1.0)
        with index.lock:
            index.merge([StoredTurn(late, index.last_seq + 1, 5, "o200k_base")])
        return written

    monkeypatch.setattr(recall, "embed_missing_steps", embed_then_grow)
    hits = memory.recall("locker code", k=5, kinds=("turn",))
    assert hits and hits[0].text == "My locker code is 4471."
    assert not window & {h.id for h in hits}
