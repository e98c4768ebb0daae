"""Human evaluation inside the tool: rating tasks, assignment to K different annotators, answers kept as history,
closed and deleted tasks, the export read back, and Bradley-Terry against the unregularised maximum-likelihood
fit FastChat computes (compute_mle_elo: sklearn's LogisticRegression without penalty or intercept)."""
from __future__ import annotations

import math
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import shared, write_jsonl
from evalcore.analysis.bradley_terry import fit, ratings, table, votes
from evalcore.cli import main
from evalcore.ingest.items import import_items
from evalcore.ingest.msde import import_msde
from evalcore.ingest.responses import import_responses
from evalcore.ingest.votes import import_votes
from evalcore.services import tasks as service
from evalcore.store import connect, history
from evalcore.store import tasks as stored
from evalcore.store.tasks import TaskClosed

MODELS = ["m1", "m2", "m3", "m4"]
ITEMS = [{"item_id": f"i{n}", "dataset": "lab", "track": "lab/chitchat" if n < 4 else "lab/knowledge",
          "context": ["你好", f"第{n}句"], "references": ["好"],
          **({"grounding": {"knowledge": [["我是山姆", "导演", "杰茜·尼尔森"]]}} if n >= 4 else {})}
         for n in range(6)]


@pytest.fixture
def lab(tmp_path):
    con = connect(tmp_path / "lab.duckdb")
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    for track in ("lab/chitchat", "lab/knowledge"):
        rows = "".join(f"{i['item_id']},{m},{m}对{i['item_id']}的回复\n" for i in ITEMS if i["track"] == track
                       for m in MODELS)
        path = tmp_path / f"{track.replace('/', '-')}.csv"
        path.write_text("item_id,model,response\n" + rows, encoding="utf-8")
        import_responses(con, path, dataset="lab", track=track)
    yield con
    con.close()


def _rate_at_random(con, task, *, seed: int, rounds: int) -> None:
    """Annotators ann and bo, in turns, rate the units they are given on Info and Coh with seeded scores 0-2."""
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        for who in ("ann", "bo"):
            unit = stored.next_unit(con, task, who)
            if unit is not None:
                for dim in ("Info", "Coh"):
                    stored.answer(con, task, unit, who, dim, float(rng.integers(0, 3)))


def _absolute(con, items=8, k=2, **kw):
    return service.create_task(con, dataset="lab", mode="absolute", dimensions=["Info", "Coh"], items=items,
                               per_item=k, seed=1, **kw)


def test_stratified_units_cover_every_track_and_model(lab):
    units = stored.units(lab, _absolute(lab, items=8))
    assert len(units) == 8 and not units.duplicated(["item_id", "model_a"]).any()
    # 8 units over tracks of 16 and 8 responses: 8 * 16 / 24 = 5.33 -> 5, 8 * 8 / 24 = 2.67 -> 3
    assert units.groupby("track").size().to_dict() == {"lab/chitchat": 5, "lab/knowledge": 3}
    assert set(units["model_a"]) == set(MODELS)
    pairs = stored.units(lab, service.create_task(lab, dataset="lab", mode="pairwise", dimensions=["Info"], items=6,
                                                  per_item=2, seed=1))
    assert (pairs["model_a"] < pairs["model_b"]).all() and len(pairs) == 6


def test_each_unit_goes_to_k_different_annotators_and_nobody_twice(lab):
    task = stored.get(lab, _absolute(lab, items=3, k=2))
    seen: dict[str, list[int]] = {}
    for _ in range(10):   # three annotators take turns until nothing is left for anyone
        for who in ("ann", "bo", "cy"):
            unit = stored.next_unit(lab, task, who)
            if unit is None:
                continue
            assert unit not in seen.get(who, []), "nobody rates the same unit twice"
            seen.setdefault(who, []).append(unit)
            for dim in ("Info", "Coh"):
                stored.answer(lab, task, unit, who, dim, 1.0)
    raters = stored.latest(lab, task.task_id).groupby("unit")["annotator"].nunique()
    assert raters.tolist() == [2, 2, 2]   # K = 2 each, 6 ratings of units for 3 annotators
    assert sum(len(v) for v in seen.values()) == 6
    assert all(stored.next_unit(lab, task, who) is None for who in ("ann", "bo", "cy", "dee"))


def test_a_claim_holds_the_unit_until_it_expires(lab):
    task = stored.get(lab, _absolute(lab, items=1, k=1))
    t0 = datetime(2026, 1, 1, 9, 0)
    assert stored.next_unit(lab, task, "ann", now=t0) == 1
    assert stored.next_unit(lab, task, "bo", now=t0 + timedelta(minutes=5)) is None   # ann holds it
    assert stored.next_unit(lab, task, "ann", now=t0 + timedelta(minutes=6)) == 1      # ann resumes it
    assert stored.next_unit(lab, task, "bo", now=t0 + timedelta(hours=2)) == 1         # left too long: bo's


def test_a_change_is_kept_and_the_latest_counts(lab):
    task = stored.get(lab, _absolute(lab, items=2, k=1))
    unit = stored.next_unit(lab, task, "ann")
    stored.answer(lab, task, unit, "ann", "Info", 2.0)
    stored.answer(lab, task, unit, "ann", "Info", 0.0)
    kept = stored.answers(lab, task.task_id)
    assert kept[kept["kind"] == "rating"]["value"].tolist() == [2.0, 0.0]
    rows = lab.execute("SELECT score FROM human_ratings WHERE origin = ?", [task.origin]).fetchall()
    assert rows == [(0.0,)]   # one rating, the latest
    with pytest.raises(ValueError, match="from 0 to 2"):
        stored.answer(lab, task, unit, "ann", "Coh", 3.0)


def test_a_closed_task_refuses_answers_and_keeps_the_store(lab):
    task = stored.get(lab, _absolute(lab, items=2, k=1))
    unit = stored.next_unit(lab, task, "ann")
    stored.answer(lab, task, unit, "ann", "Info", 1.0)
    stored.set_state(lab, task.task_id, "closed")
    before = lab.execute("SELECT count(*) FROM task_answers").fetchall()
    with pytest.raises(TaskClosed, match="closed"):
        stored.answer(lab, task, unit, "ann", "Coh", 1.0)
    assert lab.execute("SELECT count(*) FROM task_answers").fetchall() == before
    stored.set_state(lab, task.task_id, "open")
    stored.answer(lab, task, unit, "ann", "Coh", 1.0)


def test_deleting_a_task_sets_its_ratings_aside_and_restore_brings_them_back(lab):
    task = stored.get(lab, _absolute(lab, items=2, k=1))
    unit = stored.next_unit(lab, task, "ann")
    stored.answer(lab, task, unit, "ann", "Info", 2.0)
    pair = stored.get(lab, service.create_task(lab, dataset="lab", mode="pairwise", dimensions=["Info"], items=2,
                                               per_item=1, seed=1))
    stored.answer(lab, pair, stored.next_unit(lab, pair, "ann"), "ann", "Info", 1.0)
    count = "SELECT (SELECT count(*) FROM human_ratings WHERE origin = ?) + (SELECT count(*) FROM pairwise_judgments " \
            "WHERE prompt = ?)"
    sid = stored.delete(lab, task.task_id)
    sid2 = stored.delete(lab, pair.task_id)
    assert lab.execute(count, [task.origin, pair.origin]).fetchall() == [(0,)]
    with pytest.raises(TaskClosed):
        stored.answer(lab, task, unit, "ann", "Coh", 1.0)
    history.restore(lab, sid)
    history.restore(lab, sid2)
    assert lab.execute(count, [task.origin, pair.origin]).fetchall() == [(2,)]
    assert stored.get(lab, task.task_id).state == "closed"


def test_comments_are_bounded_text(lab):
    task = stored.get(lab, _absolute(lab, items=1, k=1))
    stored.flag(lab, task, 1, "ann", "**not bold** <b>x</b>")
    assert stored.answers(lab, task.task_id)["comment"].dropna().tolist() == ["**not bold** <b>x</b>"]
    with pytest.raises(ValueError, match="2000"):
        stored.flag(lab, task, 1, "ann", "x" * 2001)


def test_task_ratings_count_as_human_ratings_and_agreement_is_krippendorff(lab):
    krippendorff = pytest.importorskip("krippendorff")
    task = stored.get(lab, _absolute(lab, items=8, k=2))
    _rate_at_random(lab, task, seed=0, rounds=20)
    out = service.results(lab, task.task_id, bootstrap=0)
    exported = service.export(lab, task.task_id)
    for dim in ("Info", "Coh"):
        part = exported[exported["dimension"] == dim]
        wide = part.pivot_table(index="annotator", columns=["track", "item_id", "model"], values="score")
        for track in ("lab/chitchat", "lab/knowledge"):
            row = out["agreement"][(out["agreement"]["track"] == track) & (out["agreement"]["dimension"] == dim)
                                   & (out["agreement"]["statistic"] == "krippendorff_alpha_ordinal")]
            reference = krippendorff.alpha(reliability_data=wide[track].to_numpy(float), level_of_measurement="ordinal")
            assert row["value"].iloc[0] == pytest.approx(reference, abs=1e-9)
    rated = lab.execute("SELECT count(*) FROM human_ratings WHERE dataset = 'lab' AND origin = ?",
                        [task.origin]).fetchall()[0][0]
    assert rated == len(exported)


def _fastchat_mle(df: pd.DataFrame, SCALE=400, BASE=10, INIT=1000) -> pd.Series:
    """FastChat's compute_mle_elo (fastchat/serve/monitor/elo_analysis.py), as written there, with the
    winner column built from our votes; sklearn's LogisticRegression without penalty or intercept."""
    sklearn = pytest.importorskip("sklearn.linear_model")
    df = df.assign(winner=np.where(df["score"] == 1, "model_a", np.where(df["score"] == 0, "model_b", "tie")))
    # one change to FastChat's code: each pivot is reindexed to every model (fill 0), so a pair seen in one
    # orientation only is not dropped as NaN (in an arena's battles both orientations occur)
    every = sorted(set(df["model_a"]) | set(df["model_b"]))
    pt = lambda d: pd.pivot_table(d, index="model_a", columns="model_b", aggfunc="size", fill_value=0).reindex(  # noqa: E731
        index=every, columns=every, fill_value=0)
    a_win = pt(df[df["winner"] == "model_a"])
    ties = df[df["winner"] == "tie"]
    tie = pt(ties) if len(ties) else pd.DataFrame(0, index=every, columns=every)
    tie = tie + tie.T
    b_win = pt(df[df["winner"] == "model_b"])
    win = a_win * 2 + b_win.T * 2 + tie
    models = pd.Series(np.arange(len(win.index)), index=win.index)
    p = len(models)
    X, Y, w, row = np.zeros([p * (p - 1) * 2, p]), np.zeros(p * (p - 1) * 2), [], 0
    for ma in win.index:
        for mb in win.columns:
            if ma == mb or math.isnan(win.loc[ma, mb]) or math.isnan(win.loc[mb, ma]):
                continue
            X[row, models[ma]], X[row, models[mb]], Y[row] = math.log(BASE), -math.log(BASE), 1.0
            w.append(win.loc[ma, mb])
            X[row + 1, models[ma]], X[row + 1, models[mb]], Y[row + 1] = math.log(BASE), -math.log(BASE), 0.0
            w.append(win.loc[mb, ma])
            row += 2
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # sklearn 1.9 deprecates penalty=None in favour of C=inf: the same fit
        lr = sklearn.LogisticRegression(fit_intercept=False, penalty=None, tol=1e-10, max_iter=100_000)
        lr.fit(X[:row], Y[:row], sample_weight=w)
    return pd.Series(SCALE * lr.coef_[0] + INIT, index=models.index)


def test_bradley_terry_equals_the_fastchat_fit_on_exported_votes(lab, tmp_path):
    task = stored.get(lab, service.create_task(lab, dataset="lab", mode="pairwise", dimensions=["Info"], items=12,
                                               per_item=2, seed=3))
    strength = {"m1": 1.0, "m2": 0.4, "m3": 0.0, "m4": -0.6}
    rng = np.random.default_rng(5)
    for _ in range(30):
        for who in ("ann", "bo"):
            unit = stored.next_unit(lab, task, who)
            if unit is None:
                continue
            a, b = stored.units(lab, task.task_id).set_index("unit").loc[unit, ["model_a", "model_b"]]
            p = 1 / (1 + math.exp(strength[b] - strength[a]))
            u = rng.random()
            stored.answer(lab, task, unit, who, "Info", 0.5 if abs(u - p) < 0.15 else (1.0 if u < p else 0.0))
    exported = service.export(lab, task.task_id)
    assert set(exported["winner"].dropna()) <= {"a", "b", "tie"} and len(exported) == 24
    # the export read back into a fresh store reproduces the votes
    fresh = connect(tmp_path / "fresh.duckdb")
    import_items(fresh, write_jsonl(tmp_path / "items2.jsonl", ITEMS))
    for track in ("lab/chitchat", "lab/knowledge"):
        import_responses(fresh, tmp_path / f"{track.replace('/', '-')}.csv", dataset="lab", track=track)
    exported.to_csv(tmp_path / "votes.csv", index=False)
    import_votes(fresh, tmp_path / "votes.csv", dataset="lab")
    back = votes(fresh, "lab").sort_values(["item_id", "model_a", "model_b", "voter"]).reset_index(drop=True)
    mine = votes(lab, "lab").sort_values(["item_id", "model_a", "model_b", "voter"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back[["item_id", "model_a", "model_b", "voter", "score"]],
                                  mine[["item_id", "model_a", "model_b", "voter", "score"]])
    ours = fit(mine)
    if ours.ratings is None:
        pytest.fail(ours.reason)
    reference = _fastchat_mle(mine)
    for model, rating in zip(ours.models, ours.ratings):
        assert rating == pytest.approx(reference[model], abs=0.01)
    fresh.close()


def test_bradley_terry_on_votes_derived_from_real_ratings():
    """MSDE's Coh ratings of the four models' persona responses (lic2021/persona): 2,000 seeded pairs of
    responses of different models, the higher Coh winning (equal: a tie)."""
    root = shared("msde")
    con = connect(Path(tempfile.mkdtemp()) / "m.duckdb")
    import_msde(con, root, progress=False)
    rated = con.execute("SELECT model, item_id, score FROM human_ratings WHERE dataset = 'msde' "
                        "AND track = 'lic2021/persona' AND dimension = 'Coh'").df()
    assert rated["model"].nunique() == 4
    rng = np.random.default_rng(0)
    rows = []
    while len(rows) < 2000:
        x, y = rated.iloc[rng.integers(0, len(rated), 2)].itertuples(index=False)
        if x.model != y.model:
            rows.append((x.model, y.model, 1.0 if x.score > y.score else 0.0 if x.score < y.score else 0.5))
    derived = pd.DataFrame(rows, columns=["model_a", "model_b", "score"])
    ours = fit(derived)
    reference = _fastchat_mle(derived)
    for model, rating in zip(ours.models, ours.ratings):
        assert rating == pytest.approx(reference[model], abs=0.01)
    out = ratings(derived, resamples=200, seed=0)
    assert (out["ci_low"] <= out["rating"]).all() and (out["rating"] <= out["ci_high"]).all()
    assert out["rating"].mean() == pytest.approx(1000, abs=1e-6)
    con.close()


def test_no_finite_rating_is_said_not_guessed():
    swept = pd.DataFrame({"model_a": ["x", "x", "y"], "model_b": ["y", "z", "z"], "score": [1.0, 1.0, 0.5]})
    out = ratings(swept, resamples=10)
    assert out["rating"].isna().all() and "won, or lost, every vote" in out["note"].iloc[0]


def test_cli_creates_a_task_and_ranks_votes(lab, tmp_path, capsys):
    db = str(tmp_path / "lab.duckdb")
    lab.close()
    assert main(["task", "create", "--db", db, "--dataset", "lab", "--mode", "pairwise", "--dimensions", "Info",
                 "--items", "6", "--per-item", "1"]) == 0
    task_id = int(capsys.readouterr().out.strip())
    con = connect(db)
    task = stored.get(con, task_id)
    for _ in range(6):
        unit = stored.next_unit(con, task, "ann")
        a = stored.units(con, task_id).set_index("unit").loc[unit, "model_a"]
        stored.answer(con, task, unit, "ann", "Info", 1.0 if a in ("m1", "m2") else 0.5)
    con.close()
    assert main(["bt", "--db", db, "--dataset", "lab", "--bootstrap", "50", "--format", "csv"]) == 0
    out = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert list(out.columns)[:4] == ["dimension", "source", "model", "rating"]
    assert main(["task", "export", str(task_id), "--db", db]) == 0
    assert len(pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))) == 6
    assert main(["task", "close", str(task_id), "--db", db]) == 0
    assert main(["task", "list", "--db", db, "--format", "csv"]) == 0
    assert "closed" in capsys.readouterr().out
    con = connect(db)
    assert table(con, "lab", resamples=0)["votes"].sum() == 12   # 6 votes, each counted for both models
    con.close()


def test_win_matrix_counts_a_tie_as_half():
    from evalcore.analysis.bradley_terry import win_matrix
    v = pd.DataFrame({"model_a": ["x", "x", "y", "x"], "model_b": ["y", "y", "x", "z"], "score": [1.0, 0.5, 1.0, 0.0]})
    m = win_matrix(v)
    # x vs y: won 1, tied 1, lost 1 (y won as model_a): (1 + 0.5 + 0) / 3; x vs z: lost its one vote
    assert m.loc["x", "y"] == pytest.approx(1.5 / 3) and m.loc["y", "x"] == pytest.approx(1.5 / 3)
    assert m.loc["x", "z"] == 0.0 and m.loc["z", "x"] == 1.0 and math.isnan(m.loc["y", "z"])


def test_an_absolute_export_read_back_reproduces_the_ratings(lab, tmp_path):
    task = stored.get(lab, _absolute(lab, items=8, k=2))
    _rate_at_random(lab, task, seed=2, rounds=10)
    stored.flag(lab, task, 1, "ann", "the context is cut")
    service.export(lab, task.task_id).to_csv(tmp_path / "export.csv", index=False)
    fresh = tmp_path / "fresh.duckdb"
    con = connect(fresh)
    import_items(con, write_jsonl(tmp_path / "items2.jsonl", ITEMS))
    for track in ("lab/chitchat", "lab/knowledge"):
        import_responses(con, tmp_path / f"{track.replace('/', '-')}.csv", dataset="lab", track=track)
    con.close()
    assert main(["import", "ratings", str(tmp_path / "export.csv"), "--db", str(fresh), "--dataset", "lab",
                 "--scale", "Info=0:2", "--scale", "Coh=0:2"]) == 0
    query = "SELECT track, item_id, model, annotator, dimension, score FROM human_ratings ORDER BY ALL"
    con = connect(fresh)
    assert con.execute(query).fetchall() == lab.execute(query).fetchall() and len(con.execute(query).fetchall()) == 32
    con.close()


def test_vote_agreement_counts_agreeing_pairs_and_alpha_is_krippendorff(lab):
    """Pairwise votes: the share of agreeing pairs, written out by hand, and Krippendorff's nominal alpha over the
    three categories against the krippendorff package."""
    krippendorff = pytest.importorskip("krippendorff")
    task = stored.get(lab, service.create_task(lab, dataset="lab", mode="pairwise", dimensions=["Info"], items=4,
                                               per_item=3, seed=2, tracks=["lab/chitchat"]))
    units = list(stored.units(lab, task.task_id)["unit"])
    # votes per unit by ann, bo, cy (1 = model_a, 0 = model_b, 0.5 = tie)
    given = {units[0]: (1.0, 1.0, 1.0), units[1]: (1.0, 0.0, 1.0), units[2]: (0.5, 0.0, 0.0), units[3]: (0.5, 0.5, 1.0)}
    for who_i, who in enumerate(("ann", "bo", "cy")):
        for _ in units:
            unit = stored.next_unit(lab, task, who)
            stored.answer(lab, task, unit, who, "Info", given[unit][who_i])
    out = service.results(lab, task.task_id, bootstrap=0)["agreement"].set_index("statistic")
    # pairs per unit: 3. Agreeing: unit0 3, unit1 1 (ann-cy), unit2 1 (bo-cy), unit3 1 (ann-bo) -> 6 of 12.
    assert out.loc["vote_agreement_with_ties", "value"] == pytest.approx(6 / 12)
    # without ties: unit0 3 of 3, unit1 1 of 3, unit2 1 of 1 (bo-cy), unit3 0 of 0 -> 5 of 7.
    assert out.loc["vote_agreement_without_ties", "value"] == pytest.approx(5 / 7)
    wide = np.array([[given[u][i] for u in units] for i in range(3)])
    assert out.loc["krippendorff_alpha_nominal", "value"] == pytest.approx(
        krippendorff.alpha(reliability_data=wide, level_of_measurement="nominal"), abs=1e-9)
