"""Lexical metrics equal their reference implementations (pycocoevalcap, sacrebleu, nltk) to 1e-6.

Real data: 2,400 CPC pairs (600 per model) from ../shared/data/msde, char tokens. Each model is
one pycocoevalcap call, so CIDEr's document frequencies come from the same references on both sides.
"""
from __future__ import annotations

import numpy as np
import pytest

from evalcore.core.tokenize import char_tokens, get_tokenizer
from evalcore.metrics import lexical as L
from evalcore.metrics.ngrams import Encoded
from support import read_cpc_pairs

pytest.importorskip("pycocoevalcap", reason="reference implementation: pip install -r tests/requirements.txt")
from pycocoevalcap.bleu.bleu import Bleu  # noqa: E402
from pycocoevalcap.cider.cider import Cider  # noqa: E402
from pycocoevalcap.rouge.rouge import Rouge  # noqa: E402

TOL = 1e-6
PER_MODEL = 600


@pytest.fixture(scope="module")
def cpc_pairs():
    return read_cpc_pairs(PER_MODEL)


def coco(hyps: list[str], refs: list[list[str]]):
    """pycocoevalcap on char tokens joined by spaces."""
    h = {i: [" ".join(char_tokens(t))] for i, t in enumerate(hyps)}
    r = {i: [" ".join(char_tokens(x)) for x in rs] for i, rs in enumerate(refs)}
    bleu, bleu_each = Bleu(4).compute_score(r, h, verbose=0)
    rouge, rouge_each = Rouge().compute_score(r, h)
    cider, cider_each = Cider().compute_score(r, h)
    return bleu, bleu_each, rouge, rouge_each, cider, cider_each


def ours(hyps: list[str], refs: list[list[str]]):
    enc = Encoded.from_texts(get_tokenizer("char"), hyps, refs, docs=refs)
    return L.bleu_stats(enc), L.rouge_l(enc)[:, 0], L.cider(enc)[:, 0]


@pytest.mark.parametrize("model", ["baichuan", "chatglm", "llama", "qianwen"])
def test_bleu_rouge_cider_equal_pycocoevalcap(cpc_pairs, model):
    hyps, refs = cpc_pairs[model]
    c_bleu, c_bleu_each, c_rouge, c_rouge_each, c_cider, c_cider_each = coco(hyps, refs)
    stats, rouge, cider = ours(hyps, refs)
    for n in range(1, 5):
        assert L.bleu_corpus(stats, n) == pytest.approx(c_bleu[n - 1], abs=TOL)
        np.testing.assert_allclose(L.bleu_sentence(stats, n), c_bleu_each[n - 1], atol=TOL, rtol=0)
    np.testing.assert_allclose(rouge, c_rouge_each, atol=TOL, rtol=0)
    assert rouge.mean() == pytest.approx(c_rouge, abs=TOL)
    np.testing.assert_allclose(cider, c_cider_each, atol=TOL, rtol=0)
    assert cider.mean() == pytest.approx(c_cider, abs=TOL)


def test_multiple_references_equal_pycocoevalcap():
    hyps = ["今天天气很好我们去公园", "我不知道", "", "好的好的好的", "the cat sat on the mat"]
    refs = [["今天天气不错", "天气很好，去公园吧", "我们去公园"], ["不知道呢", "我也不知道"], ["随便"],
            ["好的", "好"], ["a cat sat on a mat", "the cat is on the mat"]]
    c_bleu, c_bleu_each, _, c_rouge_each, _, c_cider_each = coco(hyps, refs)
    stats, rouge, cider = ours(hyps, refs)
    for n in range(1, 5):
        np.testing.assert_allclose(L.bleu_sentence(stats, n), c_bleu_each[n - 1], atol=TOL, rtol=0)
    np.testing.assert_allclose(rouge, c_rouge_each, atol=TOL, rtol=0)
    np.testing.assert_allclose(cider, c_cider_each, atol=TOL, rtol=0)


@pytest.mark.parametrize("model", ["chatglm", "qianwen"])
def test_corpus_bleu_equals_sacrebleu(cpc_pairs, model):
    import sacrebleu

    hyps, refs = cpc_pairs[model]
    stats, _, _ = ours(hyps, refs)
    sys_ = [" ".join(char_tokens(h)) for h in hyps]
    ref_ = [[" ".join(char_tokens(r[0])) for r in refs]]
    for n in range(1, 5):
        bleu = sacrebleu.metrics.BLEU(tokenize="none", smooth_method="none", max_ngram_order=n,
                                      effective_order=False).corpus_score(sys_, ref_)
        assert L.bleu_corpus(stats, n) == pytest.approx(bleu.score / 100, abs=TOL)


class _NoWordNet:
    """A WordNet with no synsets: nltk's METEOR without its synonym stage (see ../shared/MODELS.md)."""

    def synsets(self, *args, **kwargs):
        return []


class _NoStemmer:
    def stem(self, word):
        return word


@pytest.mark.parametrize("model", ["llama", "qianwen"])
def test_meteor_equals_nltk_exact_stage(cpc_pairs, model):
    from nltk.stem.porter import PorterStemmer
    from nltk.translate.meteor_score import meteor_score

    hyps, refs = cpc_pairs[model]
    enc = Encoded.from_texts(get_tokenizer("char"), hyps, refs)
    got = L.meteor(enc)[:, 0]
    toks = [(char_tokens(h), [char_tokens(r) for r in rs]) for h, rs in zip(hyps, refs)]
    exact = [meteor_score(rs, h, wordnet=_NoWordNet(), stemmer=_NoStemmer()) for h, rs in toks]
    np.testing.assert_allclose(got, exact, atol=TOL, rtol=0)
    # On Chinese char tokens nltk's Porter stemming stage changes nothing either.
    stemmed = [meteor_score(rs, h, wordnet=_NoWordNet(), stemmer=PorterStemmer()) for h, rs in toks]
    np.testing.assert_allclose(got, stemmed, atol=TOL, rtol=0)


def test_meteor_equals_nltk_with_repeats_cases_and_several_references():
    """Whitespace tokens, words repeated on both sides (the k-th last occurrence aligns with the k-th last),
    upper and lower case (nltk lower-cases), several references (the best one), an empty hypothesis (0) and
    a response without references (no value)."""
    from nltk.translate.meteor_score import meteor_score

    hyps = ["the cat sat on the mat the end", "The Cat the cat", "", "a b c d e f", "no refs here",
            "x y x y x", "same words same order"]
    refs = [["on the mat sat the cat", "the end of the mat"], ["the cat THE CAT the", "cat"], ["something"],
            ["f e d c b a", "a b c", "d e f a b c"], [], ["y x y x y x", "x"], ["same words same order"]]
    enc = Encoded.from_texts(get_tokenizer("space"), hyps, refs)
    got = L.meteor(enc)[:, 0]
    want = [meteor_score([r.split() for r in rs], h.split(), wordnet=_NoWordNet(), stemmer=_NoStemmer())
            if rs else np.nan for h, rs in zip(hyps, refs)]
    np.testing.assert_allclose(got, want, atol=1e-12, rtol=0)
    assert got[2] == 0.0 and np.isnan(got[4])
