"""A metric is one object: the "Adding a metric" example of docs/development/architecture.md,
registered as the registry registers a
module's METRICS, flows through scoring, the cache, leaderboards, the rank bootstrap and evalcore.score
with no other code knowing its name. Values against arithmetic written out here."""
from __future__ import annotations

import re

import numpy as np
import pytest

import evalcore
from evalcore.metrics import registry
from evalcore.metrics.base import Metric, Signature
from support import ROOT


@pytest.fixture
def example_metric(monkeypatch):
    text = (ROOT / "docs" / "development" / "architecture.md").read_text(encoding="utf-8")
    code = re.search(r"## Adding a metric.*?```python\n(.*?)```", text, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "docs/development/architecture.md Adding a metric", "exec"), scope)
    metric = scope["METRICS"][0]
    monkeypatch.setitem(registry.METRICS, metric.name, metric)
    monkeypatch.setitem(registry.GROUPS, "length", [metric.name])
    return metric


def test_every_builtin_metric_is_one_object_with_a_signature_and_groups():
    for name, m in registry.METRICS.items():
        assert isinstance(m, Metric) and m.name == name and m.description
    assert registry.GROUPS["lexical"] == ["F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4", "DIST1", "DIST2",
                                          "METEOR-exact", "ROUGE", "CIDEr"]
    assert set(registry.GROUPS["chrf"]) == {"chrF", "chrF++"}
    sig = Signature("X", ("a:1", "b:2|c:3"))
    assert str(sig) == "X|a:1|b:2|c:3" and Signature.parse(str(sig)).field("c") == "3"


def test_readme_example_through_evalcore_score(example_metric):
    out = evalcore.score(["今天天气不错", "好"], None, metrics=["LEN"])
    assert out.sentence["LEN"].tolist() == [6.0, 1.0]      # char tokens
    assert out.corpus["LEN"] == pytest.approx(3.5)        # the mean, the default corpus rule
    assert out.signatures["LEN"] == "LEN|tok:char-1|corpus:mean|v:len-1"


def test_readme_example_through_the_store(example_metric, toy):
    from evalcore.analysis.leaderboard import leaderboard
    from evalcore.scoring import score

    report = score(toy, metrics="length", progress=False)
    assert report.computed["toy:toy/chitchat"] == 3
    board = leaderboard(toy, "toy", "toy/chitchat", rank_by="LEN", resamples=50, partial=True)  # m2 answered one item
    values = dict(zip(board["model"], board["LEN"]))
    # m1: 天气很好 (4) and 你好 (2); m2: 嗯 (1)
    assert values == {"m1": pytest.approx(3.0), "m2": pytest.approx(1.0)}
    assert dict(zip(board["model"], board["rank"])) == {"m1": 1, "m2": 2}
    cached = toy.execute("SELECT count(*) FROM metric_scores WHERE signature LIKE 'LEN|%'").fetchone()[0]
    assert cached == 3
    # scored again: nothing new (cached per response text and signature)
    assert score(toy, metrics="LEN", progress=False).computed["toy:toy/chitchat"] == 0
    assert np.isfinite(board["rank_ci_low"]).all()   # the bootstrap rebuilt it from stored statistics
