"""How the engines talk to the outside world: typed effects, the runner, retries.

The engines' operations are written once, as generators of typed effects
(:mod:`.effects`); the :class:`~.runner.Runner` each engine holds performs them with
blocking calls or with ``await``, with one retry path (:mod:`.retry`) for model and
embedding calls, and one repair prompt (:mod:`.repair`) after an unusable answer.
Background folds run on :mod:`.background`.

Example:
    >>> from langchain_recursive_memory.core.runtime import Runner, store_call
    >>> def steps():
    ...     value = yield from store_call(lambda: 41)
    ...     return value + 1
    >>> Runner().run(steps())
    42
"""

from .effects import (
    EmbedCall,
    Gather,
    ModelCall,
    Steps,
    StoreCall,
    complete,
    embed_documents,
    embed_query,
    first_error,
    gather,
    store_call,
)
from .retry import Retrying, RetryPolicy, acall_with_timeout, call_with_timeout
from .runner import Runner

__all__ = [
    "EmbedCall",
    "Gather",
    "ModelCall",
    "RetryPolicy",
    "Retrying",
    "Runner",
    "Steps",
    "StoreCall",
    "acall_with_timeout",
    "call_with_timeout",
    "complete",
    "embed_documents",
    "embed_query",
    "first_error",
    "gather",
    "store_call",
]
