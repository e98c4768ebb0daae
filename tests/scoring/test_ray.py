"""`evalcore score --engine ray`: the scale-out metrics on Ray Data actors in local mode (2 actors).

Values must equal the local engine's (same signature, same cache key), an interrupted run keeps the
batches written and the next run scores only the rest, and an actor that dies is retried by Ray.
Ray itself is in tests/requirements.txt; without it these tests skip, saying so."""
from __future__ import annotations

import os
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.metrics import registry
from evalcore.metrics.base import Metric, Result, Signature
from evalcore.scoring import score
from evalcore.scoring.ray import RayOptions
from evalcore.store import connect
from support import read_cpc_pairs, write_jsonl

LABEL = "cpc:cpc/persona"


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs) for the module: score() finds it running and leaves it running."""
    ray = pytest.importorskip("ray", reason="ray[data] is not installed (pip install -r tests/requirements.txt)")
    from evalcore.scoring.ray import start

    started = start(RayOptions())
    yield ray
    if started:
        ray.shutdown()


def cpc_store(path, per_model: int):
    """A store of the real CPC pairs: per_model items, the four models' answers to each."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses

    pairs = read_cpc_pairs(per_model)
    refs = pairs["baichuan"][1]
    items = [{"item_id": f"c{i:04d}", "dataset": "cpc", "track": "cpc/persona", "context": ["你好"],
              "references": refs[i]} for i in range(per_model)]
    con = connect(path)
    import_items(con, write_jsonl(path.parent / "items.jsonl", items))
    rows = [(f"c{i:04d}", model, text) for model, (hyps, _) in pairs.items() for i, text in enumerate(hyps)]
    pd.DataFrame(rows, columns=["item_id", "model", "response"]).to_csv(path.parent / "r.csv", index=False)
    import_responses(con, path.parent / "r.csv", dataset="cpc", track="cpc/persona")
    con.execute("CHECKPOINT")
    return con


def cached(con) -> pd.DataFrame:
    return con.execute("SELECT signature, text_key, value FROM metric_scores ORDER BY 1, 2").df()


def system(con) -> pd.DataFrame:
    return con.execute("SELECT model, name, signature, value, n FROM system_scores ORDER BY 1, 2").df()


def test_refused_without_ray(toy, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)        # `import ray` raises ImportError
    monkeypatch.setitem(sys.modules, "ray.data", None)
    db = str(tmp_path / "store.duckdb")
    toy.close()
    assert main(["score", "--db", db, "--metrics", "EV", "--engine", "ray"]) != 0
    err = capsys.readouterr().err
    assert "--engine ray needs Ray Data" in err and "pip install 'ray[data]==2.60.0'" in err
    assert main(["score", "--db", db, "--metrics", "F1", "--actors", "3"]) != 0
    assert "--actors only apply with --engine ray" in capsys.readouterr().err
    c = connect(db, read_only=True)
    assert c.execute("SELECT count(*) FROM metric_scores").fetchone()[0] == 0   # nothing was scored
    c.close()


@pytest.mark.slow   # the real converted BERTScore model and the USE token table
def test_ray_equals_local_on_real_cpc_pairs(local_ray, tmp_path):
    (tmp_path / "local").mkdir()
    cpc_store(tmp_path / "local" / "s.duckdb", 100).close()
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    metrics = "BS-F1,EV,VE,GM"
    with connect(tmp_path / "local" / "s.duckdb") as con:
        score(con, metrics=metrics, progress=False)
        want, want_sys = cached(con), system(con)
    with connect(tmp_path / "ray" / "s.duckdb") as con:
        report = score(con, metrics=metrics, progress=False, ray=RayOptions(actors=2, batch_size=60))
        got, got_sys = cached(con), system(con)
    assert f"{LABEL}: on Ray (2 actors): BS-F1, EV, VE, GM" in report.notes
    assert report.computed[LABEL] == len(want) == len(got)   # values stored, one per distinct text and metric
    # same signatures and cache keys (a later local run finds them), values to 1e-6
    assert got["signature"].tolist() == want["signature"].tolist()
    assert got["text_key"].tolist() == want["text_key"].tolist()
    assert np.allclose(got["value"], want["value"], atol=1e-6, rtol=0)
    assert got_sys[["model", "name", "signature", "n"]].equals(want_sys[["model", "name", "signature", "n"]])
    assert np.allclose(got_sys["value"], want_sys["value"], atol=1e-6, rtol=0)
    with connect(tmp_path / "ray" / "s.duckdb") as con:   # the local engine finds nothing left to do
        assert score(con, metrics=metrics, progress=False).computed[LABEL] == 0


class Stop(Exception):
    pass


@pytest.mark.slow   # a local Ray cluster: 20-160 s each on two cores, beside the slow set's other real engines
def test_interrupted_ray_run_resumes(local_ray, tmp_path):
    (tmp_path / "a").mkdir()
    con = cpc_store(tmp_path / "a" / "s.duckdb", 50)    # 200 responses: 4 batches of 50
    seen = []

    def interrupt(done, total, label):
        seen.append((done, total))
        if len(seen) == 2:
            raise Stop   # as a Ctrl-C after the second batch was written

    opts = RayOptions(actors=2, batch_size=50)
    with pytest.raises(Stop):
        score(con, metrics="EV,VE,GM", progress=False, ray=opts, on_progress=interrupt)
    assert seen == [(50, 200), (100, 200)]
    kept = cached(con)
    assert len(kept) == 3 * len(set(kept["text_key"])) and 90 <= len(set(kept["text_key"])) <= 100
    assert len(system(con)) == 0          # system scores come when the track is done
    report = score(con, metrics="EV,VE,GM", progress=False, ray=opts)
    everything = cached(con)
    assert len(everything) == 3 * con.execute("SELECT count(DISTINCT text) FROM responses").fetchone()[0]
    assert report.computed[LABEL] == len(everything) - len(kept)    # only the rest
    assert everything.merge(kept, on=["signature", "text_key"], suffixes=("", "_kept")).eval(
        "value == value_kept | (value != value & value_kept != value_kept)").all()   # the kept values stand
    resumed = system(con)
    con.close()
    (tmp_path / "b").mkdir()
    with cpc_store(tmp_path / "b" / "s.duckdb", 50) as fresh:   # uninterrupted, local
        score(fresh, metrics="EV,VE,GM", progress=False)
        assert np.allclose(resumed["value"], system(fresh)["value"], atol=1e-6, rtol=0)


class Length(Metric):
    """Characters per response: a scale-out metric with no model, so these tests need none."""

    name, description, family = "LENGTH", "test metric: response length", "neural"
    needs_references, tokenized, scale_out = False, False, True

    def signature(self, plan):
        return Signature(self.name, ("v:1",))

    def compute(self, batch):
        return Result.of_values(np.array([len(t) for t in batch.hyps], dtype=float))


class DiesOnce(Length):
    """Length, from an actor that kills its own process the first time it scores."""

    name = "DIES-ONCE"

    def __init__(self, marker: str):
        self.marker = marker

    def compute(self, batch):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)    # the actor's process dies mid-batch, as on a crash or an OOM kill
        return super().compute(batch)


@pytest.fixture
def plugged(monkeypatch):
    """Register a test metric as a module's METRICS are, picklable by value for the actors."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the actors cannot import this test module

    def plug(metric):
        monkeypatch.setitem(registry.METRICS, metric.name, metric)
        return metric
    return plug


@pytest.mark.slow   # a local Ray cluster: 20-160 s each on two cores, beside the slow set's other real engines
def test_interrupted_run_does_not_leave_a_stale_system_score(local_ray, plugged, toy, tmp_path):
    from evalcore.ingest.formats.responses import import_responses

    plugged(Length())
    score(toy, metrics="LENGTH", progress=False, ray=RayOptions(actors=1))
    # m2 answers one more item; a Ray run writes that value and is interrupted before the system score
    (tmp_path / "more.csv").write_text("item_id,model,response\nt2,m2,你们好呀\n", encoding="utf-8")
    import_responses(toy, tmp_path / "more.csv", dataset="toy", track="toy/chitchat")

    def stop(done, total, label):
        raise Stop
    with pytest.raises(Stop):
        score(toy, metrics="LENGTH", progress=False, ray=RayOptions(actors=1), on_progress=stop)
    report = score(toy, metrics="LENGTH", progress=False, ray=RayOptions(actors=1))
    assert report.computed["toy:toy/chitchat"] == 0       # the value was kept ...
    got = dict(toy.execute("SELECT model, value FROM system_scores WHERE name = 'LENGTH'").fetchall())
    assert got["m2"] == pytest.approx((1 + 4) / 2)        # ... and m2's score counts it: 嗯, 你们好呀


@pytest.mark.slow   # a local Ray cluster: 20-160 s each on two cores, beside the slow set's other real engines
def test_an_actor_the_cluster_cannot_hold_is_refused(local_ray, plugged, toy):
    from evalcore.scoring.ray import EngineUnavailable

    plugged(Length())
    with pytest.raises(EngineUnavailable, match="one actor needs 1 CPU and 64 GPUs"):
        score(toy, metrics="LENGTH", progress=False, ray=RayOptions(gpus_per_actor=64))


@pytest.mark.slow   # a local Ray cluster: 20-160 s each on two cores, beside the slow set's other real engines
def test_dead_actor_is_retried(local_ray, plugged, toy, tmp_path):
    metric = plugged(DiesOnce(str(tmp_path / "died")))
    report = score(toy, metrics=metric.name, progress=False, ray=RayOptions(actors=1, batch_size=2))
    assert (tmp_path / "died").exists()                       # an actor did die
    assert report.computed["toy:toy/chitchat"] == 3
    got = dict(toy.execute("SELECT model, value FROM system_scores WHERE name = ?", [metric.name]).fetchall())
    assert got == {"m1": pytest.approx((4 + 2) / 2), "m2": pytest.approx(1.0)}   # 天气很好, 你好; 嗯
