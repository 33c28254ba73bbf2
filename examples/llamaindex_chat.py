"""RecursiveSummaryMemory behind a LlamaIndex chat engine, one memory per conversation.

Runs offline with no API key: ``MockLLM`` (part of llama-index-core) stands in for the chat
model, and ``llm=None`` makes the memory summarize without a model (the extractive
summarizer). Replace them with real LlamaIndex LLMs, e.g. ``OpenAI(model="gpt-4o")`` for
the chat and ``llm=OpenAI(model="gpt-4o-mini")`` as the summarizer. The application opens
one ``MemoryStore``; ``get_memory`` builds a memory per call, a cheap handle on it.
``examples/llamaindex_memory.py`` is the longer story, with a scripted summarizer.
"""

import tempfile

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from langchain_recursive_memory.core import MemoryStore
from llamaindex_higmem import RecursiveSummaryMemory

chat_llm = MockLLM(max_tokens=8)  # stand-in for the chat model
# One store for the whole application; omit the path to use the default location.
store = MemoryStore.persistent(tempfile.mkdtemp())


def get_memory(session_id: str) -> RecursiveSummaryMemory:
    return RecursiveSummaryMemory.from_defaults(
        session_id=session_id, llm=None, store=store, token_limit=800, max_summary_tokens=150
    )


def chat(session_id: str, message: str) -> str:  # e.g. a web request's handler
    engine = SimpleChatEngine.from_defaults(llm=chat_llm, memory=get_memory(session_id))
    return str(engine.chat(message))


chat("user-42", "Hi! I'm Ada, I land in Tokyo on 14 March with my brother Bob.")
for i in range(1, 45):
    chat("user-42", f"Idea {i}: a day trip from Kyoto to Nara, budget {40 + i} euros.")
chat("user-7", "Hello, I'm Grace.")  # another conversation in the same store

memory = get_memory("user-42")
print(memory.summary.splitlines()[-1])  # without a model: a line per folded message
print(len(memory.get()), "messages handed to the model,", len(memory.get_all()), "in the log")
print(len(get_memory("user-7").get_all()), "messages in user-7's conversation")
