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


def import_responses(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str | None = None,
                     model: str | None = None, replace: bool = False) -> ImportReport:
    """Import a responses file into one track, or into every track it names in a `track` column
    (one model's responses for a whole multi-skill benchmark): one transaction, all tracks or none.
    With replace=True, the file's models lose their earlier responses in the tracks the file covers
    (and the ratings and computed scores that went with them) in the same transaction."""
    table = read_table(path)
    tracks = lookup.tracks_of(con, dataset)
    if track is not None:
        require_track(con, table.file, dataset, track)
    elif not tracks:
        require_track(con, table.file, dataset, "")
    check = Checker(table.file)
    by_column = "track" in table.columns
    if track is None and not by_column:
        check.add("header (row 1)", "track", "a column named 'track' (or name one track with --track): "
                  + ", ".join(tracks), "no such column")
    required = ["item_id", "response"] + ([] if model else ["model"])
    if not check.require_columns(table.columns, required) or check.problems:
        check.refuse_if_any()
    if model is not None and not model.strip():
        check.add("", "--model", "a non-empty model name", "an empty string")
        check.refuse_if_any()
    item_track = lookup.item_tracks(con, dataset)
    stored = lookup.response_keys(con, dataset, track)
    seen: dict[tuple[str, str], str] = {}
    covered: dict[str, set[str]] = {}
    batch = Batch()
    for rec, where in zip(table.records, table.places):
        item_id = check.text(rec, where, "item_id")
        text = check.text(rec, where, "response", allow_empty=True)
        name = model if model else check.text(rec, where, "model")
        row_track = check.text(rec, where, "track") if by_column else track
        if None in (item_id, text, name, row_track):
            continue
        item_id, name, row_track = item_id.strip(), name.strip(), row_track.strip()
        if track is not None and row_track != track:
            check.add(where, "track", f"{track!r} (the track named with --track)", repr(row_track))
            continue
        if row_track not in tracks:
            check.add(where, "track", f"a track of dataset {dataset!r}: " + ", ".join(tracks), repr(row_track))
            continue
        if item_track.get(item_id) != row_track:
            elsewhere = item_track.get(item_id)
            got = f"{item_id!r}, an item of track {elsewhere!r}" if elsewhere else f"{item_id!r}, unknown"
            check.add(where, "item_id", f"an item of track {row_track!r} in dataset {dataset!r}", got)
            continue
        key = (item_id, name)
        if key in seen:
            check.add(where, "item_id", f"one response per item for model {name!r}",
                      f"{item_id!r} again (first at {seen[key]})")
            continue
        seen[key] = where
        covered.setdefault(row_track, set()).add(item_id)
        if key in stored and not replace:
            check.add(where, "item_id", f"an item model {name!r} has not answered yet (delete the model first to replace it)",
                      f"{item_id!r}, already answered")
            continue
        batch.add("responses", dataset=dataset, item_id=item_id, model=name, text=text,
                  origin=f"{Path(table.file).name} {where}")
    check.refuse_if_any()
    models = sorted({m for _, m in seen})
    replaced = sorted(set(models) & {m for _, m in stored}) if replace else []
    in_track = "item_id IN (SELECT item_id FROM items WHERE dataset = ? AND track = ?)"
    for name in replaced:
        for tr in sorted(covered):
            batch.delete(f"DELETE FROM responses WHERE dataset = ? AND model = ? AND {in_track}", [dataset, name, dataset, tr])
            batch.delete("DELETE FROM human_ratings WHERE dataset = ? AND track = ? AND model = ? AND target = 'response'",
                         [dataset, tr, name])
            batch.delete("DELETE FROM system_scores WHERE dataset = ? AND track = ? AND model = ? AND origin = 'computed'",
                         [dataset, tr, name])
    for name in models:
        batch.model(name)
    report = ImportReport(table.file, batch.write(con))
    report.notes.append(f"read as {table.encoding}")
    report.tracks = sorted(covered)
    report.notes += coverage_notes(item_track, covered)
    if replaced:
        report.notes.append(f"replaced the earlier responses of {', '.join(replaced)} in {', '.join(sorted(covered))} "
                            "(their response ratings and computed scores were removed)")
    return report


def coverage_notes(item_track: dict[str, str], covered: dict[str, set[str]]) -> list[str]:
    """One line per track the file answers: how many of the track's items, and a warning when partial."""
    totals: dict[str, int] = {}
    for tr in item_track.values():
        totals[tr] = totals.get(tr, 0) + 1
    notes = []
    for tr in sorted(covered):
        n, total = len(covered[tr]), totals.get(tr, 0)
        share = n / total if total else 0.0
        line = f"coverage of {tr}: {n:,} of {total:,} items ({share:.2%})"
        notes.append(line if n == total else f"warning: partial submission: {line}; the other items have no response")
    return notes
