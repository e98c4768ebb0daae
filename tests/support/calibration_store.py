"""A store for the calibrated pages (issue 63): estimate_store's `toy` (alpha, beta, gamma: F1 values, people's
ratings of Q imported), a fourth model with a hostile name (its responses, F1 values and Q ratings), an LLM judge
(Judge-Coh, the deterministic judge server rating by length) on every response, and an active rating task on
dimension Know steered by F1 with some of its units rated."""
from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from evalcore.cli import main
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import response_scores, score
from evalcore.services.tasks import create_task
from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support.estimate_store import DATASET, TRACK, WORDS, build as build_toy
from support.judge_server import JudgeServer

HOSTILE = '**b** [x](javascript:alert(1)) $y$ <b>m</b> <img src=x onerror=alert(1)> -- _i_'
JUDGE = "Judge-Coh"
RATED = 24   # units of the active task people rate


def build(folder: Path) -> tuple[Path, int]:
    """(the store's path, the active task's id); the store is closed."""
    db, _, _ = build_toy(folder)
    rng = random.Random(1)
    con = connect(db)
    try:
        rows = [{"item_id": f"i{i}", "model": HOSTILE, "response": " ".join(rng.sample(WORDS, 6))} for i in range(60)]
        pd.DataFrame(rows).to_csv(folder / "hostile.csv", index=False)
        import_responses(con, folder / "hostile.csv", dataset=DATASET, track=TRACK)
        score(con, dataset=DATASET, progress=False)
        ratings = [{"item_id": f"i{i}", "model": HOSTILE, "annotator": a, "dimension": "Q", "score": rng.choice([0, 1])}
                   for i in rng.sample(range(60), 20) for a in ("ann-1", "ann-2")]
        pd.DataFrame(ratings).to_csv(folder / "hostile-ratings.csv", index=False)
        import_ratings(con, folder / "hostile-ratings.csv", dataset=DATASET, track=TRACK, scales={"Q": (0, 2)})
    finally:
        con.close()
    with JudgeServer(rate="length") as srv:
        assert main(["score", "--db", str(db), "--metrics", JUDGE, "--judge-base-url", srv.url, "--judge-model",
                     "tiny-judge", "--judge-retries", "1"]) == 0
    con = connect(db)
    try:
        task_id = create_task(con, dataset=DATASET, mode="absolute", dimensions=["Know"], items=30, per_item=1,
                              seed=5, name="active", sampling="active", judge="F1")
        rate(con, task_id, RATED)
    finally:
        con.close()
    return db, task_id


def rate(con, task_id: int, n: int, annotator: str = "ann-7") -> None:
    """`annotator` rates the task's first n units they have not rated yet: about 2 x the response's F1, with noise
    (people who follow the predictor loosely, seeded by the task)."""
    task = stored_tasks.get(con, task_id)
    done = set(stored_tasks.latest(con, task_id)["unit"])
    f1 = response_scores(con, DATASET, TRACK)
    f1 = f1[f1["metric"] == "F1"].set_index(["item_id", "model"])["value"]
    rng = random.Random(task_id * 1000 + len(done))
    for unit in stored_tasks.units(con, task_id).itertuples():
        if unit.unit in done:
            continue
        if n <= 0:
            break
        n -= 1
        value = min(2, max(0, round(2 * f1[(unit.item_id, unit.model_a)] + rng.gauss(0, 0.4))))
        stored_tasks.answer(con, task, int(unit.unit), annotator, "Know", float(value))
