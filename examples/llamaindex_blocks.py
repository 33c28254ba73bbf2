"""LlamaIndex's Memory with this package's hybrid block, in a chat engine (offline).

``Memory`` keeps the recent messages itself; what overflows its short-term window goes to
the block, which folds it into a running summary, extracts facts (with a summarizer LLM)
and recalls what the new question needs. ``MockLLM`` stands in for the chat model; with no
``llm`` the block summarizes without a model.
"""

import tempfile

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory

from langchain_recursive_memory.core import MemoryStore
from llamaindex_higmem import HybridMemoryBlock

folder = tempfile.mkdtemp()
store = MemoryStore.persistent(folder)  # one store for the whole application
block = HybridMemoryBlock.from_defaults(store=store, token_limit=500)  # summary + recall


def get_memory(session_id: str) -> Memory:
    return Memory.from_defaults(
        session_id=session_id,
        token_limit=1200,  # the recent messages (70%), then the block's text
        token_flush_size=200,  # what overflows goes to the block
        memory_blocks=[block],
        async_database_uri=f"sqlite+aiosqlite:///{folder}/recent.sqlite3",  # Memory's own
    )


engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=8), memory=get_memory("user-42"))
engine.chat("Hi! I'm Ada, my locker code is 4471.")
for i in range(60):
    engine.chat(f"Weekend idea {i} for Oslo: a walk along the fjord, then which museum?")

print(len(block.engine("user-42").turns()), "older messages flushed to the block")
sent = get_memory("user-42").get(input="What is my locker code?")  # the next model call's
memory_text = sent[0].content  # Memory puts the blocks' text in the system message
print(len(sent), "messages for the next model call; the locker code is in:", "4471" in memory_text)
