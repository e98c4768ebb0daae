"""The MSDE release from ../shared/data/msde: every workbook imports, counted independently here."""
from __future__ import annotations

import shutil
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.msde import import_msde
from evalcore.store import connect, queries
from support import fingerprint, shared

TRACKS = {"Lic 2021_CPC": "lic2021/persona", "Lic 2021_DuConv": "lic2021/knowledge",
          "Lic 2021_DuRecDial": "lic2021/recommendation", "CCF LUGE_LCCC": "luge/chitchat",
          "CCF LUGE_DuConv": "luge/knowledge", "CCF LUGE_DuRecDial": "luge/recommendation"}


def expected_counts(root: Path) -> dict[str, dict[str, int]]:
    """Per track, straight from the sheets: generation rows, non-empty human score cells, files."""
    out = {}
    for folder, track in TRACKS.items():
        responses = ratings = files = 0
        for path in sorted((root / "data" / folder).glob("*.xlsx")):
            files += 1
            wb = openpyxl.load_workbook(path, read_only=True)
            for ws in wb.worksheets:
                rows = list(ws.iter_rows(values_only=True))
                if str(rows[0][0]).lower() != "history":
                    continue
                if len(rows[0]) == 2:
                    responses += len(rows) - 1
                else:
                    ratings += sum(v is not None for row in rows[1:-1] for v in row[2:])
            wb.close()
        out[track] = {"responses": responses, "human_ratings": ratings, "models": files}
    return out


@pytest.fixture(scope="module")
def msde_store(tmp_path_factory):
    root = shared("msde")
    con = connect(tmp_path_factory.mktemp("msde") / "s.duckdb")
    report = import_msde(con, root, progress=False)
    yield con, report, root
    con.close()


def test_every_workbook_imports_with_sheet_counts(msde_store):
    con, report, root = msde_store
    expected = expected_counts(root)
    assert sum(e["models"] for e in expected.values()) == 21
    got = queries.summary(con, "msde").set_index("track")
    for track, counts in expected.items():
        for column, value in counts.items():
            assert got.loc[track, column] == value, (track, column)
    assert got.loc["lic2021/persona", "references"] == 4000  # CPC's JSONL gives the references
    assert "629 linked" in report.notes[0] and "1 kept as their own" in report.notes[0]


def test_published_sheet_values_become_fractions(msde_store):
    con, _, _ = msde_store
    rows = dict(con.execute("SELECT model || ':' || name, value FROM system_scores "
                            "WHERE dataset = 'msde' AND track = 'lic2021/persona' AND origin = 'published'").fetchall())
    # the release's f1 column is x100 (18.64); the paper prints 0.20 for Qwen's F1
    assert rows["qianwen:F1"] == pytest.approx(0.1864)
    assert rows["baichuan:F1"] == pytest.approx(0.0080)
    assert rows["llama:F1"] == pytest.approx(0.0109)
    assert rows["qianwen:BLEU1"] == 0.17 and rows["qianwen:DIST2"] == 0.57


def test_cpc_items_carry_history_persona_and_reference(msde_store):
    import json

    con, _, root = msde_store
    first = json.loads((root / "data" / "Lic 2021_CPC" / "Lic 2021_CPC.txt").read_text("utf-8").splitlines()[0])
    context, grounding = con.execute(
        "SELECT context, grounding FROM items WHERE dataset = 'msde' AND item_id = 'lic2021-CPC-00001'").fetchall()[0]
    assert json.loads(context) == first["history"]
    assert json.loads(grounding)["persona"] == list(first["profile"].values())
    ref = con.execute("SELECT text FROM item_references WHERE item_id = 'lic2021-CPC-00001'").fetchall()
    assert ref == [(first["response"],)]


def test_lccc_unnamed_columns_are_info_and_coh(msde_store):
    con, _, _ = msde_store
    dims = {d for (d,) in con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE track = 'luge/chitchat'").fetchall()}
    assert dims == {"Info", "Coh"}


def test_reimport_is_refused(msde_store):
    con, _, root = msde_store
    with pytest.raises(ImportRefused, match="already imported"):
        import_msde(con, root, progress=False)


def test_bad_score_refuses_the_whole_release(tmp_path):
    root = shared("msde")
    copy = tmp_path / "msde" / "data"
    shutil.copytree(root / "data" / "CCF LUGE_LCCC", copy / "CCF LUGE_LCCC")
    shutil.copytree(root / "data" / "Lic 2021_CPC", copy / "Lic 2021_CPC")
    bad = copy / "CCF LUGE_LCCC" / "qianwen.xlsx"
    wb = openpyxl.load_workbook(bad)
    wb.worksheets[1]["C5"] = 7
    wb.save(bad)
    con = connect(tmp_path / "s.duckdb")
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_msde(con, tmp_path / "msde", progress=False)
    message = str(err.value)
    assert "qianwen.xlsx" in message and "row 5" in message and "field 'Info'" in message
    assert "expected a score from 0 to 2 or an empty cell, got 7" in message
    assert fingerprint(con) == before


# Published corpus-level numbers of the release's automatic sheets (CPC), as the issue lists them.
PUBLISHED_CPC = {
    ("qianwen", "F1"): (0.1864, 4), ("baichuan", "F1"): (0.0080, 4), ("llama", "F1"): (0.0109, 4),
    ("qianwen", "BLEU1"): (0.17, 2), ("qianwen", "BLEU2"): (0.06, 2), ("qianwen", "DIST1"): (0.16, 2),
    ("qianwen", "DIST2"): (0.57, 2), ("baichuan", "BLEU1"): (0.00, 2), ("baichuan", "DIST1"): (0.73, 2),
    ("baichuan", "DIST2"): (0.88, 2),
}


def test_msde_flavor_reproduces_published_cpc_numbers(msde_store):
    from evalcore.analysis import leaderboard as lb
    from evalcore.scoring import score

    con, _, _ = msde_store
    score(con, dataset="msde", track="lic2021/persona", metrics="F1,BLEU1,BLEU2,DIST1,DIST2",
          flavor="msde", progress=False)
    board = lb.leaderboard(con, "msde", "lic2021/persona", flavor="msde").set_index(["model", "origin"])
    for (model, metric), (value, digits) in PUBLISHED_CPC.items():
        assert round(board.loc[(model, "computed"), metric], digits) == value, (model, metric)
        assert board.loc[(model, "published"), metric] == pytest.approx(value)
    # chatglm's released responses give 11.75 (not the published 1.47): ../shared/data/README.md
    assert round(board.loc[("chatglm", "computed"), "F1"], 4) == 0.1175


def test_one_csv_answers_all_six_tracks(msde_store, tmp_path):
    """The release's qianwen responses for all six tracks, under a new name, in one file and one command;
    a copy with one bad row in the last track changes nothing anywhere."""
    from evalcore.core.errors import ImportRefused
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.store import queries
    from support import fingerprint

    con, _, _ = msde_store
    rows = con.execute("""
        SELECT i.track, r.item_id, r.text AS response FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = 'msde' AND r.model = 'qianwen' ORDER BY i.track, r.item_id""").df()
    assert rows["track"].nunique() == 6 and len(rows) == 39190
    good = tmp_path / "qianwen-all.csv"
    rows.to_csv(good, index=False)
    bad = tmp_path / "qianwen-bad.csv"
    broken = rows.copy()
    broken.loc[len(broken) - 1, "item_id"] = broken.loc[0, "item_id"]  # last track's last row: an item of the first track
    broken.to_csv(bad, index=False)
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_responses(con, bad, dataset="msde", model="qianwen-again")
    assert f"an item of track {rows['track'].iloc[0]!r}" in str(err.value)
    assert fingerprint(con) == before
    report = import_responses(con, good, dataset="msde", model="qianwen-again")
    assert report.tracks == sorted(rows["track"].unique())
    summary = queries.models(con, "msde")
    mine = summary[summary["model"] == "qianwen-again"]
    assert len(mine) == 1 and mine.iloc[0]["responses"] == 39190
    tracks = con.execute("""SELECT count(DISTINCT i.track) FROM responses r JOIN items i USING (dataset, item_id)
                            WHERE r.model = 'qianwen-again'""").fetchall()[0][0]
    assert tracks == 6


def test_a_ten_item_submission_is_shown_with_its_coverage_and_not_ranked(msde_store, tmp_path):
    """leaderboard --track lic2021/persona --rank-by BLEU4: rank, its bootstrap interval, coverage, origin;
    10 of the CPC track's 4,000 items is coverage 0.0025 and no rank unless partial ones are ranked."""
    from evalcore.analysis.leaderboard import leaderboard
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    con, _, _ = msde_store
    ten = con.execute("""SELECT r.item_id, r.text AS response FROM responses r JOIN items i USING (dataset, item_id)
                         WHERE i.track = 'lic2021/persona' AND r.model = 'qianwen' ORDER BY r.item_id LIMIT 10""").df()
    ten.to_csv(tmp_path / "ten.csv", index=False)
    import_responses(con, tmp_path / "ten.csv", dataset="msde", track="lic2021/persona", model="ten-items")
    score(con, dataset="msde", track="lic2021/persona", metrics="BLEU4", progress=False)
    board = leaderboard(con, "msde", "lic2021/persona", rank_by="BLEU4")
    assert {"rank", "rank_ci_low", "rank_ci_high", "coverage", "origin"} <= set(board.columns)
    computed = board[board["origin"] == "computed"].set_index("model")
    assert computed.loc["ten-items", "coverage"] == 10 / 4000 == 0.0025
    assert pd.isna(computed.loc["ten-items", "rank"])
    ranked = computed.dropna(subset=["rank"])
    assert len(ranked) == len(computed) - 1 and (ranked["coverage"] == 1.0).all()
    # ranks follow BLEU4 (higher first, ties share a rank) and sit inside their intervals
    expected = ranked["BLEU4"].rank(ascending=False, method="min")
    assert (ranked["rank"].astype(float) == expected).all()
    assert ((ranked["rank_ci_low"] <= ranked["rank"]) & (ranked["rank"] <= ranked["rank_ci_high"])).all()
    # published rows are ranked among themselves only, never with computed ones
    assert board[board["origin"] == "published"]["rank"].isna().all()   # the release has no published BLEU4
    with_partial = leaderboard(con, "msde", "lic2021/persona", rank_by="BLEU4", partial=True)
    assert with_partial.set_index(["model", "origin"]).loc[("ten-items", "computed"), "rank"] >= 1
