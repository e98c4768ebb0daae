"""Blank responses on import (issue 61, B11): accepted, and counted and named where the file is checked: the
Upload page's report (services.upload), `import responses`, and the page's table of what a track holds. Coverage
counts the items answered with something, and says how many more were answered with blanks."""
from __future__ import annotations

from evalcore.cli import main
from evalcore.ingest.formats.items import import_items
from evalcore.pagedata.intake import track_models
from evalcore.services.upload import upload_responses
from support import write_jsonl

N = 30
ITEMS = [{"item_id": f"t{i:02}", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"], "references": ["好"]}
         for i in range(N)]
BLANK = list(range(1, N, 2))   # 15 items answered with whitespace of some kind


def responses_csv(tmp_path, blank=BLANK):
    path = tmp_path / "half.csv"
    cells = ["", " ", "\u3000", "\t"]
    path.write_text("item_id,response\n" + "".join(
        f't{i:02},"{cells[i % 4] if i in blank else "天气很好"}"\n' for i in range(N)), encoding="utf-8")
    return path


def test_the_upload_report_counts_and_names_the_blanks(con, tmp_path):
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    path = responses_csv(tmp_path)
    done = upload_responses(con, path, dataset="toy", track="toy/chitchat", model="m", shown="half.csv")
    text, warnings = done.messages(path, "half.csv")
    said = " | ".join(warnings)
    assert "15 of 30 responses of m in toy/chitchat are empty or whitespace: items t01, t03, t05" in said
    assert "(and 5 more)" in said   # ten named, the rest counted
    assert "partial submission: coverage of toy/chitchat: 15 of 30 items (50.00%) have a response that is not blank; 15 more have only " \
           "an empty or whitespace one" in said
    assert "100.00%" not in text + said
    assert con.execute("SELECT count(*) FROM responses").fetchall() == [(30,)]   # accepted, with the warning
    held = track_models(con, "toy", "toy/chitchat").set_index("model").loc["m"]
    assert (held["responses"], held["blank"], held["coverage"]) == (30, 15, 0.5)


def test_a_file_without_blanks_says_what_it_said(con, tmp_path):
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    path = responses_csv(tmp_path, blank=[])
    done = upload_responses(con, path, dataset="toy", track="toy/chitchat", model="m")
    text, warnings = done.messages(path, "full.csv")
    assert warnings == [] and "coverage of toy/chitchat: 30 of 30 items (100.00%)" in text
    assert track_models(con, "toy", "toy/chitchat")["blank"].tolist() == [0]


def test_import_responses_prints_the_blanks(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "items.jsonl", ITEMS)), "--db", db]) == 0
    assert main(["import", "responses", str(responses_csv(tmp_path)), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat", "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "15 of 30 responses of m in toy/chitchat are empty or whitespace: items t01, t03" in out
    assert "15 of 30 items (50.00%) have a response that is not blank" in out
