"""The file a submitter fills in: every item of a dataset (or one track) with its context and reference,
and an empty `response` column. `import responses` reads it back as it is (extra columns are ignored)."""
from __future__ import annotations

import json

import duckdb
import pandas as pd

from evalcore.core.export import safe_csv, safe_xlsx
from evalcore.core.i18n import _
from evalcore.ingest import lookup
from evalcore.store.queries import answerable_items, require_dataset

FORMATS = ("csv", "jsonl", "xlsx")
COLUMNS = ["track", "item_id", "context", "reference", "response"]


def template(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None) -> pd.DataFrame:
    """One row per item, in track and item order: context as a list of turns (oldest first), the first
    reference ('' without one), response ''."""
    require_dataset(con, dataset)
    known = lookup.tracks_of(con, dataset)
    if track is not None and track not in known:
        raise ValueError(_("no track {track} in dataset {dataset}; known: {known}").format(
            track=repr(track), dataset=repr(dataset), known=", ".join(known)))
    frame = con.execute("""
        SELECT i.track, i.item_id, i.context,
               coalesce((SELECT r.text FROM item_references r WHERE r.dataset = i.dataset AND r.item_id = i.item_id
                         ORDER BY r.ref_index LIMIT 1), '') AS reference
        FROM items i WHERE i.dataset = ? AND (? IS NULL OR i.track = ?)
        ORDER BY i.track, i.item_id""", [dataset, track, track]).df()
    # items no model can answer (a rating of a text that is not a stored response) are not asked for
    frame = frame[frame["item_id"].isin(set(answerable_items(con, dataset, track)["item_id"]))].reset_index(drop=True)
    frame["context"] = frame["context"].map(json.loads)
    frame["response"] = ""
    return frame[COLUMNS]


# Read back by `import responses` as the keys of each row: written as they are in the CSV (see render).
KEYS = ("track", "item_id")


def render(frame: pd.DataFrame, fmt: str) -> bytes:
    """The template as file bytes. CSV (UTF-8 with BOM, for spreadsheet programs) and xlsx give the
    context as its turns on separate lines; JSONL keeps the list.

    The template is for people, opened in a spreadsheet program, so neither file can run a formula
    (evalcore.core.export): the xlsx has every text cell as a string cell (never a formula; its text exactly as
    stored), and the CSV puts a single quote in front of a context or reference that begins with `=`, `+`,
    `-`, `@`, a tab or a carriage return. Those two columns are for reading only: `import responses` ignores
    them, so the quote never reaches the store and a filled-in template imports the same whatever they hold.
    The key columns `track` and `item_id` are the ones it reads back and matches against the store's items,
    so the CSV writes them exactly as stored (a quote there would make the row's item unknown on import);
    they are names the store's organiser gave when importing the items (`evalcore import items`; the
    Upload page imports responses and ratings only), not text a submitter or a benchmark's dialogues put
    there. JSONL is not opened by spreadsheet programs and keeps every value exactly."""
    if fmt not in FORMATS:
        raise ValueError(_("unknown format {format}; known: {known}").format(format=repr(fmt), known=", ".join(FORMATS)))
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in frame.to_dict("records")).encode("utf-8")
    flat = frame.assign(context=frame["context"].map("\n".join))
    if fmt == "csv":
        return safe_csv(flat, keep=KEYS)
    return safe_xlsx(flat, sheet_name="responses")
