"""The dashboard's endpoint parts through AppTest: "Evaluate an endpoint" on the Upload page against a local server
started here, the endpoints listed (never a key), added and removed with write access only, and the generated
model on the leaderboard with its generation signature."""
from __future__ import annotations

import pandas as pd
import pytest

from evalcore.services.defaults import init_store
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.apptest import run
from support.judge_server import JudgeServer

KEY = "sk-page-never-shown-41"


@pytest.fixture(scope="module")
def demo_only(tmp_path_factory):
    """A store of demo-zh alone, built once for the module (each test writes into its own copy)."""
    path = tmp_path_factory.mktemp("demo-only") / "s.duckdb"
    con = connect(path)
    try:
        init_store(con, only=("demo-zh",))
        con.execute("CHECKPOINT")   # everything in the one file: a copy of it is the whole store
    finally:
        con.close()
    return path


@pytest.fixture
def db(demo_only, tmp_path):
    return copy_default_store(demo_only, tmp_path / "s.duckdb")


def add(db, url: str, name: str = "local") -> None:
    con = connect(db)
    try:
        registry.add(con, registry.Registered(name, url, "m", concurrency=4))
    finally:
        con.close()


def test_evaluate_an_endpoint_then_the_leaderboard_shows_its_signature(db, monkeypatch):
    monkeypatch.setenv("EVALCORE_API_KEY", KEY)
    with JudgeServer(echo=True, api_key=KEY) as srv:
        add(db, srv.url)
        env = {"EVALCORE_DB": db, "EVALCORE_UPLOAD_PASSWORD": None, "EVALCORE_READ_ONLY": None}
        at = run("upload", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat", kind="endpoint")
        assert any("Evaluate an endpoint" in s.value for s in at.subheader)
        table = at.dataframe[0].value
        assert table["name"].tolist() == ["local"] and table["key"].tolist() == ["EVALCORE_API_KEY (set)"]
        assert KEY not in str(at)
        templates = " ".join(c.value for c in at.code)
        assert "chitchat-zh" in templates and "$knowledge" in templates
        at.text_input(key="ev-model").input("page-bot").run()
        at.number_input(key="ev-items").set_value(20).run()
        at.button(key="ev-go").click().run()
        assert any("Job " in i.value and "20 items go to local" in i.value for i in at.info), [i.value for i in at.info]
        texts = ""
        for _ in range(240):
            at.run()
            texts = " ".join(str(p.proto.text) for p in at.get("progress"))
            if "Generated and scored." in texts or "Failed" in texts:
                break
        assert "Generated and scored." in texts, texts
    at = run("leaderboard", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat")
    generated = next(d.value for d in at.dataframe if "replies" in d.value.columns)
    row = generated.set_index("model").loc["page-bot"]
    assert row["replies"] == 20 and row["empty"] == 0 and pd.isna(row["total"])   # a sample: the track's share unknown
    [signature] = [c.value.replace("\\", "") for c in at.caption if c.value.replace("\\", "").startswith("page-bot: gen:")]
    assert signature.startswith("page-bot: gen:m@127.0.0.1:") and "tpl:chitchat-zh#" in signature
    assert "items:20@0" in signature
    assert KEY not in str(at)


def test_endpoints_added_and_removed_with_write_access_only(db, monkeypatch):
    env = {"EVALCORE_DB": db, "EVALCORE_UPLOAD_PASSWORD": None, "EVALCORE_READ_ONLY": None}
    at = run("upload", monkeypatch, env, dataset="demo-zh", kind="endpoint", open="endpoints")
    assert any("No endpoint is registered yet" in i.value for i in at.info)
    at.text_input(key="ep-name").input("vllm-qwen")
    at.text_input(key="ep-url").input("http://127.0.0.1:8000/v1")
    at.text_input(key="ep-model").input("Qwen/Qwen2.5-7B-Instruct")
    at.button[[b.label for b in at.button].index("Add endpoint")].click().run()
    assert any("Endpoint vllm-qwen added" in s.value.replace("\\", "") for s in at.success), [e.value for e in at.error]
    at.run()
    assert "vllm-qwen" in at.dataframe[0].value["name"].tolist()
    at.text_input(key="ep-name").input("bad")
    at.text_input(key="ep-url").input("127.0.0.1:8000")
    at.button[[b.label for b in at.button].index("Add endpoint")].click().run()
    assert any("is not an http(s) URL" in e.value.replace("\\", "") for e in at.error)
    at.button(key="ep-remove").click().run()
    assert any("Endpoint vllm-qwen removed" in s.value.replace("\\", "") for s in at.success)
    # read-only: the list, no form, no run
    add(db, "http://127.0.0.1:9/v1", "other")
    at = run("upload", monkeypatch, {**env, "EVALCORE_READ_ONLY": "1"}, dataset="demo-zh", kind="endpoint",
             open="endpoints")
    assert not [b for b in at.button if b.label in ("Add endpoint", "Generate and score", "Remove")]
    assert any("needs write access" in c.value for c in at.caption)
