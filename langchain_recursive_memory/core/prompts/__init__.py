"""Every prompt the engines send and every parser of what models answer. Pure logic.

* :mod:`.summary` - the recursive summary prompt (``S_k = LLM(S_{k-1} + messages)``), the
  shorten prompt, the transcript rendering;
* :mod:`.facts` - the atomic-facts instructions and parsers (combined with the summary, or
  a separate call);
* :mod:`.higmem` - HiGMem's indexing, turn-prediction, filter and rewrite prompts;
* :mod:`.answers` - what every parser does first (reasoning stripped, JSON found).

Example:
    >>> from langchain_recursive_memory.core.prompts import clean_summary
    >>> clean_summary("<think>Keep it short.</think>Summary: Ada lives in Oslo.")
    'Ada lives in Oslo.'
"""

from .answers import check_grounded, clean_summary, json_values, strip_reasoning
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
    FILTER_PROMPT,
    PREDICT_PROMPT,
    REWRITE_PROMPT,
    Analysis,
    parse_analysis,
    parse_number_list,
    turn_line,
)
from .summary import render_transcript, shorten_prompt, summary_prompt

__all__ = [
    "ANALYSE_PROMPT",
    "Analysis",
    "FACTS_INSTRUCTIONS",
    "FACTS_PROMPT",
    "FILTER_PROMPT",
    "PREDICT_PROMPT",
    "REWRITE_PROMPT",
    "check_grounded",
    "clean_summary",
    "facts_prompt",
    "json_values",
    "parse_analysis",
    "parse_combined",
    "parse_facts",
    "parse_number_list",
    "render_known_facts",
    "render_transcript",
    "shorten_prompt",
    "strip_reasoning",
    "summary_prompt",
    "turn_line",
]
