"""Every page through Streamlit's AppTest, on the embedded default and on an empty store."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT

PAGES = ["overview", "leaderboard", "correlations", "drilldown", "human", "ensemble", "compare", "upload"]


@pytest.fixture(scope="module")
def default_store(tmp_path_factory):
    """The default store path (no EVALCORE_DB) in a temporary data directory, built by the first run."""
    return tmp_path_factory.mktemp("xdg")


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


@pytest.mark.parametrize("page", PAGES)
def test_pages_on_default_store(page, monkeypatch, default_store):
    at = run(page, monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store})
    assert at.title
    if page == "overview":
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["Datasets"] == "5" and metrics["Tracks"] == "11"  # + engagement-en, 1 track


@pytest.mark.parametrize("page", PAGES)
def test_pages_on_empty_store(page, monkeypatch, tmp_path):
    at = run(page, monkeypatch, {"EVALCORE_DB": tmp_path / "empty.duckdb"})
    assert any("store is empty" in i.value for i in at.info)


def test_leaderboard_link_state(monkeypatch, default_store):
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="msde-paper", track="luge/chitchat")
    table = at.dataframe[0].value
    assert len(table) == 14 and set(table["track"]) == {"luge/chitchat"}
    assert at.query_params["dataset"] == "msde-paper" and at.query_params["track"] == "luge/chitchat"
    at.selectbox(key="lb-track-msde-paper").set_value("luge/knowledge").run()
    assert at.query_params["track"] == "luge/knowledge"


def test_stale_parameters_give_a_notice(monkeypatch, default_store):
    at = run("correlations", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="msde-paper", track="nope/none", method="cosine")
    notes = " ".join(i.value for i in at.info)
    assert "'nope/none' is not a known track" in notes and "'cosine' is not a known method" in notes


def test_drilldown_opens_an_item(monkeypatch, default_store):
    at = run("drilldown", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="demo-zh", track="lccc/chitchat", item="lccc-test-0000-t01")
    assert any(s.value == "Item lccc-test-0000-t01" for s in at.subheader)
    assert any("1 0 个 聊 天" in t.value for t in at.text)  # the context turn, as plain text


def test_markdown_escaping_keeps_text_literal():
    import sys

    sys.path.insert(0, str(ROOT))
    from pages.views.common import highlighted, md_escape

    assert md_escape("<b>**hi**</b> [x](y)") == r"\<b\>\*\*hi\*\*\<\/b\> \[x\]\(y\)".replace(r"\/", "/")
    assert highlighted([("好", True), (" <i>", False)]) == r":orange-background[好] \<i\>"
