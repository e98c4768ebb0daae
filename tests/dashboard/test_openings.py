"""Where a data page opens without a dataset or track in its link (evalcore.pagedata.openings): where it has something
to show. A chat task's dataset (chat-1-demo-zh) sorts before every dataset of the default store; each endpoint answered
only its own conversations, so the Leaderboard hides them all as partial and Compare finds no item both answered. Opened
from the navigation, each page still draws a table with rows; a link's dataset still wins; a page opened from the
navigation stays on the track the last page showed when it has something to show there (the Leaderboard after an
upload)."""
from __future__ import annotations

import pytest

from evalcore.pagedata import boards, openings, ratings, responses
from evalcore.store import connect
from support import copy_default_store
from support.apptest import charts
from support.apptest import run as run_page
from support.chat_store import CHAT, add_chat_dataset


@pytest.fixture(scope="module")
def store(tmp_path_factory, default_store_file):
    return add_chat_dataset(copy_default_store(default_store_file, tmp_path_factory.mktemp("openings") / "s.duckdb"))


def run(page: str, monkeypatch, db, **query):
    return run_page(page, monkeypatch, {"EVALCORE_DB": db}, **query)


def chosen(at, label: str) -> str | None:
    return next((s.value for s in at.selectbox if s.label.startswith(label)), None)


def test_the_rule_a_link_then_the_last_place_then_the_first_that_shows_something():
    shows = [("b", "b/1"), ("c", "c/2"), ("c", "c/3")]
    datasets = ["a", "b", "c"]
    assert openings.opening(shows, datasets) == ("b", "b/1")                           # not "a", first by name
    assert openings.opening(shows, datasets, named="a") == ("a", None)                 # a link's dataset wins
    assert openings.opening(shows, datasets, named="c") == ("c", "c/2")                # on its first track that shows
    assert openings.opening(shows, datasets, named="zz") == ("b", "b/1")               # unknown: as if not named
    assert openings.opening(shows, datasets, last=("c", "c/3")) == ("c", "c/3")        # where the last page was
    assert openings.opening(shows, datasets, last=("a", "a/1")) == ("b", "b/1")        # ... only if it shows there
    assert openings.opening(shows, datasets, busy={"b"}) == ("c", "c/2")               # still being built
    assert openings.opening(shows, datasets, last=("c", "c/3"), busy={"c"}) == ("b", "b/1")
    assert openings.opening([], datasets) == ("a", None)                               # nothing anywhere
    assert openings.opening([], datasets, busy={"a"}) == ("b", None)
    assert openings.opening([], []) == (None, None)


def test_each_pages_list_leaves_out_what_it_cannot_show(store):
    con = connect(store)
    try:
        board = boards.board_tracks(con)
        assert board[0] == ("demo-zh", "kdconv/knowledge") and CHAT not in {d for d, _ in board}
        # published tables count where no computed row is (msde-paper, smp2018)
        assert ("msde-paper", "luge/chitchat") in board and ("smp2018-task2", "smp2018/task-oriented") in board
        assert openings.compared_tracks(con) == [("demo-zh", "kdconv/knowledge"), ("demo-zh", "lccc/chitchat")]
        assert CHAT not in {d for d, _ in responses.rated_response_tracks(con)}   # dialogue ratings, not responses'
        assert CHAT not in {d for d, _ in ratings.multi_rated_tracks(con)}        # one person per conversation
    finally:
        con.close()


def test_a_scored_chat_dataset_stays_out_of_the_board_list_while_every_endpoint_is_partial(tmp_path, store):
    """Scored (as its acceptance's job scores it), each endpoint's rows are partial: the board hides them."""
    import shutil

    from evalcore.scoring import score

    db = tmp_path / "scored.duckdb"
    shutil.copyfile(store, db)
    con = connect(db)
    try:
        score(con, dataset=CHAT, metrics="DIST1,DIST2", progress=False)
        assert con.execute("SELECT count(*) FROM system_scores WHERE dataset = ? AND origin = 'computed'",
                           [CHAT]).fetchall()[0][0] == 4
        assert CHAT not in {d for d, _ in boards.board_tracks(con)}
        # one endpoint's replies to every item: complete, so the board shows it and the list has the track
        con.execute("INSERT INTO responses (dataset, item_id, model, text, origin) SELECT dataset, item_id, 'gamma', "
                    "'好的', 'test' FROM items WHERE dataset = ?", [CHAT])
        score(con, dataset=CHAT, metrics="DIST1", progress=False)
        assert boards.board_part(con, CHAT) == ["kdconv/knowledge"]
    finally:
        con.close()


@pytest.mark.parametrize("page", ["leaderboard", "compare", "drilldown", "human", "trust", "correlations"])
def test_every_data_page_opened_from_the_navigation_draws_rows(monkeypatch, store, page):
    at = run(page, monkeypatch, store)
    assert chosen(at, "Dataset") != CHAT
    rows = [len(f.value) for f in at.dataframe]
    if page == "correlations":   # a matrix and a bar chart of the track's correlations
        assert charts(at)
    else:
        assert rows and max(rows) > 0, rows
    if page in ("leaderboard", "compare"):
        assert (chosen(at, "Dataset"), chosen(at, "Track")) == ("demo-zh", "kdconv/knowledge")
        assert not at.warning and not at.info, [w.value for w in [*at.warning, *at.info]]


def test_the_upload_page_opens_where_a_board_is(monkeypatch, store):
    """The Upload page opened from the navigation opens on a track with a board to rank a new model on, not on the
    chat task's dataset that sorts first by name."""
    at = run("upload", monkeypatch, store)
    assert not at.exception, [e.value for e in at.exception]
    assert (chosen(at, "Dataset"), chosen(at, "Track")) == ("demo-zh", "kdconv/knowledge")


def test_a_link_still_wins(monkeypatch, store):
    at = run("compare", monkeypatch, store, dataset=CHAT)
    assert chosen(at, "Dataset") == CHAT
    assert "On the 0 items both answered" in " ".join(c.value for c in at.caption)


def test_the_leaderboard_opened_after_the_upload_page_stays_on_its_track(monkeypatch, store):
    """The Upload page names where the upload went (state.remember); from the navigation (no parameters) the
    Leaderboard opens there, as Compare does; a page with nothing to show there opens where it has."""
    at = run("upload", monkeypatch, store, dataset="demo-zh", track="lccc/chitchat")
    for page, expected in (("leaderboard", ("demo-zh", "lccc/chitchat")), ("compare", ("demo-zh", "lccc/chitchat")),
                           ("human", ("engagement-en", "dailydialog/chitchat"))):
        for key in list(at.query_params):   # the navigation opens a page without the last one's parameters
            del at.query_params[key]
        at.switch_page(f"pages/views/{page}.py")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert (chosen(at, "Dataset"), chosen(at, "Track")) == expected, page


def test_compare_opens_on_the_two_models_that_answered_the_most_items_both(con, tmp_path):
    """Models 'a' and 'b' (the first two by name) share no item; 'b' and 'c' share two, 'a' and 'c' one: Compare's
    default pair is b and c, not the first two by name ("0 items both answered")."""
    import pandas as pd

    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses
    from support import write_jsonl

    items = [{"item_id": f"t{i}", "dataset": "toy", "track": "toy/chitchat", "dialogue_id": f"d{i}",
              "context": ["你好"], "references": ["你好 呀"]} for i in range(1, 5)]
    import_items(con, write_jsonl(tmp_path / "items.jsonl", items))
    answered = {"a": ["t1"], "b": ["t2", "t3"], "c": ["t1", "t2", "t3"]}
    for model, ids in answered.items():
        pd.DataFrame({"item_id": ids, "model": model, "response": "好的"}).to_csv(tmp_path / f"{model}.csv", index=False)
        import_responses(con, tmp_path / f"{model}.csv", dataset="toy", track="toy/chitchat")
    assert openings.compared_pair(con, "toy", "toy/chitchat") == ["b", "c"]
    assert openings.compared_pair(con, "toy", "no/such") == []
