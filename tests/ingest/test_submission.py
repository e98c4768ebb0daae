"""One model's responses for every track in one file (one transaction), refusals that name the track an
item belongs to and summarise thousands of problems, coverage notes, and the template to fill in."""
from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.responses import import_responses
from evalcore.ingest.template import render, template
from support import fingerprint


def _csv(path, rows: list[str]):
    path.write_text("track,item_id,response\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_track_in_one_file(toy, tmp_path):
    path = _csv(tmp_path / "all.csv", ["toy/chitchat,t1,好的", "toy/chitchat,t2,嗯", "toy/knowledge,k1,看过"])
    report = import_responses(toy, path, dataset="toy", model="multi")
    assert report.tracks == ["toy/chitchat", "toy/knowledge"]
    rows = toy.execute("SELECT i.track, count(*) FROM responses r JOIN items i USING (dataset, item_id) "
                       "WHERE r.model = 'multi' GROUP BY 1 ORDER BY 1").fetchall()
    assert rows == [("toy/chitchat", 2), ("toy/knowledge", 1)]
    assert "coverage of toy/chitchat: 2 of 2 items (100.00%)" in report.notes


def test_one_bad_row_in_the_last_track_changes_nothing(toy, tmp_path):
    path = _csv(tmp_path / "bad.csv", ["toy/chitchat,t1,好的", "toy/knowledge,k1,看过", "toy/knowledge,t2,嗯"])
    before = fingerprint(toy)
    with pytest.raises(ImportRefused) as err:
        import_responses(toy, path, dataset="toy", model="multi")
    # the id exists, in another track: the message says which
    assert ("bad.csv, row 4, field 'item_id': expected an item of track 'toy/knowledge' in dataset 'toy', "
            "got 't2', an item of track 'toy/chitchat'") in str(err.value)
    assert fingerprint(toy) == before


def test_unknown_track_and_missing_track_column(toy, tmp_path):
    path = _csv(tmp_path / "t.csv", ["toy/nope,t1,好的"])
    with pytest.raises(ImportRefused, match=r"row 2, field 'track': expected a track of dataset 'toy': "
                                            r"toy/chitchat, toy/knowledge, got 'toy/nope'"):
        import_responses(toy, path, dataset="toy", model="m")
    plain = tmp_path / "plain.csv"
    plain.write_text("item_id,response\nt1,好的\n", encoding="utf-8")
    with pytest.raises(ImportRefused, match=r"field 'track': expected a column named 'track' \(or name one track "
                                            r"with --track\)"):
        import_responses(toy, plain, dataset="toy", model="m")
    with pytest.raises(ImportRefused, match=r"field 'track': expected 'toy/chitchat' \(the track named with --track\), "
                                            r"got 'toy/knowledge'"):
        import_responses(toy, _csv(tmp_path / "x.csv", ["toy/knowledge,k1,看过"]), dataset="toy",
                         track="toy/chitchat", model="m")


def test_thousands_of_problems_are_summarised(toy, tmp_path):
    path = _csv(tmp_path / "many.csv", [f"toy/chitchat,x{k},嗯" for k in range(4000)])
    with pytest.raises(ImportRefused) as err:
        import_responses(toy, path, dataset="toy", model="m")
    text = err.value.render()
    assert "4,000 problem(s)" in text
    assert "by kind:\n  4,000 x field 'item_id': expected an item of track 'toy/chitchat' in dataset 'toy'" in text
    assert text.count("\n  - ") == 20 and "... and 3,980 more problem(s)" in text


def test_partial_submission_is_accepted_with_a_warning(toy, tmp_path):
    report = import_responses(toy, _csv(tmp_path / "p.csv", ["toy/chitchat,t1,好的"]), dataset="toy", model="part")
    assert "warning: partial submission: coverage of toy/chitchat: 1 of 2 items (50.00%)" in report.notes[1]


def test_template_round_trip(toy, tmp_path, capsys):
    frame = template(toy, "toy")
    assert list(frame.columns) == ["track", "item_id", "context", "reference", "response"]
    assert frame[["track", "item_id", "reference"]].values.tolist() == [
        ["toy/chitchat", "t1", "今天天气不错"], ["toy/chitchat", "t2", ""], ["toy/knowledge", "k1", "看过"]]
    assert frame["context"].tolist()[0] == ["你好", "你好呀"]
    # filled in and imported back as it is, every track at once
    filled = pd.read_csv(io.BytesIO(render(frame, "csv")), encoding="utf-8-sig", keep_default_na=False)
    assert filled["context"].tolist()[0] == "你好\n你好呀"
    filled["response"] = ["一", "二", "三"]
    filled.to_csv(tmp_path / "filled.csv", index=False)
    assert import_responses(toy, tmp_path / "filled.csv", dataset="toy", model="from-template").tracks == [
        "toy/chitchat", "toy/knowledge"]
    lines = render(template(toy, "toy", "toy/knowledge"), "jsonl").decode().splitlines()
    assert [json.loads(x)["item_id"] for x in lines] == ["k1"]
    with pytest.raises(ValueError, match="no track 'toy/x' in dataset 'toy'; known: toy/chitchat, toy/knowledge"):
        template(toy, "toy", "toy/x")


def test_template_and_multi_track_cli(tmp_path, capsys):
    from evalcore.ingest.formats.items import import_items
    from evalcore.store import connect
    from support import TOY_ITEMS, write_jsonl

    db = tmp_path / "s.duckdb"
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    con.close()
    assert main(["template", "--db", str(db), "--dataset", "toy", "--format", "xlsx", "--out", str(tmp_path / "t.xlsx")]) == 0
    sheet = pd.read_excel(tmp_path / "t.xlsx", keep_default_na=False)
    assert sheet["item_id"].tolist() == ["t1", "t2", "k1"]
    sheet["response"] = ["a", "b", "c"]
    sheet.to_excel(tmp_path / "filled.xlsx", index=False)
    assert main(["import", "responses", str(tmp_path / "filled.xlsx"), "--db", str(db), "--dataset", "toy",
                 "--model", "cli-multi"]) == 0
    assert "coverage of toy/knowledge: 1 of 1 items" in capsys.readouterr().out
