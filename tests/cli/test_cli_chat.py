"""`evalcore chat ...` beyond the walk-through of tests/cli/test_chat_cli.py: create on a chit-chat track with every
option (guidelines from a file saved with a byte-order mark, no flags, no review, a target of its own) and its
refusals, each in one sentence with the CLI's exit codes; `show --all`, the signatures and the sent-back count;
review's wrong uses; list as JSON, without a deleted task; the export's four files in UTF-8 (with a byte-order
mark, for spreadsheet programs) with the Chinese intact; an unknown task named in one sentence."""
from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.judge_server import JudgeServer


@pytest.fixture
def db(tmp_path, default_store_file):
    path = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    return str(path)


def register(db: str, url: str, *names: str) -> None:
    con = connect(db)
    try:
        for name in names:
            registry.add(con, registry.Registered(name, url, "served", api_key_env=None))
    finally:
        con.close()


def chat(db: str, task_id: int, person: str, said: list[str], ratings: dict[str, float], goal=True) -> int:
    """One conversation as the Chat page holds it: assigned, each message answered by the endpoint, ended, rated."""
    con = connect(db)
    try:
        task = stored.get(con, task_id)
        cid = stored.assign(con, task, person)
        for text in said:
            stored.say(con, cid, person, text)
            after, stream = service.ask(con, cid)
            list(stream)
            assert service.keep(con, cid, after, stream.reply) is None
        stored.end(con, cid, person, goal=goal)
        for dimension, value in ratings.items():
            stored.rate(con, cid, person, dimension, value)
        return cid
    finally:
        con.close()


def test_create_with_every_option_on_a_chit_chat_track(db, tmp_path, capsys):
    guide = tmp_path / "guide.txt"
    guide.write_text("请像平时聊天一样说话。\n不要透露个人信息。", encoding="utf-8-sig")   # as Notepad saves it
    with JudgeServer(echo=True) as srv:
        register(db, srv.url, "alpha")
        assert main(["chat", "create", "--db", db, "--dataset", "demo-zh", "--track", "lccc/chitchat", "--endpoints",
                     "alpha", "--scenarios", "3", "--seed", "7", "--per-scenario", "2", "--max-rounds", "4", "--flags",
                     "", "--guidelines", str(guide), "--name", "闲聊 试点", "--target", "pilot", "--no-review"]) == 0
        out = capsys.readouterr()
        con = connect(db)
        task = stored.get(con, 1)
        con.close()
        assert out.out.strip() == "1"
        assert "6 conversations (3 scenarios x 1 endpoints x 2)" in out.err and "/chat?task=1" in out.err
        assert f"access code {task.access_code}" in out.err and "become dataset pilot" in out.err
        assert (task.name, task.target, task.flags, task.review, task.max_rounds, task.seed) == (
            "闲聊 试点", "pilot", (), False, 4, 7)
        assert task.guidelines == "请像平时聊天一样说话。\n不要透露个人信息。"
        assert [d.dimension for d in task.dimensions] == ["Info", "Coh"]           # chit-chat: no Know, no Rec
        cid = chat(db, 1, "安", ["你好", "今天吃什么"], {"Info": 1, "Coh": 2})
    con = connect(db)
    try:
        assert stored.conversation(con, cid).state == "accepted"                  # no review: counted once rated
        assert con.execute("SELECT count(*) FROM items WHERE dataset = 'pilot'").fetchall() == [(2,)]
    finally:
        con.close()


@pytest.mark.parametrize("extra, code, said", [
    (["--track", "kdconv/knowlege", "--endpoints", "alpha"], 2, "unknown track 'kdconv/knowlege'"),
    (["--track", "kdconv/knowledge", "--endpoints", "alpha", "--target", "demo-zh"], 1, "give another --target"),
    (["--track", "kdconv/knowledge", "--endpoints", "alpha", "--guidelines", "/nonexistent/g.txt"], 1,
     "--guidelines /nonexistent/g.txt: cannot be read"),
    (["--track", "kdconv/knowledge", "--endpoints", "alpha", "--dimensions", "Info,Nope"], None, "Nope"),
])
def test_create_refuses_in_one_sentence(db, extra, code, said, capsys):
    register(db, "http://127.0.0.1:9/v1", "alpha")
    got = main(["chat", "create", "--db", db, "--dataset", "demo-zh", *extra])
    err = capsys.readouterr().err
    assert got != 0 and (code is None or got == code) and said in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert main(["chat", "list", "--db", db, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []                              # nothing was stored


@pytest.mark.parametrize("extra, said", [
    (["--per-scenario", "100000"], "--per-scenario must lie in 1..20, got 100000; nothing was stored"),
    (["--per-scenario", "21"], "--per-scenario must lie in 1..20, got 21"),
    (["--scenarios", "501"], "--scenarios must lie in 1..500, got 501"),
    (["--max-rounds", "51"], "--max-rounds must lie in 1..50, got 51"),
])
def test_create_takes_the_pages_bounds(db, extra, said, capsys):
    """The page's controls stop at 500 scenarios, 20 conversations per scenario and endpoint, 50 rounds; the command
    refuses past them in one sentence before drawing anything (--per-scenario 100000 ran past 90 s and 10 GB), the
    store file byte-identical."""
    register(db, "http://127.0.0.1:9/v1", "alpha")
    before = hashlib.sha256(open(db, "rb").read()).hexdigest()
    got = main(["chat", "create", "--db", db, "--dataset", "demo-zh", "--track", "kdconv/knowledge",
                "--endpoints", "alpha", *extra])
    err = capsys.readouterr().err
    assert got == 1 and said in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert hashlib.sha256(open(db, "rb").read()).hexdigest() == before


def test_show_review_list_and_export(db, tmp_path, capsys):
    with JudgeServer(echo=True) as srv:
        register(db, srv.url, "alpha", "beta")
        assert main(["chat", "create", "--db", db, "--dataset", "demo-zh", "--track", "kdconv/knowledge",
                     "--endpoints", "alpha,beta", "--scenarios", "2", "--dimensions", "Info,Coh"]) == 0
        capsys.readouterr()
        kept = chat(db, 1, "安", ["你好", "《我是山姆》的导演是谁？"], {"Info": 2, "Coh": 1})
        waiting = chat(db, 1, "博", ["你好"], {"Info": 0, "Coh": 0}, goal=False)
        gone = chat(db, 1, "程", ["=1+2 你好"], {"Info": 1, "Coh": 1})
    base = ["--db", db]
    for wrong, said in ((["--accept"], "say which conversation"),
                        (["--conversation", str(kept)], "give --accept or --send-back"),
                        (["--conversation", "999", "--accept"], "no conversation 999")):
        assert main(["chat", "review", "1", *base, *wrong]) == 1
        assert said in capsys.readouterr().err
    assert main(["chat", "review", "1", *base]) == 0
    listed = capsys.readouterr()
    assert "3 waiting for review" in listed.err and "安" in listed.out and "博" in listed.out
    assert main(["chat", "review", "1", *base, "--conversation", str(kept), "--accept"]) == 0
    accepted = capsys.readouterr().out
    assert f"dialogue chat1-c{kept} of chat-1-demo-zh" in accepted
    # scored at once, as `endpoint generate` scores its replies: the reference-free metrics
    assert "scoring job 1 (DIST1, DIST2): done: 1 step done: kdconv/knowledge" in accepted
    con = connect(db)
    try:
        assert con.execute("SELECT count(DISTINCT name) FROM system_scores WHERE dataset = 'chat-1-demo-zh' AND "
                           "name IN ('DIST1', 'DIST2')").fetchall() == [(2,)]
    finally:
        con.close()
    assert main(["chat", "review", "1", *base, "--conversation", str(kept), "--accept"]) == 1
    assert "only a rated conversation" in capsys.readouterr().err
    assert main(["chat", "review", "1", *base, "--conversation", str(gone), "--send-back", "没有谈到目标"]) == 0
    capsys.readouterr()

    con = connect(db)
    ends = {c: stored.conversation(con, c).endpoint for c in (kept, waiting)}
    signature = stored.get(con, 1).settings["alpha"]["signature"]
    con.close()
    assert main(["chat", "show", "1", *base]) == 0
    shown = capsys.readouterr().out
    assert signature in shown and "1 accepted" in shown and "1 rated" in shown and "1 sent back" in shown
    assert "没有谈到目标" in shown and "\"access_code\"" in shown   # as `task show` prints it

    def table(flag: list[str]) -> pd.DataFrame:
        con = connect(db)
        try:
            return service.results(con, 1, counted=("rated", "accepted") if flag else stored.COUNTED)["table"]
        finally:
            con.close()
    assert main(["chat", "show", "1", *base, "--all"]) == 0
    assert "over rated and accepted conversations" in capsys.readouterr().out
    alone, both = table([]).set_index("endpoint"), table(["--all"]).set_index("endpoint")
    assert both["conversations"].sum() == 2 and alone["conversations"].sum() == 1
    if ends[kept] == ends[waiting]:
        assert both.loc[ends[kept], "Info"] == (2 + 0) / 2
    else:
        assert (both.loc[ends[kept], "Info"], both.loc[ends[waiting], "Info"]) == (2, 0)

    out = tmp_path / "export"
    assert main(["chat", "export", "1", *base, "--out", str(out)]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 4
    assert sorted(p.name for p in out.iterdir()) == ["conversations.csv", "flags.csv", "messages.csv", "ratings.csv"]
    messages = pd.read_csv(out / "messages.csv", encoding="utf-8-sig")
    mine = messages[messages["conversation_id"] == kept]
    assert mine["text"].tolist() == ["你好", "echo: 你好", "《我是山姆》的导演是谁？", "echo: 《我是山姆》的导演是谁？"]
    assert mine["role"].tolist() == ["user", "assistant"] * 2 and set(mine["annotator"]) == {"安"}
    assert "'=1+2 你好" in messages["text"].tolist()          # a cell a spreadsheet would run is written as text
    ratings = pd.read_csv(out / "ratings.csv", encoding="utf-8-sig")
    assert len(ratings) == 3 * 2 and set(ratings["annotator"]) == {"安", "博", "程"}
    conversations = pd.read_csv(out / "conversations.csv", encoding="utf-8-sig")
    assert conversations.loc[conversations["conversation_id"] == gone, "reason"].tolist() == ["没有谈到目标"]

    assert main(["chat", "delete", "1", *base]) == 0
    assert "chat reopen 1" in capsys.readouterr().out
    assert main(["chat", "list", *base, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []                             # a deleted task is not listed
    assert main(["chat", "reopen", "1", *base]) == 0
    capsys.readouterr()
    assert main(["chat", "list", *base, "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["task_id"], row["state"], row["accepted"], row["sent_back"], row["rated"]) == (1, "open", 1, 1, 2)


@pytest.mark.parametrize("action", ["show", "close", "reopen", "delete", "review"])
def test_an_unknown_task_is_one_sentence(db, action, capsys):
    assert main(["chat", action, "9", "--db", db]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: no chat task 9"
