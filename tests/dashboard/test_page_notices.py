"""Honest blanks and notices on the pages (issue 28): a stale URL value is noticed right under the title;
a real metric without values is "not scored", not "not a known metric"; a missing value is a blank
cell, never "None" or "nan"; a section with nothing to show says why instead of a disabled "(none)" box."""
import io

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.pagedata.share import ViewState
from support import copy_default_store
from support.apptest import run as run_page


@pytest.fixture(scope="module")
def store(tmp_path_factory, default_store_file):
    return copy_default_store(default_store_file, tmp_path_factory.mktemp("notices") / "store.duckdb")


def run(page: str, monkeypatch, store, **query) -> AppTest:
    return run_page(page, monkeypatch, {"EVALCORE_DB": store}, **query)


def text(value: str) -> str:
    return value.replace("\\", "")  # notices are escaped markdown: the text a reader sees


def notices(at: AppTest) -> list[str]:
    return [text(i.value) for i in at.info]


# --- the notice's place ------------------------------------------------------------------------------

STALE = [  # (page, a stale query, the notice it gives)
    ("leaderboard", {"rank_by": "XYZ"}, "'XYZ' is not a known column to rank by"),
    ("correlations", {"method": "cosine"}, "'cosine' is not a known method"),
    ("drilldown", {"flavor": "XYZ"}, "'XYZ' is not a known flavor"),
    ("human", {"dataset": "nope"}, "'nope' is not a known dataset"),
    ("ensemble", {"holdout": "XYZ"}, "'XYZ' is not a known holdout"),
    ("compare", {"a": "XYZ"}, "'XYZ' is not a known model (a)"),
    ("trust", {"method": "cosine"}, "'cosine' is not a known method"),
    ("upload", {"dataset": "nope"}, "'nope' is not a known dataset"),
]


@pytest.mark.parametrize("page,query,notice", STALE, ids=[s[0] for s in STALE])
def test_a_stale_value_is_noticed_right_under_the_title(page, query, notice, monkeypatch, store):
    at = run(page, monkeypatch, store, **query)
    children = list(at.main.children.values())
    assert len(children[0].title) == 1 and children[0].title[0].value  # the title's row (the link's button beside it)
    first = children[1]  # the place start() keeps under the title, filled by publish() at the end of the run
    assert any(notice in text(i.value) for i in first.info), (page, [text(i.value) for i in first.info])
    # and nowhere else: not again under the charts
    assert sum(notice in n for n in notices(at)) == 1


# --- "not scored" versus "not known" -----------------------------------------------------------------

def test_view_state_words_a_known_name_without_values_as_not_scored():
    metrics = {"METEOR", "BLEU4", "F1"}
    vs = ViewState({"rank_by": "METEOR", "metric": "XYZ", "metrics": "METEOR,F1,XYZ"})
    assert vs.one("rank_by", ["F1", "BLEU4"], "F1", unavailable="is not scored on this dataset", known=metrics) == "F1"
    assert vs.one("metric", ["F1"], "F1", unavailable="is not scored on this dataset", known=metrics) == "F1"
    assert vs.many("metrics", ["F1", "BLEU4"], ["F1"], unavailable="is not scored on this dataset", known=metrics) == ["F1"]
    assert vs.notices == ["'METEOR' is not scored on this dataset; showing 'F1' instead.",
                          "'XYZ' is not a known metric; showing 'F1' instead.",
                          "'METEOR' is not scored on this dataset; left out.",
                          "unknown metrics ignored: XYZ"]
    # without `known`, the old wording for a value that is valid elsewhere (a level with no data here)
    vs = ViewState({"level": "turn"})
    vs.one("level", ["system"], unavailable="has nothing to correlate in msde-paper")
    assert vs.notices == ["level 'turn' has nothing to correlate in msde-paper; showing 'system' instead."]


def test_leaderboard_says_a_real_metric_is_not_scored(monkeypatch, store):
    # demo-zh is scored with the lexical metrics and METEOR's exact mode, never with METEOR 1.5
    at = run("leaderboard", monkeypatch, store, dataset="demo-zh", track="kdconv/knowledge",
             rank_by="METEOR", across_by="METEOR", metrics="F1,METEOR,BOGUS")
    notes = notices(at)
    assert "'METEOR' is not scored on this track; showing 'F1' instead." in notes
    assert "'METEOR' is not scored on this track; left out." in notes
    assert "unknown metrics ignored: BOGUS" in notes
    assert "'METEOR' is not scored on this dataset; showing 'F1' instead." in notes  # across skills
    assert not any("not a known" in n and "METEOR" in n for n in notes)
    at = run("leaderboard", monkeypatch, store, dataset="demo-zh", track="kdconv/knowledge", rank_by="XYZ")
    assert "'XYZ' is not a known column to rank by; showing 'F1' instead." in notices(at)


# --- blank cells -------------------------------------------------------------------------------------

def shown_cells(frame_element) -> pd.DataFrame:
    """What a table's cells show: the Styler's display text where the table is styled, else the values."""
    proto = frame_element.proto
    values = frame_element.value
    if proto.arrow_data.HasField("styler") and proto.arrow_data.styler.display_values:
        shown = pa.ipc.open_stream(io.BytesIO(proto.arrow_data.styler.display_values)).read_pandas()
        return shown.set_axis(values.columns, axis=1) if shown.shape == values.shape else values
    return values


def assert_no_none_cells(at: AppTest, where: str) -> int:
    """Every table of the page: no cell reads "None" or "nan" (a missing value draws as the table's
    placeholder, which must be blank); returns how many cells were missing values."""
    missing = 0
    for i, frame in enumerate(at.dataframe):
        values = frame.value
        order = list(frame.proto.column_order) or list(values.columns)
        values = values[[c for c in order if c in values.columns]]
        nulls = int(values.isna().sum().sum())
        missing += nulls
        if nulls:
            assert frame.proto.HasField("placeholder") and frame.proto.placeholder == "", (where, i, "placeholder")
        shown = shown_cells(frame)[values.columns].astype(str)
        bad = shown.isin(["None", "nan", "NaN", "<NA>", "NaT"]) & values.notna()
        assert not bad.any().any(), (where, i, shown[bad.any(axis=1)].head())
    return missing


def test_leaderboard_published_rows_have_no_none(monkeypatch, store):
    at = run("leaderboard", monkeypatch, store, dataset="msde-paper", track="lic2021/knowledge", origin="published")
    board = at.dataframe[0]
    values = board.value
    assert len(values) == 14 and values["coverage"].isna().all()  # a paper's table says nothing of coverage
    # ...so the column is not drawn at all, nor the rank interval and response counts it lacks too
    assert not {"coverage", "rank 95% CI", "responses", "track"} & set(board.proto.column_order)
    assert list(board.proto.column_order[:2]) == ["rank", "model"]
    assert_no_none_cells(at, "leaderboard published")


def test_leaderboard_across_skills_and_pages_draw_blanks(monkeypatch, store):
    # demo-zh: computed rows and the across-skills table (its 'note' is empty where a rank stands)
    at = run("leaderboard", monkeypatch, store, dataset="demo-zh", track="kdconv/knowledge")
    assert len(at.dataframe) >= 2
    across = at.dataframe[-1].value
    assert set(across["track"]) == {"lccc/chitchat", "kdconv/knowledge"}
    assert_no_none_cells(at, "leaderboard demo-zh")
    for page, query in [("correlations", {"dataset": "msde-paper", "track": "luge/chitchat"}), ("drilldown", {}),
                        ("drilldown", {"dataset": "demo-zh"}), ("human", {}), ("ensemble", {}), ("compare", {})]:
        at = run(page, monkeypatch, store, **query)
        assert len(at.dataframe) or page == "correlations", page  # correlations: heatmaps, a table when some differ
        assert_no_none_cells(at, f"{page} {query}")


# --- nothing to show: say why --------------------------------------------------------------------------

def captions(at: AppTest) -> str:
    return " ".join(text(c.value) for c in at.caption)


def no_disabled_none_boxes(at: AppTest) -> None:
    assert not [s.label for s in at.selectbox if s.options == ["(none)"]]


def test_sections_with_nothing_to_show_say_why(monkeypatch, store):
    # msde-paper holds published tables only: no model to rank across skills
    at = run("leaderboard", monkeypatch, store, dataset="msde-paper")
    no_disabled_none_boxes(at)
    assert "msde-paper holds no responses of its own (only published tables)" in captions(at)
    # demo-zh has no human ratings: the drill-down says so instead of an empty dimension box
    at = run("drilldown", monkeypatch, store, dataset="demo-zh", track="kdconv/knowledge")
    no_disabled_none_boxes(at)
    assert "Human dimension: no human ratings on this track" in captions(at)
    assert not [t for t in at.toggle if t.label == "Rated responses only"]
    # engagement-en's one track has a single model: nothing to compare, and why
    at = run("compare", monkeypatch, store, dataset="engagement-en")
    no_disabled_none_boxes(at)
    assert any("Nothing to compare" in n and "comparing needs two" in n for n in notices(at))
