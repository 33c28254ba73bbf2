r"""Lexical analysis and the one BM25 index of the package. Pure logic.

* **Tokens**, in every script (Unicode NFKC, lowercased):

  - words (``\w+``, combining marks included) are stemmed and stopword-filtered in the
    language of their text, detected per text (:func:`text_language`), then folded
    (:func:`fold`: ``Zürich`` and ``Zurich`` are one token). English is read exactly as
    before: bm25s' English stopwords, the Snowball English stemmer;
  - scripts written without spaces (Han, kana, Hangul) become overlapping character
    bigrams (a one-character run stays a unigram), as Lucene's CJK analyzer does: no
    dictionary to ship, and ``東京`` finds ``東京に住んでいます``. A number written just before
    one of these characters is kept with it too (``3月``, ``14일``);
  - digits of any script are ASCII digits (``١٤`` is ``14``);
  - each emoji is a token, without skin tone or variation selector (``👍🏽`` is ``👍``).
* **BM25**, Lucene variant (the scores ``bm25s`` computes): it finds exact names and
  numbers that embeddings blur. :class:`LexicalIndex` is the package's one BM25 index: the
  turn ranker, fact ranking and HiGMem's event candidates all use it. It grows and shrinks
  at its end, so a session's index follows new turns at the cost of the turns changed.
  A question is read in each language that the index's texts were read in
  (:meth:`LexicalIndex.query_terms`), so a short question, whose language cannot be
  told, still meets each text's stems.

Example:
    >>> from langchain_recursive_memory.core.retrieval.lexical import LexicalIndex
    >>> index = LexicalIndex(["Ada lives in Oslo", "Bob flies planes", "Ada owns 3 cats"])
    >>> [i for i, _ in index.search("Where does Ada live?", 2)]
    [0, 2]
    >>> tokenize("Zürich 東京 🍣")
    ['zurich', '東京', '🍣']
"""

from __future__ import annotations

import logging
import math
import string
import threading
import unicodedata
from array import array
from collections import Counter
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np
import regex  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "BM25_B",
    "BM25_K1",
    "ENGLISH",
    "MIN_DETECTION_LETTERS",
    "LexicalIndex",
    "PooledIndex",
    "bm25_part",
    "fold",
    "idf_of",
    "pooled_languages",
    "pooled_term_scores",
    "query_terms",
    "text_language",
    "tokenize",
    "word_stems",
]

BM25_K1 = 1.2
"""BM25 term-frequency saturation (the Lucene default)."""
BM25_B = 0.75
"""BM25 length normalisation of plain indexes (the Lucene default; turns use 0.9)."""
POSTING_BYTES = 24
"""About what a (document, term) entry costs (its ids, frequency and the document's tuple)."""
VOCAB_ENTRY_BYTES = 200
"""About what a term of an index's vocabulary costs (its string, dict entry and arrays)."""
DOC_ENTRY_BYTES = 120
"""About what a document of an index costs beside its postings (length, terms tuple)."""
STEM_CACHE = 200_000
"""Distinct words whose stems are memoised."""
ENGLISH = "en"
"""The language of a text whose language cannot be told."""
MIN_DETECTION_LETTERS = 20
"""Fewest letters of a text whose detected language is trusted (else: its script decides).

Chosen on the LoCoMo dev split: the shortest length at which CLD2 calls no dev turn or
question anything but English (``"Go get 'em, Jon!"``, 12 letters, is "reliably"
Portuguese), while a short sentence in German or French (five words) is long enough.
"""

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Bopomofo}ー々〆"
_TOKEN_RE = regex.compile(
    rf"(?P<cjk>[{_CJK}]+)"
    r"|(?P<emoji>\p{Regional_Indicator}{2}|\p{Extended_Pictographic})"
    rf"|(?P<word>[\w--[{_CJK}\p{{Variation_Selector}}\u200c\u200d]]+)",
    regex.V1,
)
_ASCII_WORD_RE = regex.compile(r"\w+")  # on ASCII text: [A-Za-z0-9_]+, as ever
_NON_LETTERS = regex.compile(r"\P{L}+")
_ASCII_LETTERS = string.ascii_letters.encode()
# Latin letters that no accent stripping reaches (``ß`` is lowercased text's ``ss``).
_LATIN_LETTERS = str.maketrans(
    {"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ł": "l", "Ł": "L"}
    | {"đ": "d", "Đ": "D", "ð": "d", "þ": "th", "ß": "ss", "\u0131": "i"}
)
# The language of a text too short to detect, by the script most of its letters are in.
_SCRIPT_LANGUAGES = {
    "ARABIC": "ar",
    "ARMENIAN": "hy",
    "CYRILLIC": "ru",
    "DEVANAGARI": "hi",
    "GREEK": "el",
    "TAMIL": "ta",
}
# Snowball stemmers by ISO 639-1 code (``snowballstemmer.algorithms()``).
_STEMMERS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
# bm25s' stopword lists by ISO 639-1 code (its Chinese and Korean lists are of words,
# which character bigrams never are).
_STOPWORDS = {
    "en": "STOPWORDS_EN_PLUS", "da": "STOPWORDS_DANISH", "nl": "STOPWORDS_DUTCH",
    "fr": "STOPWORDS_FRENCH", "de": "STOPWORDS_GERMAN", "it": "STOPWORDS_ITALIAN",
    "no": "STOPWORDS_NORWEGIAN", "nb": "STOPWORDS_NORWEGIAN", "pt": "STOPWORDS_PORTUGUESE",
    "ru": "STOPWORDS_RUSSIAN", "es": "STOPWORDS_SPANISH", "sv": "STOPWORDS_SWEDISH",
    "tr": "STOPWORDS_TURKISH",
}  # fmt: skip


def fold(token: str) -> str:
    """``token`` without the accents of its Latin letters (``ø``, ``æ``, ``ł``... too).

    Marks on other scripts stay: they tell letters apart (kana voicing, Cyrillic ``й``).

    Example:
        >>> fold("Zürich"), fold("crème brûlée"), fold("東京が")
        ('Zurich', 'creme brulee', '東京が')
    """
    if token.isascii():
        return token
    kept: list[str] = []
    latin = False
    for ch in unicodedata.normalize("NFD", token.translate(_LATIN_LETTERS)):
        if unicodedata.combining(ch):
            if latin:
                continue
        else:
            latin = ch.isascii() or unicodedata.name(ch, "").startswith("LATIN")
        kept.append(ch)
    return unicodedata.normalize("NFC", "".join(kept))


@lru_cache(maxsize=1)
def _cld2() -> Any:
    import pycld2  # type: ignore[import-untyped,import-not-found,unused-ignore]

    return pycld2


def _detected(text: str) -> str | None:
    """CLD2's language of ``text`` when it is reliable, else None."""
    try:
        reliable, _, found = _cld2().detect(text)
    except Exception:  # invalid UTF-8 (lone surrogates): undetectable
        return None
    code = str(found[0][1]).lower()
    return code if reliable and code not in ("un", "xxx") else None


def text_language(text: str) -> str:
    """The ISO 639-1 code of the language ``text`` is read in (``"en"`` when unsure).

    CLD2 (``pycld2``) detects it when the text has :data:`MIN_DETECTION_LETTERS` letters
    or more and calls its answer reliable; otherwise the script of most of its letters
    decides (Arabic, Cyrillic...: that script's Snowball language), and Latin script
    (and the scripts with no stemmer) are read as English.

    Example:
        >>> text_language("Ich wohne seit drei Jahren in Zürich."), text_language("Zürich")
        ('de', 'en')
    """
    if text.isascii():  # letters counted by bytes.translate: a regex was 1/3 of indexing
        raw = text.encode()
        if len(raw) - len(raw.translate(None, _ASCII_LETTERS)) >= MIN_DETECTION_LETTERS:
            return _detected(text) or ENGLISH
        return ENGLISH
    letters = _NON_LETTERS.sub("", text)
    if len(letters) >= MIN_DETECTION_LETTERS:
        detected = _detected(text)
        if detected is not None:
            return detected
    if not letters:
        return ENGLISH
    scripts = Counter(unicodedata.name(c, "").split(" ", 1)[0] for c in letters)
    return _SCRIPT_LANGUAGES.get(scripts.most_common(1)[0][0], ENGLISH)


@cache
def _stopwords(language: str) -> frozenset[str]:
    name = _STOPWORDS.get(language)
    if name is None:
        return frozenset()
    from bm25s import stopwords

    # bm25s sets its own logger to DEBUG at import; leave its level to the application.
    log = logging.getLogger("bm25s")
    if log.level == logging.DEBUG:
        log.setLevel(logging.NOTSET)
    return frozenset(getattr(stopwords, name))


@cache
def _stemmer_name(language: str) -> str | None:
    import snowballstemmer

    name = _STEMMERS.get(language)
    return name if name is not None and name in snowballstemmer.algorithms() else None


_stemmers = threading.local()


def _stemmer(language: str) -> Any:
    """This thread's Snowball stemmer for ``language`` (None: no stemmer for it).

    A Snowball stemmer keeps the word it works on in the object, so one shared by threads
    raises ``IndexError`` or returns another thread's stem: each thread gets its own.
    """
    name = _stemmer_name(language)
    if name is None:
        return None
    held: dict[str, Any] | None = getattr(_stemmers, "by_name", None)
    if held is None:
        held = _stemmers.by_name = {}
    stemmer = held.get(name)
    if stemmer is None:
        import snowballstemmer

        stemmer = held[name] = snowballstemmer.stemmer(name)
    return stemmer


@lru_cache(maxsize=STEM_CACHE)
def _stem(language: str, word: str) -> str:
    stemmer = _stemmer(language)
    stem = str(stemmer.stemWord(word)) if stemmer is not None else word
    return fold(stem)


def _ascii_digits(word: str) -> str:
    if word.isascii():
        return word
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in word)


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def word_stems(text: str, language: str | None = None) -> list[tuple[str, str]]:
    """Each token of ``text`` with its surface word: ``[(stem, word), ...]``.

    Args:
        text: Any text.
        language: The language to read it in (default: :func:`text_language`).

    Example:
        >>> word_stems("Painting cats")
        [('paint', 'painting'), ('cat', 'cats')]
    """
    if text.isascii():  # no other script, no emoji: words only (the common case, fast)
        norm = text.lower()
        lang = language or text_language(norm)
        stop = _stopwords(lang)
        return [(_stem(lang, w), w) for w in _ASCII_WORD_RE.findall(norm) if w not in stop]
    norm = unicodedata.normalize("NFKC", text).lower()
    lang = language or text_language(norm)
    stop = _stopwords(lang)
    out: list[tuple[str, str]] = []
    number, number_end = "", -1
    for m in _TOKEN_RE.finditer(norm):
        kind, token = m.lastgroup, m.group()
        if kind == "word":
            token = _ascii_digits(token)
            if token not in stop:
                out.append((_stem(lang, token), token))
            number, number_end = (token, m.end()) if token.isdigit() else ("", -1)
            continue
        if kind == "cjk":
            if number and number_end == m.start():
                out.append((number + token[0], number + token[0]))
            out += [(gram, gram) for gram in _bigrams(token)]
        else:
            out.append((token, token))
        number, number_end = "", -1
    return out


def tokenize(text: str, language: str | None = None) -> list[str]:
    """The tokens of ``text`` (see the module doc), read in ``language`` or its own.

    Example:
        >>> tokenize("Ada's cats were running to the 3 parks!")
        ['ada', 'cat', 'run', '3', 'park']
        >>> tokenize("3月14日")
        ['3', '3月', '月', '14', '14日', '日']
    """
    return [stem for stem, _ in word_stems(text, language)]


class LexicalIndex:
    """A BM25 index (Lucene variant) that grows and shrinks at its end.

    Documents are appended (:meth:`extend`) and dropped from the end (:meth:`truncate`),
    so a session's index follows its turns without being rebuilt: the cost of a change is
    the cost of the documents changed, not of the whole index. Statistics (document
    frequencies, lengths) are kept as counts, so scores always use the current ``N`` and
    average length; they equal those of a ``bm25s`` index built from the same documents
    (``bm25s`` indexes cannot change: rebuilding one per change made reads grow with the
    session). Several indexes can be scored as one (:func:`pooled_term_scores`).

    Not thread-safe: callers serialise changes and reads (the session index holds a lock).

    Args:
        texts: The first documents, in the order results refer to.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.

    Attributes:
        k1: As given.
        b: As given.
    """

    def __init__(
        self, texts: Sequence[str] = (), *, k1: float = BM25_K1, b: float = BM25_B
    ) -> None:
        self.k1, self.b = k1, b
        self._vocab: dict[str, int] = {}
        self._term_list: list[str] = []  # each term id's term
        self._docs: list[array[int]] = []  # per term: the documents holding it, ascending
        self._tfs: list[array[float]] = []  # per term: its frequency in each of them
        self._doc_terms = array("i")  # the terms of each document, document after document
        self._doc_starts = array("i", [0])  # where each document's terms start in it
        self._lengths = array("f")
        self._total = 0
        self._doc_language = array("i")  # per document: its language's number
        self._language_names: dict[str, int] = {}
        self._language_counts: Counter[str] = Counter()
        self.extend(texts)

    @property
    def size(self) -> int:
        """Documents in the index."""
        return len(self._lengths)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the texts were read in (most texts first); English when empty."""
        counts = self._language_counts
        found = sorted((la for la in counts if counts[la] > 0), key=lambda la: (-counts[la], la))
        return tuple(found) or (ENGLISH,)

    def extend(self, texts: Sequence[str]) -> None:
        """Append documents."""
        vocab, docs, tfs, doc_terms = self._vocab, self._docs, self._tfs, self._doc_terms
        for text in texts:
            language = text_language(unicodedata.normalize("NFKC", text).lower())
            tokens = tokenize(text, language)
            doc = len(self._lengths)
            for token, tf in Counter(tokens).items():
                tid = vocab.get(token)
                if tid is None:
                    tid = vocab[token] = len(docs)
                    self._term_list.append(token)
                    docs.append(array("i"))
                    tfs.append(array("f"))
                docs[tid].append(doc)
                tfs[tid].append(tf)
                doc_terms.append(tid)
            self._doc_starts.append(len(doc_terms))
            self._lengths.append(len(tokens))
            self._total += len(tokens)
            number = self._language_names.setdefault(language, len(self._language_names))
            self._doc_language.append(number)
            self._language_counts[language] += 1

    def truncate(self, size: int) -> None:
        """Drop the documents from position ``size`` on."""
        size = max(size, 0)
        if size >= len(self._lengths):
            return
        names = {number: name for name, number in self._language_names.items()}
        for tid in self._doc_terms[self._doc_starts[size] :]:
            self._docs[tid].pop()  # a term's documents ascend: the dropped ones are last
            self._tfs[tid].pop()
        del self._doc_terms[self._doc_starts[size] :]
        del self._doc_starts[size + 1 :]
        self._total -= int(sum(self._lengths[size:]))
        del self._lengths[size:]
        for number in self._doc_language[size:]:
            self._language_counts[names[number]] -= 1
        del self._doc_language[size:]

    def nbytes(self) -> int:
        """About how many bytes the index holds (for cache accounting)."""
        postings = len(self._doc_terms) * POSTING_BYTES
        return postings + len(self._vocab) * VOCAB_ENTRY_BYTES + self.size * DOC_ENTRY_BYTES

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The documents holding ``term`` (ascending) and its frequency in each; None if none.

        Views into the index: use them before the index changes.
        """
        tid = self._vocab.get(term)
        if tid is None or not self._docs[tid]:
            return None
        return (
            np.frombuffer(self._docs[tid], np.int32),
            np.frombuffer(self._tfs[tid], np.float32),
        )

    @property
    def lengths(self) -> np.ndarray:
        """Each document's length in tokens (a view)."""
        return np.frombuffer(self._lengths, np.float32)

    def doc_terms(self, doc: int) -> frozenset[str]:
        """The distinct tokens of a document.

        Example:
            >>> sorted(LexicalIndex(["Ada owns 3 cats", "Bob"]).doc_terms(0))
            ['3', 'ada', 'cat', 'own']
        """
        start, stop = self._doc_starts[doc], self._doc_starts[doc + 1]
        return frozenset(self._term_list[tid] for tid in self._doc_terms[start:stop])

    def df(self, term: str) -> int:
        """How many documents hold ``term``."""
        tid = self._vocab.get(term)
        return len(self._docs[tid]) if tid is not None else 0

    def query_terms(self, query: str) -> list[str]:
        """The tokens of ``query`` read in each of the index's languages (no repeats across).

        Example:
            >>> LexicalIndex(["Meine Katzen schlafen gern im Garten."]).query_terms("Katze")
            ['katz']
        """
        return query_terms(query, self.languages)

    def term_scores(self, terms: Sequence[str]) -> np.ndarray:
        """Return the BM25 score of every document for tokenized ``terms`` (float32)."""
        return pooled_term_scores([self], terms)

    def scores(self, query: str) -> np.ndarray:
        """Return the BM25 score of every document for ``query`` (float32)."""
        return self.term_scores(self.query_terms(query))

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Return up to ``n`` ``(position, score)`` pairs with a positive score, best first."""
        scored = [(i, float(s)) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:n]


def bm25_part(
    tf: np.ndarray, lengths: np.ndarray, idf: float, avgdl: float, *, k1: float, b: float
) -> np.ndarray:
    """One term's BM25 (Lucene) score in documents of the given frequencies and lengths."""
    return np.asarray(idf * tf / (tf + k1 * (1 - b + b * lengths / avgdl)))


def idf_of(df: int, n: int) -> float:
    """BM25's (Lucene) inverse document frequency of a term in ``df`` of ``n`` documents."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def query_terms(query: str, languages: Sequence[str]) -> list[str]:
    """The tokens of ``query`` read in each of ``languages`` (no repeats across languages).

    The first language's tokens come as they are (repeats kept: BM25 counts them), the
    other languages add only tokens not seen yet.
    """
    terms = tokenize(query, languages[0])
    seen = set(terms)
    for language in languages[1:]:
        extra = [t for t in dict.fromkeys(tokenize(query, language)) if t not in seen]
        terms += extra
        seen.update(extra)
    return terms


def pooled_languages(indexes: Sequence[LexicalIndex]) -> tuple[str, ...]:
    """The languages of several indexes' texts together (most texts first)."""
    counts: Counter[str] = Counter()
    for index in indexes:
        counts.update(index._language_counts)
    found = sorted((la for la in counts if counts[la] > 0), key=lambda la: (-counts[la], la))
    return tuple(found) or (ENGLISH,)


class PooledIndex:
    """Several indexes read as one: positions run index after index (they are not copied).

    Document frequencies, ``N`` and the average length are those of all the indexes
    together. A term's postings are gathered once for the whole pool (a few array
    operations per term, however many indexes), and kept for the pool's life: build one
    per question, before the indexes change. The indexes must share ``k1`` and ``b``.

    Example:
        >>> pool = PooledIndex([LexicalIndex(["cats"]), LexicalIndex(["dogs", "cats"])])
        >>> pool.postings("cat")[0].tolist()
        [0, 2]
    """

    def __init__(self, indexes: Sequence[LexicalIndex]) -> None:
        self.indexes = list(indexes)
        sizes = [index.size for index in self.indexes]
        self.starts = np.cumsum([0, *sizes], dtype=np.int64)[:-1]
        self.size = int(sum(sizes))
        self.total = float(sum(index._total for index in self.indexes))
        self._found: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        self._lengths: np.ndarray | None = None

    @property
    def lengths(self) -> np.ndarray:
        """Each pooled document's length in tokens."""
        if self._lengths is None:
            parts = [index.lengths for index in self.indexes]
            self._lengths = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        return self._lengths

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The pooled positions holding ``term`` (ascending) and its frequency in each."""
        if term in self._found:
            return self._found[term]
        docs, tfs, shifts = [], [], []
        for index, start in zip(self.indexes, self.starts, strict=True):
            found = index.postings(term)
            if found is not None:
                docs.append(found[0])
                tfs.append(found[1])
                shifts.append(start)
        pooled: tuple[np.ndarray, np.ndarray] | None = None
        if docs:
            counts = [len(d) for d in docs]
            shift = np.repeat(np.asarray(shifts, np.int64), counts)
            pooled = (np.concatenate(docs) + shift, np.concatenate(tfs))
        self._found[term] = pooled
        return pooled

    def term_scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every pooled document for tokenized ``terms`` (float32)."""
        out = np.zeros(self.size, np.float64)
        if not self.size or not self.total or not terms:
            return out.astype(np.float32)
        avgdl = self.total / self.size
        k1, b = self.indexes[0].k1, self.indexes[0].b
        for term in terms:
            found = self.postings(term)
            if found is None:
                continue
            docs, tf = found
            idf = idf_of(len(docs), self.size)
            out[docs] += bm25_part(tf, self.lengths[docs], idf, avgdl, k1=k1, b=b)
        return out.astype(np.float32)


def pooled_term_scores(indexes: Sequence[LexicalIndex], terms: Sequence[str]) -> np.ndarray:
    """BM25 scores of the documents of several indexes scored as one index (float32).

    See :class:`PooledIndex`; the scores come index after index.
    """
    return PooledIndex(indexes).term_scores(terms)
