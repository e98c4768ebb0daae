"""The view state as a user changes it (issue 46, item 2 and Drill-down's notices): a multi-select the user never
reduced holds every option of the track shown, in the page and in its link; a reduction the user made is kept where
its options still exist, and an option a track change takes away is noted once; an upstream change of the user's
never reads as a stale link. Every page with a multi-select is driven through AppTest."""
from __future__ import annotations

import pytest

from evalcore.pagedata.share import ViewState
from support import copy_default_store
from support.apptest import run as run_page


@pytest.fixture(scope="module")
def store(tmp_path_factory, default_store_file):
    return copy_default_store(default_store_file, tmp_path_factory.mktemp("view-state") / "store.duckdb")


def run(page: str, monkeypatch, store, **query):
    return run_page(page, monkeypatch, {"EVALCORE_DB": store}, **query)


def multiselect(at, label: str):
    found = [m for m in at.multiselect if m.label == label]
    assert len(found) == 1, [m.label for m in at.multiselect]
    return found[0]


def shown(at) -> str:
    """What a reader sees under the title: notices and notes, as text."""
    return " ".join(x.value.replace("\\", "") for x in [*at.info, *at.caption])


def test_correlations_track_change_shows_every_dimension(monkeypatch, store):
    """The issue's path: lic2021/knowledge (Info, Coh, Know), then luge/recommendation: Rec is shown, and the link
    carries no dimension list, as a fresh open of that track."""
    at = run("correlations", monkeypatch, store, dataset="msde-paper", track="lic2021/knowledge")
    assert multiselect(at, "Dimensions").value == ["Info", "Coh", "Know"] and "dims" not in at.query_params
    at.selectbox(key="co-track-msde-paper").set_value("luge/recommendation").run()
    assert multiselect(at, "Dimensions").value == ["Info", "Coh", "Know", "Rec"]
    assert "dims" not in at.query_params and "metrics" not in at.query_params
    assert not at.info   # no notice: nothing stale, the user changed the track
    fresh = run("correlations", monkeypatch, store, **dict(at.query_params))
    assert multiselect(fresh, "Dimensions").value == ["Info", "Coh", "Know", "Rec"]


def test_correlations_keeps_a_reduction_and_notes_what_a_track_takes_away(monkeypatch, store):
    at = run("correlations", monkeypatch, store, dataset="msde-paper", track="lic2021/knowledge")
    multiselect(at, "Dimensions").unselect("Coh").run()
    assert at.query_params["dims"] == "Info,Know"
    at.selectbox(key="co-track-msde-paper").set_value("luge/recommendation").run()
    assert multiselect(at, "Dimensions").value == ["Info", "Know"] and at.query_params["dims"] == "Info,Know"
    # chit-chat rates Info and Coh: Know is not offered there, which is said once, not as a stale link
    at.selectbox(key="co-track-msde-paper").set_value("luge/chitchat").run()
    assert multiselect(at, "Dimensions").value == ["Info"] and at.query_params["dims"] == "Info"
    assert not at.info
    assert "Not offered here, so left out of human dimensions: Know." in shown(at)
    at.run()
    assert "Not offered here" not in shown(at)
    # the metrics too: a reduction is kept, the full set is no choice
    metrics = multiselect(at, "Metrics")
    every = list(metrics.options)
    metrics.unselect(every[0]).run()
    assert at.query_params["metrics"] == ",".join(every[1:])
    multiselect(at, "Metrics").select(every[0]).run()
    assert "metrics" not in at.query_params


def test_leaderboard_track_change_keeps_no_stale_column_set(monkeypatch, store):
    at = run("leaderboard", monkeypatch, store, dataset="msde-paper", track="luge/chitchat", origin="published")
    columns = multiselect(at, "Columns")
    assert "Rec" not in columns.value and "metrics" not in at.query_params
    at.selectbox(key="lb-track-msde-paper").set_value("luge/recommendation").run()
    assert "Rec" in multiselect(at, "Columns").value and "metrics" not in at.query_params
    assert "models" not in at.query_params and not at.info
    # a model left out stays out on another track that has it
    models = multiselect(at, "Models")
    dropped = models.value[0]
    models.unselect(dropped).run()
    assert dropped not in at.query_params["models"].split(",")
    at.selectbox(key="lb-track-msde-paper").set_value("luge/knowledge").run()
    assert dropped not in multiselect(at, "Models").value


def test_drilldown_select_changes_give_no_stale_notice(monkeypatch, store):
    """The issue's path: engagement-en's drill-down (dimension Engagement, an item of it), then another dataset:
    no "'Engagement' is not a known dim" nor "'dd-eng-187' is not a known item"."""
    at = run("drilldown", monkeypatch, store, dataset="engagement-en")
    item = at.selectbox(key="dd-item-dailydialog/chitchat")
    item.set_value(item.options[3]).run()
    assert at.query_params["item"] == item.options[3]
    at.selectbox(key="dd-dataset").set_value("demo-zh").run()
    assert not at.info, [i.value for i in at.info]
    assert "item" not in at.query_params and "dim" not in at.query_params
    # the models multi-select follows the track: all of its models
    models = multiselect(at, "Models")
    assert models.value == list(models.options) and "models" not in at.query_params


def test_a_link_naming_something_unknown_still_gets_its_notice(monkeypatch, store):
    at = run("drilldown", monkeypatch, store, dataset="demo-zh", track="lccc/chitchat", item="nope", dim="Engagement")
    notes = " ".join(i.value.replace("\\", "") for i in at.info)
    assert "'nope' is not a known item" in notes
    # a link's parameter named as a reader knows it: "human dimension", not the URL's "dim"
    assert "'Engagement' is not a known human dimension." in notes and "known dim" not in notes


def test_view_state_rules_without_streamlit():
    # from a link: a notice; written by the page itself (after the user's own change upstream): quiet
    assert ViewState({"dim": "X"}).one("dim", ["A"], "A") == "A"
    linked = ViewState({"dim": "X"})
    linked.one("dim", ["A"], "A")
    assert linked.notices == ["'X' is not a known human dimension; showing 'A' instead."]
    own = ViewState({"dim": "X", "dims": "A,X", "min": "9"}, from_link=False)
    assert own.one("dim", ["A"], "A") == "A" and own.many("dims", ["A", "B"]) == ["A"]
    assert own.number("min", 0.0, 0.0, 1.0) == 0.0
    assert own.notices == [] and own.notes == ["Not offered here, so left out of human dimensions: X."]
    # nothing chosen is left: the default, and said so
    own = ViewState({"dims": "X"}, from_link=False)
    assert own.many("dims", ["A", "B"]) == ["A", "B"]
    assert own.notes == ["Not offered here, so left out of human dimensions: X; showing the default instead."]
