"""Dense windows lift neighbours only in a dialogue when radius 0 is among the radii (issue 30).

Outside a dialogue (a user's short turns, an assistant's long answers) a turn's dense part
is its own similarity (radius 0); in a dialogue it is the mean of its windows' similarities,
as without radius 0. Without radius 0 the dense part is the windows' everywhere.

Another dense weight outside a dialogue (``RankerParams.w_dense_outside``):
``w_dense`` mixes the dense part into a turn's score in a dialogue segment;
``w_dense_outside`` does outside one (0.3 by default; None: ``w_dense`` everywhere). A
pool that is all dialogue (LoCoMo) ranks exactly as without it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from langchain_recursive_memory.core.retrieval.ranking import RankedTurn, RankerParams, TurnRanker

LONG = " ".join(["The assistant explains the options at great length."] * 12)


def _turns(event: str, long_answers: bool) -> list[RankedTurn]:
    out = []
    for i in range(4):
        out.append(RankedTurn(f"{event}u{i}", "user", f"Short note number {i} on tea.", event))
        answer = LONG if long_answers else f"A short reply number {i} on coffee."
        out.append(RankedTurn(f"{event}a{i}", "assistant", answer, event))
    return out


def _dense(n: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(0)
    return {r: rng.random(n).astype(np.float32) for r in (0, 1, 2)}


def _params(radii: tuple[int, ...]) -> RankerParams:
    # no lexical signal, no segment mixing, one dense weight: the score is the dense part
    return RankerParams(
        dense_radii=radii, w_dense=1.0, w_dense_outside=None, w_segment=0.0, w_date=0.0
    )


def _minmax(x: np.ndarray) -> np.ndarray:
    return (x - x.min()) / (x.max() - x.min())


def test_outside_a_dialogue_the_turn_alone_counts() -> None:
    turns = _turns("s1", long_answers=True)
    ranker = TurnRanker(turns, _params((0, 1, 2)))
    assert not ranker.dialogue().any()
    dense = _dense(len(turns))
    scores = ranker.scores("zzz", dense)
    assert np.allclose(scores, _minmax(dense[0]), atol=1e-6)


def test_in_a_dialogue_the_windows_count() -> None:
    turns = _turns("s1", long_answers=False)
    ranker = TurnRanker(turns, _params((0, 1, 2)))
    assert ranker.dialogue().all()
    dense = _dense(len(turns))
    scores = ranker.scores("zzz", dense)
    assert np.allclose(scores, (_minmax(dense[1]) + _minmax(dense[2])) / 2, atol=1e-6)


def test_both_kinds_in_one_pool() -> None:
    turns = _turns("s1", long_answers=True) + _turns("s2", long_answers=False)
    ranker = TurnRanker(turns, _params((0, 1, 2)))
    dialogue = ranker.dialogue()
    assert dialogue.tolist() == [False] * 8 + [True] * 8
    dense = _dense(len(turns))
    windows = (_minmax(dense[1]) + _minmax(dense[2])) / 2
    expected = np.where(dialogue, windows, _minmax(dense[0]))
    assert np.allclose(ranker.scores("zzz", dense), expected, atol=1e-6)


def test_without_radius_zero_windows_count_everywhere() -> None:
    turns = _turns("s1", long_answers=True)
    ranker = TurnRanker(turns, _params((1, 2)))
    dense = _dense(len(turns))
    expected = (_minmax(dense[1]) + _minmax(dense[2])) / 2
    assert np.allclose(ranker.scores("zzz", dense), expected, atol=1e-6)
    assert RankerParams().dense_radii == (0, 1, 2)  # the default since issue 30 item 4


def test_the_defaults() -> None:
    params = RankerParams()
    assert (params.dense_radii, params.w_dense, params.w_dense_outside) == ((0, 1, 2), 0.6, 0.3)
    assert dataclasses.fields(RankerParams)[-1].name == "w_dense_outside"


def test_none_is_w_dense_everywhere() -> None:
    turns = _turns("s1", long_answers=True) + _turns("s2", long_answers=False)
    dense = _dense(len(turns))
    base = RankerParams(w_dense_outside=None)
    same = dataclasses.replace(base, w_dense_outside=base.w_dense)
    for question in ("zzz", "tea", "coffee"):
        expected = TurnRanker(turns, base).scores(question, dense)
        assert np.allclose(TurnRanker(turns, same).scores(question, dense), expected)


def test_the_weight_outside_a_dialogue_only() -> None:
    turns = _turns("s1", long_answers=True) + _turns("s2", long_answers=False)
    # no lexical signal ("zzz"), no segment mixing: the score is w * the dense part
    params = RankerParams(
        dense_radii=(0, 1, 2), w_dense=1.0, w_dense_outside=0.25, w_segment=0.0, w_date=0.0
    )
    ranker = TurnRanker(turns, params)
    dialogue = ranker.dialogue()
    assert dialogue.tolist() == [False] * 8 + [True] * 8
    dense = _dense(len(turns))
    windows = (_minmax(dense[1]) + _minmax(dense[2])) / 2
    expected = np.where(dialogue, windows, 0.25 * _minmax(dense[0]))
    assert np.allclose(ranker.scores("zzz", dense), expected, atol=1e-6)


def test_a_pool_all_dialogue_does_not_move() -> None:
    turns = _turns("s1", long_answers=False) + _turns("s2", long_answers=False)
    dense = _dense(len(turns))
    base = RankerParams(w_dense_outside=None)
    ranker = TurnRanker(turns, dataclasses.replace(base, w_dense_outside=0.0))
    assert ranker.dialogue().all()
    for question in ("zzz", "tea", "coffee"):
        expected = TurnRanker(turns, base).scores(question, dense)
        assert np.array_equal(ranker.scores(question, dense), expected)
