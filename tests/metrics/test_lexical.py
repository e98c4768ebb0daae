"""Lexical metrics on edge cases, against arithmetic written out here."""
import math

import numpy as np
import pytest

from evalcore.core.tokenize import get_tokenizer
from evalcore.metrics.registry import LEXICAL, METRICS, get_flavor, resolve_metrics
from evalcore.scoring import Plan, compute


def run(hyps, refs, metrics="lexical", docs=None):
    plan = Plan(resolve_metrics(metrics), get_flavor("default"), get_tokenizer("char"),
                docs if docs is not None else [r for r in refs if r])
    return {name: values for name, (values, _) in compute(plan, hyps, refs).items()}


def meteor_by_hand(matches, hyp_len, ref_len, chunks, alpha=0.9, beta=3, gamma=0.5):
    p, r = matches / hyp_len, matches / ref_len
    fmean = p * r / (alpha * p + (1 - alpha) * r)
    return (1 - gamma * (chunks / matches) ** beta) * fmean


def test_identical_response():
    out = run(["今天天气不错"], [["今天天气不错"]])
    for name in ("F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4", "ROUGE"):
        assert out[name][0] == pytest.approx(1.0, abs=1e-6), name
    assert out["METEOR-exact"][0] == pytest.approx(meteor_by_hand(6, 6, 6, 1))
    assert out["DIST1"][0] == pytest.approx(5 / 6)  # 天 twice among 6 characters


def test_empty_response_scores_zero_where_it_matches_nothing_and_has_no_dist():
    """A blank response matches no reference n-gram (0), and has no n-gram of its own: its DIST is 0/0, none (not 0,
    which would rank it the least diverse); a one-character response has unigrams but no bigram."""
    out = run([""], [["你好"]])
    for name in LEXICAL:
        if name.startswith("DIST"):
            assert math.isnan(out[name][0]), name
        else:
            assert out[name][0] == pytest.approx(0.0, abs=1e-6), name
    out = run(["好"], [["你好"]])
    assert out["DIST1"][0] == 1.0 and math.isnan(out["DIST2"][0])


def test_empty_reference_is_defined():
    out = run(["你好"], [[""]], docs=[["随便说点"]])
    for name in ("F1", "BLEU1", "BLEU4", "ROUGE", "METEOR-exact", "CIDEr"):
        assert out[name][0] == pytest.approx(0.0, abs=1e-6), name
    assert out["DIST1"][0] == 1.0


def test_no_reference_means_no_value_for_reference_based_metrics():
    out = run(["你好呀"], [[]], docs=[["随便"]])
    for name in LEXICAL:
        if METRICS[name].needs_references:
            assert math.isnan(out[name][0]), name
        else:
            assert not math.isnan(out[name][0]), name


def test_punctuation_only():
    out = run(["！！！。。。"], [["。"]])
    assert out["F1"][0] == pytest.approx(2 * 1 / (6 + 1))  # one 。 in common
    assert out["DIST1"][0] == pytest.approx(2 / 6)
    assert out["DIST2"][0] == pytest.approx(3 / 5)  # ！！, ！。, 。。
    assert out["ROUGE"][0] > 0


def test_ten_thousand_characters():
    out = run(["好" * 10_000], [["好的"]])
    assert out["F1"][0] == pytest.approx(2 * 1 / (10_000 + 2))
    p, r, beta = 1 / 10_000, 1 / 2, 1.2
    assert out["ROUGE"][0] == pytest.approx((1 + beta ** 2) * p * r / (r + beta ** 2 * p))
    assert out["DIST1"][0] == pytest.approx(1 / 10_000)


def test_mixed_chinese_english_emoji():
    # char tokens: I love 北 京 🎉 | i love 北 京
    out = run(["I love 北京🎉"], [["i love 北京"]])
    assert out["F1"][0] == pytest.approx(2 * 3 / (5 + 4))  # love, 北, 京 (case kept)
    assert out["METEOR-exact"][0] == pytest.approx(meteor_by_hand(4, 5, 4, 1))  # METEOR lower-cases first
    assert out["DIST1"][0] == 1.0


def test_corpus_values_by_hand():
    from evalcore.metrics import lexical as L
    from evalcore.metrics.ngrams import Encoded

    tok = get_tokenizer("char")
    enc = Encoded.from_texts(tok, ["天气很好", "不错"], [["今天天气不错"], ["还不错"]])
    stats = L.f1_stats(enc)
    # hits 2 and 2; hypothesis lengths 4 and 2; reference lengths 6 and 3
    p, r = 4 / 6, 4 / 9
    assert L.f1_corpus(stats) == pytest.approx(2 * p * r / (p + r))
    b = L.bleu_stats(enc)
    # unigram matches 2+2 of 6; bigrams: 天气 and 不错 match, 2 of 4; c = 6 < r = 9
    assert L.bleu_corpus(b, 2) == pytest.approx(math.exp(1 - 9 / 6) * math.sqrt((4 / 6) * (2 / 4)))
    assert L.distinct_corpus(enc, 1, np.array([0, 1])) == pytest.approx(6 / 6)


def test_unknown_metric_lists_known_ones():
    with pytest.raises(ValueError, match=r"unknown metric 'BLEU5'; known, closest first: BLEU1, BLEU2, BLEU3, BLEU4"):
        resolve_metrics("F1,BLEU5")
