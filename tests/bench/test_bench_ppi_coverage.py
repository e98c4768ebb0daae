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
    cells = pd.read_csv(tmp_path / "coverage_cells.csv")
    # usr/tc: 6 models x 6 dimensions, none rated all alike; M = 60 gives budgets 20, 40 and a quarter (15)
    assert len(cells) == 36 * 3 * 2 and set(cells["n"]) == {15, 20, 40} and set(cells["M"]) == {60}
    assert cells[["ppi_cover", "people_cover"]].stack().between(0, 1).all()
    # a draw is given an interval or withheld (no spread); usr/tc has no response with fewer than 2 units drawn
    assert (cells["ppi_draws"] + (100 * cells["ppi_withheld"]).round() == 100).all()
    assert cells["ppi_withheld"].between(0, 1).all() and (cells["ppi_too_few"] == 0).all()
    power = pd.read_csv(tmp_path / "power.csv")
    assert len(power) == 15 * 6 * 3 and power[["predicted", "realised", "withheld"]].stack().between(0, 1).all()
    for heading in ("### Coverage", "### Where coverage leaves the band", "### Width and gain",
                    "### Planner's predicted power"):
        assert heading in done.stdout


def test_an_absent_dataset_is_skipped_with_its_reason(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "ppi_coverage.py"), "--quick", "--shared",
                           str(tmp_path / "nothing")], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1
    assert "skipped usr: absent: " in done.stderr and "tc_usr_data.json" in done.stderr
