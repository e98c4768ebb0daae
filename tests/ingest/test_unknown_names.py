"""Every unknown name on every subcommand (issue 29, item 6): exit 2 with a message listing what exists,
no traceback, and the store unchanged; a known name still runs. Also: .streamlit/secrets.toml is git-ignored."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from evalcore.cli import main
from evalcore.core import names
from evalcore.ingest.formats.mtbench import import_mtbench
from evalcore.store import connect, history
from support import ROOT, fingerprint
from support.mtbench import mtbench_folder


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """MT-Bench's folder (dataset mtb: judge gpt-4, models as test_interchange writes them), and model
    vicuna-13b-v1.3 deleted (submission 2: restorable)."""
    root = tmp_path_factory.mktemp("names")
    db = root / "s.duckdb"
    con = connect(db)
    import_mtbench(con, mtbench_folder(root / "mt_bench"), dataset="mtb", language="en")
    models = [m for (m,) in con.execute("SELECT model FROM models ORDER BY model").fetchall()]
    con.close()
    assert main(["delete-model", models[-1], "--db", str(db), "--yes"]) == 0
    return db, models


def _state(db) -> dict:
    con = connect(db)
    try:
        return fingerprint(con) | {"submissions": sorted(con.execute("SELECT * FROM submissions").fetchall(), key=repr)}
    finally:
        con.close()


def _expected(models: list[str]) -> dict[str, str]:
    alive = ", ".join(names.closest_first("nope", models[:-1]))
    return {
        "submissions --dataset nope": "error: unknown dataset 'nope'; known, closest first: mtb",
        "winrate --dataset mtb --judge nope": "error: unknown judge 'nope' in dataset 'mtb'; known, closest first: gpt-4",
        "winrate --dataset mtb --track mt-bench/coding --judge gpt-5":
            "error: unknown judge 'gpt-5' in dataset 'mtb', track 'mt-bench/coding'; known, closest first: gpt-4",
        "purge 9999 --yes": "error: no submission 9999; known, newest first: 2, 1 (see `python -m evalcore submissions`)",
        "purge 9999": "error: no submission 9999; known, newest first: 2, 1 (see `python -m evalcore submissions`)",
        "restore 9999": "error: no submission 9999; known, newest first: 2, 1 (see `python -m evalcore submissions`)",
        "learned train --dataset nope --out OUT": "error: unknown dataset 'nope'; known, closest first: mtb",
        "learned train --dataset mtb --tracks mt-bench/coding,nope --out OUT":
            "error: unknown track 'nope' in dataset 'mtb'; known, closest first: "
            + ", ".join(names.closest_first("nope", ["mt-bench/coding", "mt-bench/reasoning", "mt-bench/writing"])),
        "delete-model nope": f"error: unknown model 'nope'; known, closest first: {alive}",
        "delete-model nope --yes": f"error: unknown model 'nope'; known, closest first: {alive}",
        "delete-model nope --yes --dataset mtb": f"error: unknown model 'nope'; known, closest first: {alive}",
        "jobs --dataset nope": "error: unknown dataset 'nope'; known, closest first: mtb",
        "models --dataset nope": "error: unknown dataset 'nope'; known, closest first: mtb",
        "summary --dataset nope": "error: unknown dataset 'nope'; known, closest first: mtb",
    }


COMMANDS = ["submissions --dataset nope", "winrate --dataset mtb --judge nope",
            "winrate --dataset mtb --track mt-bench/coding --judge gpt-5", "purge 9999 --yes", "purge 9999",
            "restore 9999", "learned train --dataset nope --out OUT",
            "learned train --dataset mtb --tracks mt-bench/coding,nope --out OUT", "delete-model nope",
            "delete-model nope --yes", "delete-model nope --yes --dataset mtb", "jobs --dataset nope",
            "models --dataset nope", "summary --dataset nope"]


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_name_exits_2_listing_what_exists(store, command, tmp_path, capsys):
    db, models = store
    before = _state(db)
    argv = [a.replace("OUT", str(tmp_path / "model")) for a in command.split()]
    capsys.readouterr()
    assert main([*argv, "--db", str(db)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == _expected(models)[command]
    assert captured.out == "" and "Traceback" not in captured.err
    assert _state(db) == before
    assert not (tmp_path / "model").exists()


def test_the_deleted_model_is_not_listed_but_the_others_are(store):
    db, models = store
    assert len(models) >= 3 and models[-1] not in _expected(models)["delete-model nope"]
    for m in models[:-1]:
        assert m in _expected(models)["delete-model nope"]


def test_known_names_still_run(store, capsys):
    db, models = store
    capsys.readouterr()
    assert main(["winrate", "--db", str(db), "--dataset", "mtb", "--judge", "gpt-4", "--format", "json"]) == 0
    assert '"judge": "gpt-4"' in capsys.readouterr().out
    assert main(["submissions", "--db", str(db), "--dataset", "mtb", "--format", "csv"]) == 0
    assert main(["purge", "2", "--db", str(db)]) == 1   # known: without --yes it only tells
    assert "would drop for good the rows submission 2 set aside" in capsys.readouterr().out
    # a model known to the history only (deleted) is still one whose submissions can be listed
    assert main(["submissions", "--db", str(db), "--model", models[-1], "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split(",")[:3][2] == "delete"


def test_history_functions_refuse_an_unknown_submission(store):
    db, _ = store
    con = connect(db)
    try:
        before = fingerprint(con)
        for fn in (history.purge, history.restore):
            with pytest.raises(names.UnknownName, match=r"^no submission 77; known, newest first: 2, 1 "):
                fn(con, 77)
        assert fingerprint(con) == before
    finally:
        con.close()


def test_an_unknown_submission_in_an_empty_history(tmp_path, capsys):
    db = tmp_path / "e.duckdb"
    connect(db).close()   # an empty store
    assert main(["restore", "1", "--db", str(db)]) == 2
    assert capsys.readouterr().err.strip() == "error: no submission 1: there is no submission in this store"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_streamlit_secrets_are_git_ignored():
    done = subprocess.run(["git", "check-ignore", "-q", ".streamlit/secrets.toml"], cwd=ROOT)
    assert done.returncode == 0
