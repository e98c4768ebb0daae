"""Bradley-Terry when some model won (or lost) every vote: the largest strongly connected group of models is
fitted (its ratings equal the fit over its own votes, written out for two models), an unbeaten model ranks
above every rated one and a winless one below, with NaN ratings and a note; bootstrap intervals are withheld
when more than 5% of resamples have no finite fit, the resamples replayed here with the same seed."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis.bradley_terry import ratings
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import import_responses
from evalcore.services.tasks import create_task
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import write_jsonl
from support.apptest import run


def _votes(*groups: tuple[str, str, list[float]]) -> pd.DataFrame:
    """(model_a, model_b, scores) groups: one vote per score (1 a won, 0 b won, 0.5 tie)."""
    return pd.DataFrame([(a, b, s) for a, b, scores in groups for s in scores],
                        columns=["model_a", "model_b", "score"])


def _two_model_mle(wins_x: float, wins_y: float) -> tuple[float, float]:
    """Two models alone: P(x beats y) = wins_x / (wins_x + wins_y) at the optimum, so R_x - R_y =
    400 * log10(wins_x / wins_y) (a tie half a win each); the mean is 1000."""
    diff = 400 * math.log10(wins_x / wins_y)
    return 1000 + diff / 2, 1000 - diff / 2


def test_an_unbeaten_model_ranks_first_and_the_rest_is_fitted_as_before():
    # A beat B 4 times and C 5 times; B beat C 18 times, lost 9, tied 3
    v = _votes(("A", "B", [1.0] * 4), ("C", "A", [0.0] * 5), ("B", "C", [1.0] * 18 + [0.0] * 9 + [0.5] * 3))
    out = ratings(v, resamples=200, seed=0).set_index("model")
    b, c = _two_model_mle(18 + 1.5, 9 + 1.5)
    assert out.loc["B", "rating"] == pytest.approx(b, abs=1e-6) and out.loc["C", "rating"] == pytest.approx(c, abs=1e-6)
    assert math.isnan(out.loc["A", "rating"]) and math.isnan(out.loc["A", "ci_low"])
    assert list(out["rank"]) == [1, 2, 3] and list(out.index) == ["A", "B", "C"]
    assert out.loc["A", "note"] == ("A is unbeaten: won all 9 of its votes against the models ranked below it; "
                                    "no finite rating, ranked above every rated model")
    assert (out.loc["A", "wins"], out.loc["A", "losses"]) == (9, 0)
    # the rated models' rank intervals lie among ranks 2 and 3, below the unbeaten model
    assert {out.loc["B", "rank_ci_low"], out.loc["C", "rank_ci_high"]} <= {2, 3}
    assert out.loc["B", "ci_low"] <= b <= out.loc["B", "ci_high"]


def test_a_winless_model_ranks_last():
    v = _votes(("B", "C", [1.0, 1.0, 0.0, 0.5]), ("Z", "B", [0.0] * 3), ("C", "Z", [1.0] * 2))
    out = ratings(v, resamples=0).set_index("model")
    b, c = _two_model_mle(2.5, 1.5)
    assert out.loc["B", "rating"] == pytest.approx(b, abs=1e-6) and out.loc["C", "rating"] == pytest.approx(c, abs=1e-6)
    assert list(out.index) == ["B", "C", "Z"] and list(out["rank"]) == [1, 2, 3]
    assert math.isnan(out.loc["Z", "rating"])
    assert out.loc["Z", "note"].startswith("Z is winless: lost all 5 of its votes against the models ranked above")
    assert out.loc["Z", "note"].endswith("ranked below every rated model")


def test_several_unbeaten_models_are_ordered_by_their_own_votes_or_share_a_rank():
    rest = ("B", "C", [1.0, 0.0])
    # U1 beat U2, both beat B: U1 first, U2 second, B and C (equal: one win each) share the third place
    out = ratings(_votes(("U1", "U2", [1.0]), ("U1", "B", [1.0]), ("U2", "C", [1.0]), rest), resamples=0)
    assert dict(zip(out["model"], out["rank"])) == {"U1": 1, "U2": 2, "B": 3, "C": 3}
    assert out.set_index("model").loc["U2", "note"].startswith(
        "U2 is unbeaten: won all 1 of its votes against the models ranked below it, lost all 1 against the models "
        "ranked above it")
    # U1 and U2 never met: their votes do not order them, they share the first place
    out = ratings(_votes(("U1", "B", [1.0]), ("U2", "C", [1.0]), rest), resamples=0)
    assert dict(zip(out["model"], out["rank"])) == {"U1": 1, "U2": 1, "B": 3, "C": 3}


def test_the_largest_group_is_fitted_and_a_group_above_it_shares_a_rank():
    # X and Y split their votes and beat every one of B, C, D, which split theirs: B, C, D (three) are fitted
    v = _votes(("X", "Y", [1.0, 0.0]), ("X", "B", [1.0]), ("Y", "D", [1.0]),
               ("B", "C", [1.0, 0.0]), ("C", "D", [1.0, 0.0]), ("D", "B", [1.0, 0.0]))
    out = ratings(v, resamples=0).set_index("model")
    assert out.loc[["B", "C", "D"], "rating"].to_list() == pytest.approx([1000.0] * 3)
    assert out.loc[["X", "Y"], "rank"].to_list() == [1, 1] and out.loc[["B", "C", "D"], "rank"].to_list() == [3] * 3
    assert "shares its rank with Y" in out.loc["X", "note"]


def test_models_never_compared_and_a_pure_order_are_said():
    out = ratings(_votes(("x", "y", [1.0]), ("z", "w", [0.5])), resamples=0)
    assert out["rating"].isna().all() and out["rank"].isna().all() and "never compared" in out["note"].iloc[0]
    # x beat y, y beat z, nothing back: no finite rating anywhere, ranked by who beat whom
    out = ratings(_votes(("x", "y", [1.0]), ("y", "z", [1.0])), resamples=0)
    assert out["rating"].isna().all() and list(out["model"]) == ["x", "y", "z"] and list(out["rank"]) == [1, 2, 3]
    assert out["note"].iloc[0].startswith("no model has a finite rating")


def test_an_unbeaten_anchor_leaves_the_mean_at_1000():
    v = _votes(("A", "B", [1.0] * 2), ("B", "C", [1.0, 0.0]))
    out = ratings(v, resamples=0, anchor="A").set_index("model")
    assert out.loc[["B", "C"], "rating"].to_list() == pytest.approx([1000.0, 1000.0])
    assert "the anchor A has no finite rating" in out.loc["B", "note"]


def _failed(v: pd.DataFrame, pair: set[str], resamples: int, seed: int) -> int:
    """Resamples, drawn as ratings() draws them, whose votes between the two fitted models lack a credit for
    one of them: the two-model fit is then not finite."""
    rng = np.random.default_rng(seed)
    inside = v["model_a"].isin(pair) & v["model_b"].isin(pair)
    first = sorted(pair)[0]
    credit_first = (inside & (((v["model_a"] == first) & (v["score"] > 0)) |
                              ((v["model_b"] == first) & (v["score"] < 1)))).to_numpy()
    credit_other = (inside & (((v["model_a"] == first) & (v["score"] < 1)) |
                              ((v["model_b"] == first) & (v["score"] > 0)))).to_numpy()
    failed = 0
    for _ in range(resamples):
        idx = rng.integers(0, len(v), len(v))
        failed += not (credit_first[idx].any() and credit_other[idx].any())
    return failed


def test_intervals_are_withheld_when_more_than_5_percent_of_resamples_have_no_fit():
    # C's only credit is one win over B: a resample of the 8 votes misses it with probability (7/8)^8 = 34%
    v = _votes(("A", "B", [1.0]), ("A", "C", [1.0]), ("B", "C", [1.0] * 5 + [0.0]))
    failed = _failed(v, {"B", "C"}, 400, 0)
    assert failed > 0.05 * 400
    out = ratings(v, resamples=400, seed=0).set_index("model")
    assert out.loc["B", "note"] == (f"interval withheld: {failed} of 400 resamples ({failed / 400:.1%}) had no value "
                                    "(more than 5%)")
    assert out.loc[["B", "C"], ["ci_low", "ci_high"]].isna().all().all()
    assert out.loc[["B", "C"], ["rank_ci_low", "rank_ci_high"]].isna().all().all()
    assert out.loc["B", "rating"] - out.loc["C", "rating"] == pytest.approx(400 * math.log10(5 / 1), abs=1e-6)


def test_a_few_resamples_without_a_fit_are_counted_and_left_out():
    # C's credit: 4 votes of 23, missed by a resample with probability (19/23)^23 = 1.2%
    v = _votes(("A", "B", [1.0] * 4), ("A", "C", [1.0] * 5), ("B", "C", [1.0] * 10 + [0.0] * 3 + [0.5]))
    failed = _failed(v, {"B", "C"}, 1000, 0)
    assert 0 < failed <= 50
    out = ratings(v, resamples=1000, seed=0).set_index("model")
    assert out.loc["B", "note"] == f"{failed} of 1,000 resamples had no value and are left out"
    assert out.loc["C", "ci_low"] <= out.loc["C", "rating"] <= out.loc["C", "ci_high"]


def test_the_ranking_page_shows_an_unbeaten_models_row_and_note(monkeypatch, tmp_path):
    """The Rating tasks page of a side-by-side task where m1 won every vote it was in and the others tied theirs:
    m1's row has no rating and rank 1, the others are rated below it, and the note says why under the table."""
    db = tmp_path / "lab.duckdb"
    con = connect(db)
    items = [{"item_id": f"i{n}", "dataset": "lab", "track": "lab/chitchat", "context": ["你好", f"第{n}句"],
              "references": ["好"]} for n in range(12)]
    import_items(con, write_jsonl(tmp_path / "items.jsonl", items))
    rows = "".join(f"i{n},{m},{m}对i{n}的回复\n" for n in range(12) for m in ("m1", "m2", "m3", "m4"))
    (tmp_path / "responses.csv").write_text("item_id,model,response\n" + rows, encoding="utf-8")
    import_responses(con, tmp_path / "responses.csv", dataset="lab", track="lab/chitchat")
    task = stored.get(con, create_task(con, dataset="lab", mode="pairwise", dimensions=["Info"], items=12,
                                       per_item=1, seed=3))
    units = stored.units(con, task.task_id).set_index("unit")
    for _ in range(len(units)):
        unit = stored.next_unit(con, task, "ann")
        a, b = units.loc[unit, ["model_a", "model_b"]]
        stored.answer(con, task, unit, "ann", "Info", 1.0 if a == "m1" else 0.0 if b == "m1" else 0.5)
    con.close()
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, "EVALCORE_ACCESS": None}, task=str(task.task_id))
    ranking = next(d.value for d in at.dataframe if "rating" in d.columns).set_index("model")
    assert math.isnan(ranking.loc["m1", "rating"]) and ranking.loc["m1", "rank"] == 1
    others = ranking.drop(index="m1")
    assert others["rating"].to_list() == pytest.approx([1000.0] * 3) and (others["rank"] == 2).all()
    assert any(t.value.startswith("Info: m1 is unbeaten: won all") for t in at.text)
