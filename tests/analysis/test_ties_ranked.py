"""Ties in pandas ranks (issue 61, D17): model means or response values equal up to float noise share a rank where
pandas ranks them (ties.snapped). The tie is made as the issue made it: 3 x (17/18) averages to 0.9444444444444443
and 2 x (17/18) to 0.9444444444444444. Expected ranks from scipy on the exact values."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis import judge_stability
from evalcore.analysis.ties import snapped

X = 17 / 18
THREE, TWO = np.mean([X] * 3), np.mean([X] * 2)


def test_the_tie_is_made_of_float_noise():
    assert THREE != TWO and THREE == 0.9444444444444443 and TWO == 0.9444444444444444


def test_snapped_keeps_index_columns_and_missing_values():
    frame = pd.DataFrame({"a": [THREE, TWO, 0.5, np.nan], "b": pd.array([1.0, None, 1.0, 2.0], dtype="Float64")},
                         index=list("wxyz"))
    out = snapped(frame)
    assert list(out.index) == list("wxyz") and list(out.columns) == ["a", "b"]
    assert out.loc["w", "a"] == out.loc["x", "a"] and np.isnan(out.loc["z", "a"]) and np.isnan(out.loc["x", "b"])
    assert (out["a"].rank() == pd.Series([2.5, 2.5, 1.0, np.nan], index=list("wxyz"))).sum() == 3
    series = snapped(frame["a"])
    assert series.name == "a" and series["w"] == series["x"]


def _judged(monkeypatch, answers: dict[str, list[float]]) -> None:
    """The judge's values: each model's answers on items i0, i1, ..., the same from both samples."""
    rows = [{"item_id": f"i{k}", "model": m, "judge": "Judge-Coh", "signature": f"Judge-Coh|sample:{s}", "value": v}
            for m, values in answers.items() for k, v in enumerate(values) for s in (1, 2)]
    monkeypatch.setattr(judge_stability, "tracks", lambda con, dataset: [("toy/chitchat", "chitchat")])
    monkeypatch.setattr(judge_stability, "judge_values", lambda con, dataset, track: pd.DataFrame(rows))


def test_a_judge_s_rank_of_two_models_tied_up_to_float_noise(monkeypatch):
    """Model a answers three items, b two, each 17/18: their means tie; c's 1/2 is last."""
    answers = {"a": [X] * 3, "b": [X] * 2, "c": [0.5] * 3}
    _judged(monkeypatch, answers)
    out = judge_stability.uncertainty(None, "toy", across="judges", bootstrap=50, seed=0).set_index("model")
    assert out.loc["a", "mean"] != out.loc["b", "mean"]   # the stored digits kept: the noise is still there
    exact = [-sum(map(Fraction, v)) / len(v) for v in answers.values()]
    expected = stats.rankdata([float(e) for e in exact], method="average")   # a, b, c: 1.5, 1.5, 3
    assert out.loc[list(answers), "rank"].tolist() == pytest.approx(list(expected)) == [1.5, 1.5, 3.0]


def test_a_judge_s_rank_intervals_keep_the_tie_in_every_resample(monkeypatch):
    """Dialogue-level values made as the issue made them (a: 3 x 17/18 averaged, b: 2 x 17/18) on the same six
    items: every resample, with the judge or without, ties a and b."""
    _judged(monkeypatch, {"a": [THREE] * 6, "b": [TWO] * 6, "c": [0.5] * 6})
    out = judge_stability.uncertainty(None, "toy", across="judges", bootstrap=200, seed=0).set_index("model")
    for column in ("rank", "rank_low_items", "rank_high_items", "rank_low", "rank_high"):
        assert out[column].tolist() == [1.5, 1.5, 3.0], column
