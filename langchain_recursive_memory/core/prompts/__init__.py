"""Every prompt the engines send and every parser of what models answer. Pure logic.

* :mod:`.summary` - the recursive summary prompt (``S_k = LLM(S_{k-1} + messages)``), the
  shorten prompt, the transcript rendering;
* :mod:`.facts` - the atomic-facts instructions and parsers (combined with the summary, or
  a separate call);
* :mod:`.higmem` - HiGMem's indexing, turn-prediction, filter and rewrite prompts;
* :mod:`.answers` - what every parser does first (reasoning, prefaces, fences and chatter
  stripped; refusals and "nothing" answers detected; the summary checks);
* :mod:`.json_text` - JSON found anywhere in an answer and read leniently.

The prompt that asks again after an unusable answer is the runner's
(:mod:`~..runtime.repair`): the runner sends it, and prompts sit above the store and the
ranking, which sit above the runtime.

``tests/data/model_answers/`` holds the answers (written like gpt-4o-mini-, Claude- and
open-model answers, and recorded from real runs) that every parser is tested on.

Example:
    >>> from langchain_recursive_memory.core.prompts import clean_summary
    >>> clean_summary("<think>Keep it short.</think>Summary: Ada lives in Oslo.")
    'Ada lives in Oslo.'
"""

from .answers import (
    check_grounded,
    check_kept,
    clean_summary,
    is_refusal,
    parse_summary,
    says_none,
    strip_reasoning,
)
from .facts import (
    FACTS_INSTRUCTIONS,
    FACTS_PROMPT,
    facts_prompt,
    parse_combined,
    parse_facts,
    render_known_facts,
)
from .higmem import (
    ANALYSE_PROMPT,
    ANSWER_AS_LINES,
    ANSWER_AS_OBJECT,
    FILTER_PROMPT,
    INDEX_SCHEMA,
    PREDICT_PROMPT,
    REWRITE_PROMPT,
    TURN_LIST_SCHEMA,
    Analysis,
    EventRef,
    event_ref,
    event_refs,
    index_parser,
    parse_analysis,
    parse_number_list,
    parse_rewrite,
    turn_line,
    turn_list_parser,
)
from .json_text import json_values, loads_lenient
from .summary import render_transcript, shorten_prompt, summary_prompt

__all__ = [
    "ANALYSE_PROMPT",
    "ANSWER_AS_LINES",
    "ANSWER_AS_OBJECT",
    "Analysis",
    "EventRef",
    "FACTS_INSTRUCTIONS",
    "FACTS_PROMPT",
    "FILTER_PROMPT",
    "INDEX_SCHEMA",
    "PREDICT_PROMPT",
    "REWRITE_PROMPT",
    "TURN_LIST_SCHEMA",
    "check_grounded",
    "check_kept",
    "clean_summary",
    "event_ref",
    "event_refs",
    "facts_prompt",
    "index_parser",
    "is_refusal",
    "json_values",
    "loads_lenient",
    "parse_analysis",
    "parse_combined",
    "parse_facts",
    "parse_number_list",
    "parse_rewrite",
    "parse_summary",
    "render_known_facts",
    "render_transcript",
    "says_none",
    "shorten_prompt",
    "strip_reasoning",
    "summary_prompt",
    "turn_line",
    "turn_list_parser",
]
