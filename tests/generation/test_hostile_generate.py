"""`evalcore generate` against the hostile endpoints of issue 61, served by the tests' local server: chunks of the wrong
type, a lone surrogate, control characters, endless empty chunks or comment lines, a slow drip, a 401 that echoes the
key, vLLM's 404 naming the model. Each run ends (exit 1, the generation 'stopped', never left 'running'); each bad
item is a reason and the other items of its batch are stored; replies are stored with the importers' hygiene and say
so; the terminal gets no control character and no key from the endpoint's words."""
from __future__ import annotations

import re

import duckdb
import pytest

from evalcore.cli import main
from evalcore.core.text import CONTROL, SURROGATE
from evalcore.generation import run as generation
from evalcore.store import Handle, connect
from support import write_jsonl
from support.judge_server import JudgeServer

KEY = "canary-gen-41c7e9b05d2a"
BAD = {"WRONGTYPE=content": "choices[0].delta.content is a number", "WRONGTYPE=delta": "choices[0].delta is a list",
       "WRONGTYPE=choice": "choices[0] is a string", "WRONGTYPE=choices": "choices is an object",
       "WRONGTYPE=finish": "choices[0].finish_reason is a number", "EMPTYCHUNKS": "streamed lines without any text",
       "COMMENTS": "streamed lines without any text", "DRIP=0.2": "timeout: the answer took more than 1.5 s in all"}
CLEANED = {"SURROGATE": ("good \ufffd bad", "stop; 1 lone surrogate replaced by U+FFFD"),
           "CTRLALL": ("a]0;titlebcd2Je\tf\ng", "stop; 5 control characters removed")}
TEXTS = ["你好", "今天天气怎么样", *BAD, *CLEANED]   # item i<n> says TEXTS[n]


def item(i: int, text: str) -> dict:
    return {"item_id": f"i{i}", "dataset": "gen", "track": "gen/chitchat", "context": [text], "references": ["好"],
            "skill": "chitchat"}


@pytest.fixture
def store(tmp_path):
    from evalcore.ingest.formats.items import import_items
    db = tmp_path / "gen.duckdb"
    con = connect(db)
    try:
        import_items(con, write_jsonl(tmp_path / "items.jsonl", [item(i, t) for i, t in enumerate(TEXTS)]))
    finally:
        con.close()
    return str(db)


def stored(db, sql):
    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def register(db, url) -> None:
    # an idle timeout of 0.5 s: a deadline of 1.5 s in all for each request (3 x timeout)
    assert main(["endpoint", "add", "local", "--db", db, "--base-url", url, "--model", "secret-qwen2.5-72b-instruct",
                 "--api-key-env", "CANARY_KEY", "--concurrency", "4", "--timeout", "0.5", "--replace"]) == 0


def generate(db, url, model="m") -> int:
    register(db, url)
    return main(["generate", "--db", db, "--dataset", "gen", "--endpoint", "local", "--model", model, "--no-score",
                 "--no-progress"])


def terminal_safe(text: str) -> bool:
    return CONTROL.search(text.replace("\r", "")) is None and SURROGATE.search(text) is None


def test_every_hostile_item_is_a_reason_and_the_rest_is_stored(store, monkeypatch):
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True) as srv:
        register(store, srv.url)
        handle = Handle(store, connect(store))
        try:   # `evalcore generate` as the API runs it, for its outcome (the CLI prints its lines)
            outcome = generation.generate(handle, dataset="gen", tracks=None, endpoint="local", model="m")
        finally:
            handle.con.close()
    printed = "\n".join(outcome.lines())
    assert outcome.missing == len(BAD) and terminal_safe(printed) and KEY not in printed
    # every bad item has its own reason, naming what was wrong
    failed = " | ".join(outcome.failed)
    for marker, said in BAD.items():
        assert said in failed, marker
    assert sum(outcome.failed.values()) == len(BAD)
    # the others are stored, those that held a lone surrogate or control characters cleaned, their finish says so
    rows = {TEXTS[int(i[1:])]: (t, f) for i, t, f in stored(store, "SELECT r.item_id, r.text, g.finish FROM responses r "
                                                          "JOIN generated g USING (dataset, item_id, model)")}
    assert len(rows) == 2 + len(CLEANED)
    assert rows["你好"][0] == "echo: 你好"
    for marker, expected in CLEANED.items():
        assert rows[marker] == expected
    assert "1 reply with characters removed (1 lone surrogate replaced by U+FFFD)" in printed
    # the generation ended: stopped with its reasons, not left running
    [(state, detail)] = stored(store, "SELECT state, detail FROM generations")
    assert state == "stopped" and "streamed lines without any text" in detail


@pytest.mark.parametrize("how", ["FAIL401", "NOMODEL"])
def test_a_refused_key_or_model_stops_the_run_without_the_key_on_the_terminal(tmp_path, capsys, monkeypatch, how):
    from evalcore.ingest.formats.items import import_items
    db = str(tmp_path / "g.duckdb")
    con = connect(db)
    try:
        import_items(con, write_jsonl(tmp_path / "items.jsonl", [item(0, "你好"), item(1, how), item(2, "再见")]))
    finally:
        con.close()
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True, leak=True) as srv:
        assert generate(db, srv.url) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert KEY not in text and terminal_safe(text) and "stopped: the endpoint" in out.out
    assert ("HTTP 401" if how == "FAIL401" else "does not exist") in out.out
    [(state, detail)] = stored(db, "SELECT state, detail FROM generations")
    assert state == "stopped" and KEY not in detail


def test_a_key_refused_before_the_run_is_said_without_the_key(store, capsys, monkeypatch):
    """The preflight's GET /models answered 401 with the key echoed: the run does not start, and says why."""
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True, api_key="the-right-one", leak=True) as srv:
        assert generate(store, srv.url) == 1
        assert srv.log and all(path.endswith("/models") for path, _ in srv.log)
    err = capsys.readouterr().err
    assert "refused the key (HTTP 401" in err and KEY not in err and "[removed]" in err and terminal_safe(err)


def test_a_terminal_gets_no_control_characters_from_an_error_body(store, capsys, monkeypatch):
    """`endpoint test` prints what the server said: its ESC and BEL are not passed on."""
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True, api_key="the-right-one", leak=True, error_body="\x1b]0;pwned\x07\x1b[2J denied") as srv:
        register(store, srv.url)
        capsys.readouterr()
        assert main(["endpoint", "test", "local", "--db", store]) == 1
    out = capsys.readouterr()
    assert "HTTP 401" in out.out and terminal_safe(out.out + out.err) and KEY not in out.out + out.err
    assert re.search(r"\]0;pwned \[2J", out.out)


def test_a_generation_that_fails_on_an_error_is_not_left_running(store, monkeypatch):
    def broken(self, item, reply):
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(generation.Writer, "add", broken)
    with JudgeServer(echo=True) as srv, pytest.raises(RuntimeError):
        generate(store, srv.url)
    [(state, detail)] = stored(store, "SELECT state, detail FROM generations")
    assert state == "stopped" and detail == "ended by an error: RuntimeError: the disk went away"
