"""Rating tasks' "median seconds per unit" runs from a unit being shown to its last answer, the one that finishes
it (it measured the time to the first click: a unit of two dimensions answered at 2 s and 10 s counted 2 s). Units
not finished by answers (half answered, skipped) have no such time and are left out of the median."""
from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import pytest

from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import import_responses
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import write_jsonl


@pytest.fixture
def task(tmp_path):
    con = connect(tmp_path / "lab.duckdb")
    items = [{"item_id": f"i{n}", "dataset": "lab", "track": "lab/chitchat", "context": ["你好"], "references": ["好"]}
             for n in range(4)]
    import_items(con, write_jsonl(tmp_path / "items.jsonl", items))
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "".join(f"i{n},m1,回复{n}\n" for n in range(4)),
                                    encoding="utf-8")
    import_responses(con, tmp_path / "r.csv", dataset="lab", track="lab/chitchat")
    units = pd.DataFrame({"item_id": [f"i{n}" for n in range(4)], "track": "lab/chitchat", "model_a": "m1",
                          "model_b": None})
    dims = service.dimension_specs(con, "lab", ["Info", "Coh"])
    yield con, stored.get(con, stored.create(con, name="t", dataset="lab", mode="absolute", dimensions=dims,
                                             per_item=1, units=units))
    con.close()


def test_median_seconds_run_to_the_units_last_answer(task):
    con, t = task
    start = datetime(2026, 1, 1, 12, 0, 0)
    times = []   # (seconds to the first answer, seconds to the last) of each unit ann finishes
    for n, (first, last) in enumerate([(2, 10), (3, 30), (1, 50)]):
        shown = start + timedelta(minutes=n)
        unit = stored.next_unit(con, t, "ann", now=shown)
        stored.answer(con, t, unit, "ann", "Info", 1.0, now=shown + timedelta(seconds=first))
        stored.answer(con, t, unit, "ann", "Coh", 2.0, now=shown + timedelta(seconds=last))
        times.append((first, last))
    shown = start + timedelta(minutes=9)   # a fourth unit half answered: not finished, no time of its own
    unit = stored.next_unit(con, t, "ann", now=shown)
    stored.answer(con, t, unit, "ann", "Info", 1.0, now=shown + timedelta(seconds=999))
    row = stored.progress(con, t).set_index("annotator").loc["ann"]
    assert row["done"] == 3
    assert row["median_seconds"] == 30.0                                        # median of 10, 30, 50
    assert row["median_seconds"] != sorted(f for f, _ in times)[1]              # not the first clicks' 2, 3, 1


def test_a_skipped_unit_has_no_time(task):
    con, t = task
    shown = datetime(2026, 1, 1, 12, 0, 0)
    unit = stored.next_unit(con, t, "bo", now=shown)
    stored.skip(con, t, unit, "bo")
    row = stored.progress(con, t).set_index("annotator").loc["bo"]
    assert (row["done"], row["skipped"]) == (1, 1) and pd.isna(row["median_seconds"])
