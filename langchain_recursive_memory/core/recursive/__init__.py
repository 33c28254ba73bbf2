"""The recursive summary memory (arXiv 2308.15022) and the hybrid memory.

* :mod:`.memory` - the :class:`RecursiveMemory` and :class:`HybridMemory` facades;
* :mod:`.planner` - the fold policy (when a fold is due, what it folds);
* :mod:`.fold` - the compare-and-set fold and its health (cool-down);
* :mod:`.summarize` - summarize steps and the extractive (no-LLM) summarizer;
* :mod:`.derived` - facts and vectors written at folds;
* :mod:`.recall` - hybrid recall of facts and archived turns;
* :mod:`.context` - the one context builder every adapter uses;
* :mod:`.units` - units of the window (a tool call with its results).

Example:
    >>> from langchain_recursive_memory.core.recursive import RecursiveMemory
    >>> RecursiveMemory.__name__
    'RecursiveMemory'
"""

from .context import Context, ContextBuilder
from .fold import FoldResult
from .memory import HybridMemory, RecursiveMemory
from .summarize import ExtractiveSummarizer

__all__ = [
    "Context",
    "ContextBuilder",
    "ExtractiveSummarizer",
    "FoldResult",
    "HybridMemory",
    "RecursiveMemory",
]
