"""Engine helpers behind the pages: URL state, LaTeX export, overlap highlighting, comparisons."""
import math

import pandas as pd
import pytest

from evalcore.pagedata import audits, boards, catalog, head_to_head, ratings, responses, scope, trust_tables
from evalcore.pagedata.share import ViewState, link, to_query

scope.view_modules()   # every view module imported: each registers its views' scopes


def test_view_state_defaults_and_notices():
    vs = ViewState({"dataset": "msde", "track": "gone/away", "metrics": "F1,NOPE", "bootstrap": "lots"})
    assert vs.one("dataset", ["demo-zh", "msde"]) == "msde"
    assert vs.one("track", ["a/b", "c/d"]) == "a/b"
    assert vs.many("metrics", ["F1", "BLEU1"]) == ["F1"]
    assert vs.number("bootstrap", 0, 0, 5000) == 0
    assert vs.one("method", ["pearson", "spearman"], "spearman") == "spearman"  # absent: default, no notice
    assert vs.notices == ["'gone/away' is not a known track; showing 'a/b' instead.",
                          "unknown metrics ignored: NOPE", "'lots' is not a number for bootstrap; using 0."]


def test_links_round_trip():
    values = {"dataset": "msde-paper", "track": "luge/chitchat", "models": ["a", "b"], "item": None}
    assert to_query(values) == {"dataset": "msde-paper", "track": "luge/chitchat", "models": "a,b"}
    assert link("http://host:8501/anything?x=1", "leaderboard", values) == \
        "http://host:8501/leaderboard?dataset=msde-paper&track=luge%2Fchitchat&models=a%2Cb"
    assert link("http://host:8501", "/leaderboard", values).startswith("http://host:8501/leaderboard?")


def test_latex_marks_the_best_and_escapes():
    frame = pd.DataFrame({"track": ["t_1", "t_1"], "model": ["a&b", "c"], "origin": ["computed"] * 2,
                          "F1": [0.5, 0.25], "DIST1": [math.nan, 0.125]})
    tex = boards.to_latex(frame)
    assert r"t\_1 & a\&b & computed & \textbf{0.50} & -- \\" in tex
    assert r"t\_1 & c & computed & 0.25 & \textbf{0.12} \\" in tex
    assert tex.startswith(r"\begin{tabular}{lllrr}")


def test_overlap_segments_keep_the_text():
    segs = responses.overlap_segments("我喜欢 iPhone 手机", ["我也喜欢手机"])
    assert "".join(s for s, _ in segs) == "我喜欢 iPhone 手机"
    assert [s for s, shared in segs if shared] == ["我喜欢", "手机"]


def test_board_counts_responses_and_compare(toy):
    from evalcore.scoring import score

    score(toy, dataset="toy", metrics="F1,DIST1", progress=False)
    board = boards.board(toy, "toy", "toy/chitchat")
    assert dict(zip(board["model"], board[boards.N_COLUMN])) == {"m1": 2, "m2": 1}
    deltas, humans, items = head_to_head.compare(toy, "toy", "toy/chitchat", "m1", "m2", bootstrap=50, seed=1)
    row = deltas.set_index("metric").loc["DIST1"]
    assert row["n"] == 1 and row["delta"] == pytest.approx(0.0)  # 嗯 vs 天气很好: DIST1 1 and 1
    assert list(items["item_id"]) == ["t1"]


def test_dataset_scoped_views_take_the_dataset_first():
    """The dashboard keys a DATASET_SCOPED view's cache on its first argument's dataset (pages/kit/runtime._cached):
    each such name is a view whose first argument after the connection is the dataset."""
    import inspect

    for name in scope.DATASET_SCOPED:
        params = list(inspect.signature(scope.VIEWS[name]).parameters)
        assert params[:2] == ["con", "dataset"], (name, params)


def test_views_over_every_dataset_are_their_parts_merged(con, tmp_path):
    """scope.PER_DATASET: the dashboard caches one part per dataset and merges them; the merge gives what a reader
    expects of the whole store, written out here for two datasets."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score
    from evalcore.store import queries
    from support import write_jsonl

    for ds, tracks in (("b", ["b/chitchat", "b/knowledge"]), ("a", ["a/chitchat"])):
        import_items(con, write_jsonl(tmp_path / f"{ds}.jsonl", [
            {"item_id": f"{t}-{i}", "dataset": ds, "track": t, "context": ["你好"], "references": ["好"]}
            for t in tracks for i in range(2)]))
        for t in tracks:
            (tmp_path / "r.csv").write_text("item_id,model,response\n" + "".join(
                f"{t}-{i},{m},回答{i}{m}\n" for i in range(2) for m in ("m1", "m2", "m3")), encoding="utf-8")
            import_responses(con, tmp_path / "r.csv", dataset=ds, track=t)
    rows = [("a/chitchat", "a/chitchat-0", "m1", "x", 1), ("a/chitchat", "a/chitchat-0", "m1", "y", 2),   # two annotators
            ("b/knowledge", "b/knowledge-0", "m1", "x", 1), ("b/knowledge", "b/knowledge-1", "m2", "x", 2),
            ("b/knowledge", "b/knowledge-1", "m3", "x", 0), ("b/chitchat", "b/chitchat-0", "m2", "x", 1)]
    for ds in ("a", "b"):
        (tmp_path / "h.csv").write_text("track,item_id,model,annotator,dimension,score\n" + "".join(
            f"{t},{i},{m},{a},Info,{s}\n" for t, i, m, a, s in rows if t.startswith(ds)), encoding="utf-8")
        import_ratings(con, tmp_path / "h.csv", dataset=ds, track=None, scales={"Info": (0, 2)})
    assert ratings.multi_rated_tracks(con) == [("a", "a/chitchat")]
    # most ratings first: b/knowledge 3, a/chitchat 2, b/chitchat 1
    assert responses.rated_response_tracks(con) == [("b", "b/knowledge"), ("a", "a/chitchat"), ("b", "b/chitchat")]
    assert trust_tables.trust_choices(con) == {}   # rated, but no metric values to correlate yet
    score(con, metrics="F1", progress=False)
    every = [("system", "computed"), ("turn", "computed"), ("dialogue", "computed")]   # 3 models, rated responses
    assert list(trust_tables.trust_choices(con).items()) == [("b", every), ("a", every)]   # b: two rated tracks, a: one
    assert audits.judged_datasets(con) == []
    con.execute("INSERT INTO system_scores (dataset, track, model, name, value, origin) "
                "VALUES ('b', 'b/chitchat', 'm1', 'Judge-Info', 3.0, 'computed')")
    assert audits.judged_datasets(con) == ["b"]
    # the overview's tables, from parts, equal the one query over the whole store
    pd.testing.assert_frame_equal(catalog.summary(con), queries.summary(con))
    pd.testing.assert_frame_equal(catalog.model_table(con), queries.models(con))
    assert list(catalog.summary(con)["responses"]) == [6, 6, 6] and list(catalog.model_table(con)["responses"]) == [6, 6, 6]
    assert catalog.model_table(con)["tracks"][0] == "a:a/chitchat, b:b/chitchat, b:b/knowledge"
