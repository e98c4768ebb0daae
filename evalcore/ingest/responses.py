"""`import responses`: CSV, TSV, JSONL or xlsx with item_id, response and (without --model) model."""
from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.errors import ImportRefused, Problem
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.readers import Checker, read_table


def require_track(con: duckdb.DuckDBPyConnection, file: str, dataset: str, track: str) -> None:
    """Refuse a file aimed at a track the store does not have, listing the ones it has."""
    tracks = lookup.tracks_of(con, dataset)
    if track in tracks:
        return
    if not tracks:
        raise ImportRefused([Problem(file, "", "--dataset", "a dataset in the store (import its items first)", repr(dataset))])
    raise ImportRefused([Problem(file, "", "--track", f"a track of dataset {dataset!r}: " + ", ".join(tracks), repr(track))])


def import_responses(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str,
                     model: str | None = None, replace: bool = False) -> ImportReport:
    """Import a responses file into a track. With replace=True, the file's models lose their earlier
    responses in this track (and the ratings and computed scores that went with them) in the same
    transaction as the new rows are written."""
    table = read_table(path)
    require_track(con, table.file, dataset, track)
    check = Checker(table.file)
    required = ["item_id", "response"] + ([] if model else ["model"])
    if not check.require_columns(table.columns, required):
        check.refuse_if_any()
    if model is not None and not model.strip():
        check.add("", "--model", "a non-empty model name", "an empty string")
        check.refuse_if_any()
    items = {i for i, t in lookup.item_tracks(con, dataset).items() if t == track}
    stored = lookup.response_keys(con, dataset, track)
    seen: dict[tuple[str, str], str] = {}
    batch = Batch()
    for rec, where in zip(table.records, table.places):
        item_id = check.text(rec, where, "item_id")
        text = check.text(rec, where, "response", allow_empty=True)
        name = model if model else check.text(rec, where, "model")
        if None in (item_id, text, name):
            continue
        item_id, name = item_id.strip(), name.strip()
        if item_id not in items:
            check.add(where, "item_id", f"an item of track {track!r} in dataset {dataset!r}", f"{item_id!r}, unknown")
            continue
        key = (item_id, name)
        if key in seen:
            check.add(where, "item_id", f"one response per item for model {name!r}",
                      f"{item_id!r} again (first at {seen[key]})")
            continue
        seen[key] = where
        if key in stored and not replace:
            check.add(where, "item_id", f"an item model {name!r} has not answered yet (delete the model first to replace it)",
                      f"{item_id!r}, already answered")
            continue
        batch.add("responses", dataset=dataset, item_id=item_id, model=name, text=text,
                  origin=f"{Path(table.file).name} {where}")
    check.refuse_if_any()
    replaced = sorted({m for _, m in seen} & {m for _, m in stored}) if replace else []
    in_track = "item_id IN (SELECT item_id FROM items WHERE dataset = ? AND track = ?)"
    for name in replaced:
        batch.delete(f"DELETE FROM responses WHERE dataset = ? AND model = ? AND {in_track}", [dataset, name, dataset, track])
        batch.delete("DELETE FROM human_ratings WHERE dataset = ? AND track = ? AND model = ? AND target = 'response'",
                     [dataset, track, name])
        batch.delete("DELETE FROM system_scores WHERE dataset = ? AND track = ? AND model = ? AND origin = 'computed'",
                     [dataset, track, name])
    for name in sorted({m for _, m in seen}):
        batch.model(name)
    report = ImportReport(table.file, batch.write(con))
    report.notes.append(f"read as {table.encoding}")
    if replaced:
        report.notes.append(f"replaced the earlier responses of {', '.join(replaced)} in {track} "
                            "(their response ratings and computed scores were removed)")
    return report
