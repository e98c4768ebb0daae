"""Evaluation records: export, import into an empty store, verify clean; a value edited inside the record is
named by verify with its item, metric and both values; conflicts refused whole. The MSDE release's record on a
fresh install is in tests/system/test_packaging.py (slow)."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.services import record
from evalcore.services import tasks as task_service
from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support import copy_default_store, edit_record_value, tiny_bert, write_jsonl
from support.judge_server import JudgeServer

ITEMS = [{"item_id": f"d{k}-t1", "dataset": "rec", "track": "rec/knowledge", "dialogue_id": f"d{k}",
          "context": ["你好", f"你看过电影{k}吗？"], "references": [f"看过电影{k}，很好看。", "没看过。"],
          "grounding": {"knowledge": [[f"电影{k}", "导演", f"导演{k}"]]}} for k in range(6)]
RESPONSES = {"m1": [f"看过电影{k}，导演是导演{k}。" for k in range(6)], "m2": ["没看过。"] * 3 + ["很好看。"] * 3}


@pytest.fixture
def scored(tmp_path):
    db = str(tmp_path / "src.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "items.jsonl", ITEMS)), "--db", db]) == 0
    rows = "\n".join(f"d{k}-t1,{m},{texts[k]}" for m, texts in RESPONSES.items() for k in range(6))
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + rows + "\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "rec",
                 "--track", "rec/knowledge"]) == 0
    ratings = "\n".join(f"d{k}-t1,{m},{a},Info,{(k + len(a) + (m == 'm1')) % 3}" for m in RESPONSES for k in range(6)
                        for a in ("ann", "bo"))
    (tmp_path / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + ratings + "\n", encoding="utf-8")
    assert main(["import", "ratings", str(tmp_path / "h.csv"), "--db", db, "--dataset", "rec", "--track",
                 "rec/knowledge", "--scale", "Info=0:2"]) == 0
    assert main(["score", "--db", db, "--dataset", "rec", "--metrics", "F1,BLEU2,DIST1,ROUGE,chrF"]) == 0
    return db


def test_export_import_verify_and_an_edited_value(scored, tmp_path, capsys):
    out = tmp_path / "rec.zip"
    assert main(["record", "export", "--db", scored, "--dataset", "rec", "--out", str(out)]) == 0
    manifest = json.loads(zipfile.ZipFile(out).read("manifest.json"))
    assert manifest["format"] == "evalcore-record" and manifest["tables"]["responses"]["rows"] == 12
    assert manifest["tables"]["human_ratings"]["rows"] == 24
    assert manifest["tables"]["metric_values"]["rows"] == 12 * 5
    assert {"judge-prompts (evalcore/metrics/judge/prompts.py)", "generation/knowledge-zh.toml"} <= set(
        manifest["templates"])
    assert manifest["libraries"]["duckdb"] and manifest["evalcore"]
    # Metric trust where the page opens: turn level (2 models: no system level)
    trusted = pd.read_parquet(io.BytesIO(zipfile.ZipFile(out).read("figures/trust.parquet")))
    assert set(trusted["level"]) == {"turn"} and set(trusted["metric"]) == {"F1", "BLEU2", "DIST1",
                                                                                       "ROUGE", "chrF"}

    fresh = str(tmp_path / "fresh.duckdb")
    assert main(["record", "import", str(out), "--db", fresh]) == 0
    src, dst = connect(scored, read_only=True), connect(fresh, read_only=True)
    for table in ("items", "responses", "human_ratings", "item_references"):
        q = f"SELECT * EXCLUDE (origin{', submission_id' if table == 'responses' else ''}) FROM {table} ORDER BY ALL" \
            if table in ("responses", "human_ratings", "items") else f"SELECT * FROM {table} ORDER BY ALL"
        pd.testing.assert_frame_equal(src.execute(q).df(), dst.execute(q).df())
    keys = ["item_id", "model", "signature"]
    values = [record.tables(c, "rec")["metric_values"].sort_values(keys)[keys + ["value"]].reset_index(drop=True)
              for c in (src, dst)]
    pd.testing.assert_frame_equal(*values)
    src.close()
    dst.close()
    # a second import into the same store: refused whole, the store unchanged
    capsys.readouterr()
    assert main(["record", "import", str(out), "--db", fresh]) == 2
    assert "'rec', already in the store" in capsys.readouterr().err

    capsys.readouterr()
    assert main(["record", "verify", str(out)]) == 0
    said = capsys.readouterr().out
    assert "verified: every recomputed value and figure equals the record's" in said
    assert "checked: 24 tables, 60 metric values" in said

    # one value edited inside the record: verify names it
    edited = tmp_path / "edited.zip"
    _, _, truth = edit_record_value(out, edited, "F1", "d3-t1", "m1")
    capsys.readouterr()
    assert main(["record", "verify", str(edited), "--format", "csv"]) == 1
    found = pd.read_csv(io.StringIO(capsys.readouterr().out))
    value = found[(found["where"] == "tables/metric_values.parquet") & (found["column"] == "value")].iloc[0]
    assert (value["item_id"], value["model"], value["metric"]) == ("d3-t1", "m1", "F1")
    assert float(value["recorded"]) == pytest.approx(truth + 0.25) and float(value["recomputed"]) == pytest.approx(truth)
    assert (found["column"] == "sha256").any()   # the table no longer matches its manifest checksum


def test_not_a_record_is_refused(tmp_path, capsys):
    """Refused as every importer refuses a file: exit 2, the file named."""
    (tmp_path / "x.zip").write_bytes(b"not a zip")
    assert main(["record", "verify", str(tmp_path / "x.zip")]) == 2
    assert "not an evaluation record" in capsys.readouterr().err
    with zipfile.ZipFile(tmp_path / "y.zip", "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "other", "version": 9}))
    assert main(["record", "import", str(tmp_path / "y.zip"), "--db", str(tmp_path / "s.duckdb")]) == 2
    assert "expected format 'evalcore-record' version 1" in capsys.readouterr().err


@pytest.mark.slow   # 5 s or more on 2 cores: the fast set keeps tests under that
def test_verify_recomputes_model_based_metrics_and_asks_the_same_judge_again(scored, tmp_path, capsys):
    """Embedding metrics are recomputed on any machine; BERTScore where the record's backbone is given (its layer
    read from the signature); a judge where its server is named (model and sampling from the signature). A judge
    that now answers otherwise is named value by value; one that does not answer leaves the record's values."""
    texts = "".join(t for item in ITEMS for t in item["context"] + item["references"])
    tiny = tiny_bert(tmp_path / "tiny", texts + "".join(sum(RESPONSES.values(), [])))
    out = tmp_path / "rec.zip"
    with JudgeServer() as srv:   # "Rating: [[3]]" to every MT-Bench prompt
        assert main(["score", "--db", scored, "--dataset", "rec", "--metrics", "EV,VE,GM,ST,BS-F1",
                     "--bertscore-model", str(tiny), "--bertscore-layer", "2"]) == 0
        assert main(["score", "--db", scored, "--dataset", "rec", "--metrics", "Judge-MTBench", "--judge-base-url",
                     srv.url, "--judge-model", "toy-judge"]) == 0
        assert main(["record", "export", "--db", scored, "--dataset", "rec", "--out", str(out)]) == 0
        host = srv.url.split("//")[1].split("/")[0]

        # nothing given: 12 responses x (5 lexical + 4 embedding) values recomputed; BERTScore and the judge named
        capsys.readouterr()
        assert main(["record", "verify", str(out)]) == 0
        said = capsys.readouterr().out
        assert "checked: 24 tables, 108 metric values" in said
        assert "BS-F1: its backbone is tiny(dir:" in said and "--bertscore-model DIR" in said
        assert f"Judge-MTBench: its judge (toy-judge@{host}) is asked again only with --judge-base-url" in said

        # the record's backbone and the judge's server given: every value recomputed (+12 BS-F1, +12 judge), clean
        asked = srv.requests
        assert main(["record", "verify", str(out), "--bertscore-model", str(tiny), "--judge-base-url", srv.url]) == 0
        said = capsys.readouterr().out
        assert "checked: 24 tables, 132 metric values" in said and "not recomputed" not in said
        assert srv.requests - asked == 12
        assert {b["model"] for b in srv.bodies[asked:]} == {"toy-judge"}   # the record's model, not one given here

        # the same server, another judge behind it (ratings from length: every answer here is under 15 characters,
        # so 1 + len // 15 = 1): each of the 12 values named with both numbers, and both models' system scores
        srv.rate = "length"
        assert main(["record", "verify", str(out), "--judge-base-url", srv.url, "--format", "csv"]) == 1
        found = pd.read_csv(io.StringIO(capsys.readouterr().out))
        values = found[found["where"] == "tables/metric_values.parquet"]
        assert len(values) == 12 and set(values["metric"]) == {"Judge-MTBench"}
        assert set(values["recorded"].astype(float)) == {3.0} and set(values["recomputed"].astype(float)) == {1.0}
        system = found[found["where"] == "tables/system_scores.parquet"]
        assert sorted(system["model"]) == ["m1", "m2"]

    # the server gone: the judge's values stay the record's, said so; nothing reported as a difference
    assert main(["record", "verify", str(out), "--judge-base-url", srv.url]) == 0
    said = capsys.readouterr().out
    assert "Judge-MTBench:" in said and "values taken from the record" in said


def test_tasks_answers_and_generations_are_imported_renumbered_and_closed(scored, toy, tmp_path, capsys):
    """The record's rating task, its units and answers and a generation land in a store that has a task of its
    own: numbered past the store's, the ratings' origin with them, the task closed with a new access code."""
    con = connect(scored)
    task = stored_tasks.get(con, task_service.create_task(con, dataset="rec", mode="absolute", dimensions=["Info"],
                                                           items=4, per_item=2, seed=1))
    for who, value in (("cy", 2.0), ("dee", 1.0)):
        while (unit := stored_tasks.next_unit(con, task, who)) is not None:
            stored_tasks.answer(con, task, unit, who, "Info", value)
    con.execute("INSERT INTO generations (generation_id, dataset, model, endpoint, tracks, signature, details, "
                "submission_id, state, total, stored, failed, created_at) VALUES (1, 'rec', 'm1', 'local', "
                "'[\"rec/knowledge\"]', 'gen|model:m1@127.0.0.1:8000|t:0.7', '{}', 1, 'running', 6, 6, 0, now())")
    source = {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").df() for t in ("task_units", "task_answers")}
    code = con.execute("SELECT access_code FROM tasks").fetchall()[0][0]
    con.close()
    out = tmp_path / "rec.zip"
    assert main(["record", "export", "--db", scored, "--dataset", "rec", "--out", str(out)]) == 0

    theirs = task_service.create_task(toy, dataset="toy", mode="absolute", dimensions=["Info"], items=1, per_item=1,
                                      seed=1)   # task 1 of this store
    assert theirs == 1
    mine = stored_tasks.get(toy, theirs)
    stored_tasks.answer(toy, mine, stored_tasks.next_unit(toy, mine, "eve"), "eve", "Info", 1.0)
    before = toy.execute("SELECT max(answer_id) FROM task_answers").fetchall()[0][0]
    dest = toy.execute("PRAGMA database_list").fetchall()[0][2]
    toy.close()
    capsys.readouterr()
    assert main(["record", "import", str(out), "--db", dest]) == 0
    assert "1 rating task(s) imported closed, numbered from 2" in capsys.readouterr().out
    con = connect(dest, read_only=True)
    rows = con.execute("SELECT task_id, dataset, state, access_code FROM tasks ORDER BY task_id").fetchall()
    assert [r[:3] for r in rows] == [(1, "toy", "open"), (2, "rec", "closed")] and rows[1][3] not in ("", code)
    units = con.execute("SELECT * FROM task_units WHERE task_id = 2 ORDER BY ALL").df()
    pd.testing.assert_frame_equal(units, source["task_units"].assign(task_id=2), check_dtype=False)
    answers = con.execute("SELECT * FROM task_answers WHERE task_id = 2 ORDER BY ALL").df()
    shift = int(con.execute("SELECT min(answer_id) FROM task_answers WHERE task_id = 2").fetchall()[0][0]) - 1
    expected = source["task_answers"].assign(task_id=2, answer_id=source["task_answers"]["answer_id"] + shift)
    pd.testing.assert_frame_equal(answers, expected, check_dtype=False)
    assert shift == before   # numbered past the store's own answers
    # 4 units x 2 people: the task's ratings name task 2 now
    origins = con.execute("SELECT origin, count(*) FROM human_ratings WHERE dataset = 'rec' AND origin LIKE 'task:%' "
                          "GROUP BY origin").fetchall()
    assert origins == [("task:2", 8)]
    generation = con.execute("SELECT g.generation_id, g.state, s.kind FROM generations g JOIN submissions s "
                             "USING (submission_id)").fetchall()
    assert generation == [(1, "stopped", "record")]
    con.close()


@pytest.mark.slow   # ~50 s: every default dataset exported and verified
def test_the_default_stores_datasets_export_and_verify(default_store_file, tmp_path, capsys):
    """Every dataset a fresh install opens on exports and verifies clean, those without an agreement figure (one
    rating per target) included: a statistic with nothing to compute is left out of the record, not written
    empty."""
    db = str(copy_default_store(default_store_file, tmp_path / "default.duckdb"))
    con = connect(db, read_only=True)
    datasets = [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY 1").fetchall()]
    con.close()
    for dataset in datasets:
        out = tmp_path / f"{dataset}.zip"
        assert main(["record", "export", "--db", db, "--dataset", dataset, "--out", str(out)]) == 0, dataset
        capsys.readouterr()
        assert main(["record", "verify", str(out)]) == 0, dataset
        assert "verified: every recomputed value and figure equals the record's" in capsys.readouterr().out


def test_a_tables_checksum_is_its_canonical_rows_sha256(tmp_path, monkeypatch):
    """The checksum is the SHA-256 of the column names as JSON, then each row as a JSON list on its own line in
    the order of all columns (written out here row by row), whatever the cells: NaN and missing numbers, text
    holding the separators, lists of statistics with gaps, timestamps; across batches (three rows each) and
    their slices (two rows)."""
    frame = pd.DataFrame({
        "name": ["b", 'a, "quoted"], [x]', None, "中文", "a"],
        "n": pd.array([2, None, 1, 3, 2], dtype="Int64"),
        "ok": [True, False, None, True, True],
        "value": [0.1, float("nan"), 1e16, -0.0, None],
        "stats": [[0.5, float("nan")], None, [], [1.0, None, 2.5], [3.0]],
        "at": pd.to_datetime(["2026-11-27 08:00:00", "2026-01-01 00:00:00", None, "2026-11-27 08:00:01", "2025-05-05 12:30:00"]),
    })
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    monkeypatch.setattr(record, "BATCH", 3)
    monkeypatch.setattr(record, "HASHED_ROWS", 2)   # slices of batches: a list column's offsets not from 0
    found, rows = record.parquet_sha256(path)

    def cell(v):
        if v is None or v is pd.NaT or (isinstance(v, float) and v != v):
            return None
        if isinstance(v, (list, np.ndarray)):
            return [cell(x) for x in v]
        return v.isoformat() if isinstance(v, (pd.Timestamp, datetime)) else v

    ordered = duckdb.sql(f"SELECT * FROM read_parquet('{path}') ORDER BY ALL").fetchall()
    text = json.dumps(list(frame.columns)) + "".join(
        "\n" + json.dumps([cell(v) for v in row], ensure_ascii=False, sort_keys=True) for row in ordered)
    assert rows == 5 and found == hashlib.sha256(text.encode()).hexdigest()
