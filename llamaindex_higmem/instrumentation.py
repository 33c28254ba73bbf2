"""Memory upkeep reported through LlamaIndex's instrumentation.

After each operation that called the model (a fold, an indexing batch, a guided
retrieval), the memories of this package dispatch a :class:`MemoryUsageEvent` with the
calls and tokens it spent, through the ``llamaindex_higmem`` dispatcher: any LlamaIndex
event handler attached to the root dispatcher (or an observability integration) sees it.

Example:
    >>> from llama_index.core.instrumentation import get_dispatcher
    >>> from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    >>> from langchain_recursive_memory.core.usage import Usage, UsageRecord
    >>> from llamaindex_higmem.instrumentation import MemoryUsageEvent, dispatch_usage
    >>> class Collect(BaseEventHandler):
    ...     seen: list = []
    ...     def handle(self, event, **kwargs):
    ...         if isinstance(event, MemoryUsageEvent):
    ...             self.seen.append(event.calls)
    >>> handler = Collect()
    >>> get_dispatcher().add_event_handler(handler)
    >>> dispatch_usage(UsageRecord("default", "s", "fold", Usage(calls=2), 0.0))
    >>> handler.seen
    [2]
    >>> get_dispatcher().event_handlers.remove(handler)
"""

from __future__ import annotations

from llama_index.core.instrumentation.events import BaseEvent
from llama_index_instrumentation import get_dispatcher

from langchain_recursive_memory.core.usage import UsageRecord

__all__ = ["MemoryUsageEvent", "dispatch_usage"]

dispatcher = get_dispatcher(__name__)


class MemoryUsageEvent(BaseEvent):
    """What one memory operation spent on its model calls.

    Attributes:
        session_id: The session.
        namespace: Its namespace.
        purpose: ``"fold"``, ``"facts"``, ``"higmem-index"``, ``"higmem-retrieve"``...
        calls: Successful model calls.
        failed_calls: Failed ones.
        input_tokens: Prompt tokens (provider-reported when available, else counted).
        output_tokens: Answer tokens.
    """

    session_id: str
    namespace: str
    purpose: str
    calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int

    @classmethod
    def class_name(cls) -> str:
        """Get the class name."""
        return "MemoryUsageEvent"


def dispatch_usage(record: UsageRecord) -> None:
    """Dispatch a usage record as a :class:`MemoryUsageEvent` (a usage listener)."""
    dispatcher.event(
        MemoryUsageEvent(
            session_id=record.session_id,
            namespace=record.namespace,
            purpose=record.purpose,
            calls=record.usage.calls,
            failed_calls=record.usage.failed_calls,
            input_tokens=record.usage.input_tokens,
            output_tokens=record.usage.output_tokens,
        )
    )
