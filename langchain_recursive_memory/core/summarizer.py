"""0.1.0's ``core.summarizer``: deprecated since 0.2.0, gone in 0.3.0.

It moved to :mod:`langchain_recursive_memory.core.prompts`.
Its names still import from here, each with a ``DeprecationWarning`` naming its new
home (the table is :data:`~langchain_recursive_memory.core.deprecations.MOVED`).

Example:
    >>> import warnings
    >>> from langchain_recursive_memory.core import summarizer
    >>> with warnings.catch_warnings(record=True):
    ...     summarizer.ExtractiveSummarizer.__name__
    'ExtractiveSummarizer'
"""

# ruff: noqa: F822 (the names of __all__ are resolved by __getattr__)

from typing import Any

from .deprecations import moved_attribute

__all__ = [
    "ExtractiveSummarizer",
    "clean_summary",
    "render_transcript",
    "shorten_prompt",
    "summary_prompt",
]


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name)
