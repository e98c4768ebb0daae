"""The embedded default: msde-paper, demo-zh and engagement-en, checked against the source files themselves."""
import csv
import json

import pytest

from evalcore.services.defaults import DATA_DIR, init_store
from evalcore.store import connect, queries
from support import copy_default_store


@pytest.fixture(scope="module")
def default_store(tmp_path_factory, default_store_file):
    """A copy of the session's default store (built by init_store: conftest.default_store_file)."""
    con = connect(copy_default_store(default_store_file, tmp_path_factory.mktemp("default") / "s.duckdb"))
    yield con
    con.close()


def _csv(name):
    with open(DATA_DIR / "msde-paper" / name, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_msde_paper_tables_land_whole(default_store):
    s = queries.summary(default_store, "msde-paper")
    auto, human, corr = _csv("automatic_system_scores.csv"), _csv("human_system_scores.csv"), _csv("published_correlations.csv")
    assert s["system_scores"].sum() == len(auto) == 1344
    assert s["human_ratings"].sum() == len(human) == 266
    assert default_store.execute("SELECT count(*) FROM published_correlations").fetchall()[0][0] == len(corr) == 608
    assert set(s["models"]) == {14}
    value = default_store.execute(
        "SELECT value FROM system_scores WHERE dataset = 'msde-paper' AND track = 'lic2021/persona' "
        "AND model = 'Qwen-7B-chat' AND name = 'F1'").fetchall()
    assert value == [(0.20,)]


def test_demo_items_are_every_later_turn_of_test_dialogues(default_store):
    kd = [json.loads((DATA_DIR / "demo-zh" / "kdconv" / d / "test.json").read_text("utf-8")) for d in ("film", "music", "travel")]
    kd_items = sum(len(d["messages"]) - 1 for domain in kd for d in domain)
    lccc = json.loads((DATA_DIR / "demo-zh" / "lccc" / "toy_data.json").read_text("utf-8"))
    lccc_items = sum(len(d) - 1 for d in lccc["test"])
    s = queries.summary(default_store, "demo-zh").set_index("track")
    assert s.loc["kdconv/knowledge", "items"] == kd_items
    assert s.loc["lccc/chitchat", "items"] == lccc_items
    for track in ("kdconv/knowledge", "lccc/chitchat"):
        assert s.loc[track, "responses"] == 2 * s.loc[track, "items"]
        assert s.loc[track, "references"] == s.loc[track, "items"]
        assert s.loc[track, "models"] == 2
    splits = dict(default_store.execute(
        "SELECT split, count(*) FROM dialogues WHERE track = 'lccc/chitchat' GROUP BY 1").fetchall())
    assert splits == {"train": len(lccc["train"]), "valid": len(lccc["valid"]), "test": len(lccc["test"])}


def test_retrieved_responses_come_from_the_right_pool(default_store):
    rows = default_store.execute("""
        SELECT i.track, i.dialogue_id, r.origin, r.text FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = 'demo-zh'""").fetchall()
    turns = {}
    for dialogue_id, text in default_store.execute("SELECT dialogue_id, text FROM turns WHERE dataset = 'demo-zh'").fetchall():
        turns.setdefault(dialogue_id, set()).add(text)
    for track, dialogue, origin, text in rows:
        source = origin.rsplit(" ", 1)[1]
        assert source != dialogue  # never the item's own dialogue
        if track == "lccc/chitchat":
            assert source.startswith("lccc-train-")
        assert text in turns[source]


def test_init_twice_adds_nothing(default_store):
    assert init_store(default_store) == []


# ---------------------------------------------------------------- engagement-en
ENGAGEMENT_CSV = DATA_DIR / "engagement-en" / "DailyDialog_groungtruth_annotated.csv"


def engagement_ratings() -> set[tuple[str, str, str, float]]:
    """(query, reply, worker, score) straight from the AMT file: ten pairs per HIT row."""
    with open(ENGAGEMENT_CSV, encoding="utf-8", newline="") as f:
        return {(row[f"Input.query{k}"].strip(), row[f"Input.response{k}"].strip(), row["WorkerId"],
                 float(row[f"Answer.pair{k}"])) for row in csv.DictReader(f) for k in range(1, 11)}


def test_engagement_ratings_are_the_amt_file(default_store):
    expected = engagement_ratings()
    assert len(expected) == 900 and len({(q, r) for q, r, _, _ in expected}) == 300
    stored = set(default_store.execute("""
        SELECT json_extract_string(i.context, '$[0]'), r.text, h.annotator, h.score
        FROM human_ratings h JOIN items i USING (dataset, item_id)
        JOIN responses r ON r.dataset = h.dataset AND r.item_id = h.item_id AND r.model = h.model
        WHERE h.dataset = 'engagement-en'""").fetchall())
    assert stored == expected
    assert default_store.execute("SELECT scale_min, scale_max FROM dimensions WHERE dataset = 'engagement-en'"
                                 ).fetchall() == [(1.0, 5.0)]
    assert default_store.execute("SELECT count(*) FROM item_references WHERE dataset = 'engagement-en'"
                                 ).fetchall() == [(0,)]


def test_engagement_bad_file_is_refused_whole(tmp_path):
    from evalcore.core.errors import ImportRefused
    from evalcore.ingest.builtin.engagement import build_engagement
    from support import fingerprint

    text = ENGAGEMENT_CSV.read_text(encoding="utf-8")
    lines = text.split("\n")
    header = lines[0].split(",")
    assert header[21] == "Answer.pair1"
    row = next(csv.reader([lines[1]]))
    row[21] = "7"
    bad = tmp_path / "engagement-en"
    bad.mkdir()
    with open(bad / ENGAGEMENT_CSV.name, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerow(row)
    con = connect(tmp_path / "s.duckdb")
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        build_engagement(con, bad)
    assert fingerprint(con) == before
    message = str(err.value)
    assert "row 2" in message and "Answer.pair1" in message and "1, 2, 3, 4 or 5" in message and "7" in message


@pytest.mark.slow   # builds demo-zh in a thread as the dashboard does (about 30 s)
def test_dashboard_builds_the_slow_dataset_in_the_background(tmp_path, default_store):
    """The first page draws on the quick datasets; demo-zh lands later, the same as a whole build."""
    from evalcore.services.defaults import SLOW, build_default_in_stages

    con = connect(tmp_path / "staged.duckdb")
    thread = build_default_in_stages(con)
    quick = {d for (d,) in con.execute("SELECT dataset FROM datasets").fetchall()}
    assert {"msde-paper", "engagement-en", "smp2018-task1", "smp2018-task2"} <= quick
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert queries.summary(con).equals(queries.summary(default_store))
    assert build_default_in_stages(con) is None  # complete: nothing more to do
    con.close()
    # an interrupted first build (quick datasets only) is completed on the next start ...
    con = connect(tmp_path / "interrupted.duckdb")
    init_store(con, only=("msde-paper",))
    build_default_in_stages(con).join(timeout=300)
    assert set(queries.summary(con)["dataset"]) == set(queries.summary(default_store)["dataset"])
    con.close()
    # ... but a store holding a dataset of the user's own is left alone
    con = connect(tmp_path / "mine.duckdb")
    init_store(con, only=SLOW)
    con.execute("UPDATE datasets SET dataset = 'mine'")
    assert build_default_in_stages(con) is None
    con.close()
