"""History instead of overwrite: every import is a submission; a replace or a delete sets rows aside,
restore brings back exactly what was there, purge drops it for good."""
from __future__ import annotations

import io

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from evalcore.store import history

MODEL_ROWS = {
    "responses": "SELECT dataset, item_id, model, text, origin, submission_id FROM responses WHERE model = 'm1'",
    "human_ratings": "SELECT * FROM human_ratings WHERE model = 'm1'",
    "system_scores": "SELECT * FROM system_scores WHERE model = 'm1'",
    "models": "SELECT model FROM models WHERE model = 'm1'",
}


def _state(con) -> dict:
    return {k: sorted(con.execute(q).fetchall(), key=repr) for k, q in MODEL_ROWS.items()}


def test_every_import_is_a_submission_with_file_hash_and_rows(toy, tmp_path):
    import hashlib

    frame = history.listing(toy, "toy")
    first = frame.iloc[-1]   # the toy fixture's items, then its responses
    assert list(frame["kind"]) == ["import", "import"]
    responses = frame.iloc[0]
    path = tmp_path / "resp.csv"
    assert responses["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert responses["file"].endswith("resp.csv") and responses["models"] == "m1, m2"
    assert responses["tracks"] == "toy/chitchat" and '"responses": 3' in responses["rows_written"]
    assert first["sha256"] == hashlib.sha256((tmp_path / "items.jsonl").read_bytes()).hexdigest()


def test_replace_then_restore_gives_back_exactly_the_old_responses_and_scores(toy, tmp_path):
    score(toy, dataset="toy", progress=False)
    toy.execute("INSERT INTO human_ratings VALUES ('toy', 'toy/chitchat', 'response', 't1', NULL, 'm1', 'a', "
                "'Overall', 4, NULL, 'test')")
    before = _state(toy)
    new = tmp_path / "new.csv"
    new.write_text("item_id,response\nt1,全新的回答\nt2,另一个\n", encoding="utf-8")
    report = import_responses(toy, new, dataset="toy", track="toy/chitchat", model="m1", replace=True)
    assert any("set aside" in n for n in report.notes)
    after = _state(toy)
    assert [r[3] for r in after["responses"]] == ["全新的回答", "另一个"] and after["human_ratings"] == []
    replace = history.listing(toy, "toy").iloc[0]
    assert replace["kind"] == "replace" and replace["set_aside"] == 2 + 1 + len(before["system_scores"])
    assert replace["state"] == f"restorable: python -m evalcore restore {replace['submission_id']}"
    restored = history.restore(toy, int(replace["submission_id"]))
    assert _state(toy) == before   # exactly the old responses, ratings and scores
    # the restore is itself undoable: the replacement comes back
    history.restore(toy, restored)
    assert [r[3] for r in _state(toy)["responses"]] == ["全新的回答", "另一个"]
    with pytest.raises(ValueError, match="already undone"):
        history.restore(toy, int(replace["submission_id"]))


def test_delete_model_is_undoable_until_purge(toy, tmp_path, capsys):
    score(toy, dataset="toy", progress=False)
    before = _state(toy)
    sid = history.delete_model(toy, "m1")
    assert all(not rows for rows in _state(toy).values())
    history.restore(toy, sid)
    assert _state(toy) == before
    sid = history.delete_model(toy, "m1")
    counts = history.purge(toy, sid)
    assert counts["responses"] == 2
    with pytest.raises(ValueError, match="purged"):
        history.restore(toy, sid)
    assert toy.execute("SELECT count(*) FROM archived_responses WHERE model = 'm1'").fetchall() == [(0,)]


def test_history_cli(toy, tmp_path, capsys):
    db = toy.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    toy.close()
    assert main(["delete-model", "m2", "--db", db, "--yes"]) == 0
    out = capsys.readouterr().out
    assert "python -m evalcore restore 3" in out
    assert main(["submissions", "--db", db, "--model", "m2", "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(frame["kind"]) == ["delete", "import"] and frame.loc[0, "set_aside"] == 1
    assert main(["restore", "3", "--db", db]) == 0
    assert "restored what submission 3 set aside" in capsys.readouterr().out
    assert main(["restore", "99", "--db", db]) != 0
    assert "no submission 99" in capsys.readouterr().err
    assert main(["purge", "3", "--db", db]) == 1   # without --yes it only tells
