"""The key canary (issue 61): a unique random key in the endpoints' variable, and servers that echo the request's
Authorization header, and the bare key, in every error body (tests/support/judge_server.py, leak=True). Generation
(`evalcore generate`, its preflight, `endpoint test`), judging (`evalcore score` with a judge endpoint) and the chat
(a Stream and its keep, as the Chat page takes a reply) all meet those errors; then the key is looked for in the
store file and its write-ahead log (every file of the test's folder), everything the commands printed, the log
records, what the person chatting was told, and the servers' own records: it is nowhere. The errors did happen
(each reason says '[removed]' where the key was), so the canary is not quiet for want of a leak to hide."""
from __future__ import annotations

import logging
import secrets
import shutil
from pathlib import Path

import duckdb
import pandas as pd

from evalcore.cli import main
from evalcore.core.chat import Stream
from evalcore.pagedata import chats
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from evalcore.store.tasks import Dimension
from support import write_jsonl
from support.judge_server import JudgeServer

VAR = "CANARY_KEY"


def items() -> list[dict]:
    texts = ["你好", "FAIL400 please", "今天天气怎么样"]
    return [{"item_id": f"i{i}", "dataset": "gen", "track": "gen/chitchat", "context": [t], "references": ["好"],
             "skill": "chitchat"} for i, t in enumerate(texts)]


def everything_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_the_key_is_nowhere(tmp_path, monkeypatch, capsys, caplog, empty_store_file):
    from evalcore.ingest.formats.items import import_items

    key = "canary-" + secrets.token_hex(16)
    monkeypatch.setenv(VAR, key)
    db = str(tmp_path / "store.duckdb")
    shutil.copyfile(empty_store_file, db)
    con = connect(db)
    try:
        import_items(con, write_jsonl(tmp_path / "items.jsonl", items()))
    finally:
        con.close()
    printed, told, echoed = [], [], []
    add = ["--api-key-env", VAR, "--timeout", "5", "--concurrency", "2"]
    with caplog.at_level(logging.DEBUG), JudgeServer(echo=True, leak=True) as gen, \
            JudgeServer(api_key="not-the-canary", leak=True) as judge, \
            JudgeServer(echo=True, api_key="not-the-canary", leak=True) as shut:
        # generation: FAIL400 answers with the key echoed; the rest is stored
        assert main(["endpoint", "add", "local", "--db", db, "--base-url", gen.url, "--model", "m", *add]) == 0
        assert main(["endpoint", "test", "local", "--db", db]) == 0
        assert main(["generate", "--db", db, "--dataset", "gen", "--endpoint", "local", "--model", "g", "--no-score",
                     "--no-progress"]) == 1
        # an endpoint that refuses the key, echoing it: in endpoint test, and in generate's preflight
        assert main(["endpoint", "add", "shut", "--db", db, "--base-url", shut.url, "--model", "m", *add]) == 0
        assert main(["endpoint", "test", "shut", "--db", db]) == 1
        assert main(["generate", "--db", db, "--dataset", "gen", "--endpoint", "shut", "--model", "h",
                     "--no-progress"]) == 1
        # judging: every request of the judge refused, the key echoed
        assert main(["endpoint", "add", "judge", "--db", db, "--base-url", judge.url, "--model", "j", *add]) == 0
        main(["score", "--db", db, "--dataset", "gen", "--track", "gen/chitchat", "--metrics", "Judge-Info",
              "--judge-endpoint", "judge"])
        out = capsys.readouterr()
        printed += [out.out, out.err]
        # the chat: a person's turn as the Chat page takes it, on the endpoint that refuses the key and on one
        # that fails with a 500, both echoing it
        con = connect(db)
        try:
            frame = pd.DataFrame({"dialogue_id": ["d0"], "grounding": [{"knowledge": [["s", "r", "o"]]}],
                                  "opening": [None]})
            tid = stored.create(con, name="t", dataset="gen", track="gen/chitchat", target="chat-gen",
                                endpoints=["shut", "local"], settings={"shut": {}, "local": {}}, per_scenario=1,
                                max_rounds=3, dimensions=[Dimension("Info", 0, 2)], flags=[], scenarios=frame,
                                review=True, seed=0)
            task = stored.get(con, tid)
            for person in ("ann", "bob"):   # one meets each endpoint: a 401, and a 500 (retried), each echoing it
                text = "FAIL500 你好"
                cid = stored.assign(con, task, person)
                after = stored.say(con, cid, person, text)
                entry = registry.get(con, stored.conversation(con, cid).endpoint)
                stream = Stream(entry.endpoint(stream=True), [{"role": "user", "content": text}], backoff=0.01)
                told.append("".join(stream))
                told.append(chats.keep(con, cid, after, stream.reply) or "")
                echoed.append(stream.reply.error)
        finally:
            con.close()
        servers = [str(s.log) + str(s.bodies) for s in (gen, judge, shut)]
        sent = [h.get("Authorization") for s in (gen, judge, shut) for h in s.headers]
    # the servers did get the key, and the errors that echoed it did happen
    assert sent and all(h == f"Bearer {key}" for h in sent)
    reasons = [r for (r,) in duckdb.connect(db, read_only=True).execute(
        "SELECT reason FROM metric_scores WHERE reason IS NOT NULL").fetchall()]
    assert reasons and all("HTTP 401" in r and "[removed]" in r for r in reasons)
    [(detail,)] = duckdb.connect(db, read_only=True).execute(
        "SELECT detail FROM generations WHERE model = 'g'").fetchall()
    assert "HTTP 400" in detail and "[removed]" in detail
    assert sorted(e[:8] for e in echoed) == ["HTTP 401", "HTTP 500"] and all("[removed]" in e for e in echoed)
    assert all(t.startswith("The model did not answer") for t in told[1::2])
    # ... and the key is nowhere: not in any file of the store (its .wal included), not printed, not logged, not
    # told, not in what the servers kept of the requests' bodies
    assert key.encode() not in everything_under(tmp_path)
    logged = [r.getMessage() for r in caplog.records]
    for text in printed + told + echoed + logged + servers + [detail, *reasons]:
        assert key not in text and key[len("canary-"):] not in text
