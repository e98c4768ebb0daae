"""What a write to one dataset leaves cached: the pages about the other datasets run without the store.

A page run that needs the store waits for whichever process holds it (a scoring job's worker writing, an import),
so beside a job the viewers of other datasets stay fast only if their pages need nothing from the file. Store-wide
views (the dataset list, the track count, the metric registry, the choices over every dataset) are cached by what
they can see (evalcore.pagedata.scope: @global_scoped, @catalog_scoped, @per_dataset), not emptied by every commit."""
from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.store import Shared, connect
from support import ROOT, copy_default_store, write_jsonl

# bench/protocol.py's page mix (the load benchmark's users), about datasets other than `load`
MIX = [("trust", "dataset=msde-paper"), ("leaderboard", "dataset=msde-paper&track=luge%2Fchitchat"),
       ("correlations", "dataset=msde-paper&track=luge%2Fchitchat"), ("drilldown", "dataset=demo-zh&track=lccc%2Fchitchat"),
       ("human", "dataset=engagement-en"), ("judges", "")]


def page_run(page: str, query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page(f"pages/views/{page}.py")
    for key, value in parse_qsl(query):
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def leases(db) -> int:
    return Shared.of(db).generation   # one more per cursor of the store this process handed out


@pytest.fixture
def store(tmp_path, default_store_file, monkeypatch):
    db = copy_default_store(default_store_file, tmp_path / "lab.duckdb")
    monkeypatch.setenv("EVALCORE_DB", str(db))
    con = connect(db)
    try:   # the dataset a job writes to, there before the pages are first opened (as in bench/load.py)
        from evalcore.ingest.formats.items import import_items

        import_items(con, write_jsonl(tmp_path / "load.jsonl", [
            {"item_id": f"load-{i}", "dataset": "load", "track": "load/chitchat", "context": ["你好"],
             "references": ["好的"]} for i in range(3)]))
    finally:
        con.close()
    return db


def add_model(db, tmp_path, model: str) -> None:
    """A new model's responses in `load` and their lexical scores: the commits a scoring job makes there."""
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    csv = tmp_path / f"{model}.csv"
    csv.write_text("item_id,response\n" + "".join(f"load-{i},{model} 说 好 的\n" for i in range(3)), encoding="utf-8")
    con = connect(db)
    try:
        import_responses(con, csv, dataset="load", track="load/chitchat", model=model)
        score(con, dataset="load", track="load/chitchat", metrics="lexical", progress=False)
    finally:
        con.close()


@pytest.fixture
def computed(monkeypatch) -> list[tuple]:
    """(view, first argument) of every view the dashboard computes from here on (a cache miss): each function of
    evalcore.pagedata's view modules wrapped under its own name, so the pages' caches key and scope it as before."""
    import functools
    import inspect

    from evalcore.pagedata import scope

    calls: list[tuple] = []

    def recorded(fn):
        @functools.wraps(fn)
        def view(con, *args, **kwargs):
            calls.append((fn.__name__, args[0] if args and isinstance(args[0], str) else None))
            return fn(con, *args, **kwargs)
        return view

    for views in scope.view_modules():
        for name, fn in list(vars(views).items()):   # the views that read the store: their first parameter is `con`
            if inspect.isfunction(fn) and fn.__module__ == views.__name__ and \
                    list(inspect.signature(fn).parameters)[:1] == ["con"]:
                monkeypatch.setattr(views, name, recorded(fn))
    monkeypatch.setattr(scope, "PER_DATASET", {name: (recorded(part), merge)
                                               for name, (part, merge) in scope.PER_DATASET.items()})
    return calls


@pytest.mark.parametrize("page,query", MIX, ids=[p for p, _ in MIX])
def test_a_write_to_another_dataset_leaves_a_warm_page_off_the_store(page, query, store, tmp_path, computed):
    page_run(page, query)
    before = leases(store)
    computed.clear()
    page_run(page, query)
    assert leases(store) == before and not computed, f"a warm page opened the store for {computed}"
    add_model(store, tmp_path, "newcomer")
    again = page_run(page, query)
    # what the page shows of every dataset is made of one part per dataset: only `load`'s part is made anew
    assert {(view, arg) for view, arg in computed if view.endswith("_part")} <= {(v, "load") for v, _ in computed}
    assert [(view, arg) for view, arg in computed if not view.endswith("_part")] == [], \
        "a write to dataset `load` emptied a view of another dataset, or of every dataset"
    assert again.title


def test_a_new_dataset_shows_on_every_page_at_once(store, tmp_path):
    """The catalog's views are cached through writes to tracks that exist, not through a new dataset or track."""
    first = page_run("leaderboard", "")
    assert "later" not in first.selectbox(key="lb-dataset").options
    con = connect(store)
    try:
        from evalcore.ingest.formats.items import import_items

        import_items(con, write_jsonl(tmp_path / "later.jsonl", [
            {"item_id": "x1", "dataset": "later", "track": "later/chitchat", "context": ["你好"], "references": ["好"]}]))
    finally:
        con.close()
    assert "later" in page_run("leaderboard", "").selectbox(key="lb-dataset").options


def test_a_part_made_while_another_process_writes_is_the_last_one_then_the_new_one(tmp_path):
    """runtime.dataset_part: while another process holds the store, a page about every dataset gets a dataset's part as
    last made (at once, no wait) and a thread makes it anew once the store is free; the next run has the new one."""
    import subprocess
    import sys
    import time

    from evalcore.ingest.formats.items import import_items
    from evalcore.pagedata import catalog
    from pages.kit import runtime

    db = tmp_path / "s.duckdb"

    def items(first: int, n: int) -> None:
        con = connect(db)
        try:
            import_items(con, write_jsonl(tmp_path / f"i{first}.jsonl", [
                {"item_id": f"x{i}", "dataset": "a", "track": "a/chitchat", "context": ["你好"], "references": ["好"]}
                for i in range(first, first + n)]))
        finally:
            con.close()

    items(0, 2)
    first = runtime.dataset_part(catalog.summary_part, str(db), "a")
    assert list(first["items"]) == [2]
    items(2, 3)   # three more items in a's track
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from evalcore.store import connect; "
                               f"c = connect({str(db)!r}); print('held', flush=True); sys.stdin.readline(); c.close()"],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    waiter = None
    try:
        assert holder.stdout.readline().strip() == "held"
        began = time.perf_counter()
        assert list(runtime.dataset_part(catalog.summary_part, str(db), "a")["items"]) == [2]   # the last one, at once
        assert time.perf_counter() - began < 1.0
        # and so while another thread of this process waits for the store (a page run's cursor, opening it)
        import threading

        from evalcore.store import lease

        waiter = threading.Thread(target=lambda: lease(db, wait=30).close())
        waiter.start()
        time.sleep(0.3)
        began = time.perf_counter()
        assert list(runtime.dataset_part(catalog.summary_part, str(db), "a")["items"]) == [2]
        assert time.perf_counter() - began < 1.0
    finally:
        holder.communicate("go\n", timeout=30)
        if waiter is not None:
            waiter.join(timeout=30)
    for _ in range(100):   # the thread gets the store once the holder lets go
        if not runtime.parts_being_made():
            break
        time.sleep(0.05)
    before = Shared.of(db).generation
    assert list(runtime.dataset_part(catalog.summary_part, str(db), "a")["items"]) == [5]
    assert Shared.of(db).generation == before   # made by the thread, not by this run
