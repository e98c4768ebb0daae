"""A key pasted into a base URL (issue 61, B8): a user name/password or a query in `--base-url` is refused at
`endpoint add` (exit 2) and by the store's registration the Upload page's form calls, never repeating what was
given, the store unchanged; so are a URL with surrounding blanks and a port out of range. An endpoint stored with
such a URL before the rule is listed, shown and used without the secret."""
from __future__ import annotations

import hashlib
import shutil

import pytest

from evalcore.cli import main
from evalcore.core.urls import problem, without_secrets
from evalcore.pagedata import endpoints as views
from evalcore.store import connect
from evalcore.store import endpoints as registry

SECRET = "sk-pasted-7Q2xK9"

# (the URL given, words its refusal must say)
REFUSED = [
    (f"http://user:{SECRET}@127.0.0.1:8000/v1", "user name/password"),
    (f"http://{SECRET}@127.0.0.1:8000/v1", "user name/password"),
    (f"https://:{SECRET}@api.example.org/v1", "user name/password"),
    (f"http://127.0.0.1:8000/v1?api_key={SECRET}", "query"),
    (f"http://127.0.0.1:8000/v1?key={SECRET}", "query"),
    (f"http://127.0.0.1:8000/v1?token={SECRET}", "query"),
    (f"http://127.0.0.1:8000/v1?{SECRET}", "query"),
    (f"http://127.0.0.1:8000/v1#{SECRET}", "fragment"),
    (f" http://127.0.0.1:8000/v1/{SECRET}", "starts or ends with a space"),
    (f"http://127.0.0.1:8000/v1/{SECRET}\t", "starts or ends with a space"),
    (f"http://127.0.0.1:8000/v1 {SECRET}", "space or a control character"),
    (f"http://127.0.0.1:70000/v1/{SECRET}", "port is malformed"),
    (f"http://127.0.0.1:{SECRET}/v1", "port is malformed"),
    (f"http://[::1/v1/{SECRET}", "malformed"),
    (SECRET, "not an http(s) URL"),
    ("http://127.0.0.1:0/v1", "port is 0"),
]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path, empty_store_file):
    path = tmp_path / "s.duckdb"
    shutil.copyfile(empty_store_file, path)
    return path


@pytest.mark.parametrize("url, said", REFUSED)
def test_endpoint_add_refuses_without_repeating_it(db, url, said, capsys):
    before = digest(db)
    with pytest.raises(SystemExit) as exit_:
        main(["endpoint", "add", "local", "--db", str(db), "--base-url", url, "--model", "m"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert said in captured.err and "--base-url" in captured.err, captured.err
    assert SECRET not in captured.err + captured.out
    assert digest(db) == before   # the store was not even opened


@pytest.mark.parametrize("url, said", REFUSED)
def test_the_pages_registration_refuses_without_repeating_it(db, url, said):
    con = connect(db)
    try:
        with pytest.raises(ValueError) as refused:
            registry.add(con, registry.Registered("local", url, "m"))
        assert said in str(refused.value) and SECRET not in str(refused.value)
        assert con.execute("SELECT count(*) FROM endpoints").fetchall() == [(0,)]
        assert views.registered(con).empty
    finally:
        con.close()


def test_the_key_advice_names_the_variable_option():
    assert "--api-key-env" in problem(f"http://u:{SECRET}@h/v1") and "--api-key-env" in problem(f"http://h/v1?k={SECRET}")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.example.org/v1/", "http://[::1]:11434/v1",
                                 "http://localhost/v1", "http://127.0.0.1:65535/v1"])
def test_plain_base_urls_are_registered(db, url, capsys):
    assert main(["endpoint", "add", "local", "--db", str(db), "--base-url", url, "--model", "m"]) == 0
    assert url in capsys.readouterr().out
    assert problem(url) is None and without_secrets(url) == url


def test_a_url_stored_before_the_rule_is_listed_shown_and_used_without_its_secret(db, capsys):
    con = connect(db)
    try:   # as a store written before the rule holds it: the row itself, as the old registration wrote it
        registry.add(con, registry.Registered("old", "http://127.0.0.1:8000/v1", "m"))
        con.execute("UPDATE endpoints SET base_url = ? WHERE name = 'old'",
                    [f"http://user:{SECRET}@127.0.0.1:8000/v1?api_key={SECRET}#{SECRET}"])
        entry = registry.get(con, "old")
        assert entry.base_url == "http://127.0.0.1:8000/v1" and SECRET not in repr(entry.endpoint())
        assert SECRET not in views.shown(views.registered(con)).to_csv()
        assert registry.stored_with_secrets(con, "old") and not registry.stored_with_secrets(con, "nobody")
    finally:
        con.close()
    for command in (["endpoint", "list"], ["endpoint", "list", "--format", "json"], ["endpoint", "show", "old"]):
        assert main([*command, "--db", str(db)]) == 0
        captured = capsys.readouterr()
        assert SECRET not in captured.out + captured.err
        assert "127.0.0.1:8000/v1" in captured.out
    assert main(["endpoint", "show", "old", "--db", str(db)]) == 0
    assert "neither shown nor sent" in capsys.readouterr().err
