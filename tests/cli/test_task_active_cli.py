"""`evalcore task create --sampling active --judge J` (issue 63): the task is made, says how many units the draw
gave, and `task show` names its judge; --judge without --sampling active, --sampling active without --judge, or
with pairwise units, is a usage error (exit 2) and a predictor without a value on every candidate a refusal, each
leaving the store file byte-identical."""
from __future__ import annotations

import json

import pytest

from evalcore.cli import main
from evalcore.store import connect
from evalcore.store import tasks as stored
from support.active_store import build

BASE = ["task", "create", "--dataset", "lab", "--dimensions", "Info", "--items", "12", "--per-item", "1"]
RATED = ["--tracks", "lab/chitchat,lab/knowledge"]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("active-cli")
    con = connect(folder / "lab.duckdb")
    build(con, folder)
    con.close()
    return folder / "lab.duckdb"


def test_an_active_task_from_the_command_line(db, capsys):
    assert main([*BASE, *RATED, "--db", str(db), "--sampling", "active", "--judge", "F1", "--seed", "4"]) == 0
    out = capsys.readouterr()
    task_id = int(out.out.strip())
    con = connect(db)
    try:
        units = stored.units(con, task_id)
    finally:
        con.close()
    assert f"active sampling drew {len(units)} units where 12 were asked for" in out.err
    assert units["probability"].between(0, 1, inclusive="right").all()
    assert main(["task", "show", str(task_id), "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    assert json.loads(shown[: shown.index("\n}") + 2])["judge"] == "F1"


@pytest.mark.parametrize("flags, code, said", [
    (["--judge", "F1", *RATED], 2, "--sampling active only"),
    (["--sampling", "active", *RATED], 2, "needs --judge"),
    (["--sampling", "active", "--judge", "F1", "--mode", "pairwise", *RATED], 2, "single responses"),
    (["--sampling", "active", "--judge", "F1"], 1, "no value on 6 of the 48 candidate responses"),
    (["--sampling", "active", "--judge", "NoSuchMetric", *RATED], 2, "unknown judge or metric"),
])
def test_refused_flags_leave_the_store_byte_identical(db, capsys, flags, code, said):
    before = db.read_bytes()
    assert main([*BASE, "--db", str(db), *flags]) == code
    assert said in capsys.readouterr().err
    assert db.read_bytes() == before
