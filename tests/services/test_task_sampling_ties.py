"""A rating task's disagreement sampling (services.tasks.disagreement) ranks each metric's values with values equal up
to float noise as one tie (issue 61, D17): 3 x (17/18) averaged and 2 x (17/18) averaged are the same value, so two
metrics that agree on every response have no spread. Expected percentile ranks from scipy on the exact values."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.services import tasks

X = 17 / 18


def test_metrics_that_agree_up_to_float_noise_have_no_spread(monkeypatch):
    three, two = np.mean([X] * 3), np.mean([X] * 2)
    assert three != two
    values = {"r0": (three, 1.0), "r1": (two, 1.0), "r2": (0.5, 0.0)}   # per response: metric A, metric B
    rows = [{"item_id": item, "model": "m", "metric": name, "value": v[k]}
            for item, v in values.items() for k, name in enumerate(("A", "B"))]
    monkeypatch.setattr(tasks, "response_scores", lambda con, dataset, track: pd.DataFrame(rows))
    units = pd.DataFrame({"track": "toy/chitchat", "item_id": list(values), "model_a": "m", "model_b": None})
    spread = tasks.disagreement(None, "toy", units)
    exact_a = stats.rankdata([float(Fraction(17, 18)), float(Fraction(17, 18)), 0.5]) / 3
    exact_b = stats.rankdata([1.0, 1.0, 0.0]) / 3
    expected = [np.std([a, b], ddof=1) for a, b in zip(exact_a, exact_b)]
    assert spread.tolist() == pytest.approx(expected) == [0.0, 0.0, 0.0]
