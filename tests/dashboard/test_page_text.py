"""What pages print for a person (issue 46, item 4): evalcore's messages with their commands as code, not
backticks; counts with their noun's number; the scoring jobs table with no "None" or "nan"; a heatmap's hover
with a judge's audit and a note only on the cells that have one."""
import sys

import numpy as np
import pandas as pd

from evalcore.core.words import count
from evalcore.pagedata import intake
from support import ROOT

sys.path.insert(0, str(ROOT))
from pages.kit.text import md_escape, md_message  # noqa: E402


def test_a_message_shows_its_command_as_code():
    said = "no LLM judge has scored 'demo-zh': run `evalcore score --metrics judge` first"
    assert md_message(said) == md_escape("no LLM judge has scored 'demo-zh': run ") + "`evalcore score --metrics judge`" \
        + md_escape(" first")
    # a dataset's name with a backtick: no span can hold one, so nothing in it becomes markup
    odd = "no LLM judge has scored 'a`**b**': run `evalcore score` first"
    assert md_message(odd) == md_escape(odd)
    assert md_message("plain *text*") == md_escape("plain *text*")


def test_counts_take_their_nouns_number():
    assert [count(1, "model"), count(2, "model"), count(0, "step"), count(12000, "response")] == \
        ["1 model", "2 models", "0 steps", "12,000 responses"]


def test_the_jobs_table_says_what_a_queued_job_waits_for():
    listing = pd.DataFrame({"job_id": [3, 2, 1], "state": ["queued", "running", "done"], "progress": [np.nan, 0.5, 1.0],
                            "detail": [None, "step 1 of 2: lccc/chitchat", "2 steps done: lccc/chitchat"]})
    shown = intake.jobs_shown(listing)
    assert shown["detail"].tolist() == ["waiting to start", "step 1 of 2: lccc/chitchat", "2 steps done: lccc/chitchat"]
    assert shown["progress"].tolist() == [0.0, 0.5, 1.0]
    assert not shown.astype(str).isin(["None", "nan", "NaN"]).any().any()


def test_a_heatmap_hover_lists_optional_fields_only_where_filled(monkeypatch, tmp_path, default_store_file):
    """Metric trust's heatmap: one layer per combination of the optional fields present (a judge's audit, a note),
    each filtered to its cells, so a metric's hover has no empty "judge audit" row."""
    import json

    from support import copy_default_store
    from support.apptest import charts, run

    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    at = run("trust", monkeypatch, {"EVALCORE_DB": db})
    spec = json.loads(charts(at)[0].proto.spec)
    for layer in spec["layer"]:
        fields = [t["field"] for t in layer["encoding"]["tooltip"]]
        test = layer["transform"][0]["filter"] if layer["transform"] else ""
        for name in ("judge audit", "note"):
            present = f"(isValid(datum['{name}']) && datum['{name}'] !== '')"
            assert (name in fields) == (present in test and f"!{present}" not in test), (fields, test)
    assert len(spec["layer"]) == 8   # 2 optional fields: 4 combinations, a cell and a label layer each
