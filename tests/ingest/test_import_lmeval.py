"""`import lm-eval`: lm-evaluation-harness --log_samples output (a gsm8k samples file in the harness's own shape,
tests/ingest/fixtures/lmeval). Stored values are checked against the fixture's numbers; a bad file is refused whole,
naming file, line and field, and the store is exactly as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.lmeval import import_lmeval
from support import fingerprint, write_jsonl

FIXTURE = Path(__file__).parent / "fixtures" / "lmeval" / "samples_gsm8k_2026-11-27T05-10-00.000000.jsonl"
SAMPLES = [json.loads(line) for line in FIXTURE.read_text("utf-8").splitlines()]
ARGS = dict(dataset="gsm", track="gsm8k", model="m1", doc_id="doc_id")


def refused(con, path, **kwargs) -> str:
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_lmeval(con, path, **{**ARGS, **kwargs})
    assert fingerprint(con) == before
    return str(err.value)


def test_samples_create_items_responses_and_metric(con):
    report = import_lmeval(con, FIXTURE, doc_context="doc.question", filter_name="strict-match", **ARGS)
    items = con.execute("SELECT item_id, track, context FROM items WHERE dataset = 'gsm' ORDER BY item_id").fetchall()
    assert [(i, t) for i, t, _ in items] == [("0", "gsm8k"), ("1", "gsm8k"), ("2", "gsm8k")]
    assert json.loads(items[0][2]) == [SAMPLES[0]["doc"]["question"]]
    refs = con.execute("SELECT item_id, text FROM item_references WHERE dataset = 'gsm' ORDER BY item_id").fetchall()
    assert refs == [(str(s["doc_id"]), s["target"]) for s in SAMPLES[:3]]
    responses = con.execute("SELECT item_id, model, text FROM responses WHERE dataset = 'gsm' ORDER BY item_id").fetchall()
    assert responses == [("0", "m1", "18"), ("1", "m1", "2"), ("2", "m1", "70000")]
    # exact_match per sample 1, 0, 1: the system value is their mean, under both system aggregates
    system = con.execute("SELECT value, n FROM system_scores WHERE dataset = 'gsm' AND name = 'lm-eval:exact_match'"
                         ).fetchall()
    assert system == [(pytest.approx((1 + 0 + 1) / 3), 3)] * 2
    sig = con.execute("SELECT signature FROM metric_signatures WHERE metric = 'lm-eval:exact_match'").fetchall()[0][0]
    assert "task gsm8k; filter strict-match" in sig
    assert "filter 'strict-match'" in report.notes[0] and "3 items created" in report.notes[0]


def test_existing_items_from_the_cli(con, tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    items = [{"item_id": str(i), "dataset": "gsm", "track": "gsm8k", "context": [s["doc"]["question"]], "references": []}
             for i, s in enumerate(SAMPLES[:3])]
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", items)), "--db", db]) == 0
    assert main(["import", "lm-eval", str(FIXTURE), "--db", db, "--dataset", "gsm", "--track", "gsm8k",
                 "--model", "m1", "--doc-id", "doc_id", "--filter", "flexible-extract",
                 "--metrics", "exact_match"]) == 0
    assert "3 found" in capsys.readouterr().out


def test_several_filters_need_one_chosen(con):
    message = refused(con, FIXTURE, doc_context="doc.question")
    assert "--filter" in message and "flexible-extract, strict-match" in message


def twin(tmp_path, line: int, change) -> Path:
    """The fixture's strict-match samples with sample `line` (1-based) changed."""
    rows = [dict(s) for s in SAMPLES[:3]]
    change(rows[line - 1])
    return write_jsonl(tmp_path / "samples_gsm8k_2026-01-01T00-00-00.000000.jsonl", rows)


@pytest.mark.parametrize("change, field, expected", [
    (lambda s: s.update(filtered_resps=[["-1.5", "False"], ["-0.5", "True"]]), "filtered_resps", "one filtered response"),
    (lambda s: s.update(filtered_resps=["bad\x07bell"]), "filtered_resps[0]", "control characters"),
    (lambda s: s.pop("doc_id"), "doc_id", "the --doc-id field"),
    (lambda s: s.update(doc_id=0), "doc_id", "one sample per item"),
    (lambda s: s.update(exact_match="yes"), "exact_match", "a number"),
    (lambda s: s.update(metrics="exact_match"), "metrics", "a list"),
    (lambda s: s.update(doc={"question": ["a", 3]}), "doc.question[1]", "a string"),
])
def test_hostile_twins_are_refused_whole(con, tmp_path, change, field, expected):
    import_lmeval(con, FIXTURE, **{**ARGS, "track": "other"}, doc_context="doc.question", filter_name="strict-match")
    path = twin(tmp_path, 2, change)
    message = refused(con, path, doc_context="doc.question", metrics="exact_match", dataset="gsm2")
    assert str(path) in message and "line 2" in message and field in message and expected in message


def test_unknown_items_and_answered_ones_are_refused(con, tmp_path):
    message = refused(con, FIXTURE, filter_name="strict-match")
    assert "--track" in message and "--doc-context" in message
    import_lmeval(con, FIXTURE, doc_context="doc.question", filter_name="strict-match", **ARGS)
    rows = [dict(SAMPLES[0]), {**SAMPLES[1], "doc_id": 7}]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    message = refused(con, path, model="m2")
    assert "line 2" in message and "'7', unknown" in message
    message = refused(con, FIXTURE, filter_name="strict-match", doc_context="doc.question")
    assert "already answered" in message
    changed = write_jsonl(tmp_path / "c.jsonl", [{**SAMPLES[0], "doc": {"question": "another"}}])
    message = refused(con, changed, model="m2", doc_context="doc.question")
    assert "line 1" in message and "context" in message


def test_language_given_and_metrics_named(con):
    report = import_lmeval(con, FIXTURE, doc_context="doc.question", filter_name="strict-match", language="en", **ARGS)
    assert con.execute("SELECT language, language_source FROM datasets WHERE dataset = 'gsm'").fetchall() == [
        ("en", "declared")]
    assert "per-sample values stored as lm-eval:exact_match" in report.notes
    assert "comma-separated metric names" in refused(con, FIXTURE, metrics=" , ", filter_name="strict-match")
