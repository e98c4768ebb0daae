"""Scoring: cached per-response statistics, system scores with signatures, leaderboards."""
import pytest

from evalcore.analysis import leaderboard as lb
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from evalcore.store import revision


def computed(con):
    return {(m, n): (v, s, k) for m, n, v, s, k in con.execute(
        "SELECT model, name, value, signature, n FROM system_scores WHERE origin = 'computed'").fetchall()}


def test_score_writes_system_scores_with_signature_and_n(toy):
    report = score(toy, dataset="toy", track="toy/chitchat", metrics="F1,DIST1", progress=False)
    rows = computed(toy)
    # t1: 天气很好 vs 今天天气不错: hits 2 (天, 气), lengths 4 and 6; t2 has no reference
    assert rows[("m1", "F1")][0] == pytest.approx(2 * 2 / (4 + 6))
    assert rows[("m1", "F1")][2] == 1 and rows[("m1", "DIST1")][2] == 2
    assert rows[("m1", "F1")][1].startswith("F1|tok:char-1|ngram:tuple|corpus:micro-average")
    assert "flavor:default" in rows[("m1", "F1")][1]
    assert any("skip 1 responses whose items have no reference" in n for n in report.notes)
    assert toy.execute("SELECT count(*) FROM metric_signatures").fetchall()[0][0] == 2


def test_rerun_computes_nothing_and_new_model_only_its_rows(toy, tmp_path):
    first = score(toy, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False)
    assert first.computed["toy:toy/chitchat"] > 0
    before = computed(toy)
    rev = revision(toy)
    again = score(toy, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False)
    assert again.computed["toy:toy/chitchat"] == 0 and again.system["toy:toy/chitchat"] == 0
    assert revision(toy) == rev  # nothing written: pages keep their caches
    (tmp_path / "m3.csv").write_text("item_id,response\nt1,今天天气不错\n", encoding="utf-8")
    import_responses(toy, tmp_path / "m3.csv", dataset="toy", track="toy/chitchat", model="m3")
    third = score(toy, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False)
    assert third.computed["toy:toy/chitchat"] == 10  # 8 reference-based + 2 DIST for one new response
    after = computed(toy)
    assert {k: v for k, v in after.items() if k[0] != "m3"} == before
    assert after[("m3", "BLEU4")][0] == pytest.approx(1.0)


def test_track_without_references_reports_unavailable(toy):
    report = score(toy, dataset="toy", track="toy/chitchat", metrics="F1", progress=False)
    assert report.system["toy:toy/chitchat"] == 2
    toy.execute("DELETE FROM item_references")
    toy.execute("DELETE FROM system_scores")
    report = score(toy, dataset="toy", track="toy/chitchat", metrics="F1,DIST2", progress=False)
    assert any("F1 unavailable: no item of this track has a reference" in n for n in report.notes)
    names = {n for (n,) in toy.execute("SELECT name FROM system_scores").fetchall()}
    assert names == {"DIST2"}  # no F1 row: unavailable, never 0


def test_flavors_are_separate_metrics(toy):
    score(toy, dataset="toy", track="toy/chitchat", metrics="F1", progress=False)
    score(toy, dataset="toy", track="toy/chitchat", metrics="F1", flavor="msde", progress=False)
    sigs = {s for (s,) in toy.execute("SELECT signature FROM system_scores WHERE model = 'm1'").fetchall()}
    assert len(sigs) == 2 and any("tok:space-1|ngram:joined" in s for s in sigs)
    board = lb.leaderboard(toy, "toy", "toy/chitchat", flavor="msde")
    # msde flavor: whitespace tokens; '天气很好' and '今天天气不错' share no whole token
    assert board.set_index("model").loc["m1", "F1"] == 0.0


def test_leaderboard_rows_and_columns(toy):
    score(toy, dataset="toy", metrics="lexical", progress=False)
    board = lb.leaderboard(toy, "toy")
    assert list(board.columns[:9]) == ["track", "model", "origin", "coverage", "rank", "rank_ci_low", "rank_ci_high",
                                       "rank_by", "rank_ci"]
    assert list(board.columns[9:19]) == ["F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4", "DIST1", "DIST2",
                                         "METEOR-exact", "ROUGE", "CIDEr"]
    assert set(zip(board["track"], board["model"], board["origin"])) == {
        ("toy/chitchat", "m1", "computed"), ("toy/chitchat", "m2", "computed")}
    sigs = lb.signatures(toy, "toy")
    assert set(sigs["name"]) == {"F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4", "DIST1", "DIST2", "METEOR-exact", "ROUGE",
                                 "CIDEr"}


def test_the_cli_lets_the_store_go_while_it_computes(tmp_path, monkeypatch):
    """While values are computed another process can write (here: a CLI import that will not wait);
    the track is then scored again as the store now is, so the new model has its scores too."""
    import subprocess
    import sys

    from evalcore.ingest.formats.items import import_items
    from evalcore.scoring import run as scoring
    from evalcore.store import Handle, connect
    from support import ROOT, TOY_ITEMS, write_jsonl

    monkeypatch.setattr(scoring, "LET_GO", 1)  # let go even for this small track
    path = tmp_path / "s.duckdb"
    con = connect(path)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    (tmp_path / "m1.csv").write_text("item_id,response\nt1,天气很好\nt2,你好\n", encoding="utf-8")
    import_responses(con, tmp_path / "m1.csv", dataset="toy", track="toy/chitchat", model="m1")
    (tmp_path / "m2.csv").write_text("item_id,response\nt1,今天天气不错\n", encoding="utf-8")
    runs = []

    def meanwhile(done, total, label):
        if not runs:  # once: a second process writes while this one computes
            runs.append(subprocess.run(
                [sys.executable, "-m", "evalcore", "import", "responses", str(tmp_path / "m2.csv"), "--db", str(path),
                 "--dataset", "toy", "--track", "toy/chitchat", "--model", "m2"],
                cwd=ROOT, capture_output=True, text=True, env={**__import__("os").environ, "EVALCORE_LOCK_WAIT": "0"}))

    handle = Handle(path, con)
    report = score(con, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False,
                   on_progress=meanwhile, handle=handle)
    con = handle.con
    assert runs and runs[0].returncode == 0, runs[0].stderr  # the store was free while computing
    models = {m for (m,) in con.execute("SELECT DISTINCT model FROM system_scores WHERE origin = 'computed'").fetchall()}
    assert models == {"m1", "m2"}
    bleu = dict(con.execute("SELECT model, value FROM system_scores WHERE name = 'BLEU4' AND origin = 'computed'").fetchall())
    assert bleu["m2"] == pytest.approx(1.0)  # its one response equals the reference
    again = score(con, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False)
    assert again.computed["toy:toy/chitchat"] == 0 and again.system["toy:toy/chitchat"] == 0  # nothing was lost
    assert report.notes == again.notes  # each note said once, though the track was scored twice
    con.close()


def test_system_aggregate_sentence_mean_beside_corpus(con, tmp_path):
    """--system-aggregate sentence-mean: a model's system BLEU-4 is the mean of its sentence BLEU-4
    (as Yeh et al. 2021 aggregate), stored beside the corpus value under its own signature."""
    import numpy as np
    from pycocoevalcap.bleu.bleu import Bleu

    from evalcore.analysis.correlate import metric_scores
    from evalcore.core.tokenize import get_tokenizer
    from evalcore.ingest.formats.items import import_items
    from support import write_jsonl

    refs = {"a1": "今天天气很好，我们去公园吧", "a2": "我看过这部电影，很感人", "a3": "好的，明天见"}
    hyps = {"a1": "今天天气不错，去公园吧", "a2": "这部电影很感人", "a3": "明天见"}
    import_items(con, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": k, "dataset": "agg", "track": "agg/chitchat", "context": ["你好"], "references": [v]}
        for k, v in refs.items()]))
    (tmp_path / "m.csv").write_text("item_id,response\n" + "".join(f"{k},{v}\n" for k, v in hyps.items()),
                                    encoding="utf-8")
    import_responses(con, tmp_path / "m.csv", dataset="agg", track="agg/chitchat", model="m")
    score(con, dataset="agg", metrics="BLEU4", progress=False)
    score(con, dataset="agg", metrics="BLEU4", progress=False, system_aggregate="sentence-mean")
    rows = con.execute("SELECT value, signature FROM system_scores WHERE name = 'BLEU4' ORDER BY signature").fetchall()
    assert len(rows) == 2 and rows[1][1] == rows[0][1] + "|system:sentence-mean"
    # the mean of pycocoevalcap's sentence BLEU-4 over the responses, on the same char tokens
    tok = get_tokenizer("char")
    _, per = Bleu(4).compute_score({k: [" ".join(tok(refs[k]))] for k in refs},
                                   {k: [" ".join(tok(hyps[k]))] for k in refs}, verbose=0)
    assert rows[1][0] == pytest.approx(float(np.mean(per[3])), abs=1e-9)
    assert abs(rows[0][0] - rows[1][0]) > 1e-3  # corpus BLEU is another number
    # readers choose: corpus by default, sentence-mean when asked
    corpus = metric_scores(con, "agg", "agg/chitchat", "system", "computed", "default", None)
    mean = metric_scores(con, "agg", "agg/chitchat", "system", "computed", "default", None, "sentence-mean")
    assert corpus.set_index("unit").loc["m", "value"] == pytest.approx(rows[0][0])
    assert mean.set_index("unit").loc["m", "value"] == pytest.approx(rows[1][0])


def test_the_same_inputs_are_computed_once(toy, tmp_path, monkeypatch):
    import evalcore.scoring.batches as S

    # m3 and m4 answer t1 exactly as m1 did (天气很好), and t2 as m1 did (你好): the same inputs again
    (tmp_path / "more.csv").write_text("item_id,model,response\nt1,m3,天气很好\nt1,m4,天气很好\nt2,m3,你好\n",
                                       encoding="utf-8")
    import_responses(toy, tmp_path / "more.csv", dataset="toy", track="toy/chitchat")
    sizes = []
    real = S.compute
    monkeypatch.setattr(S, "compute", lambda plan, hyps, *a, **k: sizes.append(len(hyps)) or real(plan, hyps, *a, **k))
    report = score(toy, dataset="toy", track="toy/chitchat", metrics="F1,DIST1", progress=False)
    assert sizes == [3]   # 天气很好 to t1, 你好 to t2, 嗯 to t1: three distinct of six responses
    rows = computed(toy)
    # every copy took its source's values: m3 and m4's F1 on t1 is m1's (2 hits, lengths 4 and 6)
    assert rows[("m3", "F1")][0] == rows[("m4", "F1")][0] == rows[("m1", "F1")][0] == pytest.approx(2 * 2 / (4 + 6))
    assert rows[("m3", "DIST1")][2] == 2 and rows[("m4", "DIST1")][2] == 1
    # one cached value per distinct key: F1 2 (t2 has no reference), DIST1 3 (keyed by the text alone)
    assert report.computed["toy:toy/chitchat"] == 2 + 3


def test_a_large_track_writes_its_values_batch_by_batch(toy, tmp_path, monkeypatch):
    """Over WRITE_EVERY responses, values are written as they are computed (each batch its own short
    transaction), then the system scores: the same values as scored at once; a run that dies after a
    batch leaves that batch cached and no system score, and the next run computes only the rest."""
    import shutil

    import evalcore.scoring.batches as B
    import evalcore.scoring.run as S
    from evalcore.store import connect

    texts = ["天气很好", "嗯", "今天天气不错", "你好", "天气不错啊", "不好"]
    (tmp_path / "more.csv").write_text("item_id,model,response\n" + "".join(
        f"t1,x{i},{t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    import_responses(toy, tmp_path / "more.csv", dataset="toy", track="toy/chitchat")
    db = toy.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    toy.execute("CHECKPOINT")
    shutil.copy(db, tmp_path / "once.duckdb")
    once = connect(tmp_path / "once.duckdb")
    score(once, dataset="toy", track="toy/chitchat", metrics="F1,BLEU2", progress=False)

    monkeypatch.setattr(S, "WRITE_EVERY", 2)
    monkeypatch.setenv("EVALCORE_SCORING_PROCESSES", "1")   # every batch in this process, where it is counted
    calls = []
    real = B.compute

    def dies_on_the_third_batch(plan, hyps, *a, **k):
        calls.append(len(hyps))
        if len(calls) == 3:
            raise RuntimeError("killed")
        return real(plan, hyps, *a, **k)

    monkeypatch.setattr(B, "compute", dies_on_the_third_batch)
    with pytest.raises(RuntimeError):
        score(toy, dataset="toy", track="toy/chitchat", metrics="F1,BLEU2", progress=False, chunk=2)
    # two batches of two responses each, F1 and BLEU2 for each: cached; no system score yet
    assert toy.execute("SELECT count(*) FROM metric_scores").fetchall() == [(8,)]
    assert toy.execute("SELECT count(*) FROM system_scores WHERE origin = 'computed'").fetchall() == [(0,)]
    monkeypatch.setattr(B, "compute", real)
    rest = score(toy, dataset="toy", track="toy/chitchat", metrics="F1,BLEU2", progress=False, chunk=2)
    # t1's 8 responses (m1, m2 and six more) hold 6 distinct texts (天气很好 and 嗯 twice); 4 were done
    assert rest.computed["toy:toy/chitchat"] == 2 * (6 - 4)
    assert computed(toy) == computed(once)
    assert sorted(toy.execute("SELECT signature, text_key, value FROM metric_scores").fetchall()) == \
        sorted(once.execute("SELECT signature, text_key, value FROM metric_scores").fetchall())


def test_batches_computed_in_forked_helpers_write_what_one_process_writes(tmp_path, monkeypatch):
    """With EVALCORE_SCORING_PROCESSES=2 and a batch per response, the lexical metrics' batches alternate
    between this process and a forked helper; every cached value, statistic, system score and per-item
    statistic is what one process writes, and m3's F1 is 0.8 (今天天气 against 今天天气不错: P = 4/4,
    R = 4/6, 2PR/(P+R) = 0.8; t2 has no reference). Metrics that are not pure CPU work never fork."""
    import multiprocessing

    from evalcore.ingest.formats.items import import_items
    from evalcore.metrics.registry import resolve_metrics
    from evalcore.scoring import batches
    from evalcore.store import connect
    from support import TOY_ITEMS, write_jsonl

    forks = []
    real = multiprocessing.get_context
    monkeypatch.setattr(batches.multiprocessing, "get_context", lambda kind: forks.append(kind) or real(kind))
    monkeypatch.setattr(batches, "FORK_POOLED_FROM", 0)   # each model's DIST over its texts in a helper too
    tables = {}
    for processes in ("1", "2"):
        monkeypatch.setenv("EVALCORE_SCORING_PROCESSES", processes)
        con = connect(tmp_path / f"p{processes}.duckdb")
        import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
        (tmp_path / "r.csv").write_text("item_id,model,response\nt1,m1,天气很好\nt2,m1,你好\nt1,m2,嗯\nt1,m3,今天天气\n"
                                        "t2,m2,你好你好\nt2,m3,好的\n", encoding="utf-8")
        import_responses(con, tmp_path / "r.csv", dataset="toy", track="toy/chitchat")
        score(con, dataset="toy", progress=False, chunk=1)
        tables[processes] = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                             for t in ("metric_scores", "system_scores", "item_stats")}
        if processes == "2":
            f1 = con.execute("SELECT value FROM system_scores WHERE name = 'F1' AND model = 'm3'").fetchall()
        con.close()
    # the one track with more than one batch (its batches, then its models' DIST), with helpers only when asked
    assert forks == ["fork", "fork"]
    assert tables["1"] == tables["2"] and len(tables["2"]["metric_scores"]) > 20
    assert f1 == [(pytest.approx(2 * 1 * (4 / 6) / (1 + 4 / 6)),)]   # 今天天气: its 4 chars all in the reference's 6
    assert batches.helpers(resolve_metrics("lexical"), batches=3) == 1
    assert batches.helpers(resolve_metrics("lexical"), batches=1) == 0
    assert batches.helpers(resolve_metrics("METEOR"), batches=3) == 0   # METEOR 1.5 runs Java: it stays here


def _more_answers(toy, tmp_path):
    """m3 and m4 answer both items with the same texts: 你好 and 嗯 to t1 (a reference) and to t2 (none).
    DIST1's key is the text alone, so its 你好 and 嗯 come twice in one run (rows that differ for F1)."""
    (tmp_path / "more.csv").write_text("item_id,model,response\nt1,m3,你好\nt2,m3,嗯\nt1,m4,嗯\nt2,m4,你好\n",
                                       encoding="utf-8")
    import_responses(toy, tmp_path / "more.csv", dataset="toy", track="toy/chitchat")


def test_each_new_key_is_written_once_across_batches_by_plain_appends(toy, tmp_path, monkeypatch):
    """A track written batch by batch writes each new (signature, text) key once, though rows with the same
    DIST1 key fall in different batches; while nobody else writes, without reading the cache again."""
    import evalcore.scoring.run as S
    import evalcore.scoring.writes as W

    _more_answers(toy, tmp_path)
    monkeypatch.setattr(S, "WRITE_EVERY", 1)
    monkeypatch.setenv("EVALCORE_SCORING_PROCESSES", "1")
    checked = []
    real = W.insert_frame
    monkeypatch.setattr(W, "insert_frame", lambda con, table, frame, ignore=False:
                        checked.append(ignore) or real(con, table, frame, ignore=ignore))
    report = score(toy, dataset="toy", track="toy/chitchat", metrics="F1,DIST1", progress=False, chunk=1)
    # texts of the 7 responses: 天气很好 嗯 你好 (m1, m2), 你好 嗯 嗯 你好 (m3, m4). DIST1: 3 distinct texts.
    # F1 needs a reference, so only t1's responses: 天气很好, 嗯, 你好 (m3), 嗯 (m4, the same as m2's): 3.
    assert report.computed["toy:toy/chitchat"] == 3 + 3
    assert toy.execute("SELECT count(*), count(DISTINCT (signature, text_key)) FROM metric_scores").fetchall() == [(6, 6)]
    assert checked and not any(checked)   # plain appends: the cache was read once, before computing


def test_a_value_cached_by_another_writer_meanwhile_stands_and_is_not_written_twice(toy, tmp_path, monkeypatch):
    """Another writer caches a key of this run between two of its batches: the run notices (the cache's row
    count and last row id moved) and checks every later write against the cache; the other's row stands."""
    import evalcore.scoring.batches as B
    import evalcore.scoring.run as S
    from evalcore.scoring.plan import response_key

    _more_answers(toy, tmp_path)
    monkeypatch.setattr(S, "WRITE_EVERY", 1)
    monkeypatch.setenv("EVALCORE_SCORING_PROCESSES", "1")
    sig = {}
    real = B.compute

    def another_writer_on_the_second_batch(plan, hyps, *a, **k):
        sig.setdefault("calls", 0)
        sig["calls"] += 1
        if sig["calls"] == 2:   # DIST1 of 你好 (keyed by the text alone), before this run gets to it
            toy.execute("INSERT INTO metric_scores (signature, text_key, value, stats) VALUES (?, ?, 0.25, [0.25])",
                        [plan.signatures["DIST1"], response_key("你好", None)])
        return real(plan, hyps, *a, **k)

    monkeypatch.setattr(B, "compute", another_writer_on_the_second_batch)
    score(toy, dataset="toy", track="toy/chitchat", metrics="F1,DIST1", progress=False, chunk=1)
    assert sig["calls"] >= 3
    assert toy.execute("SELECT count(*), count(DISTINCT (signature, text_key)) FROM metric_scores").fetchall() == [(6, 6)]
    assert toy.execute("SELECT value FROM metric_scores WHERE text_key = ? AND signature LIKE 'DIST1|%'",
                       [response_key("你好", None)]).fetchall() == [(0.25,)]
