"""Tokenized pairs as integer arrays, and their n-gram counts, computed for a whole batch at once.

Everything the lexical metrics need (clipped matches, totals, distinct counts, document
frequencies) comes from sorted integer keys `segment * G + gram`, so a batch of 16,000 pairs
costs a few numpy sorts instead of 16,000 Python dictionaries.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd

from evalcore.core.tokenize import MULTI_BASE


@dataclass
class Order:
    """The n-grams of one order in a batch, grouped by hash (no sorting of the large hypothesis side).

    hyp_*: one entry per distinct (pair, gram) of the hypotheses.
    ref_*: one entry per distinct (reference segment, gram), with the count of that gram in the
    hypothesis of the segment's pair (ref_hyp_count) and a code shared by all references of a pair.
    doc_gram: one entry per distinct (document, gram), for document frequencies.
    """

    n: int
    G: int
    hyp_pair: np.ndarray
    hyp_gram: np.ndarray
    hyp_count: np.ndarray
    ref_seg: np.ndarray
    ref_gram: np.ndarray
    ref_count: np.ndarray
    ref_hyp_count: np.ndarray
    ref_code: np.ndarray       # pair*G + gram: equal for the same n-gram in two references of a pair
    doc_gram: np.ndarray


def sorted_unique(keys: np.ndarray, counts: bool = False):
    """np.unique by sorting. numpy 2.4's plain np.unique hashes and is ~100x slower on int64 arrays."""
    ordered = np.sort(keys)
    if len(ordered) == 0:
        return (ordered, np.empty(0, np.int64)) if counts else ordered
    new = np.empty(len(ordered), dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    uniq = ordered[new]
    if not counts:
        return uniq
    starts = np.flatnonzero(new)
    return uniq, np.diff(np.append(starts, len(ordered)))


def dense_ids(keys: np.ndarray) -> np.ndarray:
    """Dense ids 0..k-1 for arbitrary int64 keys (equal keys, equal ids)."""
    if len(keys) == 0:
        return keys
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.empty(len(keys), dtype=np.int64)
    new[0] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:], casting="unsafe")
    out = np.empty(len(keys), dtype=np.int64)
    out[order] = np.cumsum(new)
    return out


_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing multiplier


def sparse_lookup(sorted_keys: np.ndarray, values: np.ndarray, queries: np.ndarray, default=0) -> np.ndarray:
    """values[i] where queries equal sorted_keys[i], else default.

    Most queries here (n-grams of long responses) are absent, so a bitmap of hashed keys answers
    them first and only the possible hits pay for a binary search.
    """
    out = np.full(len(queries), default, dtype=np.result_type(values, np.asarray(default)))
    if len(sorted_keys) == 0 or len(queries) == 0:
        return out
    if len(queries) <= len(sorted_keys):  # few queries: binary search them all
        idx = np.minimum(np.searchsorted(sorted_keys, queries), len(sorted_keys) - 1)
        hit = sorted_keys[idx] == queries
        out[hit] = values[idx[hit]]
        return out
    bits = max(16, int(len(sorted_keys) * 16).bit_length())  # ~16 slots per key: few false positives
    shift = np.uint64(64 - bits)
    bitmap = np.zeros(1 << bits, dtype=bool)
    bitmap[(sorted_keys.astype(np.uint64) * _MIX) >> shift] = True
    maybe = np.flatnonzero(bitmap[(queries.astype(np.uint64) * _MIX) >> shift])
    q = queries[maybe]
    idx = np.minimum(np.searchsorted(sorted_keys, q), len(sorted_keys) - 1)
    hit = sorted_keys[idx] == q
    out[maybe[hit]] = values[idx[hit]]
    return out


class _Vocab(dict):
    """token -> id, assigning the next id on first sight (map(vocab.__getitem__, ...) runs in C)."""

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        return value


class Encoded:
    """Hypotheses, their references and (optionally) DF documents as flat integer token arrays.

    Segments are laid out as: P hypotheses, then S references (ref_pair[s] is the pair of
    reference s), then the references of D documents (doc_of_seg). With `joined=True` an n-gram
    is identified by its tokens joined without a separator (the LIC 2019 DuConv script's quirk).
    Build from token lists with Encoded(hyps, refs, docs) or from texts with Encoded.from_texts.
    """

    def __init__(self, hyps: list[list[str]], refs: list[list[list[str]]],
                 docs: list[list[list[str]]] | None = None, *, joined: bool = False):
        segments = list(hyps) + [r for rs in refs for r in rs] + [r for rs in (docs or []) for r in rs]
        lengths = np.fromiter((len(s) for s in segments), dtype=np.int64, count=len(segments))
        vocab = _Vocab()
        tokens = np.fromiter(map(vocab.__getitem__, chain.from_iterable(segments)), dtype=np.int64,
                             count=int(lengths.sum()))
        self._setup(tokens, lengths, list(vocab), len(hyps), refs, docs or [], joined)

    @classmethod
    def from_texts(cls, tokenizer, hyps: list[str], refs: list[list[str]], docs: list[list[str]] | None = None,
                   *, joined: bool = False) -> "Encoded":
        """Tokenize each distinct text once (references repeat once per model), then lay out segments."""
        docs = docs or []
        index: dict[str, int] = {}
        seg_text = np.fromiter((index.setdefault(t, len(index)) for t in
                                chain(hyps, chain.from_iterable(refs), chain.from_iterable(docs))), dtype=np.int64)
        texts = list(index)
        if tokenizer.encode is not None:
            raw, per_text, multi = tokenizer.encode(texts)
            ids = sorted_unique(raw)
            table = np.zeros(int(ids[-1]) + 1 if len(ids) else 1, dtype=np.int64)
            table[ids] = np.arange(len(ids))
            tokens_u = table[raw]  # compact ids 0..V-1
            base = len(ids) and MULTI_BASE
            words = [chr(i) if i < base else multi[i - base] for i in ids.tolist()]
        else:
            lists = [tokenizer(t) for t in texts]
            per_text = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
            vocab = _Vocab()
            tokens_u = np.fromiter(map(vocab.__getitem__, chain.from_iterable(lists)), dtype=np.int64,
                                   count=int(per_text.sum()))
            words = list(vocab)
        starts_u = np.concatenate([[0], np.cumsum(per_text)[:-1]]) if len(per_text) else per_text
        lengths = per_text[seg_text] if len(seg_text) else np.zeros(0, np.int64)
        total = int(lengths.sum())
        # Ragged gather: the tokens of each segment's text, segment after segment.
        shift = np.repeat(starts_u[seg_text] - (np.cumsum(lengths) - lengths), lengths) if total else np.zeros(0, np.int64)
        tokens = tokens_u[shift + np.arange(total)] if total else np.zeros(0, np.int64)
        enc = cls.__new__(cls)
        enc._setup(tokens, lengths, words, len(hyps), refs, docs, joined)
        return enc

    def _setup(self, tokens: np.ndarray, lengths: np.ndarray, words: list[str], n_hyps: int,
               refs: list, docs: list, joined: bool) -> None:
        self.ref_pair = np.array([p for p, rs in enumerate(refs) for _ in rs], dtype=np.int64)
        self.doc_of_seg = np.array([d for d, rs in enumerate(docs) for _ in rs], dtype=np.int64)
        self.P, self.S, self.D = n_hyps, len(self.ref_pair), len(docs)
        self.tokens, self.lengths, self.words, self.joined = tokens, lengths, words, joined
        self.hyp_len = lengths[: self.P]
        self.ref_len = lengths[self.P: self.P + self.S]
        self._offsets = np.concatenate([[0], np.cumsum(lengths)])
        self._seg_of_pos = np.repeat(np.arange(len(lengths)), lengths)
        # Tokens left in the segment from each position (an n-gram starts where at least n are left).
        self._left = self._offsets[1:][self._seg_of_pos] - np.arange(len(tokens))
        self._ids: dict[int, np.ndarray] = {}
        self._orders: dict[int, Order] = {}
        self._segments: list[list[int]] | None = None

    def segment(self, k: int) -> list[int]:
        """Token ids of segment k (hypotheses first, then references, then documents)."""
        return self.tokens[self._offsets[k]:self._offsets[k + 1]].tolist()

    @property
    def segments(self) -> list[list[int]]:
        """Token ids of every segment as Python lists (for the per-pair metrics: LCS, METEOR)."""
        if self._segments is None:
            toks, offs = self.tokens.tolist(), self._offsets.tolist()
            self._segments = [toks[offs[k]:offs[k + 1]] for k in range(len(self.lengths))]
        return self._segments

    def _gram_ids(self, n: int) -> np.ndarray:
        """An id per n-gram at every flat position (-1 where no n-gram starts).

        Ids are exact (equal n-grams, equal ids) but not dense: G = max id + 1 may be large."""
        if n in self._ids:
            return self._ids[n]
        if n == 1:
            ids = self.tokens.copy()
        elif self.joined:
            ids = np.full(len(self.tokens), -1, dtype=np.int64)
            starts = np.flatnonzero(self._left >= n)
            words = self.words
            toks = self.tokens.tolist()
            strings = ["".join(words[t] for t in toks[i:i + n]) for i in starts.tolist()]
            ids[starts] = pd.factorize(np.array(strings, dtype=object))[0]
        else:
            prev = self._gram_ids(n - 1)
            V = len(self.words) + 1
            top = int(prev.max()) + 1 if len(prev) else 1   # no token at all: every response blank
            if top * V * (max(self.P, self.S, self.D) + 1) >= 2 ** 63:
                valid = prev >= 0  # keep n-gram keys and segment*G keys inside int64
                dense = np.full(len(prev), -1, dtype=np.int64)
                dense[valid] = dense_ids(prev[valid])
                prev = dense
            # Whole-array arithmetic on shifted slices: no gathers or scatters.
            ids = prev * V
            k = len(ids) - n + 1
            if k > 0:
                ids[:k] += self.tokens[n - 1:]
        ids[self._left < n] = -1
        self._ids[n] = ids
        return ids

    def order(self, n: int) -> Order:
        if n in self._orders:
            return self._orders[n]
        ids = self._gram_ids(n)
        h_end, r_end = self._offsets[self.P], self._offsets[self.P + self.S]
        G = int(ids.max()) + 1 if len(ids) else 1
        # Segments are laid out hypotheses, references, documents: each part is a slice.
        h_ids, h_seg = ids[:h_end], self._seg_of_pos[:h_end]
        ok = h_ids >= 0
        hyp_keys, hyp_count = sorted_unique(h_seg[ok] * G + h_ids[ok], counts=True)
        r_ids, r_seg = ids[h_end:r_end], self._seg_of_pos[h_end:r_end] - self.P
        ok = r_ids >= 0
        ref_keys, ref_count = sorted_unique(r_seg[ok] * G + r_ids[ok], counts=True)
        ref_seg, ref_gram = ref_keys // G, ref_keys % G
        # Join each reference n-gram onto the same n-gram of its pair's hypothesis.
        query = self.ref_pair[ref_seg] * G + ref_gram
        ref_hyp_count = sparse_lookup(hyp_keys, hyp_count, query)
        d_ids, d_seg = ids[r_end:], self._seg_of_pos[r_end:] - self.P - self.S
        ok = d_ids >= 0
        doc_keys = sorted_unique(self.doc_of_seg[d_seg[ok]] * G + d_ids[ok]) if ok.any() else np.empty(0, np.int64)
        result = Order(n, G, hyp_keys // G, hyp_keys % G, hyp_count,
                       ref_seg, ref_gram, ref_count, ref_hyp_count, query, doc_keys % G)
        self._orders[n] = result
        return result
