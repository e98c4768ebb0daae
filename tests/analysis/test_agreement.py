"""Agreement statistics against independent implementations (krippendorff, statsmodels) and hand
arithmetic; aggregation rules; USR-TopicalChat through the generic importers."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis import agreement as A
from evalcore.cli import main
from support import shared, write_jsonl

krippendorff = pytest.importorskip("krippendorff")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")


def test_cohen_kappa_by_hand():
    # 2 x 2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4
    a = [0] * 25 + [1] * 25
    b = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    assert math.isclose(A.cohen_kappa(a, b), 0.4)


@pytest.mark.parametrize("kind,wt", [("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")])
def test_cohen_kappa_equals_statsmodels(kind, wt):
    rng = np.random.default_rng(1)
    a = rng.integers(1, 6, 200)
    b = np.clip(a + rng.integers(-1, 2, 200), 1, 5)
    cats = np.unique(np.concatenate([a, b]))
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, (np.searchsorted(cats, a), np.searchsorted(cats, b)), 1)
    expected = inter_rater.cohens_kappa(table, wt=wt, return_results=False) if wt else \
        inter_rater.cohens_kappa(table, return_results=False)
    assert math.isclose(A.cohen_kappa(a, b, kind), expected, abs_tol=1e-12)


def test_fleiss_equals_statsmodels():
    rng = np.random.default_rng(2)
    counts = np.stack([rng.multinomial(4, [0.5, 0.3, 0.2]) for _ in range(50)])
    assert math.isclose(A.fleiss_from_counts(counts.astype(float)), inter_rater.fleiss_kappa(counts), abs_tol=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_krippendorff_package(level):
    rng = np.random.default_rng(3)
    data = rng.integers(1, 6, (4, 60)).astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan
    assert math.isclose(A.krippendorff_alpha(data, level),
                        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs_tol=1e-9)


# ---------------------------------------------------------------- real data through the generic importers
def _import(tmp_path, name, items, responses, ratings, scales):
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.store import connect

    write_jsonl(tmp_path / "items.jsonl", items)
    con = connect(tmp_path / f"{name}.duckdb")
    import_items(con, tmp_path / "items.jsonl")
    for track in sorted({i["track"] for i in items}):
        ids = {i["item_id"] for i in items if i["track"] == track}
        for fname, rows in (("responses.csv", responses), ("ratings.csv", ratings)):   # one file per track
            part = tmp_path / f"{track.replace('/', '_')}.{fname}"
            with open(part, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(r for r in rows if r["item_id"] in ids)
            if fname == "responses.csv":
                import_responses(con, part, dataset=name, track=track)
            else:
                import_ratings(con, part, dataset=name, track=track, scales=scales)
    return con


def _usr_store(tmp_path):
    data = json.loads(shared("usr", "tc_usr_data.json").read_text(encoding="utf-8"))
    items, responses, ratings = [], [], []
    for i, ctx in enumerate(data):
        iid = f"tc{i:02d}"
        items.append({"item_id": iid, "dataset": "usr", "track": "usr/topicalchat", "context": ctx["context"].split("\n"),
                      "references": [], "grounding": {"knowledge": [ctx["fact"]]}})
        for r in ctx["responses"]:
            responses.append({"item_id": iid, "model": r["model"], "response": r["response"]})
            for a, score in enumerate(r["Overall"]):
                ratings.append({"item_id": iid, "model": r["model"], "annotator": f"a{a + 1}",
                                "dimension": "Overall", "score": score})
    return _import(tmp_path, "usr", items, responses, ratings, {"Overall": (1, 5)}), data


def test_usr_overall_alpha_equals_krippendorff(tmp_path):
    con, data = _usr_store(tmp_path)
    table = A.agreement(con, "usr", bootstrap=200, seed=0)
    overall = table[table["dimension"] == "Overall"].set_index("statistic")
    reliability = np.array([[r["Overall"][a] for ctx in data for r in ctx["responses"]] for a in range(3)], float)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
        assert math.isclose(overall.loc[f"krippendorff_alpha_{level}", "value"], expected, abs_tol=1e-6)
    row = overall.loc["krippendorff_alpha_interval"]
    assert row["ci_low"] < row["value"] < row["ci_high"] and row["n_items"] == 360 and row["n_annotators"] == 3
    fleiss = overall.loc["fleiss_kappa"]
    counts = np.stack([np.bincount(col.astype(int), minlength=6)[1:] for col in reliability.T])
    assert math.isclose(fleiss["value"], inter_rater.fleiss_kappa(counts), abs_tol=1e-9)
    cohen = table[(table["statistic"] == "cohen_kappa_quadratic") & (table["annotators"] == "a1|a2")].iloc[0]
    table2 = np.zeros((5, 5))
    np.add.at(table2, (reliability[0].astype(int) - 1, reliability[1].astype(int) - 1), 1)
    assert math.isclose(cohen["value"], inter_rater.cohens_kappa(table2, wt="quadratic", return_results=False),
                        abs_tol=1e-9)


def _grade_store(tmp_path):
    """GRADE's 1,200 rated responses, 8-11 crowd scores each (1-5). The scores of one response come
    from different workers, so annotator ids are slots (s1..s11): alpha and Fleiss are meaningful,
    pairwise Cohen between slots is not."""
    data = json.loads(shared("grade", "evaluation", "human_score", "human_judgement.json").read_text(encoding="utf-8"))
    items, responses, ratings = [], [], []
    for row in data:
        iid, track = f"g{row['ID']:04d}", "grade/" + row["Dataset"].removesuffix("_EVAL")
        items.append({"item_id": iid, "dataset": "grade", "track": track,
                      "context": row["Context"].split("|||"), "references": []})
        responses.append({"item_id": iid, "model": row["DialogModel"], "response": row["Response"]})
        for a, score in enumerate(json.loads(row["HumanScores"])):
            ratings.append({"item_id": iid, "model": row["DialogModel"], "annotator": f"s{a + 1:02d}",
                            "dimension": "Quality", "score": score})
    return _import(tmp_path, "grade", items, responses, ratings, {"Quality": (1, 5)}), data


def test_grade_alpha_and_fleiss_equal_independent_implementations(tmp_path):
    con, data = _grade_store(tmp_path)
    table = A.agreement(con, "grade", bootstrap=50, seed=0)
    tracks = sorted(set(table["track"]))
    assert tracks == ["grade/convai2", "grade/dailydialog", "grade/empatheticdialogues"]
    for track in tracks:
        rows = [json.loads(r["HumanScores"]) for r in data if "grade/" + r["Dataset"].removesuffix("_EVAL") == track]
        width = max(len(r) for r in rows)   # ragged: 8 to 11 scores per response, NaN where absent
        reliability = np.full((width, len(rows)), np.nan)
        for j, r in enumerate(rows):
            reliability[: len(r), j] = r
        got = table[table["track"] == track].set_index("statistic")
        for level in ("nominal", "ordinal", "interval"):
            expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
            assert math.isclose(got.loc[f"krippendorff_alpha_{level}", "value"], expected, abs_tol=1e-6)
        assert got.loc["krippendorff_alpha_interval", "n_items"] == len(rows)
        # Fleiss needs a fixed number of raters: the table uses the responses with the modal count (10)
        tens = [r for r in rows if len(r) == 10]
        counts = np.stack([np.bincount(r, minlength=6)[1:] for r in tens])
        fleiss = got.loc["fleiss_kappa"]
        assert fleiss["n_items"] == len(tens) and fleiss["annotators"] == "10 per item"
        assert math.isclose(fleiss["value"], inter_rater.fleiss_kappa(counts), abs_tol=1e-9)


def test_agreement_cli_and_same_seed_same_ci(tmp_path, capsys):
    con, _ = _usr_store(tmp_path)
    con.close()
    db = str(tmp_path / "usr.duckdb")
    assert main(["agreement", "--db", db, "--dataset", "usr", "--format", "csv", "--bootstrap", "100"]) == 0
    first = capsys.readouterr().out
    header = first.splitlines()[0].split(",")
    assert header[:4] == ["track", "dimension", "level", "statistic"] and {"value", "ci_low", "ci_high", "n_items",
                                                                   "n_annotators"} <= set(header)
    assert "krippendorff_alpha_interval" in first
    assert main(["agreement", "--db", db, "--dataset", "usr", "--format", "csv", "--bootstrap", "100"]) == 0
    assert capsys.readouterr().out == first


def test_aggregation_rules(con, tmp_path):
    from evalcore.analysis.correlate import human_scores
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses

    import_items(con, write_jsonl(tmp_path / "i.jsonl", [
        {"item_id": f"x{i}", "dataset": "d", "track": "d/chat", "context": ["hi"], "references": []} for i in range(3)]))
    (tmp_path / "s.csv").write_text("item_id,model,response\nx0,m,a\nx1,m,b\nx2,m,c\n", encoding="utf-8")
    import_responses(con, tmp_path / "s.csv", dataset="d", track="d/chat")
    (tmp_path / "r.csv").write_text(
        "item_id,model,annotator,dimension,score\n"
        "x0,m,a,Q,1\nx0,m,b,Q,2\nx0,m,c,Q,2\n"      # mean 5/3, median 2, majority 2, range 1 -> 5/3
        "x1,m,a,Q,1\nx1,m,b,Q,3\n"                 # mean 2, median 2, no majority, range 2 -> dropped
        "x2,m,a,Q,4\nx2,m,b,Q,4\n", encoding="utf-8")
    import_ratings(con, tmp_path / "r.csv", dataset="d", track="d/chat", scales={"Q": (1, 5)})

    def values(rule):
        frame = human_scores(con, "d", "d/chat", "turn", rule)
        return dict(zip(frame["unit"].str.split("\x1f").str[0], frame["value"]))

    assert values("mean") == pytest.approx({"x0": 5 / 3, "x1": 2, "x2": 4})
    assert values("median") == pytest.approx({"x0": 2, "x1": 2, "x2": 4})
    assert values("majority") == pytest.approx({"x0": 2, "x2": 4})
    assert values("pair-filter") == pytest.approx({"x0": 5 / 3, "x2": 4})
    bias = A.annotator_bias(con, "d").set_index("annotator")
    # a: x0 1 vs unit mean 5/3, x1 1 vs 2, x2 4 vs 4 -> mean diff (-2/3 - 1 + 0) / 3
    assert bias.loc["a", "bias"] == pytest.approx((-2 / 3 - 1) / 3)


def test_human_page_on_usr(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from support import ROOT

    con, _ = _usr_store(tmp_path)
    con.close()
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "usr.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/views/human.py")
    at.query_params["dataset"] = "usr"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert "krippendorff_alpha_interval" in set(table["statistic"])
    assert at.query_params["dimension"] == "Overall"


# ---------------------------------------------------------------- MME-CRS
def test_crs_weights_by_hand():
    from evalcore.analysis.ensemble import crs_weights

    w = crs_weights(pd.Series({"a": 0.5, "b": -0.2, "c": 0.25}), power=2)
    # 0.25 / (0.25 + 0.0625) = 0.8, 0.0625 / 0.3125 = 0.2, negative -> 0
    assert w.to_dict() == pytest.approx({"a": 0.8, "b": 0.0, "c": 0.2})


def test_crs_on_msde_paper_recomputed_independently(tmp_path):
    """Leave-one-competition-out on the paper's tables, redone here from the CSVs with scipy."""
    from scipy.stats import pearsonr, spearmanr

    from evalcore.analysis.ensemble import ensemble
    from evalcore.ingest.formats.published import import_published
    from evalcore.services.defaults import MSDE_SCALES
    from evalcore.store import connect
    from support import ROOT

    con = connect(tmp_path / "d.duckdb")
    import_published(con, ROOT / "data" / "msde-paper", dataset="msde-paper", scales=MSDE_SCALES)
    results, weights = ensemble(con, "msde-paper", holdout="competition")
    auto = pd.read_csv(ROOT / "data" / "msde-paper" / "automatic_system_scores.csv")
    human = pd.read_csv(ROOT / "data" / "msde-paper" / "human_system_scores.csv")
    for frame in (auto, human):
        frame["track"] = frame["competition"] + "/" + frame["skill"]

    def table(track):
        m = auto[auto["track"] == track].pivot_table(index="model", columns="metric", values="value")
        sd = m.std(ddof=0)
        m = m.loc[:, sd > 0]
        return (m - m.mean()) / m.std(ddof=0), human[human["track"] == track].pivot_table(
            index="model", columns="dimension", values="value")

    dim, held = "Info", "luge/knowledge"
    fit = [t for t in sorted(auto["track"].unique()) if not t.startswith("luge/")]
    ws = []
    for t in fit:
        z, h = table(t)
        r = pd.Series({m: spearmanr(z[m], h[dim])[0] for m in z.columns}).fillna(0).clip(lower=0) ** 2
        ws.append(r / r.sum())
    w = pd.concat(ws, axis=1).fillna(0).mean(axis=1)
    got = weights[(weights["holdout"] == "luge") & (weights["dimension"] == dim)].set_index("metric")["weight"]
    assert got.to_dict() == pytest.approx(w.to_dict(), abs=1e-9)
    z, h = table(held)
    use = [m for m in w.index if m in z.columns and w[m] > 0]
    score = z[use] @ (w[use] / w[use].sum())
    row = results[(results["track"] == held) & (results["dimension"] == dim) & (results["method"] == "CRS")].iloc[0]
    assert row["pearson"] == pytest.approx(pearsonr(score, h.loc[score.index, dim])[0], abs=1e-9)
    avg = results[(results["track"] == held) & (results["dimension"] == dim) & (results["method"] == "Avg")].iloc[0]
    assert avg["spearman"] == pytest.approx(spearmanr(z.mean(axis=1), h.loc[z.index, dim])[0], abs=1e-9)


# ---------------------------------------------------------------- response ranking
def test_rank_metrics_by_hand():
    from evalcore.analysis.ranking import rank_metrics

    # item 1: ranked [neg, pos, pos] -> P@1 0, AP (1/2 + 2/3) / 2 = 7/12, RR 1/2
    # item 2: ranked [pos, neg]      -> P@1 1, AP 1, RR 1
    groups = [(np.array([0.9, 0.5, 0.1]), np.array([False, True, True])),
              (np.array([0.2, 0.8]), np.array([False, True]))]
    out = rank_metrics(groups)
    assert out["p_at_1"] == pytest.approx(0.5)
    assert out["map"] == pytest.approx((7 / 12 + 1) / 2)
    assert out["mrr"] == pytest.approx(0.75)


def test_ranking_on_usr_topicalchat(tmp_path, capsys):
    con, data = _usr_store(tmp_path)
    from evalcore.analysis.ranking import ranking

    table = ranking(con, "usr", rankers=["tfidf", "bm25"])
    assert set(table["ranker"]) == {"tfidf", "bm25"} and set(table["threshold"]) == {3, 4, 5}
    # items kept at threshold 4: those with both a candidate at mean >= 4 and one below, recounted here
    kept = sum(1 for ctx in data
               if len({np.mean(r["Overall"]) >= 4 for r in ctx["responses"]}) == 2)
    row = table[(table["ranker"] == "tfidf") & (table["threshold"] == 4)].iloc[0]
    assert row["n_items"] == kept and row["n_items"] + row["n_dropped"] == 60
    assert 0 <= row["p_at_1"] <= 1 and row["mrr"] >= row["p_at_1"]
    con.close()
    assert main(["ranking", "--db", str(tmp_path / "usr.duckdb"), "--dataset", "usr", "--rankers", "bm25",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("track,dimension,ranker,threshold,p_at_1,map,mrr")


def test_engagement_en_alpha_and_fleiss_from_the_amt_file(con):
    """The embedded engagement-en (shipped, so never skipped): alpha and Fleiss recomputed by the
    packages from the AMT file itself, parsed here with csv."""
    from evalcore.ingest.builtin.engagement import build_engagement
    from evalcore.services.defaults import DATA_DIR

    build_engagement(con, DATA_DIR / "engagement-en")
    with open(DATA_DIR / "engagement-en" / "DailyDialog_groungtruth_annotated.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for row in rows:
        for k in range(1, 11):
            pair = (row[f"Input.query{k}"].strip(), row[f"Input.response{k}"].strip())
            scores.setdefault(pair, {})[row["WorkerId"]] = float(row[f"Answer.pair{k}"])
    workers = sorted({w for s in scores.values() for w in s})
    reliability = np.array([[s.get(w, np.nan) for s in scores.values()] for w in workers])
    table = A.agreement(con, "engagement-en", bootstrap=0).set_index("statistic")
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
        assert math.isclose(table.loc[f"krippendorff_alpha_{level}", "value"], expected, abs_tol=1e-6)
    counts = np.stack([np.bincount(np.array(list(s.values()), int), minlength=6)[1:] for s in scores.values()])
    assert counts.sum(axis=1).tolist() == [3] * 300
    assert math.isclose(table.loc["fleiss_kappa", "value"], inter_rater.fleiss_kappa(counts), abs_tol=1e-9)
    # Cohen rows only for pairs of workers who rated a pair in common
    pairs = table.loc["cohen_kappa_linear"]
    shared_pairs = {"|".join(sorted((a, b))) for s in scores.values() for a in s for b in s if a < b}
    assert set(pairs["annotators"]) == shared_pairs and (pairs["n_items"] > 0).all()


def test_agreement_over_one_unit_is_withheld_with_the_reason():
    """Three annotators on one unit: Fleiss' kappa of that one unit is -0.5 here (p_e from its own
    proportions: (1/3)^2 + (2/3)^2 = 5/9, P = 1/3, (1/3 - 5/9) / (1 - 5/9) = -1/2), a number that says nothing
    about the people; it is withheld with the reason. Two units: shown."""
    from evalcore.analysis.agreement import MIN_UNITS, agreement_of, vote_agreement

    one = pd.DataFrame({"track": "t", "dimension": "Coh", "unit": "u1", "annotator": ["a", "b", "c"],
                        "score": [1.0, 2.0, 2.0]})
    assert A.fleiss_from_counts(np.array([[1.0, 2.0]])) == pytest.approx(-0.5)
    out = agreement_of(one, bootstrap=50).set_index("statistic")
    assert MIN_UNITS == 2
    assert np.isnan(out.loc["fleiss_kappa", "value"]) and np.isnan(out.loc["fleiss_kappa", "ci_low"])
    assert out.loc["fleiss_kappa", "note"] == ("withheld: over 1 unit(s); agreement needs at least 2 units rated "
                                               "by the same people")
    assert out["value"].isna().all()   # every kappa and alpha over the one unit
    two = pd.concat([one, one.assign(unit="u2", score=[1.0, 1.0, 2.0])], ignore_index=True)
    shown = agreement_of(two, bootstrap=50).set_index("statistic")
    assert shown.loc["fleiss_kappa", "n_items"] == 2 and not np.isnan(shown.loc["fleiss_kappa", "value"])
    assert not shown["note"].str.startswith("withheld: over").any()   # values shown (intervals: see the bootstrap test)
    votes = vote_agreement(one.assign(score=[1.0, 0.0, 1.0]), bootstrap=50).set_index("statistic")
    # pairs (a,b) (a,c) (b,c): one agrees; a share keeps its value, its interval is withheld
    assert votes.loc["vote_agreement_with_ties", "value"] == pytest.approx(1 / 3)
    assert np.isnan(votes.loc["vote_agreement_with_ties", "ci_low"])
    assert votes.loc["vote_agreement_with_ties", "note"].endswith("for an interval")
