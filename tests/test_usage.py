"""Cost visibility: upkeep calls and tokens, per session, in the store and in callbacks."""

from __future__ import annotations

from typing import Any

from conftest import FAST
from fakes import FailingModel, HiGMemModel, KeywordSummarizer
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import (
    FunctionTextModel,
    HiGMem,
    MemoryStore,
    RecursiveMemory,
    TokenCounter,
    Turn,
)
from langchain_recursive_memory.core.usage import ModelText


def chat(memory, n: int) -> None:
    for i in range(n):
        memory.add(Turn(role="user", text=f"Message {i} about the Falcon project and {i} cats."))


def test_folds_are_counted_per_session_and_persisted(store):
    seen = []
    model = KeywordSummarizer()
    memory = RecursiveMemory(
        "s",
        store=store,
        model=model,
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
        on_usage=seen.append,
    )
    chat(memory, 40)
    usage = memory.usage()
    folds = len(store.summaries("default", "s"))
    assert folds >= 2 and usage.calls == model.calls >= folds
    counter = TokenCounter()
    assert usage.input_tokens == sum(counter.count_text(p) for p in model.prompts)
    assert usage.output_tokens > 0 and usage.reported_calls == 0
    assert set(memory.usage_by_purpose()) <= {"fold", "shorten"}
    assert sum(r.usage.calls for r in seen) == usage.calls
    assert all(r.session_id == "s" for r in seen)
    again = RecursiveMemory("s", store=MemoryStore(store.client, prefix=store.prefix))
    assert again.usage() == usage  # queryable from any process
    other = RecursiveMemory("other", store=store)
    assert other.usage().calls == 0


def test_provider_reported_usage_is_used_and_failures_are_counted(store):
    model = FunctionTextModel(lambda p: ModelText("Summary of it all.", 1000, 7))
    memory = RecursiveMemory(
        "s", store=store, model=model, retry=FAST, max_tokens=400, max_summary_tokens=80
    )
    chat(memory, 30)
    usage = memory.usage()
    assert usage.calls >= 1 and usage.reported_calls == usage.calls
    assert usage.input_tokens == 1000 * usage.calls and usage.output_tokens == 7 * usage.calls
    failing = RecursiveMemory(
        "f",
        store=store,
        model=FailingModel("raise"),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    chat(failing, 30)
    assert failing.usage().calls == 0 and failing.usage().failed_calls >= 1


def test_higmem_upkeep_by_purpose(store):
    memory = HiGMem("h", store=store, model=HiGMemModel(), retry=FAST, batch_size=4)
    memory.add(
        [Turn(role="user", name="Ada", text=f"Line {i} about Miso the cat.") for i in range(8)]
    )
    memory.retrieve("Miso")
    by_purpose = memory.usage_by_purpose()
    assert by_purpose["higmem-index"].calls == 2
    assert by_purpose["higmem-retrieve"].calls >= 2
    assert memory.usage().calls == sum(u.calls for u in by_purpose.values())


class UsageReportingChat(BaseChatModel):
    """A chat model that reports token usage like a provider does."""

    @property
    def _llm_type(self) -> str:
        return "usage-reporting"

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        message = AIMessage(
            "Ada leads the Falcon project.",
            usage_metadata={"input_tokens": 321, "output_tokens": 9, "total_tokens": 330},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.llm_tags: list[list[str]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.llm_tags.append(list(kwargs.get("tags") or []))


def test_langchain_callbacks_see_upkeep_calls_and_usage_events(store):
    recorder = Recorder()
    history = RecursiveSummaryChatMessageHistory(
        "s",
        store=store,
        llm=UsageReportingChat(),
        callbacks=[recorder],
        max_tokens=400,
        max_summary_tokens=80,
        retry=FAST,
    )
    for i in range(30):
        history.add_messages([HumanMessage(f"Falcon project update {i}."), AIMessage("ok")])
    usage = history.usage()
    assert usage.calls >= 1 and usage.reported_calls == usage.calls
    assert usage.input_tokens == 321 * usage.calls
    assert recorder.llm_tags and all("langchain-recursive-memory" in t for t in recorder.llm_tags)
    names = {name for name, _ in recorder.events}
    assert names == {"langchain_recursive_memory.usage"}
    assert sum(d["calls"] for _, d in recorder.events) == usage.calls
    assert all(d["session_id"] == "s" for _, d in recorder.events)


def test_llamaindex_instrumentation_sees_upkeep(store):
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    from llamaindex_higmem import HiGMemRetriever, MemoryUsageEvent, RecursiveSummaryMemory

    class Collect(BaseEventHandler):
        events: list = []  # noqa: RUF012 - a pydantic field default (copied per instance)

        def handle(self, event: Any, **kwargs: Any) -> None:
            if isinstance(event, MemoryUsageEvent):
                self.events.append(event)

    handler = Collect()
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        memory = RecursiveSummaryMemory.from_defaults(
            session_id="li",
            store=store,
            llm=KeywordSummarizer(),
            token_limit=400,
            max_summary_tokens=80,
        )
        from llama_index.core.llms import ChatMessage

        for i in range(30):
            memory.put(ChatMessage(role="user", content=f"Falcon update {i} with {i} items."))
        higmem = HiGMem("h", store=store, model=HiGMemModel(), retry=FAST)
        HiGMemRetriever(higmem).retrieve("Falcon")  # indexes nothing yet; attaches listener
        higmem.add([Turn(role="user", text=f"Falcon note {i}") for i in range(4)])
        purposes = {e.purpose for e in handler.events}
        assert {"fold", "higmem-index"} <= purposes
        fold_calls = sum(e.calls for e in handler.events if e.session_id == "li")
        assert fold_calls == memory.memory.usage().calls >= 1
    finally:
        root.event_handlers.remove(handler)
