"""Task-oriented sessions (SMP2018-ECDT, seed 001): the sessions file read and checked whole, and each
system's C, T, Sa, F, G (evalcore.analysis.taskoriented.session_scores) written in one transaction as
computed system scores of the track.

Sessions file (CSV/TSV/JSONL/xlsx), one row per system, test case and reviewer: `system`,
`test_case`, `completed` (0/1), `turns`, `reviewer`, `satisfaction` (-2..2), `fluency` (-1..1),
`guidance` (0/1)."""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.taskoriented import MAX_TURNS, session_scores
from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.readers import read_table
from evalcore.metrics.base import Signature
from evalcore.scoring import ANY
from evalcore.store import history

COLUMNS = ["system", "test_case", "completed", "turns", "reviewer", "satisfaction", "fluency", "guidance"]
RANGES = {"completed": (0, 1), "satisfaction": (-2, 2), "fluency": (-1, 1), "guidance": (0, 1)}
INTEGRAL = {"completed", "guidance"}
VERSION = "1"


def read_sessions(path: str | Path) -> pd.DataFrame:
    table = read_table(path)
    check = Checker(table.file)
    if not check.require_columns(table.columns, COLUMNS):
        check.refuse_if_any()
    rows = []
    for rec, where in zip(table.records, table.places):
        row = {"system": check.ident(rec, where, "system"),   # a model's name: the one normal form of names
               **{k: check.text(rec, where, k) for k in ("test_case", "reviewer")}}
        turns = check.number(rec, where, "turns")
        if turns is not None and turns < 0:
            check.add(where, "turns", "a number of turns >= 0", turns)
        row["turns"] = turns
        for key, (lo, hi) in RANGES.items():
            v = check.number(rec, where, key)
            if v is not None and (v < lo or v > hi or (key in INTEGRAL and v not in (0, 1))):
                check.add(where, key, "0 or 1" if key in INTEGRAL else f"a score in [{lo}, {hi}]", v)
            row[key] = v
        rows.append(row)
    check.refuse_if_any()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    dupes = frame.duplicated(["system", "test_case", "reviewer"], keep="first")
    if dupes.any():
        first = int(np.flatnonzero(dupes)[0])
        raise ImportRefused([Problem(table.file, table.places[first], "reviewer",
                                     "one row per system, test case and reviewer", "a repeat")])
    return frame


def import_sessions(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str,
                    max_turns: float = MAX_TURNS) -> ImportReport:
    """Validate the whole file, then write the systems' C, T, Sa, F, G in one transaction."""
    given = Checker(str(path))
    dataset, track = given.option("--dataset", dataset), given.option("--track", track)
    frame = read_sessions(path)
    scores = session_scores(frame, max_turns)
    batch = Batch()
    batch.dataset(dataset, language="zh", source=str(path), description="task-oriented sessions")
    batch.track(dataset, track, skill="task-oriented")
    for row in scores.itertuples():
        batch.model(row.system)
        for sql, params in history.set_aside(dataset, row.system, track, history.SCORES_SCOPE):
            batch.delete(sql, params)   # earlier values are set aside (restorable), not destroyed
        for name in ("C", "T", "Sa", "F", "G"):
            batch.add("system_scores", dataset=dataset, track=track, model=row.system, name=name,
                      value=float(getattr(row, name)), origin="computed",
                      signature=str(Signature(name, ("task-sessions", f"max-turns:{max_turns:g}", f"v:task-{VERSION}"))),
                      source=str(path), flavor=ANY, tokenizer=ANY, n=int(row.test_cases))
    counts = batch.write(con, source=path)
    return ImportReport(str(path), counts)


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_sessions(con, args.file, dataset=args.dataset, track=args.track, max_turns=args.max_turns)
