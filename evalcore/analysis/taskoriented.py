"""Task-oriented evaluation as in SMP2018-ECDT (seed 001).

Sessions file (CSV/TSV/JSONL/xlsx), one row per system, test case and reviewer: `system`,
`test_case`, `completed` (0/1), `turns`, `reviewer`, `satisfaction` (-2..2), `fluency` (-1..1),
`guidance` (0/1). Per system:
- C: task completion ratio, the mean of `completed` over all rows;
- T: average turns over test cases, an unfinished test case counting the theoretical maximum
  (34.29 in SMP2018; `--max-turns`); a test case's turns are the mean of its rows;
- Sa, F, G: means of satisfaction, fluency and guidance over all rows.
They are stored as computed system scores of the track (skill task-oriented), so the leaderboard
ranks them by the paper's rule: C, then T ascending, then Sa, F, G.

Intent classification (Task 1): macro precision and recall over the classes of gold and predicted
labels (a class never predicted has precision 0), and F1 = 2PR / (P + R) of those (Equation 1).
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.readers import Checker, read_table
from evalcore.metrics.base import Signature
from evalcore.scoring import ANY
from evalcore.store import history

MAX_TURNS = 34.29
COLUMNS = ["system", "test_case", "completed", "turns", "reviewer", "satisfaction", "fluency", "guidance"]
RANGES = {"completed": (0, 1), "satisfaction": (-2, 2), "fluency": (-1, 1), "guidance": (0, 1)}
INTEGRAL = {"completed", "guidance"}
VERSION = "1"


def intent_scores(gold: list[str], pred: list[str]) -> dict[str, float]:
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    labels = sorted(set(gold) | set(pred))
    index = {c: i for i, c in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)))
    np.add.at(confusion, ([index[g] for g in gold], [index[p] for p in pred]), 1)
    tp = np.diag(confusion)
    predicted, actual = confusion.sum(axis=0), confusion.sum(axis=1)
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0).mean()
    recall = np.divide(tp, actual, out=np.zeros_like(tp), where=actual > 0).mean()
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1), "n": len(gold)}


def session_scores(frame: pd.DataFrame, max_turns: float = MAX_TURNS) -> pd.DataFrame:
    """One row per system: C, T, Sa, F, G and the number of test cases."""
    rows = []
    for system, g in frame.groupby("system", sort=True):
        cases = g.groupby("test_case").agg(done=("completed", "mean"), turns=("turns", "mean"))
        turns = np.where(cases["done"] >= 0.5, cases["turns"], max_turns)
        rows.append({"system": system, "C": g["completed"].mean(), "T": float(turns.mean()),
                     "Sa": g["satisfaction"].mean(), "F": g["fluency"].mean(), "G": g["guidance"].mean(),
                     "test_cases": len(cases)})
    return pd.DataFrame(rows)


def read_sessions(path: str | Path) -> pd.DataFrame:
    table = read_table(path)
    check = Checker(table.file)
    if not check.require_columns(table.columns, COLUMNS):
        check.refuse_if_any()
    rows = []
    for rec, where in zip(table.records, table.places):
        row = {k: check.text(rec, where, k) for k in ("system", "test_case", "reviewer")}
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
