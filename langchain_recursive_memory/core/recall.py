"""Recall building blocks: the tokenizer, a BM25 index, and the recalled item.

Pure logic (no I/O): the memory's shells fetch the candidates from Chroma.

* **Tokens**: lowercased words, English stopwords (NLTK's list) removed, Snowball-stemmed
  (``snowballstemmer``).
* **BM25**: the ``bm25s`` library, Lucene variant. It finds exact names and numbers that
  embeddings blur.

How archived turns and facts are ranked (turns with the multi-scale ranking of
:mod:`~.ranking`, facts with BM25 and embeddings mixed 0.4/0.6 after min-max
normalisation) is in :meth:`~.memory.RecursiveMemory.recall`.

Example:
    >>> from langchain_recursive_memory.core.recall import LexicalIndex
    >>> index = LexicalIndex(["Ada lives in Oslo", "Bob flies planes", "Ada owns 3 cats"])
    >>> [i for i, _ in index.search("Where does Ada live?", 2)]
    [0, 2]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["LexicalIndex", "RecallHit", "tokenize", "word_stems"]
_WORD_RE = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens, English stopwords removed, Snowball-stemmed.

    Example:
        >>> tokenize("Ada's cats were running to the 3 parks!")
        ['ada', 'cat', 'run', '3', 'park']
    """
    stop = _stopwords()
    return [_stem(w) for w in _WORD_RE.findall(text.lower()) if w not in stop]


def word_stems(text: str) -> list[tuple[str, str]]:
    """Like :func:`tokenize`, with each token's surface word: ``[(stem, word), ...]``.

    Example:
        >>> word_stems("Painting cats")
        [('paint', 'painting'), ('cat', 'cats')]
    """
    stop = _stopwords()
    return [(_stem(w), w) for w in _WORD_RE.findall(text.lower()) if w not in stop]


class LexicalIndex:
    """A BM25 index over a fixed list of texts (rebuild it when the texts change).

    Args:
        texts: The documents, in the order results refer to.
        k1: BM25 term-frequency saturation (default 1.2).
        b: BM25 length normalisation (default 0.75).
    """

    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        import bm25s

        self.size = len(texts)
        self._tokens = [tokenize(t) for t in texts]
        self._bm25: Any = None
        if any(self._tokens):
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._bm25.index(self._tokens, show_progress=False)

    def scores(self, query: str) -> list[float]:
        """Return the BM25 score of every document for ``query``."""
        terms = tokenize(query)
        if self._bm25 is None or not terms:
            return [0.0] * self.size
        return [float(s) for s in self._bm25.get_scores(terms)]

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Return up to ``n`` ``(position, score)`` pairs with a positive score, best first."""
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:n]


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory.

    Attributes:
        id: The turn id (kind ``"turn"``) or fact key (kind ``"fact"``).
        kind: ``"turn"`` or ``"fact"``.
        text: The turn's text or the fact.
        score: The ranking score (higher is better; comparable within one recall).
        source_turn_ids: Provenance: the turn itself, or the turns a fact came from.
        time: Seconds since the epoch of the turn (or of the fact's last update).
        role: The turn's role (turns only).
        lexical_rank: Rank in the BM25 ranking (1 = best), or None if absent.
        dense_rank: Rank in the embedding ranking, or None if absent or no embedder.
        metadata: More about it (a fact's subject and stated time, a turn's session id).
    """

    id: str
    kind: str
    text: str
    score: float
    source_turn_ids: tuple[str, ...]
    time: float | None = None
    role: str | None = None
    lexical_rank: int | None = None
    dense_rank: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
