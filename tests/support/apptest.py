"""A page of the dashboard through Streamlit's AppTest (no browser, no server): run(page, monkeypatch, env, **query)
opens it with the environment and URL parameters given (and the language picked, if any) and fails on any exception it shows; charts(at) lists
its charts; demo_task_store(tmp_path, default_store_file) is a copy of the default store and its demo rating task."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from evalcore.services.defaults import DEMO_TASK
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import ROOT, copy_default_store


def demo_task_store(tmp_path, default_store_file) -> tuple:
    """(a copy of the default store in tmp_path, its demo rating task (DEMO_TASK))."""
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    con = connect(db)
    task = next(stored.get(con, int(t)) for t, n in con.execute("SELECT task_id, name FROM tasks").fetchall()
                if n == DEMO_TASK)
    con.close()
    return db, task


def charts(at: AppTest) -> list:
    return list(at.get("plotly_chart")) + list(at.get("vega_lite_chart"))


def run(page: str, monkeypatch, env: dict, lang: str | None = None, **query) -> AppTest:
    """The page opened with `env` and the URL parameters `query`; `lang`: the language the person picked with the
    switch (None: none picked, so a task's page is in the task's language)."""
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, str(value))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    if page != "overview":
        at.switch_page(f"pages/views/{page}.py")
    for key, value in query.items():
        at.query_params[key] = value
    if lang:
        at.session_state["evalcore-lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
