import pytest

from evalcore.errors import StoreError
from evalcore.migrations import LATEST
from evalcore.store import connect, resolve_db_path, schema_version, transaction


def test_new_store_is_at_latest_version(tmp_path):
    con = connect(tmp_path / "s.duckdb")
    assert schema_version(con) == LATEST
    con.close()
    con = connect(tmp_path / "s.duckdb")  # reopening migrates nothing and keeps one version row
    assert con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0] == LATEST
    con.close()


def test_store_from_newer_version_is_refused(tmp_path):
    con = connect(tmp_path / "s.duckdb")
    con.execute("INSERT INTO schema_version VALUES (?, 'm999_future', current_timestamp, '9.9')", [LATEST + 1])
    con.close()
    with pytest.raises(StoreError, match=r"newer evalcore.*Upgrade evalcore"):
        connect(tmp_path / "s.duckdb")


def test_db_path_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "env.duckdb"))
    assert resolve_db_path(tmp_path / "arg.duckdb") == tmp_path / "arg.duckdb"
    assert resolve_db_path(None) == tmp_path / "env.duckdb"
    monkeypatch.delenv("EVALCORE_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_db_path(None) == tmp_path / "xdg" / "evalcore" / "evalcore.duckdb"


def test_transaction_rolls_back_on_error(con):
    with pytest.raises(RuntimeError):
        with transaction(con):
            con.execute("INSERT INTO datasets (dataset) VALUES ('x')")
            raise RuntimeError("boom")
    assert con.execute("SELECT count(*) FROM datasets").fetchall()[0][0] == 0


def test_read_only_open_of_missing_store_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="evalcore init"):
        connect(tmp_path / "missing.duckdb", read_only=True)
