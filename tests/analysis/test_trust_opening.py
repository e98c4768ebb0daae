"""Where Metric trust and `evalcore trust` open (issue 46, item 1): on the first level where some skill has a
verdict, saying why the levels before it had none; with no such level, what to rate next; the datasets not
offered, each with why. The scene is the issue's, small: three models of which a rating task rated a few
responses, so system level has n = 3 models per track (a verdict pools tracks of n >= 4) and turn level n = 5."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from evalcore.analysis.trust import VERDICT_N
from evalcore.analysis.trust_levels import choices
from evalcore.analysis.trust_opening import opening
from evalcore.analysis.trust_verdicts import report
from evalcore.cli import main
from evalcore.store import connect
from support import write_jsonl
from support.apptest import charts, run
from support.trust_store import FIVE, toy_store


@pytest.fixture(scope="module")
def rated(tmp_path_factory):
    con, db = toy_store(tmp_path_factory.mktemp("opening"), FIVE)
    yield con, db
    con.close()


def test_opens_on_the_first_level_with_a_verdict_and_says_why(rated):
    con, _ = rated
    assert choices(con, "toy")[:2] == [("system", "computed"), ("turn", "computed")]
    found = opening(con, "toy")
    assert (found.level, found.origin) == ("turn", "computed")
    # system level: three models rated on knowledge, one on chit-chat; a verdict needs VERDICT_N = 4
    assert VERDICT_N == 4
    assert found.why == ("system level has at most 3 models with both ratings and metric values per track "
                         "(n = 3; a verdict needs 4)")
    # the verdicts at system level say it per skill, in models; at turn level knowledge has its n = 5
    frame, said = report(con, "toy", level="system", method="spearman", dimension="mean", origin="computed",
                         dimensions=["mean", "Info"])
    texts = dict(zip(said["skill"], said["text"]))
    assert texts["knowledge"] == "knowledge: no verdict: only 3 models have both ratings and metric values (a verdict needs 4)"
    assert texts["chitchat"] == "chitchat: no verdict: only 1 model has both ratings and metric values (a verdict needs 4)"
    frame, said = report(con, "toy", level="turn", method="spearman", dimension="mean", origin="computed",
                         dimensions=["mean", "Info"])
    knowledge = frame[(frame.skill == "knowledge") & (frame.track == "pooled")]
    assert set(knowledge.dropna(subset=["r"])["n"]) == {5}
    texts = dict(zip(said["skill"], said["text"]))
    assert texts["chitchat"] == "chitchat: no verdict: only 1 response has both ratings and metric values (a verdict needs 4)"
    # a level asked for is kept to: at system level alone there is no verdict, and what is missing is said
    assert opening(con, "toy", level="system").level is None


def test_with_too_few_ratings_it_says_what_to_rate(tmp_path):
    con, _ = toy_store(tmp_path, FIVE[:2], chitchat=False)
    found = opening(con, "toy")
    assert found.level is None
    # turn level: 2 responses rated (4 - 2 = 2 more); system level: m1 and m2 rated, 2 models; an item with no
    # dialogue of its own is a dialogue of one turn
    assert found.why == ("no verdict at any level yet: system level has 2 models with both ratings and metric values "
                         "(n = 2; a verdict needs 4); turn level has 2 responses with both ratings and metric values "
                         "(n = 2; a verdict needs 4); dialogue level has 2 dialogues with both ratings and metric "
                         "values (n = 2; a verdict needs 4). "
                         "Rate 2 more responses of one track (a rating task, or an imported ratings file) for a first "
                         "verdict at turn level")
    con.close()


def test_cli_opens_there_and_prints_no_nan(rated, capsys):
    _, db = rated
    assert main(["trust", "--db", str(db), "--dataset", "toy"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("note: --level turn --origin computed (the first with a verdict in 'toy'; system "
                                   "level has at most 3 models")
    out = captured.out
    assert not re.search(r"\b(NaN|nan|None)\b|<NA>", out), out
    # the cells with no correlation: one line per track and reason, not a row per metric
    assert "no correlation (chitchat, toy/chitchat): n = 1 < 3, for 10 metrics" in out
    assert "chitchat: no verdict: only 1 response has" in out
    # a level the user gives is theirs, empty or not, and prints no NaN either
    assert main(["trust", "--db", str(db), "--dataset", "toy", "--level", "system", "--origin", "computed"]) == 0
    out = capsys.readouterr().out
    assert "knowledge: no verdict: only 3 models have" in out and not re.search(r"\b(NaN|nan|None)\b|<NA>", out)


def test_cli_with_too_few_ratings_is_an_error_saying_what_to_rate(tmp_path, capsys):
    con, db = toy_store(tmp_path, FIVE[:2], chitchat=False)
    con.close()
    assert main(["trust", "--db", str(db), "--dataset", "toy"]) == 1
    err = capsys.readouterr().err
    assert "nothing to correlate in 'toy': no verdict at any level yet" in err and "Rate 2 more responses" in err


def test_the_page_opens_on_turn_level_and_says_why(rated, monkeypatch):
    _, db = rated
    env = {"EVALCORE_DB": db}
    at = run("trust", monkeypatch, env, dataset="toy")
    assert at.selectbox(key="tr-level-toy").value == "turn"
    assert dict(at.query_params) == {"dataset": "toy"}   # the opening level is no choice: not in the link
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any(c.startswith("Level: turn, the first with a verdict; system level has at most 3 models") for c in captions)
    texts = [m.value.replace("\\", "").replace("**", "") for m in at.markdown]
    assert any(t.startswith("knowledge: ") and "n = 5" in t for t in texts), texts
    assert charts(at) and not at.warning
    # the user's own level in the link wins, and stays in it
    at = run("trust", monkeypatch, env, dataset="toy", level="system")
    assert at.selectbox(key="tr-level-toy").value == "system" and at.query_params["level"] == "system"
    assert not any(c.value.startswith("Level:") for c in at.caption)


def test_the_page_names_the_datasets_it_does_not_offer(rated, monkeypatch, tmp_path):
    from evalcore.ingest.formats.items import import_items

    _, db = rated
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "bare.jsonl", [
        {"item_id": "b1", "dataset": "bare", "track": "bare/chitchat", "context": ["你好"], "references": ["好"]}]))
    con.close()
    at = run("trust", monkeypatch, {"EVALCORE_DB": db})
    assert at.selectbox(key="tr-dataset").options == ["toy"]
    captions = " ".join(c.value.replace("\\", "") for c in at.caption)
    assert "Not offered: bare (no human ratings yet). A dataset needs human ratings and metric values" in captions


def test_a_dataset_change_derives_the_level_again(monkeypatch, tmp_path, default_store_file):
    """msde-paper opens at system level (published); after the user picks demo-zh rated at turn level only, the
    page opens there at turn level, not at the system level msde-paper had (which demo-zh also offers)."""
    from evalcore.ingest.formats.ratings import import_ratings
    from support import copy_default_store

    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    con = connect(db)
    ids = [i for (i,) in con.execute("SELECT item_id FROM items WHERE track = 'kdconv/knowledge' ORDER BY item_id "
                                     "LIMIT 6").fetchall()]
    models = [m for (m,) in con.execute("SELECT DISTINCT model FROM responses WHERE dataset = 'demo-zh'").fetchall()]
    rows = [(i, m, (k + j) % 3) for k, i in enumerate(ids) for j, m in enumerate(models)]
    (tmp_path / "r.csv").write_text("item_id,model,annotator,dimension,score\n" + "".join(
        f"{i},{m},ann,Info,{s}\n" for i, m, s in rows), encoding="utf-8")
    import_ratings(con, tmp_path / "r.csv", dataset="demo-zh", track="kdconv/knowledge", scales={"Info": (0, 2)})
    con.close()
    at = run("trust", monkeypatch, {"EVALCORE_DB": db})
    assert at.selectbox(key="tr-dataset").value == "msde-paper" and at.selectbox(key="tr-level-msde-paper").value == "system"
    at.selectbox(key="tr-dataset").set_value("demo-zh").run()
    assert at.selectbox(key="tr-level-demo-zh").value == "turn" and "level" not in at.query_params
    assert not at.info and not at.warning   # nothing stale: the user changed the dataset, no link named a level


def test_the_api_opens_where_the_command_does(rated):
    """evalcore.open(db).trust(dataset) without a level is the command's table at the opening level; a level
    given is kept."""
    import evalcore
    from evalcore.analysis.trust import trust

    con, db = rated
    table = evalcore.open(str(db)).trust("toy")
    assert (table.attrs["level"], table.attrs["origin"]) == ("turn", "computed")
    assert table.attrs["why"].startswith("system level has at most 3 models")
    pd.testing.assert_frame_equal(table, trust(con, "toy", level="turn"))
    assert evalcore.open(str(db)).trust("toy", level="system").attrs["level"] == "system"
