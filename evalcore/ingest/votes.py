"""`import votes`: people's side-by-side votes (ACUTE-Eval style), one per row: item_id, model_a, model_b,
winner (a, b or tie), annotator, dimension. They are stored as pairwise judgments with source 'human' (the
annotator as the judge), so `evalcore bt` and the dashboard rank models from them; a rating task's export
(`evalcore task export`) reads back this way. The whole file is checked first and written in one transaction;
a vote already stored for the same item, models, annotator and dimension (from a votes file) refuses the file:
nothing stored is replaced."""
from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.readers import Checker, read_table

COLUMNS = ["item_id", "model_a", "model_b", "winner", "annotator", "dimension"]
WINNERS = {"a": "model_1", "b": "model_2", "tie": "tie"}
PROMPT = "votes"   # the judgments' prompt for imported votes (a task's own are 'task:<id>')


def import_votes(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str,
                 shown: str | None = None) -> ImportReport:
    table = read_table(path)
    check = Checker(table.file)
    if not check.require_columns(table.columns, COLUMNS):
        check.refuse_if_any()
    items = lookup.item_tracks(con, dataset)
    answered = lookup.response_keys(con, dataset, None)
    batch = Batch()
    seen: dict[tuple, str] = {}
    stored = set(con.execute("SELECT item_id, model_1, model_2, judge, dimension FROM pairwise_judgments "
                             "WHERE dataset = ? AND prompt = ?", [dataset, PROMPT]).fetchall())
    for rec, where in zip(table.records, table.places):
        item_id, a, b = (check.ident(rec, where, k) for k in ("item_id", "model_a", "model_b"))
        annotator, dimension = check.ident(rec, where, "annotator"), check.ident(rec, where, "dimension")
        winner = check.text(rec, where, "winner")
        if winner is not None and winner.strip().lower() not in WINNERS:
            check.add(where, "winner", "a, b or tie", winner)
            continue
        if None in (item_id, a, b, annotator, dimension, winner):
            continue
        if item_id not in items:
            check.add(where, "item_id", f"an item of dataset {dataset!r}", item_id)
            continue
        if a == b:
            check.add(where, "model_b", "a model other than model_a", b)
            continue
        for field, model in (("model_a", a), ("model_b", b)):
            if (item_id, model) not in answered:
                check.add(where, field, f"a model with a stored response to item {item_id!r}", model)
        key = (item_id, a, b, annotator, dimension)
        if key in seen:
            check.add(where, "annotator", f"one vote per item, models, annotator and dimension (also {seen[key]})",
                      annotator)
            continue
        seen[key] = where
        if key in stored:
            check.add(where, "annotator", "a vote not stored yet (this item, models, annotator and dimension has one "
                      "from an earlier votes file)", annotator)
            continue
        verdict = WINNERS[winner.strip().lower()]
        batch.add("pairwise_judgments", dataset=dataset, track=items[item_id], item_id=item_id, model_1=a, model_2=b,
                  judge=annotator, prompt=PROMPT, g1_winner=verdict, g2_winner=verdict,
                  origin=f"{Path(shown or table.file).name} {where}", dimension=dimension, source="human")
    check.refuse_if_any()
    batch.shown = shown
    report = ImportReport(table.file, batch.write(con, source=table.file))
    report.notes += [f"read as {table.encoding}", *check.notes()]
    return report
