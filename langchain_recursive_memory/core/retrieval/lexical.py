"""Lexical analysis and the one BM25 index of the package. Pure logic.

* **Tokens**: lowercased words, English stopwords (bm25s' list) removed, Snowball-stemmed
  (``snowballstemmer``).
* **BM25**: the ``bm25s`` library, Lucene variant. It finds exact names and numbers that
  embeddings blur. :class:`LexicalIndex` is the only BM25 wrapper: the turn ranker, fact
  ranking and HiGMem's event candidates all use it.

Example:
    >>> from langchain_recursive_memory.core.retrieval.lexical import LexicalIndex
    >>> index = LexicalIndex(["Ada lives in Oslo", "Bob flies planes", "Ada owns 3 cats"])
    >>> [i for i, _ in index.search("Where does Ada live?", 2)]
    [0, 2]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["BM25_B", "BM25_K1", "LexicalIndex", "tokenize", "word_stems"]

BM25_K1 = 1.2
"""BM25 term-frequency saturation (the Lucene default)."""
BM25_B = 0.75
"""BM25 length normalisation of plain indexes (the Lucene default; turns use 0.3)."""
STEM_CACHE = 200_000
"""Distinct words whose stems are memoised."""

_WORD_RE = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=STEM_CACHE)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def word_stems(text: str) -> list[tuple[str, str]]:
    """Each token of ``text`` with its surface word: ``[(stem, word), ...]``.

    Example:
        >>> word_stems("Painting cats")
        [('paint', 'painting'), ('cat', 'cats')]
    """
    stop = _stopwords()
    return [(_stem(w), w) for w in _WORD_RE.findall(text.lower()) if w not in stop]


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens, English stopwords removed, Snowball-stemmed.

    Example:
        >>> tokenize("Ada's cats were running to the 3 parks!")
        ['ada', 'cat', 'run', '3', 'park']
    """
    return [stem for stem, _ in word_stems(text)]


@lru_cache(maxsize=1)
def _bm25s() -> Any:
    """The bm25s module; its logger level is left to the application's logging.

    bm25s sets its own logger to DEBUG at import, so its ``Building index from tokens``
    lines would reach an application that configured WARNING.
    """
    import bm25s

    log = logging.getLogger("bm25s")
    if log.level == logging.DEBUG:
        log.setLevel(logging.NOTSET)
    return bm25s


class LexicalIndex:
    """A BM25 index over a fixed list of texts (rebuild it when the texts change).

    Args:
        texts: The documents, in the order results refer to.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    def __init__(self, texts: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        bm25s = _bm25s()
        self.size = len(texts)
        tokens = [tokenize(t) for t in texts]
        self._bm25: Any = None
        if any(tokens):
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._bm25.index(tokens, show_progress=False)

    def term_scores(self, terms: Sequence[str]) -> np.ndarray:
        """Return the BM25 score of every document for tokenized ``terms`` (float32)."""
        if self._bm25 is None or not terms:
            return np.zeros(self.size, np.float32)
        known = [t for t in terms if t in self._bm25.vocab_dict]
        if not known:
            return np.zeros(self.size, np.float32)
        return np.asarray(self._bm25.get_scores(known), np.float32)

    def scores(self, query: str) -> np.ndarray:
        """Return the BM25 score of every document for ``query`` (float32)."""
        return self.term_scores(tokenize(query))

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Return up to ``n`` ``(position, score)`` pairs with a positive score, best first."""
        scored = [(i, float(s)) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:n]
