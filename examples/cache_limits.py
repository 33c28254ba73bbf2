"""A long-running worker: bound what its store keeps in memory between calls (offline)."""

from langchain_recursive_memory import CacheLimits, HybridMemory, MemoryStore, Turn

store = MemoryStore.in_memory(cache=CacheLimits(sessions=64, nbytes=128 * 2**20))
memory = HybridMemory("support-42", store=store)

# A worker serving many conversations: only the 64 most recently used keep their indexes.
for n in range(100):
    chat = HybridMemory(f"support-{n}", store=store, max_tokens=400)
    chat.add(
        [
            Turn(role="user", text=f"My order {1000 + n} arrived with a broken lid."),
            Turn(role="assistant", text="Sorry about that: a replacement lid is on its way."),
        ]
        * 6
    )
    chat.context("what was wrong with my order?")

print(store.caches.sessions.sessions, "sessions cached of 100 served")
print(round(store.caches.nbytes / 2**20, 2), "MiB held, bound", 128, "MiB")
# A session dropped from the cache is rebuilt from the store on its next read.
again = HybridMemory("support-0", store=store, max_tokens=400)
print(again.recall("broken lid order 1000", k=1)[0].text)
