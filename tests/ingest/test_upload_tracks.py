"""The upload page's import (issue 28): a `track` column is detected from the file, a file without one goes
to the chosen track, and messages name the page's controls, never the CLI's options."""
from __future__ import annotations

import csv
import io

import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import PAGE, import_responses
from evalcore.pagedata import intake
from support import TOY_ITEMS, write_jsonl

CLI_WORDS = ("--track", "--partial", "--model", "--dataset", "python -m")


@pytest.fixture
def store(con, tmp_path):
    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    return con


def _per_track(con) -> dict[str, int]:
    return dict(con.execute("""SELECT i.track, count(*) FROM responses r JOIN items i USING (dataset, item_id)
                               GROUP BY 1""").fetchall())


def _page_import(con, path, track, **kw):
    return import_responses(con, path, dataset="toy", track=track, shown=path.name, track_column_first=True,
                            words=PAGE, **kw)


def _filled_template(con, tmp_path, track=None) -> tuple:
    rows = list(csv.DictReader(io.StringIO(intake.template_csv(con, "toy", track).decode("utf-8-sig"))))
    for r in rows:
        r["response"] = "回答" + r["item_id"]
    path = tmp_path / "filled.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path, rows


def test_every_track_template_lands_in_every_track_whatever_track_is_chosen(store, tmp_path):
    path, rows = _filled_template(store, tmp_path)
    # TOY_ITEMS: t1, t2 in toy/chitchat; k1 in toy/knowledge
    assert sorted((r["track"], r["item_id"]) for r in rows) == [("toy/chitchat", "t1"), ("toy/chitchat", "t2"),
                                                               ("toy/knowledge", "k1")]
    report = _page_import(store, path, "toy/knowledge", model="m9")  # the page's track box says knowledge
    assert report.tracks == ["toy/chitchat", "toy/knowledge"]
    assert _per_track(store) == {"toy/chitchat": 2, "toy/knowledge": 1}
    assert dict(store.execute("SELECT item_id, text FROM responses WHERE model = 'm9'").fetchall()) == {
        "t1": "回答t1", "t2": "回答t2", "k1": "回答k1"}
    assert not any(w in report.render() for w in CLI_WORDS)


def test_a_file_without_a_track_column_goes_to_the_chosen_track(store, tmp_path):
    (tmp_path / "r.csv").write_text("item_id,model,response\nk1,m1,看过\n", encoding="utf-8")
    report = _page_import(store, tmp_path / "r.csv", "toy/knowledge")
    assert report.tracks == ["toy/knowledge"] and _per_track(store) == {"toy/knowledge": 1}


def test_refusals_on_the_page_name_its_controls(store, tmp_path):
    def refused(text: str, track: str | None, **kw) -> str:
        path = tmp_path / "bad.csv"
        path.write_text(text, encoding="utf-8")
        before = _per_track(store)
        with pytest.raises(ImportRefused) as err:
            _page_import(store, path, track, **kw)
        assert _per_track(store) == before  # nothing written
        shown = err.value.render() + " ".join(k for k, _ in err.value.kinds())
        assert not any(w in shown for w in CLI_WORDS), shown
        return shown

    # an item of another track, in a file without a track column: the chosen track is named as the page's
    msg = refused("item_id,model,response\nt1,m1,好\n", "toy/knowledge")
    assert "row 2, field 'item_id': expected an item of track 'toy/knowledge'" in msg
    # a track column naming a track the dataset lacks
    msg = refused("track,item_id,model,response\ntoy/nosuch,t1,m1,好\n", "toy/knowledge")
    assert "field 'track': expected a track of dataset 'toy': toy/chitchat, toy/knowledge, got 'toy/nosuch'" in msg
    # no track chosen and no track column
    msg = refused("item_id,model,response\nt1,m1,好\n", None)
    assert "a column named 'track' (or leave it out and choose the track on this page)" in msg
    # a blank model name typed on the page
    msg = refused("item_id,response\nt1,好\n", "toy/chitchat", model=" ")
    assert "field 'Model name': expected a non-empty model name" in msg
    # a dataset with no tracks
    path = tmp_path / "x.csv"
    path.write_text("item_id,model,response\nt1,m1,好\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as err:
        import_responses(store, path, dataset="nosuch", track=None, track_column_first=True, words=PAGE)
    assert "field 'Dataset'" in str(err.value) and "--" not in str(err.value)


def test_the_replace_note_on_the_page(store, tmp_path):
    (tmp_path / "r.csv").write_text("item_id,model,response\nk1,m1,看过\n", encoding="utf-8")
    _page_import(store, tmp_path / "r.csv", "toy/knowledge")
    report = _page_import(store, tmp_path / "r.csv", "toy/knowledge", replace=True)
    note = next(n for n in report.notes if n.startswith("replaced"))
    assert "the History section below lists them and can restore them" in note and "python -m" not in note


def test_the_cli_keeps_its_wording_and_its_track_rule(store, tmp_path):
    path, _ = _filled_template(store, tmp_path)
    # the CLI: --track is every row's track, and a track column must agree with it
    with pytest.raises(ImportRefused) as err:
        import_responses(store, path, dataset="toy", track="toy/knowledge", model="m9")
    assert "expected 'toy/knowledge' (the track named with --track), got 'toy/chitchat'" in str(err.value)
    assert _per_track(store) == {}
