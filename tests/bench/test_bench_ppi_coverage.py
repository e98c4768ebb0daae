"""bench/ppi_coverage.py: its draws, computed all at once, are ppi.finite_mean's intervals draw by draw (uniform, and
active with the tasks' own inclusion probabilities), withheld exactly where finite_mean gives none (no spread); its
quick mode runs on USR-TopicalChat and writes its
tables; an absent dataset is skipped with the reason (the figures are the benchmark's, in docs/guide/ppi-coverage.md)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bench import ppi_coverage as bench
from evalcore.analysis import inclusion, ppi
from support import ROOT, shared


def _same_as_finite_mean(mask, y, f, pi, tuned):
    got = bench.finite_means(mask, y, f, pi, tuned=tuned)
    for d in range(len(mask)):
        at = np.flatnonzero(mask[d])
        e = ppi.finite_mean(y[at], f[at], f, pi=pi[at], lam=None if tuned else 0.0)
        assert got["withheld"][d] == ("no spread" in e.reason), (d, e.reason)
        assert got["too_few"][d] == (e.n < 2)
        if e.reason:
            assert np.isnan(got["estimate"][d]) and np.isnan(got["lower"][d])
            continue
        for k in ("estimate", "lower", "upper", "se", "lam"):
            assert got[k][d] == pytest.approx(getattr(e, k), abs=1e-12), (k, d)
        assert got["n"][d] == e.n


@pytest.mark.parametrize("tuned", [True, False])
def test_every_draw_is_finite_means_interval(tuned):
    rng = np.random.default_rng(3)
    big_m = 50
    y = rng.integers(1, 6, big_m).astype(float)
    f = np.clip(0.1 * y + rng.normal(0, 0.2, big_m), 0, 1)
    for n in (3, 4, 12, 30):
        _same_as_finite_mean(bench.uniform_masks(rng, big_m, n, 25), y, f, np.full(big_m, n / big_m), tuned)
        pi = inclusion.probabilities(inclusion.boundary(f, 0.0, 1.0), n)
        _same_as_finite_mean(bench.poisson_masks(rng, pi, 25), y, f, pi, tuned)   # some draws with < 2 units
    constant = np.full(big_m, 0.3)                                                 # a predictor that says nothing
    _same_as_finite_mean(bench.uniform_masks(rng, big_m, 10, 10), y, constant, np.full(big_m, 0.2), tuned)


@pytest.mark.parametrize("tuned", [True, False])
def test_samples_without_spread_are_withheld_as_finite_mean_withholds_them(tuned):
    rng = np.random.default_rng(5)
    big_m = 60
    f = rng.random(big_m)
    nearly_one = np.ones(big_m)
    nearly_one[[7, 40]] = 0.0             # 0 or 1 and nearly always 1, as USR's Understandable
    for n in (10, 20):
        mask = bench.uniform_masks(rng, big_m, n, 200)
        got = bench.finite_means(mask, nearly_one, f, np.full(big_m, n / big_m), tuned=tuned)
        assert 0 < got["withheld"].sum() < 200   # C(58, n) / C(60, n) of the draws miss both zeros
        _same_as_finite_mean(mask, nearly_one, f, np.full(big_m, n / big_m), tuned)
        pi = inclusion.probabilities(inclusion.boundary(f, 0.0, 1.0), n)
        _same_as_finite_mean(bench.poisson_masks(rng, pi, 200), nearly_one, f, pi, tuned)
    # every rating 0.6 at pi = 1/3: whether finite_mean's terms sum to exactly 0 depends on how its weighted mean
    # rounds; the arrays follow finite_mean whichever way it goes
    for value in (0.6, 1.2, 3.0, 2 / 3):
        _same_as_finite_mean(bench.uniform_masks(rng, big_m, 20, 20), np.full(big_m, value), f,
                             np.full(big_m, 1 / 3), tuned)


@pytest.mark.parametrize("tuned", [True, False])
def test_a_rater_as_predictor_is_finite_means_interval_draw_by_draw(tuned):
    # a held-out rater's scores are few values (0 or 1 here), the others' mean often a step of it: samples where f
    # is flat, where y = lam f + constant (residuals alike), and active draws where f varies only on units with pi = 1
    rng = np.random.default_rng(11)
    big_m = 60
    f = (rng.random(big_m) < 0.8).astype(float)
    y = np.where(rng.random(big_m) < 0.85, f, 1 - f) * 0.5 + (rng.random(big_m) < 0.9) * 0.5
    for n in (5, 15, 20, 40):
        _same_as_finite_mean(bench.uniform_masks(rng, big_m, n, 100), y, f, np.full(big_m, n / big_m), tuned)
        scale = np.linspace(0, 1, 5)[rng.integers(0, 5, big_m)]          # a 1-5 rater over its scale
        pi = inclusion.probabilities(inclusion.boundary(scale, 0.0, 1.0), n)
        _same_as_finite_mean(bench.poisson_masks(rng, pi, 100), y, scale, pi, tuned)


def _ratings(dataset, track, model, dimension, table):
    """Rows as bench.load gives them, from {unit: {annotator: score}} (f: a metric's value, the same for all)."""
    return [{"level": "turn", "unit": unit, "model": model, "annotator": a, "dimension": dimension, "score": s,
             "f": 0.5, "lo": 1.0, "hi": 5.0, "dataset": dataset, "track": track, "predictor": "ROUGE"}
            for unit, scores in table.items() for a, s in scores.items()]


def test_the_held_out_rater_is_the_predictor_and_never_part_of_people_or_truth(monkeypatch):
    monkeypatch.setattr(bench, "MIN_UNITS", 2)
    rows = pd.DataFrame(
        _ratings("usr", "usr/tc", "m", "Overall", {
            "u1": {"a1": 5.0, "a2": 2.0, "a3": 3.0},
            "u2": {"a1": 1.0, "a2": 4.0, "a3": 4.0},
            "u3": {"a1": 5.0, "a2": 1.0},                  # a3 gave no score: y is a2's alone
            "u4": {"a2": 3.0, "a3": 5.0},                  # a1 gave none: no f, left out
            "u5": {"a1": 2.0}})                            # only a1: no people left, left out
        + _ratings("msde", "luge/persona", "m", "Coh", {"v1": {"a1": 2.0}, "v2": {"a1": 0.0}}))  # one rater each
    out, notes = bench.held_out(rows)
    assert set(out.columns) == set(rows.columns) and (out["predictor"] == bench.HELD_OUT).all()
    assert "a1" not in set(out["annotator"]) and set(out["dataset"]) == {"usr"}   # MSDE: nothing to hold out
    assert notes == {"usr": f"{bench.HELD_OUT}: 2 of 5 rated (response, dimension) pairs left out (a1 gave no "
                            "score, or no one else did)"}
    groups, constant = bench.groups_of(out)
    assert constant == [] and len(groups) == 1
    g = groups[0]
    # (f, y, raters left): u1 f 5, y (2 + 3) / 2 = 2.5 from 2; u2 f 1, y (4 + 4) / 2 = 4 from 2; u3 f 5, y 1 from 1;
    # the truth (2.5 + 4 + 1) / 3 = 2.5 (with a1 among the people it would be (10/3 + 3 + 3) / 3 = 3.11)
    assert g["M"] == 3 and sorted(zip(g["f"], g["y"], g["raters"])) == [(1.0, 4.0, 2), (5.0, 1.0, 1), (5.0, 2.5, 2)]
    assert g["truth"] == pytest.approx(7.5 / 3) and g["scale"] == (1.0, 5.0)
    assert "a1" not in set(g["ratings"]["annotator"])


def test_every_unit_rated_is_no_sample_and_keeps_its_interval():
    # pi = 1 everywhere: the people's value is known, not estimated; finite_mean gives it with width 0, not withheld
    y = np.array([1.0, 1.0, 1.0, 1.0])
    got = bench.finite_means(np.ones((1, 4), bool), y, np.linspace(0, 1, 4), np.ones(4), tuned=False)
    assert not got["withheld"][0] and got["lower"][0] == got["upper"][0] == 1.0


def test_quick_mode_on_usr_writes_its_tables(tmp_path):
    data = shared("usr", "tc_usr_data.json").parent.parent
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "ppi_coverage.py"), "--quick", "--shared", str(data),
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["draws"] == 100 and summary["datasets"] == ["usr"]
    assert summary["max_abs_diff_vs_finite_mean"] <= 1e-9 and summary["max_abs_diff_vs_difference"] <= 1e-9
    every = pd.read_csv(tmp_path / "coverage_cells.csv")
    # and as many with one rater held out (the same groups: with a1 out none is rated all alike)
    rater = every[every["predictor"] == bench.HELD_OUT]
    assert len(rater) == 36 * 3 * 2 and summary["held_out_rater"]["groups"] == 36
    assert rater["r_pearson"].mean() > 0.3 and rater[["ppi_cover", "people_cover"]].stack().between(0, 1).all()
    cells = every[every["predictor"] != bench.HELD_OUT]
    # usr/tc: 6 models x 6 dimensions, none rated all alike; M = 60 gives budgets 20, 40 and a quarter (15)
    assert len(cells) == 36 * 3 * 2 and set(cells["n"]) == {15, 20, 40} and set(cells["M"]) == {60}
    assert cells[["ppi_cover", "people_cover"]].stack().between(0, 1).all()
    # a draw is given an interval or withheld (no spread); usr/tc has no response with fewer than 2 units drawn
    assert (cells["ppi_draws"] + (100 * cells["ppi_withheld"]).round() == 100).all()
    assert cells["ppi_withheld"].between(0, 1).all() and (cells["ppi_too_few"] == 0).all()
    power = pd.read_csv(tmp_path / "power.csv")
    assert len(power) == 15 * 6 * 3 and power[["predicted", "realised", "withheld"]].stack().between(0, 1).all()
    for heading in ("### Coverage", "### Where coverage leaves the band", "### Width and gain",
                    "### Planner's predicted power", "### A predictor that tracks people: one rater held out"):
        assert heading in done.stdout


def test_an_absent_dataset_is_skipped_with_its_reason(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "ppi_coverage.py"), "--quick", "--shared",
                           str(tmp_path / "nothing")], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1
    assert "skipped usr: absent: " in done.stderr and "tc_usr_data.json" in done.stderr
