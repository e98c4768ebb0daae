"""Leaderboards that rank: coverage, rank by a chosen column, the bootstrap interval of a rank.
Values are checked against arithmetic written out here and against sacrebleu."""
from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis.leaderboard import coverage, leaderboard
from evalcore.analysis.rank_ci import bootstrap_ranks, competition_ranks, corpus_from_sums
from evalcore.cli import main
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from support import store_at_version


def test_competition_ranks_share_the_better_rank():
    assert competition_ranks(np.array([0.3, 0.5, 0.5, 0.1]), True).tolist() == [3, 1, 1, 4]
    assert competition_ranks(np.array([3.0, 1.0, np.nan]), False)[:2].tolist() == [2, 1]
    assert np.isnan(competition_ranks(np.array([3.0, 1.0, np.nan]), False)[2])


def test_corpus_values_from_summed_statistics():
    # F1 over two responses: hits 2 and 0, hypothesis lengths 3 and 2, reference lengths 4 and 1.
    f1 = corpus_from_sums("F1", np.array([[2 + 0, 3 + 2, 4 + 1.0]]), np.array([2.0]))
    p, r = 2 / 5, 2 / 5
    assert f1[0] == pytest.approx(2 * p * r / (p + r))
    # BLEU-2: "a b c" against "a b d": c = r = 3, 1-grams 2 of 3, 2-grams 1 of 2; no brevity penalty.
    one = [3, 3, 2, 1, 3, 2]
    assert corpus_from_sums("BLEU2", np.array([one], float), np.array([1.0]))[0] == pytest.approx(math.sqrt(2 / 3 * 1 / 2))
    # Twice that response plus "a" against "a b" (c 1, r 2, 1-grams 1 of 1, 2-grams 0 of 0): brevity penalty.
    sums = 2 * np.array(one, float) + np.array([1, 2, 1, 0, 1, 0])
    c, r = 7, 8
    expected = math.exp(1 - r / c) * math.sqrt(5 / 7 * 2 / 4)
    assert corpus_from_sums("BLEU2", sums[None, :], np.array([3.0]))[0] == pytest.approx(expected)
    # Nothing drawn: no value, not 0.
    assert np.isnan(corpus_from_sums("ROUGE", np.array([[0.0]]), np.array([0.0]))[0])


def test_corpus_bleu_from_sums_equals_sacrebleu_on_a_resample():
    from sacrebleu.metrics import BLEU

    from evalcore.core.tokenize import get_tokenizer
    from evalcore.metrics import lexical as L
    from evalcore.metrics.ngrams import Encoded

    hyps = ["the cat sat on the mat", "a dog barks", "it is raining today"]
    refs = [["the cat is on the mat"], ["the dog barks loudly"], ["it rains today"]]
    enc = Encoded.from_texts(get_tokenizer("space"), hyps, refs)
    stats = L.bleu_stats(enc)
    weights = np.array([2.0, 0.0, 1.0])  # a resample: item 1 twice, item 3 once
    value = corpus_from_sums("BLEU4", (weights @ stats)[None, :], np.array([3.0]))[0]
    drawn = [0, 0, 2]
    expected = BLEU(tokenize="none", smooth_method="none").corpus_score(
        [hyps[i] for i in drawn], [[refs[i][0] for i in drawn]]).score / 100
    assert value == pytest.approx(expected)


def test_bootstrap_rank_intervals():
    items = 40
    better = np.linspace(0.5, 0.9, items)[:, None]
    worse = better - 0.2
    cis = bootstrap_ranks({"a": better, "b": worse}, "ROUGE", True, resamples=200, seed=1)
    assert cis == {"a": (1.0, 1.0), "b": (2.0, 2.0)}   # a beats b on every item: no doubt
    same = bootstrap_ranks({"a": better, "b": better.copy()}, "ROUGE", True, resamples=200, seed=1)
    assert same == {"a": (1.0, 1.0), "b": (1.0, 1.0)}  # equal everywhere: tied first
    # b is better on half the items by the same margin: either can come first.
    flip = better.copy()
    flip[::2] += 0.1
    flip[1::2] -= 0.1
    mixed = bootstrap_ranks({"a": better, "b": flip}, "ROUGE", True, resamples=500, seed=3)
    assert mixed == {"a": (1.0, 2.0), "b": (1.0, 2.0)}
    assert bootstrap_ranks({"a": better, "b": flip}, "ROUGE", True, resamples=500, seed=3) == mixed  # seeded


def test_tracks_bootstrapped_together_get_the_intervals_each_gets_alone():
    """bootstrap_tracks shares each resample's draws between tracks of as many items (they have the same seed):
    every track's intervals are those of the track alone, with tracks of another size among them, and a
    model that can go either way on one track (b, better on half its items) still spans ranks 1-2."""
    from evalcore.analysis.rank_ci import bootstrap_tracks

    rng = np.random.default_rng(7)
    tracks = []
    for items in (40, 40, 25, 40):
        a = rng.uniform(0.3, 0.9, (items, 1))
        b = a + rng.choice([-0.1, 0.1], (items, 1))
        tracks.append(({"a": a, "b": b, "c": a - 0.3}, "ROUGE", True))
    together = bootstrap_tracks(tracks, resamples=300, seed=5)
    assert together == [bootstrap_ranks(t[0], "ROUGE", True, resamples=300, seed=5) for t in tracks]
    assert all(cis["c"] == (3.0, 3.0) for cis in together)   # c is below a on every item, and below b
    assert any(cis["b"] == (1.0, 2.0) for cis in together)


@pytest.fixture
def ranked(toy, tmp_path):
    """toy/chitchat: m1 answers both items, m2 one of two (a partial submission); scored."""
    score(toy, dataset="toy", progress=False)
    return toy


def test_coverage_and_partial_submissions_are_not_ranked(ranked):
    cov = coverage(ranked, "toy").set_index(["track", "model"])
    assert cov.loc[("toy/chitchat", "m1"), "coverage"] == 1.0
    assert cov.loc[("toy/chitchat", "m2"), "coverage"] == 0.5
    board = leaderboard(ranked, "toy", "toy/chitchat", rank_by="ROUGE").set_index("model")
    assert board.loc["m1", "rank"] == 1
    assert pd.isna(board.loc["m2", "rank"])
    assert board.loc["m2", "rank_ci"].startswith("partial submission: not ranked")
    both = leaderboard(ranked, "toy", "toy/chitchat", rank_by="ROUGE", partial=True).set_index("model")
    assert both["rank"].notna().all()


def test_rank_by_an_unknown_column_names_the_columns(ranked):
    with pytest.raises(ValueError, match=r"no column 'NOPE' to rank by in 'toy'; columns: .*ROUGE"):
        leaderboard(ranked, "toy", rank_by="NOPE")


def test_dist_has_no_interval_and_says_why(ranked, tmp_path):
    (tmp_path / "m3.csv").write_text("item_id,response\nt1,天气不错\nt2,你好啊\n", encoding="utf-8")
    import_responses(ranked, tmp_path / "m3.csv", dataset="toy", track="toy/chitchat", model="m3")
    score(ranked, dataset="toy", progress=False)
    board = leaderboard(ranked, "toy", "toy/chitchat", rank_by="DIST1").set_index("model")
    assert board.loc["m1", "rank"] in (1, 2) and pd.isna(board.loc["m1", "rank_ci_low"])
    assert "DIST pools n-grams" in board.loc["m1", "rank_ci"]


def test_leaderboard_cli_has_rank_columns(ranked, tmp_path, capsys):
    db = ranked.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    ranked.close()
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--track", "toy/chitchat", "--rank-by", "BLEU4",
                 "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert {"rank", "rank_ci_low", "rank_ci_high", "coverage", "origin"} <= set(frame.columns)
    m1 = frame[frame["model"] == "m1"].iloc[0]
    assert (m1["rank"], m1["rank_ci_low"], m1["rank_ci_high"], m1["coverage"]) == (1, 1, 1, 1.0)


def test_rank_statistics_are_stored_at_scoring_time(ranked, tmp_path):
    """A rank's bootstrap reads the per-item statistics `score` stored beside each system score (item_stats),
    not every response of the track joined to the value cache; a stale row is never read."""
    from evalcore.analysis.rank_ci import per_item_stats

    def f1(con):
        return per_item_stats(con, "toy", "toy/chitchat", "F1", ["m1", "m2"], ["t2", "t1"], flavor="default",
                              tokenizer=None)

    # F1's statistics are (hits, response length, reference length) in characters against 今天天气不错:
    # m1's 天气很好 shares 天 and 气 (2 of 4 against 6); m2's 嗯 shares nothing (0 of 1); t2 has no reference.
    got = f1(ranked)
    assert list(got) == ["m1", "m2"]
    assert np.isnan(got["m1"][0]).all() and got["m1"][1].tolist() == [2, 4, 6]
    assert np.isnan(got["m2"][0]).all() and got["m2"][1].tolist() == [0, 1, 6]
    rows = ranked.execute("SELECT model, n, width FROM item_stats WHERE track = 'toy/chitchat' "
                          "AND starts_with(signature, 'F1|') ORDER BY model").fetchall()
    assert rows == [("m1", 1, 3), ("m2", 1, 3)]   # n: the responses with a reference
    # the same statistics as the value cache gives (the rows set aside, the reader falls back to it)
    ranked.execute("CREATE TABLE aside AS SELECT * FROM item_stats; DELETE FROM item_stats")
    cached = f1(ranked)
    assert list(cached) == ["m1", "m2"] and all(np.array_equal(cached[m], got[m], equal_nan=True) for m in got)
    ranked.execute("INSERT INTO item_stats SELECT * FROM aside")
    # a row whose system score no longer stands (another n) is not read: the value cache answers
    ranked.execute("UPDATE item_stats SET stats = [9.0, 9, 9] WHERE model = 'm2' AND starts_with(signature, 'F1|')")
    ranked.execute("UPDATE system_scores SET n = 3 WHERE model = 'm2' AND name = 'F1'")
    assert f1(ranked)["m2"][1].tolist() == [0, 1, 6]
    # scored again, m2's F1 system score is formed anew and its row replaced: one row per score
    score(ranked, dataset="toy", progress=False)
    assert ranked.execute("SELECT n, stats FROM item_stats WHERE model = 'm2' AND starts_with(signature, 'F1|')"
                          ).fetchall() == [(1, [0.0, 1.0, 6.0])]


def test_the_cli_and_the_dashboard_use_one_blas_thread():
    """OpenBLAS's spinning threads beside a busy core made a bootstrap 13x slower (evalcore/core/threads.py)."""
    import subprocess
    import sys

    code = ("from evalcore.core.threads import one_blas_thread; one_blas_thread(); "
            "from threadpoolctl import threadpool_info; "
            "print(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[1]"


def test_coverage_in_sql_equals_coverage_from_the_item_list(ranked):
    """coverage() without an item list counts in the store; with answerable_items' list it counts against it:
    the same answered, items and coverage per track and model."""
    from evalcore.store.queries import answerable_items

    sql = coverage(ranked, "toy").sort_values(["track", "model"], ignore_index=True)
    listed = coverage(ranked, "toy", items=answerable_items(ranked, "toy")).sort_values(["track", "model"], ignore_index=True)
    pd.testing.assert_frame_equal(sql[["track", "model", "answered", "items", "coverage"]],
                                  listed[["track", "model", "answered", "items", "coverage"]], check_dtype=False)


def test_answerable_items_leave_out_only_rated_texts_without_a_response(toy):
    """An item is answerable unless it holds a rating of a text that is not a stored response and no response
    at all (MSDE's human-sheet rows matching no generated row). toy: t1 and t2 have responses, k1 none; t2 and
    k1 get a rating of a text nobody stored, and a rating of a stored response goes to t1."""
    from evalcore.store.queries import answerable_items

    assert answerable_items(toy, "toy")["item_id"].tolist() == ["t1", "t2", "k1"]
    rows = [("toy/chitchat", "t2", "x", "typed text"), ("toy/knowledge", "k1", "x", "typed text"),
            ("toy/chitchat", "t1", "m1", None)]
    toy.executemany("""INSERT INTO human_ratings (dataset, track, target, item_id, model, annotator, dimension, score,
                       rated_response) VALUES ('toy', ?, 'response', ?, ?, 'a1', 'Info', 1, ?)""", rows)
    # k1: a rated text and no response: left out; t2: a rated text but m1 answered it: kept; t1: kept
    assert answerable_items(toy, "toy")[["track", "item_id"]].values.tolist() == [
        ["toy/chitchat", "t1"], ["toy/chitchat", "t2"]]
    assert answerable_items(toy, "toy", "toy/knowledge").empty


def test_every_track_ranked_at_once_equals_one_track_at_a_time(con, tmp_path, monkeypatch):
    """The leaderboard of every track reads the stored statistics of several tracks in one query and runs the
    tracks' bootstraps on two threads: each track's ranks and intervals are those of its own leaderboard, read
    one track per query."""
    from evalcore.analysis import rank_ci

    _three_tracks(con, tmp_path)
    score(con, dataset="m", metrics="F1", progress=False)
    cols = ["track", "model", "rank", "rank_ci_low", "rank_ci_high", "rank_ci"]
    every = leaderboard(con, "m", rank_by="F1")
    assert every["rank_ci_low"].notna().sum() == 9   # three models on each of three tracks
    monkeypatch.setattr(rank_ci, "TRACKS_PER_READ", 1)
    for track, mine in every.groupby("track"):
        alone = leaderboard(con, "m", track, rank_by="F1")
        pd.testing.assert_frame_equal(mine[cols].reset_index(drop=True), alone[cols].reset_index(drop=True))


def _three_tracks(con, tmp_path) -> list[str]:
    """Dataset m: three tracks of eight items, three models answering every item differently."""
    from evalcore.ingest.formats.items import import_items
    from support import write_jsonl

    tracks = ["m/chitchat", "m/knowledge", "m/persona"]
    import_items(con, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": f"{t[2]}{i}", "dataset": "m", "track": t, "context": ["你好"], "references": [f"今天 天气 很 好 {i}"]}
        for t in tracks for i in range(8)]))
    words = ["今天", "天气", "很", "好", "不", "错", "呀", "吗"]
    rows = [f"{t[2]}{i},m{k},{' '.join(words[(i * (k + 1) + j) % 8] for j in range(2 + k + i % 3))}"
            for t in tracks for i in range(8) for k in range(3)]
    for t in tracks:
        path = tmp_path / f"{t[2]}.csv"
        path.write_text("item_id,model,response\n" + "\n".join(r for r in rows if r.startswith(t[2])) + "\n",
                        encoding="utf-8")
        import_responses(con, path, dataset="m", track=t)
    return tracks


def test_per_response_values_from_stored_statistics_equal_the_value_cache(con, tmp_path, monkeypatch):
    """response_scores reads a lexical metric's per-response values from the per-item statistics stored at
    scoring time (their sentence values) instead of joining the track's texts to the value cache: the same
    rows and the same floats. A model whose system score no longer stands (a response added after scoring)
    is read through the value cache, as before."""
    from evalcore.scoring import response_scores, stored

    tracks = _three_tracks(con, tmp_path)
    score(con, dataset="m", metrics="F1,BLEU2,ROUGE,DIST1", progress=False)
    (tmp_path / "late.csv").write_text("item_id,model,response\nc0,late,今天 天气\n", encoding="utf-8")
    import_responses(con, tmp_path / "late.csv", dataset="m", track=tracks[0])   # cached text, no system score
    read = []
    monkeypatch.setattr(stored, "stored_values", lambda *a, f=stored.stored_values: read.append(1) or f(*a))
    keys = ["metric", "model", "item_id"]
    fast = response_scores(con, "m", tracks[0]).sort_values(keys, ignore_index=True)
    monkeypatch.setattr(stored, "value_of_stats", lambda metric: False)
    slow = response_scores(con, "m", tracks[0]).sort_values(keys, ignore_index=True)
    assert read and len(fast) == len(slow) > 0
    assert set(fast["metric"]) == {"F1", "BLEU2", "ROUGE", "DIST1"}
    assert len(fast[fast["model"] == "late"]) == 4   # through the value cache: its text is m0's on c0
    assert (fast[keys] == slow[keys]).all().all() and (fast["value"].to_numpy() == slow["value"].to_numpy()).all()


def test_item_stats_are_stored_in_parts_and_read_back_whole(tmp_path):
    """Statistics are stored in rows of at most 4,096 values (whole items), so a read of one track skips the
    other tracks' rows (migration 14); a reader gets back exactly the doubles written, in item order."""
    from evalcore.scoring.stored import item_stats_rows, stored_item_stats, write_item_stats
    from evalcore.store import connect

    con = connect(tmp_path / "s.duckdb")
    con.execute("INSERT INTO system_scores (dataset, track, model, name, value, n, signature, origin, flavor, tokenizer) "
                "VALUES ('d', 't/chitchat', 'a', 'F1', 0.5, 3000, 'F1|x', 'computed', 'default', 'char'), "
                "('d', 't/chitchat', 'b', 'F1', 0.5, 2, 'F1|x', 'computed', 'default', 'char'), "
                "('d', 'u/chitchat', 'a', 'F1', 0.5, 1, 'F1|x', 'computed', 'default', 'char')")
    # model a: 3,000 items x 3 values = 9,000 values; 4,096 // 3 = 1,365 items (4,095 values) per row -> 3 rows
    big = np.arange(9000, dtype=float).reshape(3000, 3) + 0.25
    items = [f"i{k}" for k in range(3000)]
    write_item_stats(con, "d", "t/chitchat", [
        {"model": "a", "signature": "F1|x", "n": 3000, "item_ids": items, "stats": big},
        {"model": "b", "signature": "F1|x", "n": 2, "item_ids": ["i0", "i1"], "stats": np.array([[1.0, 2, 3], [4, 5, 6]])}])
    write_item_stats(con, "d", "u/chitchat", [
        {"model": "a", "signature": "F1|x", "n": 1, "item_ids": ["i0"], "stats": np.array([[7.0, 8, 9]])}])
    parts = con.execute("SELECT model, part, len(stats) FROM item_stats WHERE track = 't/chitchat' "
                        "ORDER BY model, part").fetchall()
    assert parts == [("a", 0, 4095), ("a", 1, 4095), ("a", 2, 810), ("b", 0, 6)]
    cond = "flavor = ?"
    rows = item_stats_rows(con, "d", ["t/chitchat", "u/chitchat"], ["F1"], cond, ["default"])
    got = {(t, r[0]): r[3] for t, rs in rows.items() for r in rs}
    assert got[("t/chitchat", "a")].tolist() == (np.arange(9000) + 0.25).tolist()
    assert got[("t/chitchat", "b")].tolist() == [1, 2, 3, 4, 5, 6]
    assert got[("u/chitchat", "a")].tolist() == [7, 8, 9]
    # in the order asked for, items a model has no value on as NaN rows
    out = stored_item_stats(con, "d", "t/chitchat", "F1", ["a", "b"], ["i2999", "i1", "zz"], cond, ["default"])
    assert out["a"][0].tolist() == [8997.25, 8998.25, 8999.25] and out["a"][1].tolist() == [3.25, 4.25, 5.25]
    assert out["b"][1].tolist() == [4, 5, 6] and np.isnan(out["b"][0]).all() and np.isnan(out["b"][2]).all()
    # a width wider than a row's 4,096 values still stores one item per row
    con.execute("INSERT INTO system_scores (dataset, track, model, name, value, n, signature, origin, flavor, tokenizer) "
                "VALUES ('d', 'w/chitchat', 'a', 'F1', 0.5, 2, 'F1|x', 'computed', 'default', 'char')")
    wide = np.arange(2 * 5000, dtype=float).reshape(2, 5000)
    write_item_stats(con, "d", "w/chitchat", [{"model": "a", "signature": "F1|x", "n": 2, "item_ids": ["i0", "i1"],
                                                "stats": wide}])
    assert con.execute("SELECT part, len(stats) FROM item_stats WHERE track = 'w/chitchat' ORDER BY part").fetchall() \
        == [(0, 5000), (1, 5000)]
    assert item_stats_rows(con, "d", ["w/chitchat"], ["F1"], cond, ["default"])["w/chitchat"][0][3].tolist() \
        == list(range(10000))
    con.close()


def test_migration_14_splits_stored_statistics_into_parts(tmp_path):
    """A store at schema 13 holds one list of statistics per system score; opened by this version, each is
    split into rows of at most 4,096 values (whole items), the doubles unchanged and in order."""
    from evalcore.store import connect, schema_version
    from evalcore.store.migrations import all_migrations

    path = tmp_path / "old.duckdb"
    old = store_at_version(path, 13)
    # 2,000 items x width 4 (1,024 items per row -> 1,024 + 976 items); 3 items x width 1; none (n = 0)
    old.execute("INSERT INTO item_stats VALUES ('d', 't', 'a', 's1', 2000, 'k', 4, ?), ('d', 't', 'b', 's1', 3, 'k', 1, "
                "[1.5, 2.5, 3.5]), ('d', 't', 'c', 's1', 0, 'k', 4, []), ('d', 'u', 'a', 's1', 1, 'k', 2, [7, 8])",
                [[float(v) for v in range(8000)]])
    old.close()

    con = connect(path)
    assert schema_version(con) == len(all_migrations()) >= 14
    assert con.execute("SELECT track, model, part, len(stats) FROM item_stats ORDER BY ALL").fetchall() == [
        ("t", "a", 0, 4096), ("t", "a", 1, 3904), ("t", "b", 0, 3), ("t", "c", 0, 0), ("u", "a", 0, 2)]
    joined = con.execute("SELECT flatten(list(stats ORDER BY part)) FROM item_stats WHERE track = 't' AND model = 'a'"
                         ).fetchone()[0]
    assert joined == [float(v) for v in range(8000)]
    assert con.execute("SELECT stats FROM item_stats WHERE model = 'b'").fetchone()[0] == [1.5, 2.5, 3.5]
    con.close()


def test_the_drilldown_table_has_a_row_per_response_and_a_column_per_metric(ranked):
    """response_table places each response's values in its own row (no pivot): F1 in characters against
    今天天气不错, written out: m1's 天气很好 shares 天 and 气, P = 2/4, R = 2/6, F1 = 2PR/(P+R) = 0.4; m2's 嗯
    shares nothing; t2 has no reference, so no value."""
    from evalcore.pagedata.responses import response_table

    table = response_table(ranked, "toy", "toy/chitchat")
    assert sorted(zip(table["item_id"], table["model"], table["text"])) == [
        ("t1", "m1", "天气很好"), ("t1", "m2", "嗯"), ("t2", "m1", "你好")]
    metrics = [c for c in table.columns if c not in ("item_id", "model", "text")]
    assert metrics == sorted(metrics) and "F1" in metrics
    f1 = table.set_index(["item_id", "model"])["F1"]
    assert f1[("t1", "m1")] == pytest.approx(2 * (2 / 4) * (2 / 6) / (2 / 4 + 2 / 6))
    assert f1[("t1", "m2")] == 0.0
    assert np.isnan(f1[("t2", "m1")])
    # one model asked for: its rows only, the same values
    only = response_table(ranked, "toy", "toy/chitchat", models=["m2"])
    assert only["model"].tolist() == ["m2"] and only["F1"].tolist() == [0.0]


def test_the_drilldowns_rated_view_reads_only_the_rated_items(ranked, tmp_path):
    """rated_only: the items a person rated a response of (t1: m2's 嗯 rated Coh 1 and 0, so 0.5), with every
    model's response to them and the same values as the whole table; items=(...): those items only."""
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.pagedata.responses import response_table

    (tmp_path / "r.csv").write_text("item_id,dialogue_id,model,annotator,dimension,score\n"
                                    "t1,,m2,a,Coh,1\nt1,,m2,b,Coh,0\n", encoding="utf-8")
    import_ratings(ranked, tmp_path / "r.csv", dataset="toy", track="toy/chitchat", scales={"Coh": (0, 2)})
    rated = response_table(ranked, "toy", "toy/chitchat", rated_only=True).set_index(["item_id", "model"]).sort_index()
    assert rated.index.tolist() == [("t1", "m1"), ("t1", "m2")]
    assert rated.loc[("t1", "m1"), "F1"] == pytest.approx(0.4) and rated.loc[("t1", "m2"), "F1"] == 0.0
    assert np.isnan(rated.loc[("t1", "m1"), "Coh"]) and rated.loc[("t1", "m2"), "Coh"] == 0.5
    whole = response_table(ranked, "toy", "toy/chitchat").set_index(["item_id", "model"]).sort_index()
    pd.testing.assert_frame_equal(rated, whole.loc[rated.index, rated.columns])
    one = response_table(ranked, "toy", "toy/chitchat", items=("t2",))
    assert one[["item_id", "model", "text"]].values.tolist() == [["t2", "m1", "你好"]]
    assert np.isnan(one.get("F1", pd.Series([np.nan]))[0])   # no reference, no F1 (and no column when no row has one)
    assert response_table(ranked, "toy", "toy/chitchat", items=("nope",)).empty


def test_the_drilldown_table_reads_the_value_cache_by_references_when_no_item_stats_stand(ranked):
    """Without per-item statistics (a store scored before they were stored), F1 comes from the value cache,
    keyed by the text and its references: the table reads the track bare (texts only), then again with
    references for those keys, and holds the same F1 as written out above (0.4 for 天气很好 on t1)."""
    from evalcore.pagedata.responses import response_table

    ranked.execute("DELETE FROM item_stats")
    table = response_table(ranked, "toy", "toy/chitchat").set_index(["item_id", "model"])
    assert table.loc[("t1", "m1"), "F1"] == pytest.approx(2 * (2 / 4) * (2 / 6) / (2 / 4 + 2 / 6))
    assert table.loc[("t1", "m2"), "F1"] == 0.0 and np.isnan(table.loc[("t2", "m1"), "F1"])


def test_a_model_across_skills_is_picked_from_every_track_ranked_once(ranked):
    """The leaderboard page ranks every track once (ranked_everywhere) and picks each chosen model's rows from
    it: the same table as model_ranks working alone, for every model and for a partial submission too."""
    from evalcore.pagedata import boards

    for partial in (False, True):
        everywhere = boards.ranked_everywhere(ranked, "toy", "ROUGE", partial=partial)
        for model in ("m1", "m2"):
            alone = boards.model_ranks(ranked, "toy", model, "ROUGE", partial=partial)
            pd.testing.assert_frame_equal(alone, boards.model_ranks(ranked, "toy", model, "ROUGE", partial=partial,
                                                                   ranked=everywhere))
    # m1 answers both chitchat items: ranked 1st of 1 there; m2 (one of two items) is not ranked unless partial
    alone = boards.model_ranks(ranked, "toy", "m1", "ROUGE").set_index("track")
    assert alone.loc["toy/chitchat", "rank"] == 1 and alone.loc["toy/chitchat", "ranked"] == 1
    assert alone.loc["toy/knowledge", "note"] == "no response of this model here"
    assert pd.isna(boards.model_ranks(ranked, "toy", "m2", "ROUGE").set_index("track").loc["toy/chitchat", "rank"])
    assert boards.ranked_everywhere(ranked, "toy", "NOPE") is None
    assert boards.model_ranks(ranked, "toy", "m1", "NOPE").empty
