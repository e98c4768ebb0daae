"""`evalcore estimate` and `evalcore plan` on the small calibration store (support.estimate_store): a refusal in one
sentence with exit 2 and the store unchanged, the CSV a script reads (one row per model), the text naming estimator,
predictor signature and assumption, and plans from assumptions, from a pilot and from a task's ratings."""
from __future__ import annotations

import io

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.services.tasks import create_task
from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support import fingerprint
from support.estimate_store import DATASET, MODELS, build


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return build(tmp_path_factory.mktemp("estimate-cli"))[0]


def test_estimate_refuses_imported_ratings_then_gives_the_csv(db, capsys):
    base = ["estimate", "--db", str(db), "--dataset", DATASET, "--dimension", "Q", "--predictor", "F1"]
    con = connect(db)
    before = fingerprint(con)
    con.close()
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.startswith("estimate refused: the ratings come from") and "--assume-random" in err
    assert main([*base, "--assume-random", "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(frame["model"]) == list(MODELS)
    assert {"estimate", "lower", "upper", "n_people", "n_predicted"} <= set(frame.columns)
    assert (frame["lower"] <= frame["estimate"]).all() and (frame["estimate"] <= frame["upper"]).all()
    assert (frame["n_people"] == 20).all() and (frame["n_predicted"] == 60).all()
    assert main([*base, "--assume-random"]) == 0
    out = capsys.readouterr().out
    assert "estimator PPI++" in out and "predictor F1: " in out and "declared random (--assume-random)" in out
    assert "paired differences" in out
    con = connect(db)
    assert fingerprint(con) == before   # reading only
    con.close()


def test_plans_from_assumptions_a_pilot_and_a_task(db, capsys):
    assert main(["plan", "--db", str(db), "--question", "difference", "--sd", "1", "--effect", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "spread from assumed: a unit's sd 1" in out and "people only: 65 units per system" in out
    assert main(["plan", "--db", str(db), "--question", "difference", "--dataset", DATASET, "--dimension", "Q",
                 "--models", "alpha,beta", "--effect", "0.3", "--raters", "2", "--budget", "20", "--predictor", "F1"]) == 0
    out = capsys.readouterr().out
    assert "spread from pilot: 20 units, 40 ratings" in out and "each rated by 2 people" in out
    assert "F1 calibrated by people: " in out and "with a predictor of correlation" in out
    assert "the pilot resampled (200 draws of its units): people only would need " in out
    assert main(["plan", "--db", str(db), "--question", "correlation", "--r", "0.3", "--format", "csv"]) == 0
    assert "85" in capsys.readouterr().out
    assert main(["plan", "--db", str(db), "--question", "difference", "--dataset", DATASET, "--dimension", "Q"]) == 1
    assert "--effect is needed" in capsys.readouterr().err
    con = connect(db)
    task_id = create_task(con, dataset=DATASET, mode="absolute", dimensions=["Coh"], items=12, per_item=1, seed=0)
    task = stored_tasks.get(con, task_id)
    for unit in stored_tasks.units(con, task_id)["unit"]:
        stored_tasks.answer(con, task, int(unit), "ann-1", "Coh", float(unit % 3))
    con.close()
    assert main(["plan", "--db", str(db), "--question", "ranking", "--task", str(task_id), "--sd", "1"]) == 0
    out = capsys.readouterr().out
    assert "what the task's ratings settle" in out and "detectable" in out


def test_more_raters_help_only_as_far_as_raters_disagree(db, capsys):
    # between 1 + within 1 / K: K = 1 needs about twice the units of no rater noise (65), K = 2 about 1.5 times
    assert main(["plan", "--db", str(db), "--question", "difference", "--sd", "1", "--rater-sd", "1",
                 "--effect", "0.5"]) == 0
    out = capsys.readouterr().out
    table = out.split("the ratings they cost):")[1].split()
    units = dict(zip(table[3::3], table[4::3]))
    assert units == {"1": "128", "2": "96", "3": "86", "5": "78"}
