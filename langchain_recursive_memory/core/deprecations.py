"""The names of 0.1.0 that moved or were renamed: they work until 0.3.0, with a warning.

Every name a user could import from 0.1.0 and that 0.2.0 moved or renamed resolves here
to its new home and warns once per call site with a :class:`DeprecationWarning` that
names the replacement: ``"X is deprecated since 0.2.0 and will be removed in 0.3.0; use
Y"``. :data:`MOVED` is the one table of moved module-level names (old module -> old name
-> ``"new.module:name"``); the old modules that are gone are thin modules whose
``__getattr__`` calls :func:`moved_attribute`. Renamed methods call :func:`warn_deprecated`
themselves. The table goes, with the thin modules, in 0.3.0.

The targets are strings, imported on first use: the core never imports the command line
(``core.ingest.ingest`` moved there) nor a framework by loading this module.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     from langchain_recursive_memory.core.memory import RecursiveMemory
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    langchain_recursive_memory.core.memory.RecursiveMemory is deprecated since 0.2.0 and
    will be removed in 0.3.0; use langchain_recursive_memory.core.RecursiveMemory
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["DEPRECATED_SINCE", "MOVED", "REMOVED_IN", "moved_attribute", "warn_deprecated"]

#: the release that deprecated the names of :data:`MOVED`
DEPRECATED_SINCE = "0.2.0"
#: the release that removes them
REMOVED_IN = "0.3.0"

#: ``stacklevel`` of a warning given for a module ``__getattr__``: the importing line
GETATTR_CALLER = 4

_LRM = "langchain_recursive_memory"
_CORE = f"{_LRM}.core"


def _to(module: str, *names: str) -> dict[str, str]:
    """Return ``{name: "module:name"}`` for names that kept their own name."""
    return {name: f"{module}:{name}" for name in names}


#: old module -> old name -> ``"new.module:new_name"`` (every name is a 0.1.0 public one)
MOVED: Mapping[str, Mapping[str, str]] = {
    _CORE: {"TurnNote": f"{_CORE}:TurnNode"},
    f"{_CORE}.background": _to(f"{_CORE}.runtime.background", "BackgroundFolds"),
    f"{_CORE}.effects": {
        "EffectRunner": f"{_CORE}.runtime.runner:Runner",
        **_to(f"{_CORE}.runtime.effects", "Effect", "Steps"),
    },
    f"{_CORE}.events": {
        "TurnNote": f"{_CORE}:TurnNode",
        "segment_events": f"{_CORE}.legacy:segment_events",
    },
    f"{_CORE}.facts": _to(
        f"{_CORE}.prompts.facts",
        "FACTS_INSTRUCTIONS",
        "FACTS_PROMPT",
        "facts_prompt",
        "parse_combined",
        "parse_facts",
        "render_known_facts",
    ),
    f"{_CORE}.ingest": _to(f"{_LRM}.cli.loaders", "ingest", "locomo_sessions", "locomo_turns"),
    f"{_CORE}.memory": {
        **_to(_CORE, "Context", "FoldResult", "HybridMemory", "RecursiveMemory"),
        **_to(f"{_CORE}.recursive.summarize", "FACT_MODES", "KNOWN_FACTS_IN_PROMPT"),
    },
    f"{_CORE}.ranking": {
        **_to(f"{_CORE}.retrieval.ranking", "RankedTurn", "RankerParams", "window_texts"),
        "TurnRanker": f"{_CORE}.legacy:TurnRanker",
    },
    f"{_CORE}.recall": {
        **_to(f"{_CORE}.retrieval.lexical", "LexicalIndex", "tokenize", "word_stems"),
        **_to(f"{_CORE}.legacy", "RRF_K", "rrf"),
        "RecallHit": f"{_CORE}:RecallHit",
    },
    f"{_CORE}.retry": {
        "RetryPolicy": f"{_CORE}:RetryPolicy",
        **_to(f"{_CORE}.runtime.retry", "acall_with_timeout", "call_with_timeout"),
    },
    f"{_CORE}.store": {
        **_to(
            _CORE,
            "DEFAULT_NAMESPACE",
            "MemoryStore",
            "SessionInfo",
            "SessionState",
            "StoredTurn",
            "Summary",
            "default_path",
        ),
        "VectorRecord": f"{_CORE}.storage:VectorRecord",
        "PATH_ENV": f"{_CORE}.storage.client:PATH_ENV",
        **_to(f"{_CORE}.storage.keys", "MAX_ID_LENGTH", "SCHEMA", "session_key"),
        "validate_scope": f"{_CORE}.storage.keys:validate_session",
    },
    f"{_CORE}.summarizer": {
        "ExtractiveSummarizer": f"{_CORE}:ExtractiveSummarizer",
        **_to(
            f"{_CORE}.prompts",
            "clean_summary",
            "render_transcript",
            "shorten_prompt",
            "summary_prompt",
        ),
        **_to(
            f"{_CORE}.prompts.summary",
            "ANSWER_SUMMARY_ONLY",
            "ANSWER_WITH_FACTS",
            "SHORTEN_PROMPT",
            "SUMMARY_PROMPT",
        ),
    },
    f"{_CORE}.window": {
        **_to(f"{_CORE}.recursive.planner", "FoldPlan", "plan_fold"),
        **_to(f"{_CORE}.recursive.units", "drop_orphan_results", "turn_tokens", "window_units"),
        "select_suffix": f"{_CORE}.legacy:select_suffix",
    },
}


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated since 0.2.0 and goes in 0.3.0, naming ``new``.

    Args:
        old: What the caller used, e.g. ``"HiGMem.notes()"``.
        new: What to use instead, e.g. ``"HiGMem.turn_nodes()"``.
        stacklevel: Passed to :func:`warnings.warn`; the default 3 points at the caller
            of the function that calls this one.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_deprecated("old_name()", "new_name()", stacklevel=2)
        >>> str(caught[0].message)
        'old_name() is deprecated since 0.2.0 and will be removed in 0.3.0; use new_name()'
    """
    message = (
        f"{old} is deprecated since {DEPRECATED_SINCE} and will be removed in {REMOVED_IN}; "
        f"use {new}"
    )
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


_NO_LONGER_USED = "your own copy: 0.2.0 no longer uses it"
#: what to use instead of a name that has no new home (its 0.1.0 code is in :mod:`.legacy`)
_INSTEAD = {
    f"{_CORE}.legacy:RRF_K": f"{_NO_LONGER_USED} (recall ranks with {_CORE}.retrieval.ranking)",
    f"{_CORE}.legacy:rrf": f"{_NO_LONGER_USED} (recall ranks with {_CORE}.retrieval.ranking)",
    f"{_CORE}.legacy:select_suffix": f"{_NO_LONGER_USED} (see {_CORE}.recursive.window)",
    f"{_CORE}.legacy:TurnRanker": (
        f"{_CORE}.retrieval.ranking.TurnRanker(turns, params), passing the question's window "
        "similarities to scores(question, dense)"
    ),
    f"{_CORE}.legacy:segment_events": (
        f"{_CORE}.higmem.heuristic.segment_events (its first parameter is now nodes)"
    ),
}


def _instead(target: str) -> str:
    """Return what to use instead of the old name whose new home is ``target``."""
    module, _, name = target.partition(":")
    return _INSTEAD.get(target, f"{module}.{name}")


def moved_attribute(module: str, name: str) -> Any:
    """Return ``module.name`` from its new home (:data:`MOVED`), warning that it moved.

    The body of an old module's ``__getattr__``: any name :data:`MOVED` does not list for
    ``module`` raises ``AttributeError`` as a module does. ``from package import name``
    asks a package twice; the warning is given once.

    Args:
        module: The old module's dotted name (its ``__name__``).
        name: The attribute asked for.

    Returns:
        The object from its new home.

    Raises:
        AttributeError: For a name that is not a moved one.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     moved_attribute("langchain_recursive_memory.core.retry", "RetryPolicy").__name__
        'RetryPolicy'
    """
    target = MOVED.get(module, {}).get(name)
    if target is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new_module, _, new_name = target.partition(":")
    value = getattr(importlib.import_module(new_module), new_name)
    if sys._getframe(2).f_code.co_name != "_handle_fromlist":
        warn_deprecated(f"{module}.{name}", _instead(target), stacklevel=GETATTR_CALLER)
    return value
