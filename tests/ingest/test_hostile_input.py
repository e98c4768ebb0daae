"""A hostile-input corpus (issue 29): files a careless lab member or an attacker sends, through every importer
of the CLI. Each case asserts the refusal (exit 2, or 1 for a bad option as every bad option exits), that the
message names the file, the row or line and the field, that no traceback is printed, and that every table of
the store is exactly as before (support.fingerprint). Expected numbers (byte offsets, lines, rows) are worked
out here from the bytes written, never read back from the code.

Bombs are kept small: the limits are lowered through their environment variables (EVALCORE_MAX_*), and the
real-size measurement is bench/zip_bomb.py.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile

import pytest

from evalcore.cli import main
from evalcore.ingest import archives, checker, readers
from evalcore.store import connect
from support import TOY_ITEMS, write_jsonl
from support.hostile_input import (
    AUTO,
    CASES,
    published,
    snapshot,
    xlsx,
)


@pytest.fixture
def store(tmp_path):
    """A toy store on disk (items t1, t2, k1; responses of m1 and m2), closed: the CLI opens it itself."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses

    db = tmp_path / "s.duckdb"
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    (tmp_path / "resp.csv").write_text("item_id,model,response\nt1,m1,天气很好\nt2,m1,你好\nt1,m2,嗯\n", encoding="utf-8")
    import_responses(con, tmp_path / "resp.csv", dataset="toy", track="toy/chitchat")
    con.close()
    return db


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file_is_refused_whole(name, store, tmp_path, capsys, monkeypatch):
    case = CASES[name]
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    if case.patch:
        case.patch(monkeypatch)
    work = tmp_path / "in"
    work.mkdir()
    target = case.make(work)
    argv = [a.replace("{f}", str(target)) for a in case.argv] + ["--db", str(store)]
    before = snapshot(store)
    capsys.readouterr()
    started = time.perf_counter()
    code = main(argv)
    took = time.perf_counter() - started
    out, err = capsys.readouterr()
    message = out + err
    assert code == case.code, message
    assert "Traceback" not in message
    for pattern in case.expect:
        assert re.search(pattern, message), f"{pattern!r} not in:\n{message}"
    if case.code == 2:
        assert "nothing was written" in message
    assert snapshot(store) == before
    assert took < 20


def test_the_corpus_covers_every_importer_and_forty_kinds():
    kinds = {}
    for case in CASES.values():
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
    assert set(kinds) == {"responses", "items", "dstc10", "mtbench", "ratings", "scores", "published"}
    assert len(CASES) >= 40


def test_the_cli_refuses_a_bomb_with_exit_2_and_no_traceback(store, tmp_path):
    """The real process: a zip whose member declares 5 MB against a 1 MB limit is refused at once."""
    bomb = tmp_path / "b.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("toy_chitchat.csv", b"a" * 5_000_000)
    run = subprocess.run([sys.executable, "-m", "evalcore", "import", "responses", str(bomb), "--db", str(store),
                          "--dataset", "toy", "--model", "m"], capture_output=True, text=True,
                         env={**os.environ, "EVALCORE_MAX_EXPANDED": "1000000"}, timeout=120)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "expected an archive that expands to at most 1,000,000 bytes (EVALCORE_MAX_EXPANDED)" in run.stderr


# ---------------------------------------------------------------- what still reads (no false refusals)
def test_quoted_cells_over_several_lines_and_escaped_quotes_still_read(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('item_id,response\nt1,"one\ntwo, ""three"""\nt2,plain\n', encoding="utf-8")
    table = readers.read_table(path)
    assert [r["response"] for r in table.records] == ['one\ntwo, "three"', "plain"]
    assert list(table.places) == ["row 2", "row 3"]


def test_a_formula_with_a_saved_value_reads_as_that_value(tmp_path):
    path = xlsx("r.xlsx", [["item_id", "response"], ["t1", "=1+1"], ["t2", "plain"]], {"B2": "2"})(tmp_path)
    table = readers.read_table(path)
    assert [r["response"] for r in table.records] == [2, "plain"]


def test_a_limit_reached_exactly_is_not_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "3")
    monkeypatch.setenv("EVALCORE_MAX_LINE", "5")  # 'x1,a\n' is 5 characters
    path = tmp_path / "r.csv"
    path.write_text("i,r\nx1,a\nx2,b\nx3,c\n", encoding="utf-8")
    assert len(readers.read_table(path).records) == 3


def test_json_nested_exactly_at_the_limit_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_DEPTH", "5")
    path = tmp_path / "r.jsonl"
    # the object is level 1, so four more arrays make five; brackets inside strings do not count
    path.write_text('{"x": [[[[1]]]], "s": "[[[[[[[["}\n', encoding="utf-8")
    assert readers.read_table(path).records[0]["x"] == [[[[1]]]]
    path.write_text('{"x": [[[[[1]]]]]}\n', encoding="utf-8")
    with pytest.raises(readers.ImportRefused, match="nested at most 5 levels"):
        readers.read_table(path)


def test_published_names_are_normalised_like_everywhere(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    connect(db).close()
    root = published({AUTO: "paper_table,competition,skill,model,metric,value,corpus\n"
                            "3,lic2021,knowledge, m ,BLEU,0.1,DuConv\n3,lic2021,knowledge,ｍ２,BLEU,0.2,\n"})(tmp_path)
    assert main(["import", "published", str(root), "--db", str(db), "--dataset", "pp"]) == 0
    con = connect(db)
    try:
        rows = con.execute("SELECT model, value FROM system_scores WHERE dataset = 'pp' ORDER BY model").fetchall()
        corpus = con.execute("SELECT corpus FROM tracks WHERE dataset = 'pp'").fetchall()
    finally:
        con.close()
    assert rows == [("m", 0.1), ("m2", 0.2)]
    assert corpus == [("DuConv",)]
    assert checker.NORMALISED.format(n=2) in capsys.readouterr().out


# ---------------------------------------------------------------- temp folders left by a killed import
def test_sweep_removes_the_folders_of_dead_processes_and_old_ones_only(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmp_path / f"{archives.TEMP_PREFIX}{dead.pid}-abc"
    mine = tmp_path / f"{archives.TEMP_PREFIX}{os.getpid()}-abc"
    old = tmp_path / f"{archives.TEMP_PREFIX}xyz"
    new = tmp_path / f"{archives.TEMP_PREFIX}uvw"
    other = tmp_path / "somebody-else"
    for folder in (gone, mine, old, new, other):
        folder.mkdir()
        (folder / "upload.csv").write_bytes(b"x" * 100)
    hour_ago = time.time() - 3700
    os.utime(old, (hour_ago, hour_ago))
    os.utime(other, (hour_ago, hour_ago))
    removed = archives.sweep_temp(max_age_s=3600, root=tmp_path)
    assert sorted(removed) == sorted([gone, old])
    assert [p.exists() for p in (gone, mine, old, new, other)] == [False, True, False, True, True]


def test_a_killed_zip_import_leaves_a_folder_the_sweep_removes(store, tmp_path):
    """SIGKILL while an archive is being unpacked: its folder stays (no finally runs), named with the dead
    process's id; sweep_temp removes it."""
    bomb = tmp_path / "big.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_STORED) as z:
        z.writestr("toy_chitchat.csv", b"item_id,response\n" + b"t1,aaaaaaaaaaaaaaa\n" * 3_000_000)
    temp = tmp_path / "tmp"
    temp.mkdir()
    child = subprocess.Popen([sys.executable, "-m", "evalcore", "import", "responses", str(bomb), "--db", str(store),
                              "--dataset", "toy", "--model", "m"], env={**os.environ, "TMPDIR": str(temp)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not any(temp.glob(f"{archives.TEMP_PREFIX}*/*/*")):
        time.sleep(0.02)
    child.kill()
    child.wait()
    left = list(temp.glob(f"{archives.TEMP_PREFIX}{child.pid}-*"))
    assert left, "the import never started unpacking"
    assert archives.sweep_temp(root=temp) == left
    assert not any(temp.iterdir())


# ---------------------------------------------------------------- negative counts on the command line
@pytest.mark.parametrize("argv, option", [
    (["leaderboard", "--dataset", "toy", "--bootstrap", "-1"], "--bootstrap"),
    (["correlate", "--dataset", "toy", "--bootstrap", "-5", "--seed", "1"], "--bootstrap"),
    (["agreement", "--dataset", "toy", "--bootstrap", "-1"], "--bootstrap"),
    (["score", "--dataset", "toy", "--actors", "0"], "--actors"),
    (["score", "--dataset", "toy", "--judge-retries", "-2"], "--judge-retries"),
    (["leaderboard", "--dataset", "toy", "--bootstrap", "ten"], "--bootstrap"),
])
def test_negative_counts_are_refused_by_the_parser(argv, option, store, capsys):
    before = snapshot(store)
    with pytest.raises(SystemExit) as exit_:
        main(argv + ["--db", str(store)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: expected a whole number" in err and "Traceback" not in err
    assert snapshot(store) == before
