"""`import votes`: people's side-by-side votes (ACUTE-Eval style), one per row: item_id, model_a, model_b,
winner (a, b or tie), annotator, dimension. They are stored as pairwise judgments with source 'human' (the
annotator as the judge), so `evalcore bt` and the dashboard rank models from them; a rating task's export
(`evalcore task export`) reads back this way (its flags, rows with a comment and no winner, are left out and
counted, as `import ratings` leaves them out).

One vote per annotator, item, pair of models and dimension, whatever the order of the pair: (m1, m2, a) and
(m2, m1, b) are the same vote, given twice. A file that holds a vote twice, or a vote the store already holds
from people (a votes file or a rating task: a task's export imported back into its own store), is refused
whole, as `import ratings` refuses a rating already stored, identical or not: nothing stored is replaced and
no vote counts twice. Annotators are compared by their identity key (evalcore.core.text: 'Carol' and ' carol '
are one person). The whole file is checked first and written in one transaction."""
from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.core.text import identity_key
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.readers import read_table

COLUMNS = ["item_id", "model_a", "model_b", "winner", "annotator", "dimension"]
WINNERS = {"a": "model_1", "b": "model_2", "tie": "tie"}
PROMPT = "votes"   # the judgments' prompt for imported votes (a task's own are 'task:<id>')


def import_votes(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str,
                 shown: str | None = None) -> ImportReport:
    table = read_table(path)
    check = Checker(table.file)
    dataset = check.option("--dataset", dataset)
    if not check.require_columns(table.columns, COLUMNS):
        check.refuse_if_any()
    items = lookup.item_tracks(con, dataset)
    answered = lookup.response_keys(con, dataset, None)
    batch = Batch()
    seen: dict[tuple, str] = {}
    stored = stored_votes(con, dataset)
    flags = 0
    for rec, where in zip(table.records, table.places):
        if not str(rec.get("winner") or "").strip() and str(rec.get("comment") or "").strip():
            flags += 1
            continue
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
        key = vote_key(item_id, a, b, annotator, dimension)
        if key in seen:
            check.add(where, "annotator", "one vote per item, pair of models (in either order), annotator and "
                      f"dimension (this one voted on it at {seen[key]})", annotator)
            continue
        seen[key] = where
        if key in stored:
            check.add(where, "annotator", "a vote not in the store yet (this annotator's vote on this item, pair of "
                      f"models and dimension is stored already, from {stored[key]})", annotator)
            continue
        verdict = WINNERS[winner.strip().lower()]
        batch.add("pairwise_judgments", dataset=dataset, track=items[item_id], item_id=item_id, model_1=a, model_2=b,
                  judge=annotator, prompt=PROMPT, g1_winner=verdict, g2_winner=verdict,
                  origin=f"{Path(shown or table.file).name} {where}", dimension=dimension, source="human")
    check.refuse_if_any()
    batch.shown = shown
    report = ImportReport(table.file, batch.write(con, source=table.file))
    report.notes += [f"read as {table.encoding}", *check.notes()]
    if flags:
        report.notes.append(f"{flags} row(s) without a winner but with a comment (a task's flags) left out")
    return report


def vote_key(item_id: str, a: str, b: str, annotator: str, dimension: str) -> tuple:
    """What makes two votes the same vote: the item, the pair of models in either order, the annotator (by
    identity key) and the dimension."""
    return item_id, frozenset((a, b)), identity_key(annotator), dimension


def stored_votes(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[tuple, str]:
    """vote_key -> where it came from ('task:3 unit 5', 'votes.csv row 2'), for every vote people gave in the
    dataset (votes files and rating tasks; a judge model's are not people's votes)."""
    rows = con.execute("SELECT item_id, model_1, model_2, judge, dimension, coalesce(origin, prompt) "
                       "FROM pairwise_judgments WHERE dataset = ? AND source = 'human'", [dataset]).fetchall()
    return {vote_key(*row[:5]): row[5] for row in rows}


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_votes(con, args.file, dataset=args.dataset)
