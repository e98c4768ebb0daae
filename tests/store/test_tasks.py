"""Human evaluation inside the tool: rating tasks, assignment to K different annotators, answers kept as history,
closed and deleted tasks, the export read back, and Bradley-Terry against the unregularised maximum-likelihood
fit FastChat computes (compute_mle_elo: sklearn's LogisticRegression without penalty or intercept)."""
from __future__ import annotations

import hashlib
import math
import re
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis.bradley_terry import fit, ratings, table, votes
from evalcore.cli import main
from evalcore.core.text import identity_key
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.msde import import_msde
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.ingest.formats.votes import import_votes
from evalcore.services import tasks as service
from evalcore.store import annotators, connect, history, transaction
from evalcore.store import tasks as stored
from evalcore.store.tasks import TaskClosed
from support import fastchat_mle, shared, write_jsonl

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
                               per_item=k, **{"seed": 1, **kw})


def test_stratified_units_cover_every_track_and_model(lab):
    units = stored.units(lab, _absolute(lab, items=8))
    assert len(units) == 8 and not units.duplicated(["item_id", "model_a"]).any()
    # 8 units over tracks of 16 and 8 responses: 4 each first (a verdict's fewest), nothing left to share
    assert units.groupby("track").size().to_dict() == {"lab/chitchat": 4, "lab/knowledge": 4}
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
    reference = fastchat_mle(mine)
    for model, rating in zip(ours.models, ours.ratings):
        assert rating == pytest.approx(reference[model], abs=0.01)
    fresh.close()


@pytest.mark.slow   # 5 s or more on 2 cores: the fast set keeps tests under that
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
    reference = fastchat_mle(derived)
    for model, rating in zip(ours.models, ours.ratings):
        assert rating == pytest.approx(reference[model], abs=0.01)
    out = ratings(derived, resamples=200, seed=0)
    assert (out["ci_low"] <= out["rating"]).all() and (out["rating"] <= out["ci_high"]).all()
    assert out["rating"].mean() == pytest.approx(1000, abs=1e-6)
    con.close()


def test_no_finite_rating_is_said_not_guessed():
    """x and y met, z and w met, the pairs never: no common scale, so nothing is rated or ranked (an unbeaten
    model's place is tested in test_bradley_terry.py)."""
    apart = pd.DataFrame({"model_a": ["x", "y", "z", "w"], "model_b": ["y", "x", "w", "z"],
                          "score": [1.0, 1.0, 1.0, 0.5]})
    out = ratings(apart, resamples=10)
    assert out["rating"].isna().all() and out["rank"].isna().all()
    assert "never compared" in out["note"].iloc[0]


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


def test_win_rates_of_a_task_are_per_dimension_and_notes_come_out_of_the_table(lab):
    """Issue 46: a task asking Info and Coh showed one matrix over both questions' votes. Here every Info vote goes
    to model_a and every Coh vote to model_b: per dimension each pair's rates are 1 and 0, never the pooled 0.5."""
    from evalcore.pagedata import annotation as ann
    task = stored.get(lab, service.create_task(lab, dataset="lab", mode="pairwise", dimensions=["Info", "Coh"],
                                               items=4, per_item=1, seed=2, tracks=["lab/chitchat"]))
    pairs = stored.units(lab, task.task_id).set_index("unit")
    for _ in range(len(pairs)):
        unit = stored.next_unit(lab, task, "ann")
        stored.answer(lab, task, unit, "ann", "Info", 1.0)
        stored.answer(lab, task, unit, "ann", "Coh", 0.0)
    table = ann.win_rates(lab, task)
    assert list(table.columns[:2]) == ["dimension", "model"] and set(table["dimension"]) == {"Info", "Coh"}
    rates = table.set_index(["dimension", "model"])
    for row in pairs.itertuples():
        a, b = row.model_a, row.model_b
        # by hand: a's Info wins over b are the units where a was model_a against b (Coh: the others)
        met = [u for u in pairs.itertuples() if {u.model_a, u.model_b} == {a, b}]
        info = sum(u.model_a == a for u in met) / len(met)
        assert rates.loc[("Info", a), b] == pytest.approx(info) and rates.loc[("Coh", a), b] == pytest.approx(1 - info)
    shown, notes = ann.notes_apart(ann.ranking(lab, task))
    assert "note" not in shown.columns
    # every vote one way on each dimension: no finite Bradley-Terry fit, said once per dimension, not in a cell
    assert sorted(n.split(":")[0] for n in notes) == ["Coh", "Info"]


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


# ------------------------------------------------------------------ issue 46: sampling that serves every skill
@pytest.mark.parametrize("sizes, n, expected", [
    # demo-zh's two tracks (18,574 knowledge and 400 chit-chat responses), 16 units: 4 each, then the 8 left
    # by what each has left: 8 * 18570 / 18966 = 7.83 -> 7 + the larger remainder (0.83) -> 8; 8 * 396 / 18966
    # = 0.17 -> 0. Before: 15 and 1.
    ({"k": 18574, "c": 400}, 16, {"k": 12, "c": 4}),
    # too few units for four each: one per track in turn, the largest first
    ({"k": 18574, "c": 400, "p": 2}, 5, {"k": 2, "c": 2, "p": 1}),
    # a track with fewer candidates than four gives what it has; the rest by size: 13 - (4 + 1 + 2) = 6 over
    # (6, 0, 0) left -> all 6 to k (capped at its 10)
    ({"k": 10, "c": 1, "p": 2}, 13, {"k": 10, "c": 1, "p": 2}),
    ({"k": 10, "c": 10}, 100, {"k": 10, "c": 10}),   # more asked than there are: every candidate
])
def test_shares_give_every_track_four_units_first(sizes, n, expected):
    assert service.shares(pd.Series(sizes), n) == expected


def test_creation_says_what_the_units_cannot_give(lab):
    """A track left out, or one whose units come from fewer than 3 models, is named at creation."""
    only = _absolute(lab, items=4, tracks=["lab/knowledge"], models=["m1", "m2"])
    notes = service.coverage(lab, only)
    assert any(n.startswith("lab/chitchat") and "no unit" in n for n in notes)
    assert any(n.startswith("lab/knowledge") and "2 models" in n for n in notes)
    assert service.coverage(lab, _absolute(lab, items=8)) == []   # 4 models, 4 units per track


def test_seed_name_and_guidelines_are_checked_before_anything_is_sampled(lab, tmp_path, capsys):
    before = lab.execute("SELECT count(*) FROM tasks").fetchall()
    for kw, said in (({"seed": 2**31}, "0..2,147,483,647"), ({"seed": -1}, "0..2,147,483,647"),
                     ({"name": "a\x1b[2Jb"}, "U+001B at position 2"), ({"guidelines": "ok\x9b31m"}, "U+009B"),
                     ({"name": "bell\x07"}, "U+0007"), ({"name": "nul\x00"}, "U+0000")):
        with pytest.raises(ValueError, match=re.escape(said)):
            _absolute(lab, items=2, **kw)
    assert lab.execute("SELECT count(*) FROM tasks").fetchall() == before
    db = str(tmp_path / "lab.duckdb")
    lab.close()
    with pytest.raises(SystemExit) as stop:   # argparse: exit 2, the option named, no traceback
        main(["task", "create", "--db", db, "--dataset", "lab", "--dimensions", "Info", "--items", "2",
              "--seed", "2147483648"])
    assert stop.value.code == 2 and "argument --seed" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["task", "create", "--db", db, "--dataset", "lab", "--dimensions", "Info", "--items", "2",
              "--name", "x\x1b]0;owned\x07"])
    assert stop.value.code == 2 and "U+001B" in capsys.readouterr().err
    assert main(["task", "create", "--db", db, "--dataset", "lab", "--dimensions", "Info", "--items", "2",
                 "--seed", "2147483647"]) == 0


def test_annotator_names_and_comments_refuse_control_characters(lab):
    task = stored.get(lab, _absolute(lab, items=2, k=1))
    before = len(stored.answers(lab, task.task_id))
    for name in ("ann\x1b[31m", "a\x00b", "bell\x07", "csi\x9b", "del\x7f"):
        with pytest.raises(ValueError, match="control character"):
            stored.next_unit(lab, task, name)
    with pytest.raises(ValueError, match="control character U\\+001B"):
        stored.flag(lab, task, 1, "ann", "see \x1b[2J here")
    assert len(stored.answers(lab, task.task_id)) == before
    stored.flag(lab, task, 1, "ann", "tabs\tand\nnewlines are text")   # what people type stays allowed


# ------------------------------------------------------------------ issue 46: one person is one annotator
def test_a_person_enters_with_a_key_issued_once_and_stored_hashed(lab):
    name, key = annotators.enter(lab, "Carol")
    assert name == "Carol" and key and len(key) >= 22
    stored_secret = lab.execute("SELECT secret FROM annotators").fetchall()[0][0]
    assert stored_secret == hashlib.sha256(key.encode()).hexdigest() and key not in stored_secret
    # the same person by any spelling: their key lets them in, under the name they first gave
    assert annotators.enter(lab, " ｃａｒｏｌ ", key) == ("Carol", None)
    for other, given in (("carol", None), ("CAROL", ""), ("Carol", "guess"), ("Carol", key[:-1])):
        with pytest.raises(annotators.NotThem, match="Carol"):
            annotators.enter(lab, other, given)
    # a lost key: the owner issues a new one; the old one stops working
    assert annotators.reset(lab, "carol")[0] == "Carol"
    new = annotators.reset(lab, "carol")[1]
    with pytest.raises(annotators.NotThem):
        annotators.enter(lab, "Carol", key)
    assert annotators.enter(lab, "Carol", new) == ("Carol", None)
    with pytest.raises(ValueError, match="Nobody named"):
        annotators.reset(lab, "nobody")
    # a signed-in person: the sign-in vouches; the name form cannot take their name
    assert annotators.signed_in(lab, "dee@lab.org") == "dee@lab.org"
    with pytest.raises(annotators.NotThem, match="signs in"):
        annotators.enter(lab, "DEE@lab.org", "anything")
    assert list(annotators.listing(lab).columns) == ["name", "signed_in", "first_entry", "key_issued"]


def test_name_variants_are_one_person_holding_one_place(lab):
    """K = 2: 'carol' answers; 'Carol' is the same person (the unit is theirs to resume, not a second place);
    a third person still gets the second place, and a fourth is refused at the write."""
    task = stored.get(lab, _absolute(lab, items=1, k=2))
    t0 = datetime(2026, 1, 1, 9, 0)
    assert stored.next_unit(lab, task, "carol", now=t0) == 1
    stored.answer(lab, task, 1, "carol", "Info", 2.0, now=t0)
    assert stored.next_unit(lab, task, "Carol", now=t0) == 1          # resumes: the same place
    stored.answer(lab, task, 1, "ＣＡＲＯＬ", "Coh", 1.0, now=t0)      # full-width: still carol
    assert stored.next_unit(lab, task, "bo", now=t0) == 1
    stored.answer(lab, task, 1, "bo", "Info", 0.0, now=t0)
    with pytest.raises(stored.UnitFull, match="already has its 2 annotators"):
        stored.answer(lab, task, 1, "cy", "Info", 1.0, now=t0)
    people = {identity_key(a) for a in stored.latest(lab, task.task_id)["annotator"]}
    assert people == {"carol", "bo"}


def test_k_is_a_hard_limit_where_answers_are_written(lab):
    """The three ways the issue found past K = 1, each now refused at the write with the store unchanged. (Each
    case has its own people: the four tasks share their one response, which a person rates once.)"""
    t0 = datetime(2026, 1, 1, 9, 0)

    def state(task):
        return len(stored.answers(lab, task.task_id)), lab.execute(
            "SELECT count(*) FROM human_ratings WHERE origin = ?", [task.origin]).fetchall()

    # 1. a claim lapses while the unit is on ann's screen; bo takes and rates it; then ann clicks
    task = stored.get(lab, _absolute(lab, items=1, k=1))
    assert stored.next_unit(lab, task, "ann", now=t0) == 1
    assert stored.next_unit(lab, task, "bo", now=t0 + stored.CLAIM_TTL + timedelta(seconds=1)) == 1
    stored.answer(lab, task, 1, "bo", "Info", 1.0, now=t0 + timedelta(minutes=31))
    before = state(task)
    with pytest.raises(stored.UnitFull, match="your answer was not stored"):
        stored.answer(lab, task, 1, "ann", "Info", 2.0, now=t0 + timedelta(minutes=32))
    assert state(task) == before
    # 2. cy answers one dimension, skips: the place is given up and the answer stops counting; dee rates
    task = stored.get(lab, _absolute(lab, items=1, k=1))
    assert stored.next_unit(lab, task, "cy", now=t0) == 1
    stored.answer(lab, task, 1, "cy", "Info", 2.0, now=t0)
    stored.skip(lab, task, 1, "cy")
    assert stored.mine(lab, task.task_id, 1, "cy") == {}
    assert stored.next_unit(lab, task, "dee", now=t0) == 1
    stored.answer(lab, task, 1, "dee", "Info", 0.0, now=t0)
    stored.answer(lab, task, 1, "dee", "Coh", 0.0, now=t0)
    assert set(stored.latest(lab, task.task_id)["annotator"]) == {"dee"}
    assert lab.execute("SELECT DISTINCT annotator FROM human_ratings WHERE origin = ?", [task.origin]).fetchall() == [("dee",)]
    kept = stored.answers(lab, task.task_id)
    assert kept[kept["annotator"] == "cy"]["value"].dropna().tolist() == [2.0]   # kept in the unit's history
    # 3. eve skips, fay rates, eve goes Back to the unit and rates: refused
    task = stored.get(lab, _absolute(lab, items=1, k=1))
    assert stored.next_unit(lab, task, "eve", now=t0) == 1
    stored.skip(lab, task, 1, "eve")
    assert stored.next_unit(lab, task, "fay", now=t0) == 1
    stored.answer(lab, task, 1, "fay", "Info", 1.0, now=t0)
    assert stored.units_of(lab, task, "eve") == [1]                       # Back offers it
    before = state(task)
    with pytest.raises(stored.UnitFull):
        stored.answer(lab, task, 1, "eve", "Coh", 1.0, now=t0)
    assert state(task) == before
    # ... while a place is free, Back and an answer take one again (K = 2 here)
    task = stored.get(lab, _absolute(lab, items=1, k=2))
    stored.next_unit(lab, task, "gus", now=t0)
    stored.answer(lab, task, 1, "gus", "Info", 2.0, now=t0)
    stored.skip(lab, task, 1, "gus")
    stored.answer(lab, task, 1, "gus", "Info", 1.0, now=t0)
    assert stored.mine(lab, task.task_id, 1, "gus") == {"Info": 1.0}
    assert stored.done_by(lab, task, "gus") == (0, 1)                     # started again, Coh to give


def test_nothing_left_says_which_units_are_held_and_when_they_free(lab):
    task = stored.get(lab, _absolute(lab, items=2, k=1))
    t0 = datetime(2026, 1, 1, 9, 0)
    first = stored.next_unit(lab, task, "ann", now=t0)
    second = stored.next_unit(lab, task, "bo", now=t0 + timedelta(minutes=2))
    assert {first, second} == {1, 2}
    later = t0 + timedelta(minutes=5)
    assert stored.next_unit(lab, task, "cy", now=later) is None
    assert stored.waiting(lab, task, "cy", now=later) == (2, t0 + stored.CLAIM_TTL)
    for who, unit in (("ann", first), ("bo", second)):
        stored.answer(lab, task, unit, who, "Info", 1.0, now=later)
    assert stored.waiting(lab, task, "cy", now=later) == (0, None)        # answered: nothing will free


def _two_tasks_on_one_response(lab, mode="absolute"):
    """Two tasks of one unit each on the same response of m1 (or pair m1-m2) of item i4."""
    units = pd.DataFrame({"item_id": ["i4"], "track": ["lab/knowledge"], "model_a": ["m1"],
                          "model_b": [None if mode == "absolute" else "m2"]})
    dims = service.dimension_specs(lab, "lab", ["Info"])
    return [stored.get(lab, stored.create(lab, name=f"t{k}", dataset="lab", mode=mode, dimensions=dims, per_item=2,
                                          units=units)) for k in (1, 2)]


@pytest.mark.parametrize("mode", ["absolute", "pairwise"])
def test_a_person_rates_a_response_once_across_tasks(lab, mode):
    """The rule for item 11: refuse. Rated in one task, the same response (or pair) is not offered in another,
    and an answer there is refused; the store's readers see the one rating."""
    one, two = _two_tasks_on_one_response(lab, mode)
    assert stored.next_unit(lab, one, "carol") == 1
    stored.answer(lab, one, 1, "carol", "Info", 0.0)
    assert stored.next_unit(lab, two, "Carol") is None            # the same person, by key: not offered
    assert stored.next_unit(lab, two, "bo") == 1                  # someone else: offered
    count = ("SELECT (SELECT count(*) FROM human_ratings) + (SELECT count(*) FROM pairwise_judgments), "
             "(SELECT count(*) FROM task_answers WHERE kind IN ('rating', 'vote'))")
    before = lab.execute(count).fetchall()
    with pytest.raises(stored.RatedElsewhere, match="task:1"):
        stored.answer(lab, two, 1, "CAROL", "Info", 1.0)
    assert lab.execute(count).fetchall() == before
    if mode == "absolute":
        # the readers: agreement's ratings, human scores per response and per model (what trust correlates)
        from evalcore.analysis.agreement import ratings as agreement_ratings
        from evalcore.analysis.correlate import human_scores
        rows = agreement_ratings(lab, "lab", "lab/knowledge")
        assert rows[rows["annotator"].str.casefold() == "carol"]["score"].tolist() == [0.0]
        turn = human_scores(lab, "lab", "lab/knowledge", "turn")
        assert turn[turn["unit"] == "i4\x1fm1"]["value"].tolist() == [0.0]
        system = human_scores(lab, "lab", "lab/knowledge", "system")
        assert system[system["unit"] == "m1"]["value"].tolist() == [0.0]


def test_an_imported_rating_counts_as_rated_elsewhere(lab, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("item_id,model,annotator,dimension,score\ni4,m1,Carol,Info,2\n", encoding="utf-8")
    import_ratings(lab, path, dataset="lab", track="lab/knowledge", scales={"Info": (0, 2)})
    one, _ = _two_tasks_on_one_response(lab)
    assert stored.next_unit(lab, one, "carol") is None
    with pytest.raises(stored.RatedElsewhere, match="r.csv"):
        stored.answer(lab, one, 1, "carol", "Info", 1.0)


def test_migration_16_sets_earlier_repeats_aside_and_restore_brings_them_back(lab):
    """A store from before the rule: carol rated i4/m1 Info in task 1 (0) and again in task 2 (2), as the issue
    found. Migration 16 keeps task 1's (given first) and sets task 2's aside under a restorable submission."""
    from evalcore.store.migrations import m016_annotators

    one, two = _two_tasks_on_one_response(lab)
    stored.answer(lab, one, 1, "carol", "Info", 0.0, now=datetime(2026, 1, 1, 9, 0))
    lab.execute("INSERT INTO task_answers VALUES (999, ?, 1, 'Carol', 'Info', 2.0, 'rating', NULL, NULL, ?)",
                [two.task_id, datetime(2026, 1, 2, 9, 0)])
    lab.execute("INSERT INTO human_ratings (dataset, track, target, item_id, model, annotator, dimension, score, origin) "
                "VALUES ('lab', 'lab/knowledge', 'response', 'i4', 'm1', 'Carol', 'Info', 2.0, ?)", [two.origin])
    query = "SELECT origin, score FROM human_ratings WHERE item_id = 'i4' AND model = 'm1' ORDER BY origin"
    with transaction(lab):
        m016_annotators.run(lab)
    assert lab.execute(query).fetchall() == [(one.origin, 0.0)]
    sid = lab.execute("SELECT max(submission_id) FROM submissions").fetchall()[0][0]
    assert lab.execute("SELECT count(*) FROM archived_ratings WHERE archived_by = ?", [sid]).fetchall() == [(1,)]
    history.restore(lab, sid)
    assert lab.execute(query).fetchall() == [(one.origin, 0.0), (two.origin, 2.0)]
    with transaction(lab):
        m016_annotators.run(lab)   # again: the same one set aside
    assert lab.execute(query).fetchall() == [(one.origin, 0.0)]


def test_migration_16_sets_aside_what_an_earlier_skip_withdraws(lab):
    """Before, ann could answer Info, skip, and the Info rating still counted while bo took the place. Now a
    skip withdraws it: the migration sets such a rating aside (restorable); bo's stays, and so does a rating
    given again after the skip."""
    from evalcore.store.migrations import m016_annotators

    task = stored.get(lab, _absolute(lab, items=2, k=1))
    stored.answer(lab, task, 1, "ann", "Info", 2.0)
    stored.answer(lab, task, 2, "cy", "Info", 1.0)
    rows = "SELECT annotator, item_id, dimension FROM human_ratings WHERE origin = ? ORDER BY ALL"
    # as the old code left it: a skip after the answer, with the rating still in human_ratings
    lab.execute("INSERT INTO task_answers VALUES (900, ?, 1, 'ann', NULL, NULL, 'skip', NULL, NULL, ?)",
                [task.task_id, datetime(2026, 1, 1)])
    lab.execute("INSERT INTO task_answers VALUES (901, ?, 2, 'cy', NULL, NULL, 'skip', NULL, NULL, ?)",
                [task.task_id, datetime(2026, 1, 1)])
    lab.execute("INSERT INTO task_answers VALUES (902, ?, 2, 'cy', 'Info', 0.0, 'rating', NULL, NULL, ?)",
                [task.task_id, datetime(2026, 1, 1)])   # answered again after the skip: counts
    lab.execute("UPDATE human_ratings SET score = 0.0 WHERE origin = ? AND annotator = 'cy'", [task.origin])
    before = lab.execute(rows, [task.origin]).fetchall()
    with transaction(lab):
        m016_annotators.run(lab)
    after = lab.execute(rows, [task.origin]).fetchall()
    assert [r[0] for r in before] == ["ann", "cy"] and [r[0] for r in after] == ["cy"]
    assert set(stored.latest(lab, task.task_id)["annotator"]) == {"cy"}   # the task says the same
    history.restore(lab, lab.execute("SELECT max(submission_id) FROM submissions").fetchall()[0][0])
    assert lab.execute(rows, [task.origin]).fetchall() == before


def test_cli_never_writes_a_control_character_to_a_terminal(lab, tmp_path, capsys, monkeypatch):
    """A task name, an annotator and a comment with ESC and CSI, as an older store may hold them: `task list`,
    `task show` and `task export` to a terminal print them escaped; export to a file keeps the stored text."""
    task = stored.get(lab, _absolute(lab, items=2, k=1))
    unit = stored.next_unit(lab, task, "ann")
    stored.answer(lab, task, unit, "ann", "Info", 1.0)
    stored.flag(lab, task, unit, "ann", "fine")
    lab.execute("UPDATE tasks SET name = 'evil\x1b[2J\x9b31m' WHERE task_id = ?", [task.task_id])
    lab.execute("UPDATE task_answers SET annotator = 'ann\x1b]0;x\x07' WHERE task_id = ?", [task.task_id])
    lab.execute("UPDATE human_ratings SET annotator = 'ann\x1b]0;x\x07' WHERE origin = ?", [task.origin])
    db = str(tmp_path / "lab.duckdb")
    lab.close()
    raw = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
    for argv, shown in ((["task", "list"], "evil\\x1b[2J\\x9b31m"), (["task", "show", str(task.task_id)],
                                                                  "evil\\u001b[2J\\u009b31m")):   # JSON's escape
        assert main([*argv, "--db", db]) == 0
        out = capsys.readouterr().out
        assert not raw.search(out) and shown in out, out
    assert "ann\\x1b]0;x\\x07" in out   # show's progress table: the annotator
    assert main(["task", "export", str(task.task_id), "--db", db]) == 0
    assert "ann\x1b]0;x\x07" in capsys.readouterr().out          # to a file: as stored
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["task", "export", str(task.task_id), "--db", db]) == 0
    out = capsys.readouterr().out
    assert not raw.search(out) and "ann\\x1b]0;x\\x07" in out


def test_cli_resets_a_lost_key(lab, tmp_path, capsys):
    annotators.enter(lab, "Carol")
    db = str(tmp_path / "lab.duckdb")
    lab.close()
    assert main(["task", "reset-key", "CAROL", "--db", db]) == 0
    key = capsys.readouterr().out.strip()
    con = connect(db)
    assert annotators.enter(con, "carol", key) == ("Carol", None)
    con.close()
    assert main(["task", "reset-key", "nobody", "--db", db]) == 2
    assert main(["task", "annotators", "--db", db, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "name,signed_in,first_entry,key_issued"
