"""What a page's cached views are keyed by (pages/kit/runtime): a frame one view returned and a page passes on to
another view is keyed by the view that made it, not hashed cell by cell on every run; any other frame is hashed as
Streamlit hashes it, so equal contents give the same answer and different contents a different one. The store is
prepared once per store and process, not looked up in a cache on every view."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from pages.kit import runtime

CALLS: list[str] = []


def ranked(con) -> pd.DataFrame:
    CALLS.append("ranked")
    return pd.DataFrame({"model": ["a", "b"], "rank": [1, 2]})


def of_model(con, model: str, frame: pd.DataFrame) -> list:
    CALLS.append("of_model")
    return frame.loc[frame["model"] == model, "rank"].tolist()


@pytest.fixture
def store(tmp_path, empty_store_file, monkeypatch):
    path = tmp_path / "keys.duckdb"
    shutil.copyfile(empty_store_file, path)
    monkeypatch.setenv("EVALCORE_DB", str(path))
    CALLS.clear()
    yield path
    runtime.release()


@pytest.fixture
def hashed(monkeypatch):
    """The frames Streamlit's cache hashes (it hashes a frame's cells with pandas' hash_pandas_object)."""
    seen = []
    original = pd.util.hash_pandas_object

    def spy(obj, *args, **kwargs):
        seen.append(obj.shape)
        return original(obj, *args, **kwargs)

    monkeypatch.setattr(pd.util, "hash_pandas_object", spy)
    return seen


def test_a_view_passed_on_is_keyed_by_the_view_that_made_it(store, hashed):
    for _ in range(3):   # runs of a page: a copy of `ranked` each time, passed on to the next view
        frame = runtime.data(ranked)
        assert runtime.data(of_model, "b", frame) == [2]
    assert CALLS == ["ranked", "of_model"]   # each computed once
    assert hashed == []                      # and no frame hashed to find them


def test_any_other_frame_is_hashed_by_its_contents(store, hashed):
    made = runtime.data(ranked)
    equal = made.copy()
    assert runtime.data(of_model, "b", made) == [2]
    assert runtime.data(of_model, "b", equal) == [2]
    assert (2, 2) in hashed   # the frame that no view made (its columns too)
    changed = equal.assign(rank=[1, 5])
    assert runtime.data(of_model, "b", changed) == [5]   # different contents: computed anew
    assert CALLS.count("of_model") == 3


def test_the_store_is_prepared_once_per_store_and_process(store, monkeypatch):
    calls = []
    monkeypatch.setattr(runtime, "prepared", lambda *a: calls.append(a) or True)
    for _ in range(3):
        runtime.cursor()
    assert calls == [(str(store), False)]   # a store of this test's own: prepared on the first view only
