"""RecursiveSummaryMemory in a LlamaIndex SimpleChatEngine (offline).

Both models are scripted stand-ins so this runs offline with no API key: the "chat model"
answers with a canned sentence and the "summarizer" keeps the names and numbers it is
shown. Replace them with real LlamaIndex LLMs, e.g. ``OpenAI(model="gpt-4o")`` for the
chat engine and ``OpenAI(model="gpt-4o-mini")`` as the summarizer.
"""

import re
import tempfile
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

from langchain_recursive_memory.core import MemoryStore, TokenCounter
from llamaindex_higmem import RecursiveSummaryMemory
from llamaindex_higmem.messages import chat_message_to_turn


class ScriptedChat(CustomLLM):
    """Stand-in for the chat model: a canned answer, and it remembers the last prompt."""

    last_prompt: list[ChatMessage] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True, model_name="scripted-chat")

    @llm_chat_callback()
    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        self.last_prompt = list(messages)
        reply = f"Noted: {messages[-1].content}"
        return ChatResponse(message=ChatMessage(role="assistant", content=reply))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="unused")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


class ScriptedSummarizer(CustomLLM):
    """Stand-in for the summarizer: tracks the names it sees and counts the ideas."""

    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-summarizer")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        old = re.search(r"Names: (.*?)\. Ideas so far: (\d+)\.", prompt)
        names = old.group(1).split(", ") if old else []
        new = re.search(r"<messages>\n(.*?)\n</messages>", prompt, re.S)
        lines = new.group(1).splitlines()
        said = [line.split("user: ", 1)[1] for line in lines if "user: " in line]
        for line in said:
            names += re.findall(r"(?<=[a-z,] )[A-Z][a-z]+", line)
        ideas = (int(old.group(2)) if old else 0) + sum(line.startswith("Idea") for line in said)
        names = list(dict.fromkeys(names))
        return CompletionResponse(text=f"Names: {', '.join(names)}. Ideas so far: {ideas}.")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


path = tempfile.mkdtemp()  # the store's folder; omit it for the default location
store = MemoryStore.persistent(path)  # one store for the application
chat_llm, summarizer = ScriptedChat(), ScriptedSummarizer()
settings = {"token_limit": 800, "max_summary_tokens": 150, "recall_tokens": 200}
memory = RecursiveSummaryMemory.from_defaults(
    session_id="user-42", llm=summarizer, store=store, **settings
)
engine = SimpleChatEngine.from_defaults(
    llm=chat_llm, memory=memory, system_prompt="You are a helpful travel assistant."
)

counter = TokenCounter()
engine.chat("Hi! I'm Ada, I land in Tokyo on 14 March with my brother Bob.")
for i in range(1, 45):
    engine.chat(f"Idea {i}: a day trip from Kyoto to Nara, budget {40 + i} euros.")
    if (i + 1) % 15 == 0:
        prompt = counter.count_turns([chat_message_to_turn(m) for m in chat_llm.last_prompt])
        full = counter.count_turns([chat_message_to_turn(m) for m in memory.get_all()])
        print(f"after {i + 1:2d} exchanges: prompt {prompt} tokens (<= 800), full log {full}")

print("summary:", memory.summary)

# The summary kept the names, not the date. SimpleChatEngine reads the memory with get()
# and no question: the memory recalls for the newest user message (the one just put),
# so the first message comes back within the recall share of the 800 tokens.
engine.chat("Remind me: which day do I land in Tokyo?")
recalled = any("14 March" in str(m.content) for m in chat_llm.last_prompt)
assert recalled
print("date recalled for the question:", recalled)
print("first message of the history:", type(memory.get()[0]).__name__)
print(len(memory.get_all()), "messages in the log")  # 92: nothing is lost

# A restart (a new process, the same path) resumes without re-summarizing anything.
fresh = ScriptedSummarizer()
again = RecursiveSummaryMemory.from_defaults(session_id="user-42", llm=fresh, path=path, **settings)
assert again.get() == memory.get()
print("after a restart:", fresh.calls, "summarizer calls, same history")
