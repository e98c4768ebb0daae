"""A new rating or chat task's language from the pages' create forms (issue 64 item 2): the Rating tasks form starts at
the chosen dataset's language and stores the one picked; the Chat tasks form leaves it to the scenarios' dataset unless
one is picked; both tables show each task's language, as the language names itself."""
from __future__ import annotations

from evalcore.store import chats as stored_chats
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import copy_default_store
from support.apptest import demo_task_store, run
from support.sim_store import setup

ENV = {"EVALCORE_ACCESS": None, "EVALCORE_UPLOAD_PASSWORD": None, "EVALCORE_READ_ONLY": None}


def test_a_rating_task_takes_its_datasets_language_or_the_one_picked(monkeypatch, tmp_path, default_store_file):
    db, __ = demo_task_store(tmp_path, default_store_file)
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **ENV})
    assert at.selectbox(key="tk-dataset").value == "demo-zh"
    assert at.selectbox(key="tk-lang-0-demo-zh").value == "zh-CN"   # demo-zh is Chinese
    next(b for b in at.button if b.label == "Create task").click().run()
    first = int(at.query_params["task"][0])
    at.selectbox(key="tk-lang-1-demo-zh").select("en")
    next(b for b in at.button if b.label == "Create task").click().run()
    assert not at.exception, [e.value for e in at.exception]
    second = int(at.query_params["task"][0])
    con = connect(db)
    try:
        assert (stored.get(con, first).lang, stored.get(con, second).lang) == ("zh-CN", "en")
    finally:
        con.close()
    table = at.dataframe[0].value.set_index("task_id")
    assert table.loc[first, "language"] == "中文" and table.loc[second, "language"] == "English"
    assert list(table.columns).index("language") == list(table.columns).index("dataset") + 1


def test_a_chat_task_takes_its_datasets_language_unless_one_is_picked(monkeypatch, tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    con = connect(db)
    try:
        setup(con, "http://127.0.0.1:9", simulators={}, scenarios=1)   # endpoints registered; none is called here
    finally:
        con.close()
    at = run("chats", monkeypatch, {"EVALCORE_DB": db, **ENV})
    assert at.selectbox(key="ct-lang").value == ""   # the scenarios' dataset's language
    next(b for b in at.button if b.label == "Create chat task").click().run()
    first = int(at.query_params["task"][0])
    at.selectbox(key="ct-lang").select("en")
    next(b for b in at.button if b.label == "Create chat task").click().run()
    assert not at.exception, [e.value for e in at.exception]
    second = int(at.query_params["task"][0])
    con = connect(db)
    try:
        assert (stored_chats.get(con, first).lang, stored_chats.get(con, second).lang) == ("zh-CN", "en")
    finally:
        con.close()
    table = at.dataframe[0].value.set_index("task_id")
    assert table.loc[first, "language"] == "中文" and table.loc[second, "language"] == "English"
