"""The store's disk misbehaving: a read-only mount still serves the read commands, and a full disk is
one sentence with the store exactly as before. Both need mount(8) (root); they skip without it."""
from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import copy_default_store, fingerprint
from evalcore.cli import main
from evalcore.store import connect


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"mount {' '.join(args)} is not allowed here: {done.stderr.strip()}")


@contextmanager
def mounted(*args: str, where: Path):
    where.mkdir(parents=True, exist_ok=True)
    _mount(*args, str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def needs_root():
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a read-only or a small file system needs mount(8) as root")


def test_read_commands_work_on_a_read_only_store(tmp_path, default_store_file, needs_root, capsys):
    source = tmp_path / "rw"
    copy_default_store(default_store_file, source / "store.duckdb")
    with mounted("--bind", str(source), where=tmp_path / "ro") as ro:
        _mount("-o", "remount,ro,bind", str(ro))
        store = str(ro / "store.duckdb")
        with pytest.raises(OSError):
            (ro / "probe").touch()  # the mount is really read-only
        for command in (["summary"], ["models"], ["jobs"], ["submissions"],
                        ["leaderboard", "--dataset", "msde-paper"], ["trust", "--dataset", "msde-paper"],
                        ["correlate", "--dataset", "msde-paper", "--origin", "published"]):
            assert main([*command, "--db", store]) == 0, (command, capsys.readouterr().err)
        capsys.readouterr()
        # a command that writes says why in one line, no traceback
        assert main(["delete-model", "bm25", "--db", store, "--yes"]) == 1
        err = capsys.readouterr().err
        assert "Read-only file system" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_full_disk_is_one_sentence_and_the_store_is_as_before(tmp_path, default_store_file, needs_root, capsys):
    with mounted("-t", "tmpfs", "-o", "size=80m", "tmpfs", where=tmp_path / "small") as small:
        store = copy_default_store(default_store_file, small / "store.duckdb")
        con = connect(store)
        items = [i for (i,) in con.execute("SELECT item_id FROM items WHERE dataset = 'demo-zh' AND "
                                            "track = 'kdconv/knowledge' ORDER BY item_id").fetchall()]
        before = fingerprint(con)
        con.close()
        big = tmp_path / "responses.csv"  # outside the small disk: about 11 MB of text to store
        big.write_text("item_id,response\n" + "".join(f'{i},"{"长回答" * 400}"\n' for i in items), encoding="utf-8")
        free = shutil.disk_usage(small).free
        with open(small / "filler", "wb") as filler:  # leave 2 MB
            filler.write(b"\0" * (free - 2 * 1024 * 1024))
        code = main(["import", "responses", str(big), "--db", str(store), "--dataset", "demo-zh",
                     "--track", "kdconv/knowledge", "--model", "big"])
        err = capsys.readouterr().err
        assert code == 1, err
        assert err.startswith("error: the disk holding the store is full: nothing of this write was stored, and the "
                              "store is as it was; free some space and run it again"), err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        (small / "filler").unlink()
        con = connect(store)
        assert fingerprint(con) == before
        con.close()
