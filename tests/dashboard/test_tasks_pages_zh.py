"""Rating tasks and Chat tasks in zh-CN past their first view (issue 64): a task chosen with the planner open, and a
chat task with conversations waiting for review, leave no English message of the catalog on the page; the
annotator's and the chatter's links are the same in both languages (a link is the view's, never the viewer's)."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from support import ROOT, copy_default_store
from support.apptest import demo_task_store
from support.i18n import english_left, page_texts
from support.sim_store import setup


def open_in(page: str, lang: str, monkeypatch, db, state: dict | None = None, **query) -> AppTest:
    monkeypatch.setenv("EVALCORE_DB", str(db))
    monkeypatch.delenv("EVALCORE_ACCESS", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page(f"pages/views/{page}.py")
    for key, value in query.items():
        at.query_params[key] = value
    at.session_state["evalcore-lang"] = lang
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def links(at) -> list[str]:
    return [b.proto.url for b in at.get("link_button")]


def test_a_rating_task_and_the_planner_in_chinese(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    zh = open_in("tasks", "zh-CN", monkeypatch, db, state={"tk-plan-open": True}, task=str(task.task_id))
    assert english_left(page_texts(zh)) == []
    assert zh.subheader[0].value == f"任务 {task.task_id}"
    assert any(t.value.startswith("标注者打开 ") and task.access_code in t.value for t in zh.text)
    en = open_in("tasks", "en", monkeypatch, db, task=str(task.task_id))
    assert links(zh) == links(en) and links(en)[0].endswith(f"/annotate?task={task.task_id}")


def test_a_chat_task_waiting_for_review_in_chinese(monkeypatch, tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    con = connect(db)
    try:
        setup(con, "http://127.0.0.1:9", simulators={}, scenarios=1)   # endpoints registered; none is called here
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["sys-good", "sys-mid"],
                                  n_scenarios=1, max_rounds=3, review=True)
        task = stored.get(con, tid)
        for person in ("ann", "bob"):
            cid = stored.assign(con, task, person)
            stored.reply(con, cid, stored.say(con, cid, person, "你好"), "好的")
            stored.end(con, cid, person, goal=True)
            for d in task.dimensions:
                stored.rate(con, cid, person, d.dimension, 1)
    finally:
        con.close()
    zh = open_in("chats", "zh-CN", monkeypatch, db, task=str(tid))
    assert english_left(page_texts(zh)) == []
    assert "审核（2 段待审）" in [e.label for e in zh.expander]
    assert any(t.value.startswith("评分：") for t in zh.text)
    en = open_in("chats", "en", monkeypatch, db, task=str(tid))
    assert "Review (2 waiting)" in [e.label for e in en.expander]
    assert links(zh) == links(en)
