"""What the shape of a conversation tells the ranking: dialogue, first mentions, asking turns.

Evidence sits differently in two kinds of conversation, and each is told by what can be
seen in the turns themselves, per segment (a session, or a part of one), with no switch:

* **A dialogue** (people chatting: both speakers' turns of similar length): an answer is
  spread over a moment of the conversation (the question, then its reply, which often
  shares no word with what is asked later), so a turn is scored with its neighbours (the
  window BM25 of :class:`~.ranking.TurnRanker`). A segment is a dialogue when the mean
  length of its longest-winded speaker's turns is at most :data:`DIALOGUE_RATIO` times
  that of its most concise speaker (LoCoMo's sessions: at most 2.5; a user's chats with
  an assistant, whose answers are ~10 times longer: 9 at the median).
* **Not a dialogue** (a user and an assistant that answers at length): each turn stands
  alone, and the words of a question are usually first said by the person whose fact
  it is; the answers and later turns of the segment repeat them. So a term counts fully
  in the first turn of the segment that says it and partly in the turns that repeat it
  (:func:`first_mentions`), and windows lift no neighbour (they would fill the top k with
  one region of one long answer).
* **Asking turns** (every sentence a question: ``"What is my locker code?"``) rank below
  statements: a turn that only asks repeats the question's words without answering them
  (:func:`asks`). They are rarely evidence: 2 of 1,348 evidence turns of LoCoMo's dev
  conversations (0.7% of its turns ask), 4 of 439 of LongMemEval's dev half (7.8% ask).

Example:
    >>> asks("What is my locker code?"), asks("It's 4512. Why?"), asks("")
    (True, False, False)
    >>> dialogue_mask(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([10, 12, 10, 90]))
    array([ True,  True, False, False])
"""

from __future__ import annotations

import numpy as np
import regex  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "DIALOGUE_RATIO",
    "asks",
    "dialogue_mask",
    "first_mentions",
    "segment_best",
]

DIALOGUE_RATIO = 3.0
"""Most a segment's speakers' mean turn lengths may differ by (longest / shortest) for it
to be a dialogue. Chosen on both dev sets: LoCoMo's sessions are at most 2.5 (median
1.2), LongMemEval's segments 9 at the median (5% under 2.7); 2.5, 3 and 4 gave the same
recall within 0.01 on both."""

# Sentence ends and question marks of several scripts (fullwidth ones written as escapes).
_SENTENCE_END = regex.compile(r"(?<=[.!?\u061f])\s+|(?<=[\u3002\uff01\uff1f])\s*|\n+")
_QUESTION_MARKS = ("?", "\uff1f", "\u061f")
_WORD = regex.compile(r"\w")


def asks(text: str) -> bool:
    """Whether every sentence of ``text`` is a question (a turn that only asks).

    Example:
        >>> asks("Hi! Where did you go?"), asks("Où es-tu allé ? "), asks("Lisbon.")
        (False, True, False)
    """
    if not any(mark in text for mark in _QUESTION_MARKS):  # most turns: no question at all
        return False
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if _WORD.search(s)]
    return bool(sentences) and all(s.rstrip().endswith(_QUESTION_MARKS) for s in sentences)


def dialogue_mask(
    segments: np.ndarray,
    speakers: np.ndarray,
    lengths: np.ndarray,
    ratio: float = DIALOGUE_RATIO,
) -> np.ndarray:
    """For each turn, whether its segment is a dialogue (see the module doc).

    Args:
        segments: Each turn's segment code (small non-negative integers: equal codes, one
            segment).
        speakers: Each turn's speaker code (small non-negative integers).
        lengths: Each turn's length in tokens.
        ratio: Most the speakers' mean turn lengths may differ by (longest / shortest).
    """
    if not len(segments):
        return np.zeros(0, bool)
    seg = np.asarray(segments, np.int64)
    width = int(speakers.max()) + 1
    size = (int(seg.max()) + 1) * width
    pair = seg * width + speakers
    count = np.bincount(pair, minlength=size).reshape(-1, width)
    total = np.bincount(pair, weights=lengths, minlength=size).reshape(-1, width)
    mean = np.maximum(total / np.maximum(count, 1), 1.0)
    longest = np.where(count > 0, mean, -np.inf).max(axis=1)
    shortest = np.where(count > 0, mean, np.inf).min(axis=1)
    return np.asarray((longest <= ratio * shortest)[seg], bool)


def first_mentions(docs: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """Which of a term's postings are the first turn of their segment to say it.

    Args:
        docs: The positions holding the term (ascending).
        segments: Every position's segment code.
    """
    first = np.zeros(len(docs), bool)
    if len(docs):
        _, at = np.unique(segments[docs], return_index=True)
        first[at] = True
    return first


def segment_best(scores: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """Each turn's segment's best score (the max over the segment's turns).

    ``segments``: small non-negative integer codes (equal codes: one segment).
    """
    if not len(scores):
        return np.zeros(0, scores.dtype)
    best = np.full(int(segments.max()) + 1, -np.inf, np.float64)
    np.maximum.at(best, segments, scores)
    out: np.ndarray = best[segments].astype(scores.dtype)
    return out
