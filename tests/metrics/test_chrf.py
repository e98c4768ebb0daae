"""chrF and chrF++ equal sacrebleu's CHRF() and CHRF(word_order=2) divided by 100 (evalcore keeps every metric
of a leaderboard on 0-1; sacrebleu reports chrF on 0-100), sentence and corpus scores, to 1e-8 (1e-6 on
sacrebleu's scale).

Real data: 2,400 CPC pairs (600 per model, Chinese, one reference) from ../shared/data/msde and the
USR-TopicalChat responses (English, two references each: the original ground truth and the new human
reply), from ../shared/data/usr.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from sacrebleu.metrics import CHRF

import evalcore
from evalcore.metrics.registry import METRICS
from support import read_cpc_pairs, shared

TOL = 1e-8   # on 0-1: 1e-6 on sacrebleu's 0-100
PER_MODEL = 600
SACREBLEU = {"chrF": CHRF(), "chrF++": CHRF(word_order=2)}


@pytest.fixture(scope="module")
def cpc_pairs():
    return read_cpc_pairs(PER_MODEL)


@pytest.fixture(scope="module")
def usr_pairs():
    raw = json.loads(shared("usr", "tc_usr_data.json").read_text(encoding="utf-8"))
    hyps, refs = [], []
    for dialogue in raw:
        by_model = {r["model"]: r["response"] for r in dialogue["responses"]}
        two = [by_model["Original Ground Truth"], by_model["New Human Generated"]]
        for model, text in by_model.items():
            if model not in ("Original Ground Truth", "New Human Generated"):
                hyps.append(text)
                refs.append(two)
    return hyps, refs


def check_against_sacrebleu(hyps: list[str], refs: list[list[str]]):
    ours = evalcore.score(hyps, refs, metrics=["chrF", "chrF++"])
    for name, theirs in SACREBLEU.items():
        sentence = np.array([theirs.sentence_score(h, r).score / 100 for h, r in zip(hyps, refs)])
        np.testing.assert_allclose(ours.sentence[name].to_numpy(), sentence, rtol=0, atol=TOL, err_msg=name)
        streams = [list(s) for s in zip(*refs)]   # sacrebleu takes one stream per reference position
        corpus = theirs.corpus_score(hyps, streams).score / 100
        assert ours.corpus[name] == pytest.approx(corpus, abs=TOL), name
    return ours


@pytest.mark.parametrize("model", ["baichuan", "chatglm", "llama", "qianwen"])
def test_chrf_equals_sacrebleu_on_cpc(cpc_pairs, model):
    hyps, refs = cpc_pairs[model]
    check_against_sacrebleu(hyps, refs)


def test_chrf_equals_sacrebleu_on_usr_with_two_references(usr_pairs):
    hyps, refs = usr_pairs
    assert len(hyps) == 240
    check_against_sacrebleu(hyps, refs)


def test_corpus_value_from_summed_statistics_as_the_bootstrap_forms_it(cpc_pairs):
    """The rank bootstrap sums per-response statistics: the full sum gives sacrebleu's corpus score."""
    from evalcore.scoring import Plan, compute

    hyps, refs = cpc_pairs["llama"]
    plan = Plan([METRICS["chrF++"]], None, None, [])
    _, stats = compute(plan, hyps, refs)["chrF++"]
    assert stats.shape == (len(hyps), 3 * 8)
    value = METRICS["chrF++"].from_sums(stats.sum(axis=0)[None, :], np.array([len(hyps)]))[0]
    assert value == pytest.approx(CHRF(word_order=2).corpus_score(hyps, [[r[0] for r in refs]]).score / 100, abs=TOL)


def test_edge_cases_by_hand():
    # identical: every order matches fully; empty response: 0; no reference: no value (never 0)
    ours = evalcore.score(["今天天气不错", "", "你好"], [["今天天气不错"], ["你好"], []], metrics=["chrF"])
    assert ours.sentence["chrF"][0] == pytest.approx(1.0)
    assert ours.sentence["chrF"][1] == 0.0
    assert np.isnan(ours.sentence["chrF"][2])
    # "ab" vs "ac": unigram P = R = 1/2, bigram P = R = 0 -> mean P = R = 1/4, F2 = 0.25 (sacrebleu: 25)
    assert evalcore.score(["ab"], [["ac"]], metrics=["chrF"]).sentence["chrF"][0] == pytest.approx(0.25)


def test_stored_system_value_equals_sacrebleu(toy):
    """Through the store: `evalcore score --metrics chrF` writes the corpus value sacrebleu gives."""
    from evalcore.scoring import score

    score(toy, metrics="chrF", progress=False)
    value, sig = toy.execute("SELECT value, signature FROM system_scores WHERE model = 'm1' AND name = 'chrF'").fetchone()
    assert value == pytest.approx(CHRF().corpus_score(["天气很好"], [["今天天气不错"]]).score / 100, abs=TOL)
    assert sig.startswith("chrF|nc:6|nw:0|beta:2|")
    assert sig.endswith("|scale:0-1|v:chrf-2")   # a new signature: values cached on 0-100 (v:chrf-1) are not reused


def test_old_0_100_values_are_not_reused(toy):
    """A store holding chrF cached under the old 0-100 signature (v:chrf-1) gets new 0-1 values under the new
    signature; the old rows are never read for the new one."""
    from evalcore.scoring import score

    score(toy, metrics="chrF", progress=False)
    toy.execute("UPDATE metric_scores SET signature = replace(signature, '|scale:0-1|v:chrf-2', '|v:chrf-1'), "
                "value = value * 100 WHERE signature LIKE 'chrF|%'")
    toy.execute("DELETE FROM system_scores WHERE name = 'chrF'")
    score(toy, metrics="chrF", progress=False)
    value = toy.execute("SELECT value FROM system_scores WHERE model = 'm1' AND name = 'chrF'").fetchone()[0]
    assert value == pytest.approx(CHRF().corpus_score(["天气很好"], [["今天天气不错"]]).score / 100, abs=TOL)
    old = toy.execute("SELECT count(*) FROM metric_scores WHERE signature LIKE 'chrF|%|v:chrf-1'").fetchone()[0]
    new = toy.execute("SELECT count(*) FROM metric_scores WHERE signature LIKE 'chrF|%|v:chrf-2'").fetchone()[0]
    assert old > 0 and new == old
