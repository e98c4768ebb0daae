"""Task-oriented evaluation (seed 001): intent F1 by hand, session scores, the SMP2018 order."""
from __future__ import annotations

import io
import math
from contextlib import redirect_stdout

import pandas as pd
import pytest

from evalcore.analysis.taskoriented import intent_scores
from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.sessions import import_sessions
from support import copy_default_store, fingerprint


def test_intent_f1_by_hand():
    # labels a, b, c; tp a 2, b 0, c 0; predicted a 2, b 1, c 1 -> P = (1 + 0 + 0) / 3
    # actual a 3, b 1, c 0 -> R = (2/3 + 0 + 0) / 3 = 2/9; F1 = 2 P R / (P + R) = 4/15
    out = intent_scores(["a", "a", "a", "b"], ["a", "a", "b", "c"])
    assert math.isclose(out["precision"], 1 / 3) and math.isclose(out["recall"], 2 / 9)
    assert math.isclose(out["f1"], 4 / 15)


SESSIONS = """system,test_case,completed,turns,reviewer,satisfaction,fluency,guidance
A,c1,1,10,r1,2,1,1
A,c1,1,10,r2,1,0,1
A,c2,0,20,r1,-1,0,0
A,c2,0,20,r2,0,-1,1
B,c1,1,8,r1,1,1,1
B,c1,1,8,r2,1,1,1
B,c2,0,30,r1,0,0,0
B,c2,0,30,r2,0,0,0
"""


def test_sessions_scores_and_rank(con, tmp_path):
    from evalcore.analysis.leaderboard import leaderboard

    (tmp_path / "s.csv").write_text(SESSIONS, encoding="utf-8")
    import_sessions(con, tmp_path / "s.csv", dataset="tod", track="mytask/task-oriented")
    board = leaderboard(con, "tod").set_index("model")
    # A: C = 2/4, T = (10 + 34.29) / 2 (c2 unfinished), Sa = 2/4, F = 0, G = 3/4
    assert board.loc["A", "C"] == pytest.approx(0.5) and board.loc["A", "T"] == pytest.approx((10 + 34.29) / 2)
    assert board.loc["A", "Sa"] == pytest.approx(0.5) and board.loc["A", "G"] == pytest.approx(0.75)
    # B ties on C and has fewer turns ((8 + 34.29) / 2): B ranks first
    assert board.loc["B", "rank"] == 1 and board.loc["A", "rank"] == 2


def test_bad_sessions_refused_whole(con, tmp_path):
    (tmp_path / "bad.csv").write_text(SESSIONS.replace("A,c2,0,20,r1,-1,0,0", "A,c2,0,20,r1,3,0,0"), encoding="utf-8")
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as exc:
        import_sessions(con, tmp_path / "bad.csv", dataset="tod", track="mytask/task-oriented")
    text = exc.value.render()
    assert "bad.csv" in text and "row 4" in text and "satisfaction" in text and "[-2, 2]" in text
    assert fingerprint(con) == before


def test_smp2018_task2_order_reproduced(tmp_path, default_store_file):
    db = str(copy_default_store(default_store_file, tmp_path / "d.duckdb"))
    assert main(["init", "--db", db]) == 0
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["leaderboard", "--db", db, "--dataset", "smp2018-task2", "--format", "csv"]) == 0
    board = pd.read_csv(io.StringIO(out.getvalue()))
    assert board["rank"].tolist() == [1, 2, 3, 4, 5]
    assert board["model"].tolist() == [
        "iDeepWise Artificial Intelligence", "Centaurs Technologies Co. Ltd.",
        "CIKE Lab, South China University of Technology", "BatOrange Interactive Technology Co. Ltd.",
        "Laiye Network Technology Co. Ltd."]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["leaderboard", "--db", db, "--dataset", "smp2018-task1", "--format", "csv"]) == 0
    task1 = pd.read_csv(io.StringIO(out.getvalue()))
    assert task1["F1"].tolist() == sorted(task1["F1"], reverse=True) and task1["rank"].tolist() == list(range(1, 9))
