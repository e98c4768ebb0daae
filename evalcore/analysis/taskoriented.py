"""Task-oriented evaluation as in SMP2018-ECDT (seed 001).

Per system, from the sessions file's rows (one per system, test case and reviewer):
- C: task completion ratio, the mean of `completed` over all rows;
- T: average turns over test cases, an unfinished test case counting the theoretical maximum
  (34.29 in SMP2018; `--max-turns`); a test case's turns are the mean of its rows;
- Sa, F, G: means of satisfaction, fluency and guidance over all rows.
They are stored as computed system scores of the track (skill task-oriented) by the sessions importer
(evalcore/ingest/formats/sessions.py), so the leaderboard ranks them by the paper's rule: C, then T ascending,
then Sa, F, G.

Intent classification (Task 1): macro precision and recall over the classes of gold and predicted
labels (a class never predicted has precision 0), and F1 = 2PR / (P + R) of those (Equation 1).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.analysis.options import MAX_TURNS


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

