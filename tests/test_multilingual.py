"""Lexical recall in every script: folding, CJK, numbers, emoji, stemming by language.

The corpus (``data/multilingual/corpus.json``) has one short conversation per language and
questions whose answering turn is known: the lexical ranking alone must rank it first. The
four examples of issue 15 go through both engines with their default (no embedder). English
must tokenize exactly as before (LoCoMo is English).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import FAST_RETRY

from langchain_recursive_memory.core import HiGMem, HybridMemory, MemoryStore, Turn
from langchain_recursive_memory.core.retrieval import lexical
from langchain_recursive_memory.core.retrieval.lexical import (
    LexicalIndex,
    fold,
    text_language,
    tokenize,
)
from langchain_recursive_memory.core.retrieval.ranking import RankedTurn, TurnRanker

DATA = Path(__file__).parent / "data"
CORPUS = json.loads((DATA / "multilingual" / "corpus.json").read_text(encoding="utf-8"))

CASES = [
    pytest.param(conv, question, answer, id=f"{conv['language']}-{answer}-{question}")
    for conv in CORPUS["conversations"]
    for question, answer in conv["questions"]
]


@pytest.mark.parametrize(("conv", "question", "answer"), CASES)
def test_corpus_question_finds_its_turn(conv, question, answer):
    lines = [f"{who}: {text}" for _, who, text in conv["turns"]]
    ids = [tid for tid, _, _ in conv["turns"]]
    found = LexicalIndex(lines).search(question, 1)
    assert found, "nothing found"
    assert ids[found[0][0]] == answer
    # The turn ranker (turns and their windows, as both engines rank) keeps it in its top 3.
    ranker = TurnRanker([RankedTurn(tid, who, text, "1") for tid, who, text in conv["turns"]])
    assert answer in ranker.top(question, None, 3)


# -- the four examples of the issue, through both engines -------------------------------

EXAMPLES = [
    ("東京", "先週、東京に引っ越しました。"),
    ("3月14日", "3月14日は私の誕生日です。"),
    ("🍣", "Dinner tonight was amazing 🍣"),
    ("Zurich", "I have lived in Zürich for three years."),
]


def weather_filler(i: int) -> list[Turn]:
    return [
        Turn(role="user", name="Ada", text=f"Let's talk about the weather again, round {i}."),
        Turn(role="assistant", name="Bob", text=f"Sure, the weather is fine in round {i}."),
    ]


@pytest.mark.parametrize(("query", "text"), EXAMPLES)
def test_hybrid_recalls_the_archived_turn(store: MemoryStore, query: str, text: str) -> None:
    memory = HybridMemory("s", store=store, retry=FAST_RETRY, max_tokens=400, max_summary_tokens=80)
    memory.add(Turn(role="user", name="Ada", text=text, id="answer"))
    for i in range(30):
        memory.add(weather_filler(i))
    assert "answer" not in {t.id for t in memory.context().window}  # archived
    assert "answer" in [h.id for h in memory.recall(query, k=3, kinds=["turn"])]


@pytest.mark.parametrize(("query", "text"), EXAMPLES)
def test_higmem_retrieves_the_turn(store: MemoryStore, query: str, text: str) -> None:
    memory = HiGMem("s", store=store, retry=FAST_RETRY)
    memory.add(Turn(role="user", name="Ada", text=text, id="answer"))
    for i in range(10):
        memory.add(weather_filler(i))
    assert "answer" in [r.turn.id for r in memory.retrieve(query, k=3)]


# -- the analysis itself ----------------------------------------------------------------


def test_accents_fold_after_stemming():
    assert tokenize("Zürich") == tokenize("Zurich") == ["zurich"]
    assert fold("crêpe") == "crepe"
    assert fold("Ørsted Æble straße") == "Orsted AEble strasse"
    assert fold("東京が") == "東京が"  # kana keep their voicing marks
    assert fold("й") == "й"  # Cyrillic letters are not Latin ones with accents


def test_cjk_runs_become_bigrams_and_numbers_keep_their_units():
    assert tokenize("東京に住む") == ["東京", "京に", "に住", "住む"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("3月14日") == ["3", "3月", "月", "14", "14日", "日"]
    assert tokenize("3월 14일") == ["3", "3월", "월", "14", "14일", "일"]


def test_digits_of_any_script_are_ascii_digits():
    assert "14" in tokenize("١٤ مارس")
    assert "2024" in tokenize("٢٠٢٤")
    assert tokenize("３月") == tokenize("3月")


def test_emoji_are_tokens_without_skin_tones_or_variation_selectors():
    assert tokenize("🍣🍣") == ["🍣", "🍣"]
    assert tokenize("👍🏽") == tokenize("👍")
    assert tokenize("✈️") == tokenize("✈")
    assert tokenize("🇯🇵") == ["🇯🇵"]


def test_language_is_detected_per_text_and_stems_by_language():
    assert text_language("Meine beiden Katzen lieben den Balkon.") == "de"
    assert text_language("J'ai acheté une voiture électrique la semaine dernière.") == "fr"
    assert text_language("أين يعيش أحمد؟") == "ar"  # short, but the script says it
    assert text_language("Hey Mel!") == "en"  # too short to tell: English
    assert tokenize("Katzen", "de") == tokenize("Katze", "de")
    assert "die" not in tokenize("die Katze", "de")  # a German stopword


def test_a_question_is_read_in_every_language_of_its_index():
    index = LexicalIndex(["Meine beiden Katzen lieben den Balkon.", "I like my cats."])
    assert set(index.languages) == {"de", "en"}
    terms = index.query_terms("Katze")
    assert "katz" in terms  # the German stem reaches the German text
    assert [i for i, _ in index.search("Katze", 2)] == [0]


def test_english_index_reads_questions_in_english_only():
    index = LexicalIndex(["Ada lives in Oslo", "Bob flies planes"])
    assert index.languages == ("en",)
    assert index.query_terms("Where does Ada live?") == tokenize("Where does Ada live?", "en")


# -- English stays as it was ------------------------------------------------------------


@lru_cache(maxsize=1)
def _legacy():
    import snowballstemmer
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS), snowballstemmer.stemmer("english")


def legacy_tokenize(text: str) -> list[str]:
    """The tokenizer before issue 15: ``\\w+``, bm25s' English stopwords, Snowball."""
    stop, stemmer = _legacy()
    return [stemmer.stemWord(w) for w in re.findall(r"\w+", text.lower()) if w not in stop]


def english_texts() -> list[str]:
    texts = []
    paths = [DATA / "locomo_tiny.json"]
    dev = Path(__file__).parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
    if dev.exists():
        paths.append(dev)
    for path in paths:
        for sample in json.loads(path.read_text(encoding="utf-8")):
            conv = sample["conversation"]
            for key, value in conv.items():
                if key.startswith("session_") and isinstance(value, list):
                    texts += [str(t.get("text", "")) for t in value]
                    texts += [str(t["blip_caption"]) for t in value if t.get("blip_caption")]
            texts += [str(q["question"]) for q in sample.get("qa", [])]
    return texts


def test_english_tokens_are_unchanged():
    texts = english_texts()
    assert len(texts) > 20
    changed = [t for t in texts if t.isascii() and tokenize(t) != legacy_tokenize(t)]
    assert not changed, changed[:5]
    index = LexicalIndex(texts)
    assert index.languages == ("en",)


def test_stems_are_the_same_from_many_threads():
    """A Snowball stemmer keeps its word in the object: one per thread, never shared.

    Eight threads stem words at once with a tiny switch interval; a shared stemmer raised
    IndexError or returned another thread's stem (the live benchmark's threads did).
    """
    words = [f"{w}{i}ing" for i in range(400) for w in ("paint", "walk", "jump", "organiz")]
    words += ["running", "organizations", "happiness", "generously", "relational"] * 50
    expected = {w: lexical.tokenize(w, "en") for w in set(words)}
    lexical._stem.cache_clear()
    got: list[tuple[str, list[str]]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(offset: int) -> None:
        barrier.wait()
        try:
            got.extend((w, lexical.tokenize(w, "en")) for w in words[offset::8])
        except Exception as exc:
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    assert len(got) == len(words)
    assert [(w, t) for w, t in got if t != expected[w]] == []
