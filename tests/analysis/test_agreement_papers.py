"""Agreement as two dialogue papers printed it, recomputed from their released files through the documented
importers and `evalcore agreement`, and independently here with scipy:

- USR (Mehri & Eskenazi, ACL 2020), its inter-annotator agreement table: per quality, Spearman and Pearson
  between the three annotation columns as released (pairs 1-2, 1-3, 2-3), over every response of the set
  (the original human reply included), averaged over the pairs: `--statistic corr_pairwise --annotators slots`.
- FED (Mehri & Eskenazi, SIGDIAL 2020), Table 3: Spearman of each annotation against the mean of its item's
  annotations (itself included), pooled, after the §3.4 outlier rule: `--statistic corr_item_mean
  --exclude-outliers fed`, turn and dialogue level; the free-text answers ("N/A (...)") imported with
  `--missing "N/A*"`.
- The judge audit on FED's dialogue-level ratings (imported by dialogue_id) with a judge of the local server.
"""
from __future__ import annotations

import csv
import io
import json
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.cli import main
from evalcore.pagedata import audits
from evalcore.store import connect
from support import shared
from support.judge_server import JudgeServer, length_rating

USR_SCALES = {"Understandable": (0, 1), "Natural": (1, 3), "Maintains Context": (1, 3), "Engaging": (1, 3),
              "Uses Knowledge": (0, 1), "Overall": (1, 5)}
# USR's agreement table (Spearman, Pearson per quality). The paper is not in this repository: these are the
# released files' pairwise figures to four decimals, which the issue that asked for this test checked against the
# print (23 of 24 equal; its TopicalChat Overall, 0.7183 / 0.7096, is quoted there). PersonaChat Engaging's
# Spearman is printed with two digits transposed, so it is checked against scipy only (None here).
USR_PRINTED = {
    "tc": {"Understandable": (0.5102, 0.5102), "Natural": (0.4871, 0.4864), "Maintains Context": (0.5599, 0.5575),
           "Engaging": (0.5811, 0.5754), "Uses Knowledge": (0.7090, 0.7090), "Overall": (0.7183, 0.7096)},
    "pc": {"Understandable": (0.2984, 0.2984), "Natural": (0.4842, 0.4716), "Maintains Context": (0.6125, 0.6130),
           "Engaging": (None, 0.4288), "Uses Knowledge": (0.8115, 0.8115), "Overall": (0.6577, 0.6603)},
}
# FED Table 3 (Spearman, inter-annotator agreement), turn and dialogue level
FED_TABLE3 = {
    "turn": {"Interesting": 0.819, "Engaging": 0.798, "Specific": 0.790, "Relevant": 0.753, "Correct": 0.780,
             "Semantically appropriate": 0.682, "Understandable": 0.522, "Fluent": 0.714, "Overall": 0.820},
    "dialogue": {"Coherent": 0.809, "Error recovery": 0.840, "Consistent": 0.562, "Diverse": 0.789, "Depth": 0.833,
                 "Likeable": 0.838, "Understanding": 0.809, "Flexible": 0.816, "Informative": 0.806,
                 "Inquisitive": 0.769, "Overall": 0.830},
}
FED_SCALES = {"Overall": (0, 4), "Understandable": (0, 1), "Consistent": (0, 1)}   # every other quality: 0-2


def cli_table(capsys, *argv) -> pd.DataFrame:
    capsys.readouterr()
    assert main(list(argv)) == 0
    out = capsys.readouterr()
    table = pd.read_csv(io.StringIO(out.out))
    table.attrs["err"] = out.err
    return table


def scale_options(dimensions, scales: dict) -> list[str]:
    return [o for d in sorted(dimensions) for o in ("--scale", "{}={}:{}".format(d, *scales.get(d, (0, 2))))]


@pytest.fixture(scope="module")
def usr_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("usr")
    db = str(tmp / "usr.duckdb")
    for name in ("tc", "pc"):
        raw = json.loads(shared("usr", f"{name}_usr_data.json").read_text(encoding="utf-8"))
        entries = [{"dialogue_id": f"{name}-{n:03d}", "model": r["model"], "context": d["context"],
                    "response": r["response"], "reference": [], "annotations": {q: r[q] for q in USR_SCALES}}
                   for n, d in enumerate(raw) for r in d["responses"]]
        (tmp / f"{name}.json").write_text(json.dumps(entries), encoding="utf-8")
        assert main(["import", "dstc10", str(tmp / f"{name}.json"), "--db", db, "--dataset", "usr",
                     "--track", f"usr/{name}", "--language", "en", *scale_options(USR_SCALES, USR_SCALES)]) == 0
    return db


def test_usr_pairwise_agreement_as_printed(usr_db, capsys):
    table = cli_table(capsys, "agreement", "--db", usr_db, "--dataset", "usr", "--statistic", "corr_pairwise",
                      "--method", "spearman", "pearson", "--annotators", "slots", "--bootstrap", "0",
                      "--format", "csv")
    got = table.set_index(["track", "dimension", "statistic"])["value"]
    assert len(got) == 24
    equal_to_print = 0
    for name in ("tc", "pc"):
        raw = json.loads(shared("usr", f"{name}_usr_data.json").read_text(encoding="utf-8"))
        for quality, printed in USR_PRINTED[name].items():
            columns = np.array([r[quality] for d in raw for r in d["responses"]], float)   # responses x 3
            for k, (method, fn) in enumerate((("spearman", stats.spearmanr), ("pearson", stats.pearsonr))):
                expected = np.mean([fn(columns[:, a], columns[:, b])[0] for a, b in combinations(range(3), 2)])
                value = got[(f"usr/{name}", quality, f"corr_pairwise_{method}")]
                assert value == pytest.approx(expected, abs=1e-9)
                if printed[k] is not None:
                    assert round(value, 4) == printed[k], (name, quality, method)
                    equal_to_print += 1
    assert equal_to_print == 23


def test_usr_ids_and_slots_agree_when_annotators_are_positions(usr_db, capsys):
    """The importer names USR's columns a1, a2, a3: ids and slots are the same raters here."""
    common = ["agreement", "--db", usr_db, "--dataset", "usr", "--track", "usr/tc", "--statistic", "corr_pairwise",
              "corr_loo", "--method", "spearman", "--bootstrap", "0", "--format", "csv"]
    by_id = cli_table(capsys, *common)
    by_slot = cli_table(capsys, *common, "--annotators", "slots")
    assert by_id["value"].tolist() == pytest.approx(by_slot["value"].tolist())
    assert (by_id["value"].to_numpy() != 0).all()


def fed_files(tmp, raw) -> dict[str, list[str]]:
    """FED split the documented way: its turn-level entries as a DSTC10 file (scores in place, N/A answers
    included); its dialogues as a DSTC10 file without scores (the last turn the response) and their ratings as a
    long ratings file by dialogue_id, annotators a1..a5 in list order."""
    turns = [{"dialogue_id": f"t{n:03d}", "model": e["system"], "context": e["context"], "response": e["response"],
              "reference": [], "annotations": e["annotations"]} for n, e in enumerate(raw) if "response" in e]
    dialogues, ratings = [], []
    for n, e in enumerate(e for e in raw if "response" not in e):
        lines = e["context"].split("\n")
        dialogues.append({"dialogue_id": f"d{n:03d}", "model": e["system"], "context": "\n".join(lines[:-1]),
                          "response": lines[-1], "reference": [], "annotations": {}})
        ratings += [{"dialogue_id": f"d{n:03d}", "model": e["system"], "annotator": f"a{k + 1}", "dimension": q,
                     "score": s} for q, scores in e["annotations"].items() for k, s in enumerate(scores)]
    (tmp / "turns.json").write_text(json.dumps(turns), encoding="utf-8")
    (tmp / "dialogues.json").write_text(json.dumps(dialogues), encoding="utf-8")
    with (tmp / "dialogue_ratings.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, ["dialogue_id", "model", "annotator", "dimension", "score"])
        writer.writeheader()
        writer.writerows(ratings)
    return {"turn": sorted({q for e in turns for q in e["annotations"]}),
            "dialogue": sorted({r["dimension"] for r in ratings})}


@pytest.fixture(scope="module")
def fed_db(tmp_path_factory):
    raw = json.loads(shared("fed", "fed_data.json").read_text(encoding="utf-8"))
    tmp = tmp_path_factory.mktemp("fed")
    db = str(tmp / "fed.duckdb")
    qualities = fed_files(tmp, raw)
    base = ["--db", db, "--dataset", "fed"]
    assert main(["import", "dstc10", str(tmp / "turns.json"), *base, "--track", "fed/turn", "--language", "en",
                 "--missing", "N/A*", *scale_options(qualities["turn"], FED_SCALES)]) == 0
    assert main(["import", "dstc10", str(tmp / "dialogues.json"), *base, "--track", "fed/dialogue"]) == 0
    assert main(["import", "ratings", str(tmp / "dialogue_ratings.csv"), *base, "--track", "fed/dialogue",
                 "--missing", "N/A*", *scale_options(set(qualities["dialogue"]) - set(qualities["turn"]),
                                                     FED_SCALES)]) == 0
    return db, raw


def fed_item_mean(raw, level: str, quality: str, rule: bool) -> float:
    """FED's figure computed here: per item its numeric answers; with the rule (non-binary questions), the one
    farthest from the item's mean removed (the first of equally far ones); then every answer against its item's
    mean, pooled."""
    xs, means = [], []
    for e in raw:
        if ("response" in e) != (level == "turn") or quality not in e["annotations"]:
            continue
        v = np.array([s for s in e["annotations"][quality] if isinstance(s, (int, float))], float)
        if rule and len(v) >= 3 and np.abs(v - v.mean()).max() > 0:
            v = np.delete(v, int(np.argmax(np.abs(v - v.mean()))))
        if len(v) >= 2:
            xs += list(v)
            means += [v.mean()] * len(v)
    return stats.spearmanr(xs, means)[0]


def test_fed_table3_at_turn_and_dialogue_level(fed_db, capsys):
    db, raw = fed_db
    table = cli_table(capsys, "agreement", "--db", db, "--dataset", "fed", "--statistic", "corr_item_mean",
                      "--method", "spearman", "--exclude-outliers", "fed", "--bootstrap", "0", "--format", "csv")
    err = table.attrs["err"]
    got = table.set_index(["level", "dimension"])
    assert len(got) == 20
    for level, printed in FED_TABLE3.items():
        for quality, value in printed.items():
            row = got.loc[(level, quality)]
            binary = quality in ("Understandable", "Consistent")
            assert row["value"] == pytest.approx(fed_item_mean(raw, level, quality, rule=not binary), abs=1e-9)
            assert abs(row["value"] - value) <= 0.02, (level, quality, row["value"], value)
            assert ("not applied" if binary else "after FED's outlier rule") in row["note"]
    # the rule removed one answer of five on most items; its counts are reported
    overall = got.loc[("dialogue", "Overall")]
    assert "117 of 625 annotations removed" in overall["note"]
    assert "fed/dialogue dialogue Overall: fed outlier rule removed 117 of 625 annotations" in err
    # without the rule the binary questions are the same and the others are lower
    plain = cli_table(capsys, "agreement", "--db", db, "--dataset", "fed", "--statistic", "corr_item_mean",
                      "--method", "spearman", "--bootstrap", "0", "--format", "csv").set_index(["level", "dimension"])
    assert plain.loc[("turn", "Understandable"), "value"] == pytest.approx(got.loc[("turn", "Understandable"), "value"])
    assert plain.loc[("turn", "Overall"), "value"] < got.loc[("turn", "Overall"), "value"] - 0.1
    assert not plain["note"].str.contains("outlier").any()


def test_fed_answers_that_are_not_numbers_were_counted_not_stored(fed_db):
    db, raw = fed_db
    text = sum(1 for e in raw for v in e["annotations"].values() for s in v if not isinstance(s, (int, float)))
    numbers = sum(1 for e in raw for v in e["annotations"].values() for s in v if isinstance(s, (int, float)))
    con = connect(db, read_only=True)
    stored = con.execute("SELECT count(*) FROM human_ratings WHERE dataset = 'fed'").fetchall()[0][0]
    con.close()
    assert stored == numbers and text > 150


@pytest.fixture(scope="module")
def fed_judged(fed_db):
    """FED scored by a toy judge of the local server: its rating from the answer's length."""
    db, raw = fed_db
    with JudgeServer(rate="length") as srv:
        assert main(["score", "--db", db, "--dataset", "fed", "--metrics", "Judge-Coh", "--judge-base-url", srv.url,
                     "--judge-model", "tiny-judge", "--judge-retries", "1"]) == 0
    return db, raw


def test_judge_audit_on_fed_dialogue_ratings(fed_judged, capsys):
    """The audit sets the toy judge beside people at dialogue level, from the ratings imported by dialogue_id: the
    human ceiling equals the leave-one-out Spearman computed here, and so does the judge's own."""
    db, raw = fed_judged
    table = cli_table(capsys, "judge-audit", "--db", db, "--dataset", "fed", "--bootstrap", "0", "--format", "csv")
    dialogue = table[table["level"] == "dialogue"].set_index(["dimension", "statistic", "who"])
    assert set(dialogue.index.get_level_values("dimension")) == set(FED_TABLE3["dialogue"])
    assert dialogue["signature"].str.endswith("|dialogue:mean-of-turns").all()
    entries = [e for e in raw if "response" not in e]
    judge = np.array([length_rating("Response to evaluate:\n\n" + e["context"].split("\n")[-1]) for e in entries],
                     float)
    for quality in ("Coherent", "Overall", "Error recovery"):
        scores = np.array([[s if isinstance(s, (int, float)) else np.nan for s in e["annotations"][quality]]
                           for e in entries], float)
        people, judged = [], []
        for a in range(5):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                others = np.nanmean(np.delete(scores, a, axis=1), axis=1)
            ok = ~np.isnan(scores[:, a]) & ~np.isnan(others)
            people.append(stats.spearmanr(scores[ok, a], others[ok])[0])
            judged.append(stats.spearmanr(judge[ok], others[ok])[0])
        row = dialogue.loc[(quality, "spearman", "human ceiling (leave-one-out)")]
        assert row["value"] == pytest.approx(np.mean(people), abs=1e-9) and row["n"] == 5
        row = dialogue.loc[(quality, "spearman", "judge (leave-one-out)")]
        assert row["value"] == pytest.approx(np.mean(judged), abs=1e-9)
    ceiling = cli_table(capsys, "judge-audit", "--db", db, "--dataset", "fed", "--part", "headline", "--bootstrap",
                        "0", "--format", "csv")
    assert {"turn", "dialogue"} <= set(ceiling["level"])


def test_human_evaluation_page_shows_the_papers_figures(usr_db, monkeypatch):
    """The page opens on USR's pairwise figure for its first rated track and dimension; picking FED's definition
    and rule puts them in the link."""
    from streamlit.testing.v1 import AppTest

    from support import ROOT

    monkeypatch.setenv("EVALCORE_DB", usr_db)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/views/human.py")
    at.query_params.update({"dataset": "usr", "track": "usr/tc", "dimension": "Overall"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    corr = next(d.value for d in at.dataframe if "statistic" in d.value and
                d.value["statistic"].str.startswith("corr_").any()).set_index("statistic")
    assert round(corr.loc["corr_pairwise_spearman", "value"], 4) == USR_PRINTED["tc"]["Overall"][0]
    assert round(corr.loc["corr_pairwise_pearson", "value"], 4) == USR_PRINTED["tc"]["Overall"][1]
    at.selectbox(key="hu-corr-usr/tc").set_value("corr_item_mean")
    at.selectbox(key="hu-outliers-usr/tc").set_value("fed")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["corr"] == "corr_item_mean" and at.query_params["outliers"] == "fed"
    corr = next(d.value for d in at.dataframe if "statistic" in d.value and
                d.value["statistic"].str.startswith("corr_item_mean").any())
    assert corr["note"].str.contains("after FED's outlier rule").all()


def test_metric_trust_reads_fed_dialogue_ratings_at_dialogue_level(fed_judged, capsys):
    """Metric trust at dialogue level correlates each dialogue's mean judge value with its people's mean, and its
    hover quotes the dialogue-level audit."""
    db, raw = fed_judged
    con = connect(db, read_only=True)
    head = audits.judge_headlines(con, "fed", "Overall", "dialogue")
    con.close()
    assert (head["metric"] == "Judge-Coh").any()
    assert head["audit"].str.contains(r"audit on Overall \(whole dialogues\)").any()
    table = cli_table(capsys, "trust", "--db", db, "--dataset", "fed", "--level", "dialogue", "--dimension",
                      "Overall", "--format", "csv")
    row = table[(table["metric"] == "Judge-Coh") & (table["track"] == "fed/dialogue")].iloc[0]
    entries = [e for e in raw if "response" not in e]
    judge = [length_rating("Response to evaluate:\n\n" + e["context"].split("\n")[-1]) for e in entries]
    people = [np.mean([s for s in e["annotations"]["Overall"] if isinstance(s, (int, float))]) for e in entries]
    assert row["r"] == pytest.approx(stats.spearmanr(judge, people)[0], abs=1e-9)
