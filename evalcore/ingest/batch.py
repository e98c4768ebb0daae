"""Rows collected by an importer and written in one transaction."""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from evalcore.core.i18n import N_, _
from evalcore.core.words import count
from evalcore.store import bump_revision, history, insert_frame, registered, transaction
from evalcore.store.history import current_user

# Written in this order; these four are shared reference rows, inserted only when new.
ORDER = (
    "datasets", "tracks", "models", "dimensions", "external_metrics", "metric_signatures", "dialogues", "turns",
    "items", "item_references", "responses", "human_ratings", "metric_scores", "system_scores",
    "published_correlations", "pairwise_judgments",
)
# what a table's rows are called in a report, (one, many): "1 model", "2 human ratings"
ROW_NOUNS = {"datasets": (N_("dataset"), "datasets"), "tracks": (N_("track"), "tracks"), "models": (N_("model"), "models"),
             "dimensions": (N_("dimension"), "dimensions"),
             "external_metrics": (N_("external metric"), "external metrics"),
             "metric_signatures": (N_("metric signature"), "metric signatures"),
             "dialogues": (N_("dialogue"), "dialogues"), "turns": (N_("turn"), "turns"), "items": (N_("item"), "items"),
             "item_references": (N_("reference"), "references"), "responses": (N_("response"), "responses"),
             "human_ratings": (N_("human rating"), "human ratings"),
             "metric_scores": (N_("metric value"), "metric values"),
             "system_scores": (N_("system score"), "system scores"),
             "published_correlations": (N_("published correlation"), "published correlations"),
             "pairwise_judgments": (N_("pairwise vote"), "pairwise votes")}   # count() translates the first
SHARED = {"datasets", "tracks", "models", "dimensions", "external_metrics", "metric_signatures"}
WRITE_SLICE = 50_000  # rows per insert statement inside the one transaction

SKILLS = ("chitchat", "knowledge", "recommendation", "persona", "task-oriented", "intent")


@dataclass
class ImportReport:
    """What an import wrote, for the CLI and the upload page."""

    file: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tracks: list[str] = field(default_factory=list)  # the tracks an import wrote into, where it says

    def render(self) -> str:
        written = ", ".join(count(n, *ROW_NOUNS.get(t, (t, t))) for t, n in self.counts.items() if n) or _("nothing new")
        lines = [_("imported {file}: {written}").format(file=self.file, written=written)]
        lines += ["  " + _("note: {note}").format(note=n) for n in self.notes]
        return "\n".join(lines)


class Batch:
    def __init__(self) -> None:
        self.rows: dict[str, list[dict]] = defaultdict(list)
        self.deletes: list[tuple[str, list]] = []  # run first, in the same transaction
        self.kind = "import"   # how the submission this batch becomes is listed (history.listing)
        self.scope: dict | None = None
        self.uploader: str | None = None
        self.shown: str | None = None  # the file's name as its uploader knows it (not a temporary copy's path)
        self.then = None  # then(con): more writes that belong to this import (its scoring job), same transaction
        self.written: dict[str, int] = {}   # rows flush() wrote already (inside the import's transaction)
        self.flushed_tracks: set[str] = set()
        self._shared_seen: set[tuple] = set()

    def delete(self, sql: str, params: list) -> None:
        """A parameterised statement (SQL written in evalcore, values as parameters) run before the
        inserts; history.SUBMISSION among the parameters stands for this submission's id."""
        self.deletes.append((sql, params))

    def add(self, table: str, **row) -> None:
        if table not in ORDER:
            raise ValueError(f"unknown table {table!r}; known: {', '.join(ORDER)}")
        if table in SHARED:   # the same dataset or track named by every record of a large file: kept once
            seen = (table, *((k, v if isinstance(v, (str, int, float, type(None))) else repr(v)) for k, v in row.items()))
            if seen in self._shared_seen:
                return
            self._shared_seen.add(seen)
        self.rows[table].append(row)

    def pending(self, table: str) -> int:
        return len(self.rows.get(table, ()))

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        """Inside the import's open transaction (write_in ends it): write the rows gathered so far of the
        tables no other row depends on (items, references, ratings...) and let them go, so that a large
        file is never held whole. Shared rows (datasets, tracks) and responses (they carry the submission's
        id) wait for write_in."""
        if self.deletes:
            raise ValueError("a batch that sets rows aside writes them all at once (no flush)")
        self.flushed_tracks |= self._tracks_of_rows()
        for table in ORDER:
            if table in SHARED or table == "responses" or not self.rows.get(table):
                continue
            rows = self.rows.pop(table)
            self.written[table] = self.written.get(table, 0) + self._insert(con, table, rows, None)

    def dataset(self, dataset: str, **meta) -> None:
        self.add("datasets", dataset=dataset, **meta)

    def track(self, dataset: str, track: str, *, corpus: str | None = None, skill: str | None = None) -> None:
        competition, parsed_skill = split_track(track)
        self.add("tracks", dataset=dataset, track=track, competition=competition,
                 skill=skill or parsed_skill, corpus=corpus)

    def model(self, model: str, description: str | None = None) -> None:
        self.add("models", model=model, description=description,
                 added_at=datetime.now().replace(microsecond=0), added_by=current_user())

    def write(self, con: duckdb.DuckDBPyConnection, source: str | Path | None = None) -> dict[str, int]:
        """Everything in one transaction, recorded as one submission (history) naming `source`."""
        with transaction(con):
            return self.write_in(con, source)

    def write_in(self, con: duckdb.DuckDBPyConnection, source: str | Path | None = None) -> dict[str, int]:
        """write's body, inside a transaction the caller opened (and flushed into)."""
        counts: dict[str, int] = dict(self.written)
        # one dataset: only its pages recompute; a new external metric changes the registry every page reads
        bump_revision(con, None if self.rows.get("external_metrics") else self._dataset())
        sid = history.record(con, kind=self.kind, dataset=self._dataset(),
                             models=sorted({r["model"] for t in ("responses", "human_ratings", "system_scores")
                                            for r in self.rows.get(t, [])}),
                             tracks=self._tracks(con), file=self.shown or (str(source) if source else None),
                             sha256=history.sha256_of(source) if source else None, scope=self.scope,
                             uploader=self.uploader or current_user())
        history.run_statements(con, self.deletes, sid)
        for table in ORDER:
            rows = self.rows.pop(table, None)  # a batch is written once: its rows go as they are sent
            if rows:
                counts[table] = counts.get(table, 0) + self._insert(con, table, rows, sid)
        con.execute("UPDATE submissions SET rows_written = ? WHERE submission_id = ?",
                    [json.dumps({t: n for t, n in counts.items() if n}), sid])
        if self.then is not None:
            self.then(con)
        return counts

    @staticmethod
    def _insert(con, table: str, rows: list[dict], sid) -> int:
        if table in SHARED:
            return insert_frame(con, table, pd.DataFrame(rows, dtype=object), ignore=True)
        n = 0
        # In slices, each freed once sent: a large file never exists as one more full copy.
        for start in range(0, len(rows), WRITE_SLICE):
            part = rows[start:start + WRITE_SLICE]
            rows[start:start + WRITE_SLICE] = [None] * len(part)
            frame = pd.DataFrame(part, dtype=object)
            if table == "responses":
                frame["submission_id"] = sid
            # as Arrow: DuckDB keeps the Python strings of a scanned DataFrame alive until the transaction
            # ends (a streamed import's million items would all stay); Arrow's copy frees them at once
            n += insert_frame(con, table, pa.Table.from_pandas(frame, preserve_index=False))
        return n

    def _dataset(self) -> str | None:
        names = {r["dataset"] for rows in self.rows.values() for r in rows if "dataset" in r}
        return names.pop() if len(names) == 1 else None

    def _tracks_of_rows(self) -> set[str]:
        return {r["track"] for t in ("items", "human_ratings", "system_scores", "tracks") for r in self.rows.get(t, [])}

    def _tracks(self, con) -> list[str]:
        tracks = self._tracks_of_rows() | self.flushed_tracks
        ids = [r["item_id"] for r in self.rows.get("responses", [])]
        if ids and not self.rows.get("items"):   # a responses file: its items' tracks
            with registered(con, "_evalcore_ids", pd.DataFrame({"item_id": list(dict.fromkeys(ids))})):
                tracks |= {t for (t,) in con.execute(
                    "SELECT DISTINCT i.track FROM items i JOIN _evalcore_ids USING (item_id) WHERE i.dataset = ?",
                    [self._dataset()]).fetchall()}
        return sorted(tracks)


def split_track(track: str) -> tuple[str | None, str | None]:
    """'lic2021/persona' -> ('lic2021', 'persona'); the skill only when it is a known one."""
    if "/" in track:
        competition, rest = track.split("/", 1)
        skill = rest.split("/")[0]
        return competition, skill if skill in SKILLS else None
    return None, track if track in SKILLS else None


