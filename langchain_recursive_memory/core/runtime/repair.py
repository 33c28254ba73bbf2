"""The prompt that asks again after an unusable answer, quoting what was wrong. Pure logic.

Sending the identical prompt again mostly gets the identical answer back. The repair prompt
is the original prompt, then the previous answer (cut) and the parser's error, and a
request to answer again in the format asked for.

Example:
    >>> from langchain_recursive_memory.core.runtime.repair import repair_prompt
    >>> print(repair_prompt("List the turns.", "Turns two and five", "no list of turn numbers"))
    List the turns.
    <BLANKLINE>
    Your previous answer could not be used: no list of turn numbers.
    <previous_answer>
    Turns two and five
    </previous_answer>
    Answer again, in exactly the format asked for above, with nothing else.
"""

from __future__ import annotations

__all__ = ["REPAIR_QUOTE_CHARS", "repair_prompt"]

REPAIR_QUOTE_CHARS = 1500
"""Longest part of the previous answer quoted back (its start, where most errors are)."""
REPAIR_ERROR_CHARS = 300
"""Longest parser error quoted back."""

REPAIR_PROMPT = """{prompt}

Your previous answer could not be used: {error}.
<previous_answer>
{answer}
</previous_answer>
Answer again, in exactly the format asked for above, with nothing else."""


def repair_prompt(prompt: str, answer: str, error: str) -> str:
    """The prompt that asks again for ``prompt`` after ``answer`` failed with ``error``."""
    quoted = answer.strip() or "(empty)"
    if len(quoted) > REPAIR_QUOTE_CHARS:
        quoted = quoted[:REPAIR_QUOTE_CHARS] + " [...]"
    reason = " ".join(str(error).split())[:REPAIR_ERROR_CHARS].rstrip(".")
    return REPAIR_PROMPT.format(prompt=prompt.rstrip(), error=reason, answer=quoted)
