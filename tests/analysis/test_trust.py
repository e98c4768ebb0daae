"""The trust view (metrics x skills): track cells equal scipy on the paper's own tables, pooled cells equal
fixed-effect Fisher-z arithmetic written out here, ties with the best metric by Williams' test."""
from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis.trust import trust
from evalcore.analysis.trust_levels import choices
from evalcore.cli import main
from evalcore.ingest.formats.published import import_published
from evalcore.services.defaults import MSDE_SCALES
from evalcore.store import connect
from support import ROOT, write_jsonl

PAPER = ROOT / "data" / "msde-paper"


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    path = tmp_path_factory.mktemp("trust") / "paper.duckdb"
    con = connect(path)
    import_published(con, PAPER, dataset="msde-paper", scales=MSDE_SCALES)
    yield con, path
    con.close()


def _paper_vectors(track: str, metric: str, dims: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Straight from the CSVs: a metric's values and the mean of the human dimensions, per system."""
    comp, skill = track.split("/")
    auto = pd.read_csv(PAPER / "automatic_system_scores.csv")
    human = pd.read_csv(PAPER / "human_system_scores.csv")
    auto = auto[(auto.competition == comp) & (auto.skill == skill) & (auto.metric == metric)].set_index("model")["value"]
    human = human[(human.competition == comp) & (human.skill == skill) & human.dimension.isin(dims)]
    means = human.pivot_table(index="model", columns="dimension", values="value")[dims].dropna().mean(axis=1)
    both = pd.concat([auto, means], axis=1, join="inner").dropna()
    return both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()


def _cell(frame, metric, track):
    row = frame[(frame.metric == metric) & (frame.track == track)]
    assert len(row) == 1, (metric, track)
    return row.iloc[0]


def test_track_cell_equals_scipy(paper):
    con, _ = paper
    frame = trust(con, "msde-paper", origin="published", level="system", method="spearman")
    x, y = _paper_vectors("lic2021/knowledge", "BLEU2", ["Info", "Coh", "Know"])
    expected = stats.spearmanr(x, y)
    row = _cell(frame, "BLEU2", "lic2021/knowledge")
    assert row["n"] == len(x) == 14
    assert row["r"] == pytest.approx(expected.statistic, abs=1e-12)
    assert row["p"] == pytest.approx(expected.pvalue, rel=1e-9)
    z, se = math.atanh(expected.statistic), 1 / math.sqrt(14 - 3)
    assert row["ci_low"] == pytest.approx(math.tanh(z - 1.959963984540054 * se), abs=1e-12)
    assert row["ci_high"] == pytest.approx(math.tanh(z + 1.959963984540054 * se), abs=1e-12)
    assert row["dimensions"] == "Info,Coh,Know" and row["skill"] == "knowledge"
    pearson = trust(con, "msde-paper", origin="published", dimension="Coh", method="pearson")
    x, y = _paper_vectors("luge/recommendation", "METEOR", ["Coh"])
    assert _cell(pearson, "METEOR", "luge/recommendation")["r"] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)


def test_pooled_is_fixed_effect_fisher_z(paper):
    con, _ = paper
    frame = trust(con, "msde-paper", origin="published", level="system", method="spearman")
    dims = ["Info", "Coh", "Know"]
    r1 = stats.spearmanr(*_paper_vectors("lic2021/knowledge", "METEOR", dims)).statistic
    r2 = stats.spearmanr(*_paper_vectors("luge/knowledge", "METEOR", dims)).statistic
    # weights n - 3 = 11 for both tracks (14 systems each)
    z = (11 * math.atanh(r1) + 11 * math.atanh(r2)) / (11 + 11)
    se = 1 / math.sqrt(22)
    row = _cell(frame[frame.skill == "knowledge"], "METEOR", "pooled")
    assert row["r"] == pytest.approx(math.tanh(z), abs=1e-12)
    assert row["ci_low"] == pytest.approx(math.tanh(z - 1.959963984540054 * se), abs=1e-12)
    assert row["ci_high"] == pytest.approx(math.tanh(z + 1.959963984540054 * se), abs=1e-12)
    assert row["p"] == pytest.approx(2 * stats.norm.sf(abs(z) / se), rel=1e-9)
    assert row["n"] == 28
    # the rank is by pooled r within the skill
    pooled = frame[(frame.skill == "knowledge") & (frame.track == "pooled")]
    assert row["rank"] == 1 + int((pooled["r"] > row["r"]).sum())


def test_tied_with_best_by_williams(paper):
    con, _ = paper
    frame = trust(con, "msde-paper", origin="published", level="system", method="spearman")
    track = frame[frame.track == "lic2021/knowledge"].dropna(subset=["r"])
    best = track.loc[track["r"].idxmax()]
    assert best["rank"] == 1 and best["tied_with_best"] == True  # noqa: E712
    dims = ["Info", "Coh", "Know"]
    hb = _paper_vectors("lic2021/knowledge", best["metric"], dims)
    for metric in ["DIST1", "BLEU1"]:
        ho = _paper_vectors("lic2021/knowledge", metric, dims)
        r12 = stats.spearmanr(*hb).statistic
        r13 = stats.spearmanr(*ho).statistic
        r23 = stats.spearmanr(hb[0], ho[0]).statistic
        n = 14
        # Williams (1959): t with n - 3 degrees of freedom, one-sided
        k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
        t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(
            2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3)
        p = stats.t.sf(t, n - 3)
        assert _cell(frame, metric, "lic2021/knowledge")["tied_with_best"] == (p >= 0.05)
    assert "low power" in _cell(frame, "DIST1", "lic2021/knowledge")["note"]


def test_undefined_cells_carry_the_reason(paper):
    con, _ = paper
    frame = trust(con, "msde-paper", origin="published", dimension="Rec")
    row = _cell(frame, "F1", "luge/chitchat")
    assert math.isnan(row["r"]) and row["note"] == "no Rec ratings on this track"
    assert _cell(frame[frame.skill == "chitchat"], "F1", "pooled")["note"] == "no Rec ratings on this track"
    with pytest.raises(ValueError, match="try --level system --origin published"):
        trust(con, "msde-paper", origin="computed")
    with pytest.raises(ValueError, match="no dataset 'nosuch'; known: msde-paper"):
        trust(con, "nosuch")
    assert choices(con, "msde-paper") == [("system", "published")]


def test_cli_csv(paper, capsys):
    _, path = paper
    assert main(["trust", "--db", str(path), "--dataset", "msde-paper", "--origin", "published", "--level", "system",
                 "--method", "spearman", "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(frame.columns[:11]) == ["metric", "skill", "track", "dimension", "r", "ci_low", "ci_high", "n", "p",
                                        "tied_with_best", "rank"]
    # 16 metrics x (6 tracks + 4 skills' pooled rows), one row each
    assert len(frame) == 16 * 10
    assert not frame.duplicated(["metric", "skill", "track"]).any()
    assert set(frame.skill) == {"chitchat", "knowledge", "recommendation", "persona"}
    # computed values asked for where there are none: the error says what works
    assert main(["trust", "--db", str(path), "--dataset", "msde-paper", "--origin", "computed"]) == 1
    assert "--origin published" in capsys.readouterr().err


def test_turn_level_on_per_response_scores(con, tmp_path):
    """Turn level: DIST1 of each response (char tokens) against its rating, arithmetic written out."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    texts = ["好好好好", "好的", "你好你", "我们走吧", "哈哈哈", "今天天气好"]
    distinct = [1 / 4, 2 / 2, 2 / 3, 4 / 4, 1 / 3, 4 / 5]  # distinct characters / characters
    ratings = [1, 3, 2, 3, 1, 2]
    import_items(con, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": f"i{k}", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"], "references": ["好"]}
        for k in range(len(texts))]))
    (tmp_path / "resp.csv").write_text("item_id,response\n" + "".join(f"i{k},{t}\n" for k, t in enumerate(texts)),
                                       encoding="utf-8")
    import_responses(con, tmp_path / "resp.csv", dataset="toy", track="toy/chitchat", model="m")
    (tmp_path / "rat.csv").write_text("item_id,model,annotator,dimension,score\n" + "".join(
        f"i{k},m,a,Coh,{s}\n" for k, s in enumerate(ratings)), encoding="utf-8")
    import_ratings(con, tmp_path / "rat.csv", dataset="toy", track="toy/chitchat", scales={"Coh": (0, 3)})
    score(con, metrics="lexical", dataset="toy")
    assert choices(con, "toy")[0] == ("turn", "computed")
    frame = trust(con, "toy", level="turn", method="spearman")
    row = _cell(frame, "DIST1", "toy/chitchat")
    assert row["n"] == 6 and row["r"] == pytest.approx(stats.spearmanr(distinct, ratings).statistic, abs=1e-12)
