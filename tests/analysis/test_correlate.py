"""Correlations per level; the MSDE paper's Tables 11-13 recomputed from Tables 4-10."""
import csv

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis.correlate import COLUMNS, correlations
from evalcore.ingest.formats.published import import_published
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.scoring import score
from evalcore.services.defaults import DATA_DIR, MSDE_SCALES

# Cells more than 0.05 from the published value, with the likely cause, as listed in the README.
FAR_FROM_PUBLISHED = {
    ("lic2021/recommendation", "Info", "F1", "pearson"), ("lic2021/recommendation", "Know", "F1", "pearson"),
    ("lic2021/recommendation", "Coh", "F1", "pearson"), ("lic2021/recommendation", "Rec", "F1", "pearson"),
    ("lic2021/recommendation", "Info", "F1", "spearman"), ("lic2021/recommendation", "Know", "F1", "spearman"),
    ("luge/knowledge", "Info", "F1", "spearman"), ("luge/knowledge", "Know", "F1", "spearman"),
}


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    from evalcore.store import connect

    con = connect(tmp_path_factory.mktemp("paper") / "s.duckdb")
    import_published(con, DATA_DIR / "msde-paper", dataset="msde-paper", scales=MSDE_SCALES)
    yield con
    con.close()


def _csv(name):
    with open(DATA_DIR / "msde-paper" / name, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_tables_11_13_recomputed_equal_scipy(paper):
    got = correlations(paper, "msde-paper", level="system", origin="published",
                       methods=["spearman", "pearson"], compare_published=True)
    assert len(got) == 608 and list(got.columns) == COLUMNS + ["published", "diff"]
    auto = pd.DataFrame(_csv("automatic_system_scores.csv"))
    human = pd.DataFrame(_csv("human_system_scores.csv"))
    for row in got.itertuples():
        comp, skill = row.track.split("/")
        x = auto[(auto.competition == comp) & (auto.skill == skill) & (auto.metric == row.metric)]
        y = human[(human.competition == comp) & (human.skill == skill) & (human.dimension == row.dimension)]
        j = x.set_index("model")["value"].astype(float).to_frame("x").join(
            y.set_index("model")["value"].astype(float).to_frame("y"), how="inner")
        ref = (stats.spearmanr if row.method == "spearman" else stats.pearsonr)(j.x, j.y)
        assert row.n == len(j) == 14
        assert row.r == pytest.approx(ref.statistic, abs=1e-9)
        assert row.p == pytest.approx(ref.pvalue, abs=1e-9)
    close = (got["diff"].abs() <= 0.0101).sum()
    assert close >= 540, close
    far = {(r.track, r.dimension, r.metric, r.method) for r in got.itertuples() if abs(r.diff) > 0.05}
    assert far == FAR_FROM_PUBLISHED


def test_levels_and_annotator_aggregation(toy, tmp_path):
    (tmp_path / "r.csv").write_text(
        "item_id,dialogue_id,model,annotator,dimension,score\n"
        "t1,,m1,a,Coh,2\nt1,,m1,b,Coh,1\nt2,,m1,a,Coh,0\nt2,,m1,b,Coh,0\nt1,,m2,a,Coh,1\nt1,,m2,b,Coh,0\n"
        "t1,,m1,a,Info,1\n", encoding="utf-8")
    import_ratings(toy, tmp_path / "r.csv", dataset="toy", track="toy/chitchat", scales={"Coh": (0, 2), "Info": (0, 2)})
    score(toy, dataset="toy", track="toy/chitchat", metrics="DIST1,F1", progress=False)
    turn = correlations(toy, "toy", "toy/chitchat", level="turn", methods=["pearson"])
    cell = turn[(turn.dimension == "Coh") & (turn.metric == "DIST1")].iloc[0]
    # three rated responses; Coh means 1.5 (t1 m1), 0 (t2 m1), 0.5 (t1 m2); DIST1 of 天气很好, 你好, 嗯 = 1, 1, 1
    assert cell.n == 3 and np.isnan(cell.r) and cell.note == "the metric is constant"
    f1 = turn[(turn.dimension == "Coh") & (turn.metric == "F1")].iloc[0]
    assert f1.n == 2 and f1.note == "n = 2 < 3"  # t2 has no reference: F1 exists for two responses
    info = turn[turn.dimension == "Info"]
    assert set(info["note"]) == {"n = 1 < 3"}
    median = correlations(toy, "toy", "toy/chitchat", level="system", methods=["pearson"], aggregate="median")
    assert set(median["n"]) == {2, 1}  # two models at system level (m2 has no Info)
    dialogue = correlations(toy, "toy", "toy/chitchat", level="dialogue", methods=["spearman"])
    assert set(dialogue["n"]) <= {1, 2}  # t1 and t2 share dialogue d1: one point per model
    with pytest.raises(ValueError, match="published scores are system-level"):
        correlations(toy, "toy", level="turn", origin="published")
    with pytest.raises(ValueError, match="unknown level 'word'; known: system, dialogue, turn"):
        correlations(toy, "toy", level="word")
    with pytest.raises(ValueError, match="--bootstrap needs --seed"):
        correlations(toy, "toy", bootstrap=10)


def test_cli_correlate_columns(tmp_path, capsys):
    from evalcore.cli import main

    db = str(tmp_path / "s.duckdb")
    assert main(["import", "published", str(DATA_DIR / "msde-paper"), "--db", db, "--dataset", "paper",
                 "--scale", "Info=0:2", "--scale", "Coh=0:2", "--scale", "Know=0:2", "--scale", "Rec=0:2"]) == 0
    capsys.readouterr()
    assert main(["correlate", "--db", db, "--dataset", "paper", "--track", "luge/chitchat", "--origin",
                 "published", "--method", "kendall", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert len(lines) == 1 + 2 * 16  # Info and Coh x 16 metrics
