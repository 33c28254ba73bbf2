"""The hybrid memory in the core: a summary for the gist, recall for the details (offline).

Sixty exchanges after the user gave their locker code, it has long left the window and
the summary; ``context(question)`` recalls the turn that said it, for that question, within
the same budget. No model and no embedder here: the summary is the no-LLM extractive one
and recall is BM25; give ``model=`` a summarizer to also extract facts at each fold, and
``embedder=`` an embedding model for dense recall.
"""

from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn

store = MemoryStore.in_memory()  # or MemoryStore.persistent("./memory")
memory = HybridMemory("support-42", store=store, max_tokens=800)  # a quarter for recall
memory.add(
    [
        Turn(role="user", text="Hi, I'm Ada. My locker code is 4471."),
        Turn(role="assistant", text="Noted, Ada."),
    ]
)
for i in range(60):
    memory.add(
        [
            Turn(role="user", text=f"Any tips for the garden in week {i}?"),
            Turn(role="assistant", text=f"Week {i}: water early and mulch the beds."),
        ]
    )

context = memory.context("What is my locker code?")
print(context.tokens, "tokens <= 800;", len(context.window), "recent messages verbatim")
print("Recalled:", context.recalled[0].text)  # the turn that said it, for this question
hits = memory.recall("locker code", k=1)  # recall alone: scored hits with provenance
print(hits[0].kind, hits[0].score > 0, hits[0].text)
