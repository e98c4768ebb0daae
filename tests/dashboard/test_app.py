"""Every page through Streamlit's AppTest, on the embedded default and on an empty store."""
import pytest
from streamlit.testing.v1 import AppTest

from pages import PAGES as ALL_PAGES
from support import ROOT, copy_default_store
from support.apptest import charts, run

PAGES = [p.name for p in ALL_PAGES]


@pytest.fixture(scope="module")
def default_store(tmp_path_factory, default_store_file):
    """The default store path (no EVALCORE_DB) in a temporary data directory, built whole beforehand
    (a copy of the session's; the dashboard's own staged build is tested in test_defaults.py)."""
    xdg = tmp_path_factory.mktemp("xdg")
    copy_default_store(default_store_file, xdg / "evalcore" / "evalcore.duckdb")
    return xdg


@pytest.mark.parametrize("page", PAGES)
def test_pages_on_default_store(page, monkeypatch, default_store):
    at = run(page, monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store})
    assert at.title
    # opened with no parameters, every page draws a table or chart from data, never an empty state
    assert not at.warning, [w.value for w in at.warning]
    if page == "chat":   # a person's page, opened from a chat task's link; no task ships (it needs an endpoint)
        assert any("No chat task is open" in i.value for i in at.info)
        return
    assert len(at.dataframe) + len(charts(at)) + len(at.table) + len(at.metric) > 0
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
    notes = " ".join(i.value for i in at.info).replace("\\", "")  # notices are escaped markdown: text, not markup
    assert "'nope/none' is not a known track" in notes and "'cosine' is not a known method" in notes


def test_drilldown_opens_an_item(monkeypatch, default_store):
    at = run("drilldown", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="demo-zh", track="lccc/chitchat", item="lccc-test-0000-t01")
    assert any(s.value.replace("\\", "") == "Item lccc-test-0000-t01" for s in at.subheader)  # escaped markdown
    assert any("10个聊天" in t.value for t in at.text)  # the context turn, as plain text and as written (issue 61, D18)


def test_markdown_escaping_keeps_text_literal():
    import sys

    sys.path.insert(0, str(ROOT))
    from pages.kit.text import highlighted, md_escape

    assert md_escape("<b>**hi**</b> [x](y)") == r"\<b\>\*\*hi\*\*\<\/b\> \[x\]\(y\)".replace(r"\/", "/")
    assert highlighted([("好", True), (" <i>", False)]) == r":orange-background[好] \<i\>"


def test_trust_opens_on_the_paper(monkeypatch, default_store):
    at = run("trust", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store})
    # where it opens is not a choice of the user's: only the dataset is in the link, the rest is derived again
    assert dict(at.query_params) == {"dataset": "msde-paper"}
    shown = {s.label: s.value for s in at.selectbox}
    assert shown["Level"] == "system" and shown["Metric values"] == "published" and shown["Method"] == "spearman"
    ranking = at.dataframe[0].value
    assert set(ranking["skill"]) == {"chitchat", "knowledge", "recommendation", "persona"}
    assert len(ranking) == 4 * 16 and (ranking.groupby("skill")["rank"].min() == 1).all()


def test_a_stale_level_moves_to_a_valid_one(monkeypatch, default_store):
    """Switching to a dataset without the URL's level shows that dataset's first valid level, not an empty page."""
    env = {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store}
    at = run("correlations", monkeypatch, env, dataset="msde-paper", level="turn", origin="computed")
    # where the page opens (system level, published tables) stays out of the link
    assert "level" not in at.query_params and "origin" not in at.query_params
    assert at.radio(key="co-level-msde-paper").value == "system"
    assert any("level 'turn' has nothing to correlate in msde-paper" in i.value.replace("\\", "") for i in at.info)
    assert charts(at) and not at.warning
    at = run("trust", monkeypatch, env, dataset="engagement-en", level="system")
    assert at.selectbox(key="tr-level-engagement-en").value == "turn" and "level" not in at.query_params
    assert charts(at) and not at.warning


def test_drilldown_range_filters_and_lands_in_the_url(monkeypatch, default_store):
    at = run("drilldown", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="demo-zh", track="kdconv/knowledge", metric="BLEU4")
    slider = at.slider[0]
    assert slider.value == (slider.min, slider.max) and "min" not in at.query_params
    slider.set_value((0.1, slider.max)).run()
    table = at.dataframe[0].value
    assert at.query_params["min"] == "0.10" and "max" not in at.query_params  # only the handle that moved
    assert table["BLEU4"].min() >= 0.1
    at.slider[0].set_value((0.1, 0.5)).run()
    assert at.query_params["max"] == "0.50" and at.dataframe[0].value["BLEU4"].max() <= 0.5
    again = run("drilldown", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
                **{k: at.query_params[k] for k in at.query_params})
    assert again.slider[0].value == (0.1, 0.5)


def test_model_names_are_text_not_markup(monkeypatch, default_store, tmp_path):
    """A model named with markdown, a link and LaTeX shows literally in captions (escaped markdown)."""
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.store import connect

    nasty = "**md** [x](javascript:alert(1)) $y$"
    (tmp_path / "r.csv").write_text("item_id,response\nlccc-test-0000-t01,好 的\nlccc-test-0001-t01,嗯\n", encoding="utf-8")
    con = connect(default_store / "evalcore" / "evalcore.duckdb")
    import_responses(con, tmp_path / "r.csv", dataset="demo-zh", track="lccc/chitchat", model=nasty)
    con.close()
    at = run("compare", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="demo-zh", track="lccc/chitchat", a=nasty, b="tfidf-retrieval")
    caption = next(c.value for c in at.caption if "items both answered" in c.value)
    assert r"\*\*md\*\* \[x\]\(javascript\:alert\(1\)\) \$y\$" in caption


def test_leaderboard_ranks_from_the_url(monkeypatch, default_store):
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store},
             dataset="demo-zh", track="lccc/chitchat", rank_by="BLEU4")
    table = at.dataframe[0].value
    assert {"rank", "rank 95% CI", "coverage", "note"} <= set(table.columns)
    ranked = table.dropna(subset=["rank"])
    assert len(ranked) >= 2 and ranked["rank"].min() == 1
    # ranks follow BLEU4, higher first
    assert list(ranked.sort_values("rank")["BLEU4"]) == sorted(ranked["BLEU4"], reverse=True)
    assert at.query_params["rank_by"] == "BLEU4"
    assert any(s.value.startswith("Across skills") for s in at.subheader)


@pytest.mark.slow   # 5 s or more on 2 cores: the fast set keeps tests under that
def test_upload_page_scores_a_track_as_a_job(monkeypatch, tmp_path):
    """A track's missing scores can be started from the Upload page; the job runs in the background and
    the page reports it done."""
    from evalcore.services.defaults import init_store
    from evalcore.store import connect

    db = tmp_path / "s.duckdb"
    con = connect(db)
    init_store(con, only=("demo-zh",))
    con.execute("DELETE FROM system_scores WHERE origin = 'computed'")  # a track never scored
    con.close()
    at = run("upload", monkeypatch, {"EVALCORE_DB": db}, dataset="demo-zh", track="lccc/chitchat")
    at.button(key="up-score-track").click().run()
    assert any("Scoring runs as job" in i.value for i in at.info)
    texts = ""
    for _ in range(240):
        at.run()
        texts = " ".join(str(p.proto.text) for p in at.get("progress"))
        if "Scored." in texts:
            break
    assert "Scored." in texts


def _upload_widgets(at: AppTest) -> dict:
    return {"uploader": len(at.get("file_uploader")), "score": any(b.key == "up-score-track" for b in at.button)}


def test_read_only_dashboard_has_no_way_to_write(monkeypatch, default_store):
    at = run("upload", monkeypatch, {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store, "EVALCORE_READ_ONLY": "1",
                                     "EVALCORE_UPLOAD_PASSWORD": None},
             dataset="demo-zh", track="lccc/chitchat")
    assert any("read-only" in i.value for i in at.info)
    assert _upload_widgets(at) == {"uploader": 0, "score": False}
    assert len(at.dataframe) >= 1   # what the track holds is still shown: reading stays open


def test_upload_password_right_and_wrong(monkeypatch, default_store):
    env = {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store, "EVALCORE_READ_ONLY": None,
           "EVALCORE_UPLOAD_PASSWORD": "s3cret"}
    at = run("upload", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat")
    assert _upload_widgets(at) == {"uploader": 0, "score": False}
    at.text_input(key="access-password").input("guess").run()
    assert any("Wrong password" in e.value for e in at.error)
    assert _upload_widgets(at) == {"uploader": 0, "score": False}
    at.text_input(key="access-password").input("s3cret").run()
    assert _upload_widgets(at) == {"uploader": 1, "score": True}


def test_write_policy_from_secrets_and_environment():
    from evalcore.pagedata.access import policy

    assert policy({}, {}).mode == "open"
    assert policy({"evalcore": {"read_only": True}}, {}).mode == "read-only"
    assert policy({}, {"EVALCORE_READ_ONLY": "yes"}).mode == "read-only"
    assert policy({"auth": {"client_id": "x"}}, {}).mode == "sign-in"
    rule = policy({"evalcore": {"upload_password": "pw"}}, {})
    assert rule.mode == "password" and rule.check("pw") and not rule.check("pW") and not rule.check("")
    assert policy({"evalcore": {"upload_password": "pw"}}, {"EVALCORE_UPLOAD_PASSWORD": "env"}).check("env")


def test_links_keep_table_sort_and_open_expanders(monkeypatch, default_store):
    env = {"EVALCORE_DB": None, "XDG_DATA_HOME": default_store}
    at = run("leaderboard", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat", sort="BLEU4",
             order="ascending", open="signatures")
    table = at.dataframe[0].value
    values = table["BLEU4"].dropna().tolist()
    assert len(values) >= 2 and values == sorted(values)  # the link's sort, lowest first
    assert at.selectbox(key="sort-lb").value == "BLEU4"
    assert at.query_params["sort"] == "BLEU4" and "order" not in at.query_params  # ascending is the default
    assert at.query_params["open"] == "signatures"
    # descending: the other way round; no sort in the URL: the table as ranked
    at = run("leaderboard", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat", sort="BLEU4",
             order="descending")
    assert at.dataframe[0].value["BLEU4"].dropna().tolist() == sorted(values, reverse=True)
    assert at.query_params["order"] == "descending"
    at = run("leaderboard", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat")
    assert "sort" not in at.query_params and "open" not in at.query_params
    ranks = at.dataframe[0].value["rank"].dropna().tolist()
    assert ranks == sorted(ranks)
    # an unknown sort column falls back with a notice, not an error
    at = run("leaderboard", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat", sort="nosuch")
    assert any("nosuch" in i.value for i in at.info) and "sort" not in at.query_params
