"""Unsupervised retrieval baselines of seed 002: TF-IDF cosine and Okapi BM25.

Both rank candidate responses by their similarity to a query (the context), with document
frequencies from the candidate pool (the seed computes DF on the training set). Used to give
the demo data real systems and, later, as response rankers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import sparse

RANKERS = ("tfidf", "bm25")


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


def _counts(docs: Sequence[list[str]], vocab: dict[str, int], grow: bool) -> sparse.csr_matrix:
    indptr, indices, data = [0], [], []
    for tokens in docs:
        row: dict[int, int] = {}
        for tok in tokens:
            j = vocab.get(tok)
            if j is None:
                if not grow:
                    continue
                j = vocab[tok] = len(vocab)
            row[j] = row.get(j, 0) + 1
        indices.extend(row)
        data.extend(row.values())
        indptr.append(len(indices))
    return sparse.csr_matrix((np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64), indptr),
                             shape=(len(docs), len(vocab)))


def _l2(m: sparse.csr_matrix) -> sparse.csr_matrix:
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.diags(1.0 / norms) @ m


class Retriever:
    """Candidate pool with TF-IDF and BM25 weights, built once and queried many times."""

    def __init__(self, candidates: Sequence[str], tokenize: Callable[[str], list[str]],
                 groups: Sequence[str] | None = None, bm25: BM25Params = BM25Params()):
        self.candidates = list(candidates)
        self.tokenize = tokenize
        self.groups = np.array(groups if groups is not None else [""] * len(candidates), dtype=object)
        self.vocab: dict[str, int] = {}
        tf = _counts([tokenize(c) for c in self.candidates], self.vocab, grow=True)
        n = tf.shape[0]
        df = np.asarray((tf > 0).sum(axis=0)).ravel()
        self.tfidf_idf = np.log((1.0 + n) / (1.0 + df)) + 1.0  # smoothed idf, as in scikit-learn
        self.tfidf = _l2(tf @ sparse.diags(self.tfidf_idf)).T.tocsr()
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))  # Lucene's non-negative BM25 idf
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        avg = lengths.mean() if n else 1.0
        coo = tf.tocoo()
        denom = coo.data + bm25.k1 * (1 - bm25.b + bm25.b * lengths[coo.row] / (avg or 1.0))
        weights = idf[coo.col] * coo.data * (bm25.k1 + 1) / denom
        self.bm25 = sparse.csr_matrix((weights, (coo.row, coo.col)), shape=tf.shape).T.tocsr()
        self._by_group: dict[str, np.ndarray] = {}
        for g in set(self.groups):
            self._by_group[g] = np.flatnonzero(self.groups == g)

    def _query(self, queries: Sequence[str], ranker: str):
        if ranker not in RANKERS:
            raise ValueError(f"unknown ranker {ranker!r}; known: {', '.join(RANKERS)}")
        q = _counts([self.tokenize(t) for t in queries], self.vocab, grow=False)
        if ranker == "tfidf":
            return _l2(q @ sparse.diags(self.tfidf_idf)), self.tfidf
        return q, self.bm25

    def scores(self, queries: Sequence[str], ranker: str) -> np.ndarray:
        """Dense query x candidate scores (for small inputs and tests)."""
        q, weights = self._query(queries, ranker)
        return (q @ weights).toarray()

    def pair_scores(self, queries: Sequence[str], query_rows: np.ndarray, candidate_rows: np.ndarray,
                    ranker: str) -> np.ndarray:
        """Score of query query_rows[k] against candidate candidate_rows[k], for each k: only the
        pairs asked for, not every query against every candidate."""
        q, weights = self._query(queries, ranker)
        by_candidate = weights.T.tocsr()
        return np.asarray(q[query_rows].multiply(by_candidate[candidate_rows]).sum(axis=1)).ravel()

    def best(self, queries: Sequence[str], ranker: str, exclude_groups: Sequence[str] | None = None,
             chunk: int = 512) -> list[int]:
        """Index of the best candidate per query; ties go to the earliest candidate."""
        q, weights = self._query(queries, ranker)
        out: list[int] = []
        for start in range(0, q.shape[0], chunk):
            scores = (q[start:start + chunk] @ weights).toarray()
            if exclude_groups is not None:
                for row, g in enumerate(exclude_groups[start:start + chunk]):
                    idx = self._by_group.get(g)
                    if idx is not None:
                        scores[row, idx] = -np.inf
            out.extend(int(i) for i in scores.argmax(axis=1))
        return out
