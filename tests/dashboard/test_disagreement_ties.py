"""The drill-down's metric-human disagreement (pagedata.responses.disagreement) ranks values equal up to float noise
as one tie (issue 61, D17): 3 x (17/18) averaged and 2 x (17/18) averaged are the same value. Expected percentile
ranks from scipy on the exact values."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.pagedata.responses import disagreement

X = 17 / 18


def test_values_tied_up_to_float_noise_disagree_as_a_tie():
    three, two = np.mean([X] * 3), np.mean([X] * 2)
    assert three != two
    frame = pd.DataFrame({"F1": [three, two, 0.5, np.nan], "Info": [2.0, 2.0, 1.0, 2.0]}, index=[10, 11, 12, 13])
    exact = [Fraction(17, 18), Fraction(17, 18), Fraction(1, 2)]
    metric = stats.rankdata([float(e) for e in exact]) / 3
    human = stats.rankdata([2.0, 2.0, 1.0]) / 3
    gap = disagreement(frame, "F1", "Info")
    assert gap.loc[[10, 11, 12]].tolist() == pytest.approx(list(np.abs(metric - human))) == [0.0, 0.0, 0.0]
    assert np.isnan(gap.loc[13])   # no metric value: no disagreement
