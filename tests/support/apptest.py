"""A page of the dashboard through Streamlit's AppTest (no browser, no server): run(page, monkeypatch, env, **query)
opens it with the environment and URL parameters given and fails on any exception it shows; charts(at) lists
its charts."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from support import ROOT


def charts(at: AppTest) -> list:
    return list(at.get("plotly_chart")) + list(at.get("vega_lite_chart"))


def run(page: str, monkeypatch, env: dict, **query) -> AppTest:
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
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
