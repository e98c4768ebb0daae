"""The simulator audit's numbers against scipy and arithmetic written out here, and its verdicts: on a task where
people and two simulators talked with three systems of different quality on the same scenarios, the simulator that
uses the scenario ranks the systems as people did, and the one that ignores it is found out (it ranks them against
people, and brings up none of the scenario)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from evalcore.analysis.ties import snap
from evalcore.simulation import audit as auditing
from evalcore.simulation.run import simulate
from evalcore.store import connect
from support import copy_default_store
from support.sim_server import SimServer
from support.sim_store import people_talk, setup


@pytest.fixture(scope="module")
def audited(tmp_path_factory, default_store_file):
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("audit") / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        people_talk(con, task)
        assert not simulate(con, task.task_id).failed
        result = auditing.audit(con, task.task_id)
        con.close()
    return task, result


def test_rankings_equal_scipy_on_the_systems_means(audited):
    task, result = audited
    assert result["missing"] is None
    diffs = result["differences"]
    # people rated by quality: good 2, mid 1, bad 0 on every dimension. The scenario-using simulator rates by the
    # share q of on-topic replies: sys-good 3/3 -> 2, sys-mid (on topic in its 1st and 3rd reply) 2/3 -> round(4/3) = 1,
    # sys-bad 0 -> 0; the ignoring one the other way round over its 2 rounds: 2 - round(2q): good 0, mid 2 - 1 = 1, bad 2
    people = {"sys-good": 2.0, "sys-mid": 1.0, "sys-bad": 0.0}
    expected = {"grounded": {"sys-good": 2.0, "sys-mid": 1.0, "sys-bad": 0.0},
                "ignorer": {"sys-good": 0.0, "sys-mid": 1.0, "sys-bad": 2.0}}
    for sim, values in expected.items():
        for d in ("Info", "Coh", "Know"):
            rows = diffs[(diffs["simulator"] == sim) & (diffs["measure"] == d)].set_index("system")
            assert rows["people"].to_dict() == people
            assert rows["simulated"].to_dict() == values
            assert rows["difference"].to_dict() == {s: values[s] - people[s] for s in people}
            systems = sorted(people)
            tau = kendalltau([values[s] for s in systems], [people[s] for s in systems]).statistic
            row = result["rankings"].query("simulator == @sim and measure == @d").iloc[0]
            assert row["kendall tau"] == pytest.approx(tau, abs=1e-12)
    # every scenario alike on both sides: every resample gives the same tau
    assert result["rankings"].set_index(["simulator", "measure"]).loc[("grounded", "Info"), "tau 95% CI"] == (1.0, 1.0)


def test_the_scenario_ignoring_simulator_is_found_out(audited):
    _, result = audited
    good, bad = result["verdicts"]["grounded"], result["verdicts"]["ignorer"]
    assert all("as people did" in v for v in good), good
    assert all("against people" in v for v in bad), bad
    assert "overrates sys-bad: simulated minus people +2.00 [2.00, 2.00]" in bad[0]
    assert "underrates sys-good: simulated minus people -2.00 [-2.00, -2.00]" in bad[0]
    summary = result["summary"].set_index("simulator")
    assert summary.loc["grounded", "ranks as people did on"] == "Info, Coh, Know, goal reached"
    assert summary.loc["ignorer", "ranks against people on"] == "Info, Coh, Know, goal reached"
    behaviour = result["behaviour"].set_index(["simulator", "measure"])
    # people bring up one knowledge value in their first message, the grounded simulator one per round, the ignorer none
    assert behaviour.loc[("ignorer", "scenario brought up"), "simulated"] == 0
    assert behaviour.loc[("grounded", "scenario brought up"), "simulated"] > behaviour.loc[
        ("grounded", "scenario brought up"), "people"] > 0


def test_hedges_g_is_the_arithmetic_written_out():
    a, b = np.array([1.0, 2, 3, 4]), np.array([2.0, 2, 3, 5, 6])
    # means 2.5 and 3.6; variances (n - 1) 5/3 and 13.2/4 = 3.3; pooled sqrt((3 * 5/3 + 4 * 3.3) / 7) = sqrt(2.6)
    d = (2.5 - 3.6) / math.sqrt(2.6)
    assert auditing.hedges_g(a, b) == pytest.approx(d * (1 - 3 / (4 * 9 - 9)), abs=1e-12)
    assert math.isnan(auditing.hedges_g(np.array([1.0]), b))                 # one on a side: no g
    assert math.isnan(auditing.hedges_g(np.full(3, 17 / 18), np.full(4, 17 / 18)))   # no spread at all
    frame = pd.DataFrame({"holder": [auditing.PEOPLE] * 3 + ["s"] * 3})
    measures = pd.DataFrame({m: [2.0] * 6 for m in auditing.BEHAVIOUR})
    table = auditing.compare_behaviour(frame, measures, "s", resamples=10).set_index("measure")
    assert table.loc["rounds", "note"] == "every value equal: no g"   # said, not blank


def _frame(people: dict, simulated: dict) -> pd.DataFrame:
    """Conversations: {system: [value per scenario]} for each side, one conversation per (scenario, system)."""
    rows = []
    for holder, side in ((auditing.PEOPLE, people), ("s", simulated)):
        for system, values in side.items():
            rows += [{"holder": holder, "endpoint": system, "scenario": i, "Info": v, "goal": np.nan}
                     for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def test_rankings_with_noise_equal_scipy_and_the_interval_holds_zero_when_it_should():
    people = {"A": [2, 1, 2, 0, 1, 2], "B": [1, 1, 2, 1, 0, 1], "C": [0, 1, 1, 0, 1, 0], "D": [2, 2, 1, 1, 2, 2]}
    sim = {"A": [1, 2, 2, 1, 1, 1], "B": [2, 2, 1, 2, 1, 2], "C": [0, 1, 0, 1, 0, 0], "D": [1, 2, 2, 1, 1, 2]}
    r = auditing.rankings(_frame(people, sim), "s", "Info")
    systems = sorted(people)
    means_p = [sum(people[s]) / 6 for s in systems]
    means_s = [sum(sim[s]) / 6 for s in systems]
    assert r["tau"] == pytest.approx(kendalltau(means_s, means_p).statistic, abs=1e-12)
    assert r["difference"]["B"] == pytest.approx(10 / 6 - 6 / 6)
    lo, hi = r["tau_ci"]
    assert -1 <= lo <= hi <= 1
    assert r == auditing.rankings(_frame(people, sim), "s", "Info")   # seeded: the same intervals again
    text = auditing.verdict(r)
    assert text.startswith("Info: ") and ("cannot tell" in text) == (lo <= 0 <= hi)
    if lo <= 0 <= hi:   # never the plain claim
        assert not text.startswith("Info: ranks")


def test_ties_made_by_averaging_tie():
    # 3 x (17/18) and 2 x (17/18) averaged differ in the last bit; the systems are still tied for Kendall's tau-b
    people = {"A": [17 / 18] * 3, "B": [17 / 18] * 2 + [np.nan], "C": [0.0] * 3}
    sim = {"A": [1.0] * 3, "B": [0.5] * 3, "C": [0.0] * 3}
    frame = _frame(people, sim).dropna(subset=["Info"])
    r = auditing.rankings(frame, "s", "Info")
    assert r["tau"] == pytest.approx(kendalltau([1.0, 0.5, 0.0], [17 / 18, 17 / 18, 0.0]).statistic, abs=1e-12)


def test_nothing_to_audit_says_what_is_missing(tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        assert "held by people" in auditing.audit(con, task.task_id)["missing"]
        people_talk(con, task)
        assert "chat simulate" in auditing.audit(con, task.task_id)["missing"]
        con.close()


def test_a_judge_of_whole_conversations_rates_the_simulated_side(tmp_path, default_store_file):
    """`chat judge` then `simulator-audit --rated-by`: the ignoring simulator's conversations ranked by a judge that
    reads them whole (it likes on-topic replies) rank the systems as people did, though the simulator's own answers
    rank them against people; a second run asks nothing again."""
    from evalcore.simulation.judging import judge
    from evalcore.store import endpoints as registry

    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        people_talk(con, task)
        assert not simulate(con, task.task_id).failed
        registry.add(con, registry.Registered("judge", srv.url, "judge", api_key_env=None))
        out = judge(con, task.task_id, "judge", held_by="simulated")
        assert out["asked"] == out["judged"] == 18 * 3 and not out["failed"]
        assert judge(con, task.task_id, "judge", held_by="simulated")["asked"] == 0
        prompt = next(b for b in srv.bodies if b.get("model") == "judge")["messages"][1]["content"]
        assert "系统：" in prompt and "Rating: [[" in prompt   # the whole conversation, the rubric's output rule
        result = auditing.audit(con, task.task_id, rated_by="judge")
        con.close()
    # the judge: good 2 (every reply on topic), mid 1 (the ignorer's 2 rounds: 1 on topic of 2 -> round(2 * 0.5)), bad 0
    assert all("as people did" in v for v in result["verdicts"]["ignorer"][:3])
    assert "against people" in result["verdicts"]["ignorer"][3]   # goal reached stays the simulator's own answer


def test_the_bootstrap_taus_at_once_equal_scipy_draw_by_draw():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, size=(200, 4)).astype(float)   # few values: many ties
    y = rng.integers(0, 3, size=(200, 4)).astype(float)
    x[0] = [17 / 18 * 3 / 3, 17 / 18 * 2 / 2, 0.5, 0.1]       # a tie made by averaging ties
    y[1] = [1.0, 1.0, 1.0, 1.0]                              # no two values apart: no tau
    got = auditing.taus(x, y)
    for row in range(len(x)):
        want = kendalltau(snap(x[row]), snap(y[row])).statistic
        assert (math.isnan(got[row]) and math.isnan(want)) or got[row] == pytest.approx(want, abs=1e-12), row


def test_the_bootstrap_gs_at_once_equal_hedges_g_draw_by_draw():
    rng = np.random.default_rng(5)
    a, b = rng.normal(0, 1, size=(50, 6)), rng.normal(0.5, 2, size=(50, 9))
    a[0] = 17 / 18   # no spread on either side: no g
    b[0] = 17 / 18
    got = auditing.hedges_gs(a, b)
    for row in range(len(a)):
        want = auditing.hedges_g(a[row], b[row])
        assert (math.isnan(got[row]) and math.isnan(want)) or got[row] == pytest.approx(want, abs=1e-12), row
