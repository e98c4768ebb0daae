"""TF-IDF cosine and BM25 against arithmetic written out here."""
import math

import pytest

from evalcore.analysis.retrieval import Retriever

POOL = ["a b", "a c c", "d"]


def test_tfidf_cosine_by_hand():
    r = Retriever(POOL, str.split)
    # N = 3; df: a 2, b 1, c 1, d 1; idf = ln((1+N)/(1+df)) + 1
    ia, ib, ic = math.log(4 / 3) + 1, math.log(4 / 2) + 1, math.log(4 / 2) + 1
    query = [ia, ib]  # "a b": a once, b once
    cand1 = [ia, 2 * ic]  # "a c c": shares only "a"
    cos1 = (query[0] * cand1[0]) / (math.hypot(*query) * math.hypot(*cand1))
    got = r.scores(["a b"], "tfidf")[0]
    assert got[0] == pytest.approx(1.0)
    assert got[1] == pytest.approx(cos1)
    assert got[2] == pytest.approx(0.0)


def test_bm25_by_hand():
    r = Retriever(POOL, str.split)
    k1, b, n = 1.2, 0.75, 3
    lengths, avg = [2, 3, 1], 2.0

    def idf(df):
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def term(tf, dl, df):
        return idf(df) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avg))

    got = r.scores(["a c"], "bm25")[0]
    assert got[0] == pytest.approx(term(1, lengths[0], 2))
    assert got[1] == pytest.approx(term(1, lengths[1], 2) + term(2, lengths[1], 1))
    assert got[2] == pytest.approx(0.0)


def test_own_group_is_excluded_and_ties_go_first():
    r = Retriever(["x y", "x y", "z"], str.split, groups=["g1", "g2", "g2"])
    assert r.best(["x y"], "tfidf") == [0]
    assert r.best(["x y"], "tfidf", exclude_groups=["g1"]) == [1]
    assert r.best(["x y"], "bm25", exclude_groups=["g2"]) == [0]


def test_unknown_ranker():
    with pytest.raises(ValueError, match="unknown ranker 'lsi'; known: tfidf, bm25"):
        Retriever(POOL, str.split).best(["a"], "lsi")
