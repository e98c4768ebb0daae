"""The judge audit against people, with the deterministic judge server (tests/support/judge_server.py): a judge that
always prefers the first answer, one that always prefers the longer, one that copies the people's mean; the
length-controlled win rate against AlpacaEval's own get_length_controlled_winrate; drift between two
signatures against scipy. Expected values are written out here, never taken from the code under test."""
from __future__ import annotations

import io
import sys
import types

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats
from streamlit.testing.v1 import AppTest

from evalcore.analysis import judge_audit as audit
from evalcore.cli import main
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.ingest.formats.votes import import_votes
from evalcore.store import connect
from support import ROOT, write_jsonl
from support.judge_server import JudgeServer

N = 12
ITEMS = [{"item_id": f"i{k}", "dataset": "ja", "track": "ja/chitchat", "context": ["你好", f"问题{k}"],
          "references": [f"回答{k}"]} for k in range(N)]
# per item: the baseline's answer and a test model's, never as long as each other
BASE = [f"基线回答{k}" for k in range(N)]                                          # 5 characters (6 for k >= 10)
TEST = [("长" * (12 + k)) if k % 3 else "短" for k in range(N)]                    # long, except every third: 1


def _store(tmp_path, base=BASE, test=TEST, more: dict | None = None):
    db = str(tmp_path / "ja.duckdb")
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    models = {"base": base, "test": test, **(more or {})}
    rows = [f"i{k},{m},{texts[k]}" for k in range(N) for m, texts in models.items()]
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "\n".join(rows) + "\n", encoding="utf-8")
    import_responses(con, tmp_path / "r.csv", dataset="ja", track="ja/chitchat")
    con.close()
    return db


def _judge(srv, db, metrics="Judge-Pairwise", model="tiny-judge"):
    assert main(["score", "--db", db, "--metrics", metrics, "--judge-base-url", srv.url, "--judge-model", model,
                 "--judge-baseline", "base", "--judge-retries", "1"]) == 0


def test_a_judge_that_always_prefers_the_first_answer_is_never_consistent(tmp_path):
    db = _store(tmp_path)
    with JudgeServer(prefer="first") as srv:
        _judge(srv, db)
    con = connect(db)
    row = audit.pairwise(con, "ja").iloc[0]
    con.close()
    # every pair: the test answer wins when shown first and loses when shown second -> no verdict survives the swap
    assert row["pairs"] == N and row["consistency"] == 0.0
    assert row["p_first"] == 1.0          # all 2 * 12 single-order verdicts chose the first answer
    assert row["decided"] == 0            # a flipped verdict is a tie: nothing decided, so no length preference
    assert np.isnan(row["p_longer_judge"])


def test_a_judge_that_prefers_the_longer_answer_and_people_who_prefer_the_shorter(tmp_path):
    db = _store(tmp_path)
    with JudgeServer(prefer="longer") as srv:
        _judge(srv, db)
    con = connect(db)
    # people vote on four of the pairs: three for the shorter answer, one for the longer (i1: test is longer)
    votes = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4"], "model_a": "base", "model_b": "test",
                          "winner": ["a", "a", "b", "b"], "annotator": "ann", "dimension": "overall"})
    # i1, i2, i4: test (12+k characters) is longer than the baseline (5): a = base = the shorter
    # i3: test is "短" (1 character): b = test = the shorter
    # i4: b = test = the longer
    votes.to_csv(tmp_path / "votes.csv", index=False)
    import_votes(con, tmp_path / "votes.csv", dataset="ja")
    row = audit.pairwise(con, "ja").iloc[0]
    lc = audit.length_controlled(con, "ja").iloc[0]
    con.close()
    assert row["consistency"] == 1.0 and row["p_longer_judge"] == 1.0 and row["decided"] == N
    assert row["p_longer_people"] == pytest.approx(1 / 4)
    # the judge's verdicts: test wins where it is longer (k % 3 != 0: 8 of 12)
    assert lc["win_rate"] == pytest.approx(100 * 8 / 12)
    # against people on their four pairs: i1, i2 the judge chose test (longer), people base; i3 the judge chose base
    # (longer), people test; i4 both test: 1 of 4 agree
    assert row["agreement_with_ties"] == pytest.approx(1 / 4)


def test_a_judge_that_copies_the_people_s_mean_reaches_the_human_ceiling(tmp_path, capsys, monkeypatch):
    # three annotators, integer means per response; the judge (G-Eval Coh, 0-2) answers the marker SCORE=<mean>
    scores = {"ann": [2, 1, 0, 2, 1, 0, 2, 2, 0, 1, 1, 0], "bo": [2, 2, 0, 1, 1, 0, 2, 1, 1, 1, 2, 0],
              "cy": [2, 0, 0, 0, 1, 0, 2, 0, 2, 1, 0, 0]}
    mean = [sum(s[k] for s in scores.values()) / 3 for k in range(N)]
    assert all(m == int(m) for m in mean)
    db = _store(tmp_path, test=[f"SCORE={int(m)} 回答{k}" for k, m in enumerate(mean)])
    con = connect(db)
    rows = [f"i{k},test,{who},Coh,{s[k]}" for who, s in scores.items() for k in range(N)]
    (tmp_path / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + "\n".join(rows) + "\n")
    import_ratings(con, tmp_path / "h.csv", dataset="ja", track="ja/chitchat", scales={"Coh": (0.0, 2.0)})
    con.close()
    with JudgeServer() as srv:
        _judge(srv, db, metrics="Judge-Coh")
    con = connect(db)
    table = audit.agreement(con, "ja", bootstrap=0)
    head = audit.headline(table).iloc[0]
    con.close()
    assert head["judge"] == "Judge-Coh" and head["dimension"] == "Coh"
    # against the people's mean itself the judge's Spearman is 1
    assert head["judge vs people's mean"] == pytest.approx(1.0)
    # the ceiling, by hand: r(annotator, mean of the other two) with scipy, averaged over the three
    frame = pd.DataFrame(scores)
    ceiling = np.mean([stats.spearmanr(frame[a], frame.drop(columns=[a]).mean(axis=1))[0] for a in scores])
    judge = np.mean([stats.spearmanr(pd.Series(mean), frame.drop(columns=[a]).mean(axis=1))[0] for a in scores])
    assert head["human ceiling (leave-one-out)"] == pytest.approx(ceiling)
    assert head["judge (leave-one-out)"] == pytest.approx(judge)
    assert head["gap (judge - ceiling)"] == pytest.approx(judge - ceiling)
    assert judge >= ceiling and head["verdict"] == "agrees with people as well as people agree with each other"
    kappa = table[(table["statistic"] == "kappa_quadratic") & (table["who"] == "judge vs each annotator")]
    assert len(kappa) == 1 and kappa["value"].iloc[0] > 0
    # the same from the command line, and on the dashboard's page (a chart and its tables, no error)
    capsys.readouterr()
    assert main(["judge-audit", "--db", db, "--dataset", "ja", "--part", "headline", "--bootstrap", "0",
                 "--format", "csv"]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert out["verdict"].tolist() == ["agrees with people as well as people agree with each other"]
    monkeypatch.setenv("EVALCORE_DB", db)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/views/judges.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("vega_lite_chart")) == 1 and len(at.dataframe) >= 2 and not at.info
    # on Metric trust the judge is a row like any metric, its audit on hover
    trust = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    trust.switch_page("pages/views/trust.py")
    for key, value in {"dataset": "ja", "level": "turn", "dimension": "Coh"}.items():
        trust.query_params[key] = value
    trust.run()
    assert not trust.exception, [e.value for e in trust.exception]
    cells = pa.ipc.open_stream(trust.get("vega_lite_chart")[0].proto.data.data).read_all().to_pandas()
    hovers = dict(zip(cells["metric"], cells["judge audit"]))
    assert hovers["Judge-Coh"].startswith("audit on Coh (tiny-judge@127.0.0.1:")
    assert f"leave-one-out r = {judge:.2f} vs the human ceiling {ceiling:.2f}: agrees with people" in hovers["Judge-Coh"]


def test_the_length_controlled_win_rate_equals_alpaca_eval(tmp_path, monkeypatch):
    try:
        import pkg_resources  # noqa: F401
    except ImportError:   # alpaca_eval imports it for two version helpers the win rate never calls; newer setuptools
        monkeypatch.setitem(sys.modules, "pkg_resources", types.ModuleType("pkg_resources"))   # dropped it
    glm = pytest.importorskip("alpaca_eval.metrics.glm_winrate",
                              reason="alpaca-eval (tests/requirements.txt) is the reference implementation")
    rng = np.random.default_rng(0)
    n = 200
    len_base = rng.integers(20, 400, n)
    len_model = rng.integers(20, 800, n)
    # the judge likes length: P(model wins) rises with the model's extra length
    p = 1 / (1 + np.exp(-(0.2 + 1.5 * np.tanh((len_model - len_base) / 300))))
    pref = np.where(rng.random(n) < p, 2.0, 1.0)
    pref[rng.random(n) < 0.1] = 1.5                          # some ties
    annotations = pd.DataFrame({"index": np.arange(n), "output_1": ["x" * k for k in len_base],
                                "output_2": ["y" * k for k in len_model], "generator_1": "baseline",
                                "generator_2": "model", "annotator": "judge", "preference": pref})
    # the reference reads the instructions' difficulty from the Hugging Face Hub even when its minimal formula
    # does not use it: a local file stands in (offline at test time), with a value per instruction
    gamed = tmp_path / "df_gamed.csv"
    pd.DataFrame({"index": np.arange(n), "instruction_difficulty": 0.0, "model": "m"}).to_csv(gamed, index=False)
    monkeypatch.setattr(glm, "hf_hub_download", lambda *a, **k: str(gamed))
    reference = glm.get_length_controlled_winrate(annotations, glm_name="length_controlled_minimal",
                                                  save_weights_dir=None, is_warn_extreme_changes=False)
    ours = audit.lc_winrate(pref - 1, len_model, len_base)
    assert ours["lc_win_rate"] == pytest.approx(reference["length_controlled_winrate"], abs=1e-4)
    assert ours["win_rate"] == pytest.approx(reference["win_rate"], abs=1e-9)
    assert ours["lc_win_rate"] < ours["win_rate"]            # the length advantage is taken out


def test_drift_between_two_judge_models_against_scipy(tmp_path):
    # judge-one and judge-two read different markers on the "mid" model's answers: the two leaderboards differ
    one = {"base": [k % 3 for k in range(N)], "test": [2] * N, "mid": [1] * N}
    two = {"base": one["base"], "test": [2] * N, "mid": [(k % 2) * 2 + 1 - (k % 2) for k in range(N)]}
    texts = {m: [f"SCORE@judge-one={one[m][k]} SCORE@judge-two={two[m][k]} 回答{m}{k}" for k in range(N)] for m in one}
    db = _store(tmp_path, base=texts["base"], test=texts["test"], more={"mid": texts["mid"]})
    with JudgeServer() as srv:
        _judge(srv, db, metrics="Judge-Coh", model="judge-one")
        _judge(srv, db, metrics="Judge-Coh", model="judge-two")
    con = connect(db)
    row = audit.drift(con, "ja", bootstrap=200, seed=0).iloc[0]
    con.close()
    assert "judge-one" in row["signature_a"] and "judge-two" in row["signature_b"] and row["n"] == 3 * N
    values_one = [one[m][k] for k in range(N) for m in one]
    values_two = [two[m][k] for k in range(N) for m in one]
    assert row["spearman_turn"] == pytest.approx(stats.spearmanr(values_one, values_two)[0])
    board_one = [np.mean(one[m]) for m in sorted(one)]
    board_two = [np.mean(two[m]) for m in sorted(one)]
    assert row["models"] == 3
    assert row["kendall_tau_system"] == pytest.approx(stats.kendalltau(board_one, board_two)[0])
    assert row["ci_low"] <= row["kendall_tau_system"] <= row["ci_high"]


def test_uncertainty_over_samples_and_over_judges(tmp_path):
    one = {"base": [k % 3 for k in range(N)], "test": [2] * N, "mid": [1] * N}
    two = {"base": [(k + 1) % 3 for k in range(N)], "test": [2 - (k % 2) for k in range(N)], "mid": [1] * N}
    texts = {m: [f"SCORE@judge-one={one[m][k]} SCORE@judge-two={two[m][k]} 回答{m}{k}" for k in range(N)] for m in one}
    db = _store(tmp_path, base=texts["base"], test=texts["test"], more={"mid": texts["mid"]})
    with JudgeServer() as srv:
        for sample in ("1", "2"):   # the same deterministic judge asked twice: no spread at all
            assert main(["score", "--db", db, "--metrics", "Judge-Coh", "--judge-base-url", srv.url, "--judge-model",
                         "judge-one", "--judge-sample", sample, "--judge-retries", "1"]) == 0
        _judge(srv, db, metrics="Judge-Coh", model="judge-two")
    con = connect(db)
    samples = audit.uncertainty(con, "ja", bootstrap=100, seed=0).set_index("model")
    judges = audit.uncertainty(con, "ja", across="judges", bootstrap=100, seed=0).set_index("model")
    con.close()
    assert set(samples["samples"]) == {2} and (samples["judge_sd"] == 0).all()
    assert (samples["note"] == "").all()   # every model answers every item: each resample ranks every model
    assert (samples["rank_low"] == samples["rank_low_items"]).all() and (samples["rank_high"] == samples["rank_high_items"]).all()
    assert samples.loc["test", "mean"] == pytest.approx(2.0) and samples.loc["test", "rank"] == 1
    # across judges: judge-one's two samples and judge-two, three answers per response
    assert set(judges["samples"]) == {3}
    for m in one:
        answers = [[one[m][k], one[m][k], two[m][k]] for k in range(N)]
        assert judges.loc[m, "mean"] == pytest.approx(np.mean([np.mean(a) for a in answers]))
        assert judges.loc[m, "judge_sd"] == pytest.approx(np.mean([np.std(a, ddof=1) for a in answers]))
        assert judges.loc[m, "rank_low"] <= judges.loc[m, "rank"] <= judges.loc[m, "rank_high"]
