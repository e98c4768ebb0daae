"""METEOR 1.5 through pycocoevalcap's jar: the same per-response values as pycocoevalcap's own Meteor on
real USR pairs; without Java it is unavailable with the reason, never the exact-only variant."""
import json
import shutil

import numpy as np
import pytest

from evalcore.metrics import meteor15
from support import shared

needs_java = pytest.mark.skipif(shutil.which("java") is None or meteor15.jar() is None,
                                reason="METEOR 1.5 needs a Java runtime (apt-get install default-jre-headless) "
                                       "and pycocoevalcap's jar")


def usr_pairs(limit: int = 120) -> tuple[list[str], list[list[str]]]:
    """USR PersonaChat: each model's response against the human reply ('Original Ground Truth')."""
    data = json.loads(shared("usr", "pc_usr_data.json").read_text(encoding="utf-8"))
    hyps, refs = [], []
    for dialogue in data:
        truth = [r["response"] for r in dialogue["responses"] if r["model"] == "Original Ground Truth"]
        for r in dialogue["responses"]:
            if r["model"] != "Original Ground Truth" and truth:
                hyps.append(meteor15.one_line(r["response"]))
                refs.append([meteor15.one_line(t) for t in truth])
    return hyps[:limit], refs[:limit]


@needs_java
@pytest.mark.slow
def test_equals_pycocoevalcap_meteor_on_usr_pairs():
    from pycocoevalcap.meteor.meteor import Meteor

    hyps, refs = usr_pairs()
    ours, stats = meteor15.scorer("en").score(hyps, refs)
    meteor15.close_all()
    theirs = Meteor()
    _, expected = theirs.compute_score({i: refs[i] for i in range(len(hyps))}, {i: [hyps[i]] for i in range(len(hyps))})
    assert len(hyps) == 120 and np.allclose(ours, expected, rtol=0, atol=1e-12)
    assert stats.shape[0] == 120 and not np.isnan(stats).any()


@needs_java
def test_chinese_runs_language_independent_exact_matching():
    values, _ = meteor15.scorer("zh").score(["你 好 呀", "x"], [["你 好"], []])
    meteor15.close_all()
    assert 0 < values[0] < 1 and np.isnan(values[1])  # no reference: no value, not 0
    assert meteor15.signature_part("zh") == "meteor:1.5|l:other|lower|modules:exact"


def test_without_java_it_is_unavailable_with_the_reason(monkeypatch, toy):
    from evalcore.scoring import score

    monkeypatch.setattr(meteor15.shutil, "which", lambda name: None)
    report = score(toy, dataset="toy", track="toy/chitchat", metrics="METEOR,METEOR-exact", progress=False)
    assert any("METEOR unavailable: needs a Java runtime" in n for n in report.notes), report.notes
    names = {n for (n,) in toy.execute("SELECT DISTINCT name FROM system_scores WHERE origin = 'computed'").fetchall()}
    assert names == {"METEOR-exact"}  # never the other variant under METEOR's name


def test_old_stores_keep_their_exact_meteor_under_its_new_name(tmp_path):
    """A store scored before METEOR 1.5 (schema 6) holds the exact-match values as 'METEOR': the
    migration renames them, values untouched."""
    import duckdb

    from evalcore.store import connect
    from evalcore.store.migrations import all_migrations

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP, "
                "evalcore VARCHAR)")
    for m in all_migrations()[:6]:  # the store as evalcore left it before METEOR 1.5
        con.execute(m.sql)
        con.execute("INSERT INTO schema_version VALUES (?, ?, current_timestamp, 'old')", [m.version, m.name])
    sig = "METEOR|tok:char-1|ngram:tuple|corpus:mean|sentence:max-over-references|flavor:default|v:lexical-1"
    con.execute("INSERT INTO metric_scores (signature, text_key, value) VALUES (?, 'k1', 0.25)", [sig])
    con.execute("INSERT INTO metric_signatures VALUES (?, 'METEOR', '{}')", [sig])
    con.close()
    con = connect(path)
    rows = con.execute("SELECT signature, value FROM metric_scores").fetchall()
    assert rows == [("METEOR-exact" + sig[len("METEOR"):], 0.25)]
    assert con.execute("SELECT metric FROM metric_signatures").fetchall() == [("METEOR-exact",)]
    con.close()


@needs_java
@pytest.mark.slow
def test_reproduces_yeh_et_al_2021_on_usr_personachat():
    """Yeh et al. 2021 ("A Comprehensive Assessment of Dialog Evaluation Metrics") print METEOR's
    turn-level correlation with USR-PersonaChat's Overall as .253 (Pearson) and .271 (Spearman): every
    model's response against the human reply, the human reply itself left out, Overall averaged over
    the three annotators."""
    from scipy import stats

    data = json.loads(shared("usr", "pc_usr_data.json").read_text(encoding="utf-8"))
    hyps, refs, overall = [], [], []
    for dialogue in data:
        truth = [meteor15.one_line(r["response"]) for r in dialogue["responses"] if r["model"] == "Original Ground Truth"]
        for r in dialogue["responses"]:
            if r["model"] != "Original Ground Truth":
                hyps.append(meteor15.one_line(r["response"]))
                refs.append(truth)
                overall.append(np.mean(r["Overall"]))
    values, _ = meteor15.scorer("en").score(hyps, refs)
    meteor15.close_all()
    assert len(values) == 240
    assert round(stats.pearsonr(values, overall).statistic, 3) == 0.253
    assert round(stats.spearmanr(values, overall).statistic, 3) == 0.271
