"""Lexical metrics as sufficient statistics per response; sentence and corpus values both derive from them.

Definitions (all checked against reference implementations in tests/metrics/test_lexical_equivalence.py):
- F1: token overlap. Per response, the reference with the best F1; stats (hits, hyp_len, ref_len).
  Corpus: micro-averaged over responses (the LIC 2019 DuConv script's F1).
- BLEU-n: clipped n-gram matches against all references (max count per n-gram), closest reference
  length (ties: the shorter). Corpus: Papineni's corpus BLEU with brevity penalty, no smoothing.
  Sentence: the same with pycocoevalcap's epsilons (1e-15 on matches, 1e-9 on totals).
- ROUGE: ROUGE-L as in pycocoevalcap: LCS precision and recall, each maximised over references,
  F-measure with beta = 1.2. Corpus: mean.
- METEOR: nltk's meteor_score formula (alpha 0.9, beta 3, gamma 0.5, lower-cased, max over
  references) with the exact-match stage only: no stemming, no WordNet synonyms. Corpus: mean.
- DIST-n: distinct n-grams / all n-grams. Per response on its own n-grams; corpus over all of a
  model's responses together (not a mean of per-response values).
- CIDEr: pycocoevalcap's Cider (which is CIDEr-D: clipped TF-IDF n-gram vectors n = 1..4, Gaussian
  length penalty sigma = 6 on bigram counts, x10), document frequencies from the track's references.
  Corpus: mean.
An empty response scores 0 on every metric; a response whose item has no reference gets no value
for reference-based metrics (they are unavailable there, not zero).
"""
from __future__ import annotations

import hashlib
import math
from collections import defaultdict

import numpy as np

from evalcore.metrics.base import Batch, Metric, Result, Signature
from evalcore.metrics.ngrams import Encoded, sorted_unique, sparse_lookup

TINY, SMALL = 1e-15, 1e-9  # pycocoevalcap's BLEU epsilons
ROUGE_BETA = 1.2
METEOR_ALPHA, METEOR_BETA, METEOR_GAMMA = 0.9, 3.0, 0.5
CIDER_N, CIDER_SIGMA = 4, 6.0


def has_refs(enc: Encoded) -> np.ndarray:
    return np.bincount(enc.ref_pair, minlength=enc.P) > 0


def _best_per_pair(enc: Encoded, score: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """Index (into segments) of the best reference of each pair: highest score, then lowest tiebreak."""
    order = np.lexsort((np.arange(enc.S), tiebreak, -score, enc.ref_pair))
    pairs, first = np.unique(enc.ref_pair[order], return_index=True)
    best = np.full(enc.P, -1, dtype=np.int64)
    best[pairs] = order[first]
    return best


def _ref_matches(enc: Encoded, n: int) -> np.ndarray:
    """Per reference segment: n-gram matches clipped against that reference alone."""
    o = enc.order(n)
    return np.bincount(o.ref_seg, weights=np.minimum(o.ref_count, o.ref_hyp_count), minlength=enc.S)


# ---------------------------------------------------------------- F1
def f1_stats(enc: Encoded) -> np.ndarray:
    """(P, 3): hits, hyp_len, ref_len against each response's best reference; NaN without references."""
    out = np.full((enc.P, 3), np.nan)
    if enc.S == 0:
        return out
    hits = _ref_matches(enc, 1)
    hl = enc.hyp_len[enc.ref_pair]
    denom = hl + enc.ref_len
    f1 = np.divide(2 * hits, denom, out=np.zeros(enc.S), where=denom > 0)
    best = _best_per_pair(enc, f1, np.zeros(enc.S))
    ok = best >= 0
    out[ok] = np.column_stack([hits[best[ok]], enc.hyp_len[ok], enc.ref_len[best[ok]]])
    return out


def f1_value(stats: np.ndarray) -> np.ndarray:
    hits, hl, rl = stats[..., 0], stats[..., 1], stats[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isnan(hits), np.nan, np.where(hits > 0, 2 * hits / (hl + rl), 0.0))


def f1_corpus(stats: np.ndarray) -> float:
    hits, hl, rl = stats[:, 0].sum(), stats[:, 1].sum(), stats[:, 2].sum()
    if hits == 0:
        return 0.0
    p, r = hits / hl, hits / rl
    return float(2 * p * r / (p + r))


# ---------------------------------------------------------------- BLEU
def bleu_stats(enc: Encoded, max_n: int = 4) -> np.ndarray:
    """(P, 2 + 2*max_n): hyp_len, closest ref_len, matches m1..mN, totals t1..tN."""
    out = np.full((enc.P, 2 + 2 * max_n), np.nan)
    if enc.S == 0:
        return out
    ok = has_refs(enc)
    hl_seg = enc.hyp_len[enc.ref_pair]
    best = _best_per_pair(enc, -np.abs(enc.ref_len - hl_seg).astype(float), enc.ref_len)
    out[ok, 0] = enc.hyp_len[ok]
    out[ok, 1] = enc.ref_len[best[ok]]
    for n in range(1, max_n + 1):
        o = enc.order(n)
        # Clip by the largest count among a pair's references: group reference entries by pair*G+gram.
        order = np.lexsort((-o.ref_count, o.ref_code))
        code = o.ref_code[order]
        first = order[np.concatenate([[True], code[1:] != code[:-1]])] if len(code) else order
        clipped = np.minimum(o.ref_count[first], o.ref_hyp_count[first])
        matches = np.bincount(enc.ref_pair[o.ref_seg[first]], weights=clipped, minlength=enc.P)
        out[ok, 1 + n] = matches[ok]
        out[ok, 1 + max_n + n] = np.maximum(enc.hyp_len[ok] - n + 1, 0)
    return out


def bleu_sentence(stats: np.ndarray, n: int, max_n: int = 4) -> np.ndarray:
    """Per-response BLEU-n with pycocoevalcap's epsilon smoothing."""
    hl, rl = stats[:, 0], stats[:, 1]
    logp = np.zeros(len(stats))
    for k in range(1, n + 1):
        logp += np.log((stats[:, 1 + k] + TINY) / (stats[:, 1 + max_n + k] + SMALL))
    value = np.exp(logp / n)
    ratio = (hl + TINY) / (rl + SMALL)
    with np.errstate(over="ignore", divide="ignore"):
        bp = np.where(ratio < 1, np.exp(1 - 1 / ratio), 1.0)
    return np.where(np.isnan(hl), np.nan, value * bp)


def bleu_corpus(stats: np.ndarray, n: int, max_n: int = 4) -> float:
    """Corpus BLEU-n: geometric mean of corpus precisions times brevity penalty, no smoothing."""
    total = stats.sum(axis=0)
    c, r = total[0], total[1]
    logs = []
    for k in range(1, n + 1):
        m, t = total[1 + k], total[1 + max_n + k]
        if m == 0 or t == 0:
            return 0.0
        logs.append(math.log(m / t))
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return float(bp * math.exp(sum(logs) / n))


# ---------------------------------------------------------------- ROUGE-L
def lcs_length(a: list, b: list) -> int:
    """LCS length by Hyyro's bit-parallel algorithm: bits over the longer sequence."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    wanted = set(b)
    masks: dict = {}
    for j, t in enumerate(a):
        if t in wanted:  # positions of tokens the other side never has can stay 0
            masks[t] = masks.get(t, 0) | (1 << j)
    if not masks:
        return 0
    full = (1 << len(a)) - 1
    v = full
    get = masks.get
    for t in b:
        u = v & get(t, 0)
        v = (v + u) | (v - u)
    return len(a) - bin(v & full).count("1")


def _segments(enc: Encoded):
    """The token lists of every hypothesis and reference, as given to Encoded."""
    return enc.segments[:enc.P], enc.segments[enc.P:enc.P + enc.S]


def lcs_per_reference(enc: Encoded) -> np.ndarray:
    """LCS length of every (hypothesis, reference) pair, bit-parallel over all pairs at once.

    For references of at most 63 tokens the bit vector fits a uint64, and Hyyro's update runs as
    numpy operations over all pairs, one hypothesis position at a time. Longer references fall back
    to lcs_length in Python.
    """
    S = enc.S
    lcs = np.zeros(S, dtype=np.int64)
    if S == 0:
        return lcs
    m = enc.ref_len
    fits = (m <= 63) & (m > 0) & (enc.hyp_len[enc.ref_pair] > 0)
    for s in np.flatnonzero(~fits & (m > 0) & (enc.hyp_len[enc.ref_pair] > 0)).tolist():
        lcs[s] = lcs_length(enc.segment(int(enc.ref_pair[s])), enc.segment(enc.P + s))
    units = np.flatnonzero(fits)
    if len(units) == 0:
        return lcs
    V = len(enc.words) + 1
    # Match masks: for (reference, token), the bits of the positions where the reference has it.
    ref_pos = enc._offsets[enc.P + units]
    r_len = m[units]
    r_unit = np.repeat(np.arange(len(units)), r_len)
    r_j = np.arange(int(r_len.sum())) - np.repeat(np.cumsum(r_len) - r_len, r_len)
    r_tok = enc.tokens[np.repeat(ref_pos, r_len) + r_j]
    key = r_unit * V + r_tok
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    first = np.concatenate([[True], key_sorted[1:] != key_sorted[:-1]])
    mask_keys = key_sorted[first]
    masks = np.bitwise_or.reduceat(np.left_shift(np.uint64(1), r_j[order].astype(np.uint64)),
                                   np.flatnonzero(first))
    # Hypothesis positions of every unit, laid out column by column (position t of all units that
    # are that long), longest hypotheses first so each column is a prefix.
    h_len = enc.hyp_len[enc.ref_pair[units]]
    by_len = np.argsort(-h_len, kind="stable")
    h_len_sorted = h_len[by_len]
    max_len = int(h_len_sorted[0])
    active = np.searchsorted(-h_len_sorted, -np.arange(max_len), side="left")  # units longer than t
    col_start = np.concatenate([[0], np.cumsum(active)])
    u_sorted = np.repeat(np.arange(len(units)), h_len_sorted)
    t = np.arange(int(h_len_sorted.sum())) - np.repeat(np.cumsum(h_len_sorted) - h_len_sorted, h_len_sorted)
    hyp_start = enc._offsets[enc.ref_pair[units[by_len]]]
    tok = enc.tokens[np.repeat(hyp_start, h_len_sorted) + t]
    query = by_len[u_sorted] * V + tok
    col = np.zeros(len(query), dtype=np.uint64)
    col[col_start[t] + u_sorted] = sparse_lookup(mask_keys, masks, query, np.uint64(0))
    full = (np.left_shift(np.uint64(1), r_len[by_len].astype(np.uint64)) - np.uint64(1))
    v = full.copy()
    for step in range(max_len):
        k = active[step]
        x = col[col_start[step]:col_start[step] + k]
        vk = v[:k]
        u = vk & x
        v[:k] = (vk + u) | (vk - u)
    result = r_len[by_len] - np.bitwise_count(v & full).astype(np.int64)
    lcs[units[by_len]] = result
    return lcs


def rouge_l(enc: Encoded, beta: float = ROUGE_BETA) -> np.ndarray:
    lcs = lcs_per_reference(enc).astype(float)
    hl = enc.hyp_len[enc.ref_pair].astype(float)
    rl = enc.ref_len.astype(float)
    p_seg = np.divide(lcs, hl, out=np.zeros(enc.S), where=hl > 0)
    r_seg = np.divide(lcs, rl, out=np.zeros(enc.S), where=rl > 0)
    p_max = np.zeros(enc.P)
    r_max = np.zeros(enc.P)
    np.maximum.at(p_max, enc.ref_pair, p_seg)
    np.maximum.at(r_max, enc.ref_pair, r_seg)
    score = np.zeros(enc.P)
    ok = (p_max > 0) & (r_max > 0)
    score[ok] = (1 + beta ** 2) * p_max[ok] * r_max[ok] / (r_max[ok] + beta ** 2 * p_max[ok])
    score[~has_refs(enc)] = np.nan
    return score[:, None]


# ---------------------------------------------------------------- METEOR
def meteor_exact(hyp: list, ref: list, alpha: float = METEOR_ALPHA, beta: float = METEOR_BETA,
                 gamma: float = METEOR_GAMMA) -> float:
    """nltk's single_meteor_score with only its exact-match stage.

    nltk aligns greedily from the end: the k-th last occurrence of a word in the hypothesis takes
    the k-th last unmatched occurrence in the reference, which is what the zip below does.
    """
    if not hyp or not ref:
        return 0.0
    where_h: dict = defaultdict(list)
    where_r: dict = defaultdict(list)
    for i, t in enumerate(hyp):
        where_h[t].append(i)
    for j, t in enumerate(ref):
        where_r[t].append(j)
    matches = []
    for t, hs in where_h.items():
        rs = where_r.get(t)
        if rs:
            matches.extend(zip(reversed(hs), reversed(rs)))
    if not matches:
        return 0.0
    matches.sort()
    chunks = 1
    for (h0, r0), (h1, r1) in zip(matches, matches[1:]):
        if not (h1 == h0 + 1 and r1 == r0 + 1):
            chunks += 1
    m = len(matches)
    precision, recall = m / len(hyp), m / len(ref)
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    penalty = gamma * (chunks / m) ** beta
    return (1 - penalty) * fmean


def meteor(enc: Encoded) -> np.ndarray:
    """meteor_exact of every (hypothesis, reference) pair, the best per hypothesis, as whole-array operations
    (the loop over pairs in Python was a fifth of lexical scoring's time). The same alignment: the k-th last
    occurrence of a word in the hypothesis matches its k-th last occurrence in the reference."""
    score = np.full(enc.P, np.nan)
    if enc.S == 0:
        return score[:, None]
    lowered: dict[str, int] = {}
    lower = np.array([lowered.setdefault(w.lower(), len(lowered)) for w in enc.words] or [0], dtype=np.int64)
    hyp_len, ref_len = enc.hyp_len[enc.ref_pair], enc.ref_len   # per unit: one (hypothesis, reference) pair
    units = np.arange(enc.S)
    h_unit, h_pos, h_tok = _unit_tokens(enc, enc.ref_pair, hyp_len, units, lower)
    r_unit, r_pos, r_tok = _unit_tokens(enc, enc.P + units, ref_len, units, lower)
    V, R = len(lowered) + 1, int(max(hyp_len.max(), ref_len.max())) + 1
    if enc.S * V * R >= 2 ** 62:   # keys would not fit an int64: pair by pair
        return _meteor_loop(enc, lower)
    h_key = (h_unit * V + h_tok) * R + _rank_from_end(h_unit * V + h_tok)
    r_key = (r_unit * V + r_tok) * R + _rank_from_end(r_unit * V + r_tok)
    _, hi, ri = np.intersect1d(h_key, r_key, assume_unique=True, return_indices=True)
    m_unit, m_h, m_r = h_unit[hi], h_pos[hi], r_pos[ri]
    order = np.lexsort((m_h, m_unit))
    m_unit, m_h, m_r = m_unit[order], m_h[order], m_r[order]
    # a chunk starts at a unit's first match and wherever a match does not follow the last in both
    breaks = np.ones(len(m_unit), bool)
    breaks[1:] = (m_unit[1:] != m_unit[:-1]) | (m_h[1:] != m_h[:-1] + 1) | (m_r[1:] != m_r[:-1] + 1)
    m = np.bincount(m_unit, minlength=enc.S).astype(float)
    chunks = np.bincount(m_unit[breaks], minlength=enc.S).astype(float)
    value = np.zeros(enc.S)
    ok = m > 0   # no match (an empty side included): 0, as meteor_exact
    precision, recall = m[ok] / hyp_len[ok], m[ok] / ref_len[ok]
    fmean = precision * recall / (METEOR_ALPHA * precision + (1 - METEOR_ALPHA) * recall)
    value[ok] = (1 - METEOR_GAMMA * (chunks[ok] / m[ok]) ** METEOR_BETA) * fmean
    np.fmax.at(score, enc.ref_pair, value)   # the best reference; NaN stays only where a pair has none
    return score[:, None]


def _unit_tokens(enc: Encoded, segments: np.ndarray, lengths: np.ndarray, units: np.ndarray, lower: np.ndarray):
    """(unit, position, lower-cased token) of every token of each unit's segment, unit after unit."""
    total = int(lengths.sum())
    unit = np.repeat(units, lengths)
    pos = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    tok = lower[enc.tokens[np.repeat(enc._offsets[segments], lengths) + pos]] if total else np.zeros(0, np.int64)
    return unit, pos, tok


def _rank_from_end(group: np.ndarray) -> np.ndarray:
    """For each token, how many later tokens of its unit share its group (0 for the last occurrence): `group`
    is laid out unit after unit, each unit's tokens in order."""
    if len(group) == 0:
        return group
    # positions ascend within each unit's run, so a stable sort of the reversed array puts each group's
    # positions in descending order (3x faster than np.lexsort)
    order = len(group) - 1 - np.argsort(group[::-1], kind="stable")
    g = group[order]
    start = np.ones(len(g), bool)
    start[1:] = g[1:] != g[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))
    rank = np.empty(len(g), np.int64)
    rank[order] = np.arange(len(g)) - first
    return rank


def _meteor_loop(enc: Encoded, lower: np.ndarray) -> np.ndarray:
    hyps, refs = _segments(enc)
    score = np.full(enc.P, np.nan)
    for s, p in enumerate(enc.ref_pair.tolist()):
        value = meteor_exact(lower[hyps[p]].tolist(), lower[refs[s]].tolist())
        score[p] = value if np.isnan(score[p]) else max(score[p], value)
    return score[:, None]


# ---------------------------------------------------------------- CIDEr
def cider(enc: Encoded, n_max: int = CIDER_N, sigma: float = CIDER_SIGMA) -> np.ndarray:
    """pycocoevalcap's Cider per response; document frequencies from enc's docs (the track's references)."""
    score = np.full(enc.P, np.nan)
    if enc.S == 0:
        return score[:, None]
    if enc.D == 0:
        raise ValueError("CIDEr needs documents (the track's references) for its document frequencies")
    log_docs = math.log(float(enc.D))
    hl_bi = np.maximum(enc.hyp_len - 1, 0)  # pycocoevalcap's 'length' counts bigrams
    rl_bi = np.maximum(enc.ref_len - 1, 0)
    delta = (hl_bi[enc.ref_pair] - rl_bi).astype(float)
    penalty = np.exp(-(delta ** 2) / (2 * sigma ** 2))
    total = np.zeros(enc.S)
    for n in range(1, n_max + 1):
        o = enc.order(n)
        df_gram, df = sorted_unique(o.doc_gram, counts=True)

        def weight(grams: np.ndarray) -> np.ndarray:  # ref_len - log(max(1, df)), as pycocoevalcap
            return log_docs - np.log(np.maximum(1.0, sparse_lookup(df_gram, df.astype(float), grams, 1.0)))

        vh = o.hyp_count * weight(o.hyp_gram)
        norm_h = np.sqrt(np.bincount(o.hyp_pair, weights=vh ** 2, minlength=enc.P))
        w_ref = weight(o.ref_gram)
        vr = o.ref_count * w_ref
        norm_r = np.sqrt(np.bincount(o.ref_seg, weights=vr ** 2, minlength=enc.S))
        hyp_here = o.ref_hyp_count * w_ref
        num = np.bincount(o.ref_seg, weights=np.minimum(hyp_here, vr) * vr, minlength=enc.S)
        nh = norm_h[enc.ref_pair]
        both = (nh != 0) & (norm_r != 0)
        val = np.where(both, num / np.where(both, nh * norm_r, 1.0), num)
        total += val * penalty
    per_seg = total / n_max
    n_refs = np.bincount(enc.ref_pair, minlength=enc.P)
    sums = np.bincount(enc.ref_pair, weights=per_seg, minlength=enc.P)
    ok = n_refs > 0
    score[ok] = sums[ok] / n_refs[ok] * 10.0
    return score[:, None]


# ---------------------------------------------------------------- DIST-n
def distinct_stats(enc: Encoded, n: int) -> np.ndarray:
    """(P, 2): distinct n-grams and all n-grams of each response."""
    o = enc.order(n)
    distinct = np.bincount(o.hyp_pair, minlength=enc.P)
    return np.column_stack([distinct, np.maximum(enc.hyp_len - n + 1, 0)]).astype(float)


def distinct_value(stats: np.ndarray) -> np.ndarray:
    """Per response: distinct over all n-grams; none (NaN, unavailable) for a response with no n-gram (blank, or
    shorter than n): 0/0 is not a value, and 0 would rank it as the least diverse."""
    return np.divide(stats[:, 0], stats[:, 1], out=np.full(len(stats), np.nan), where=stats[:, 1] > 0)


def distinct_corpus(enc: Encoded, n: int, pairs: np.ndarray) -> float | None:
    """Distinct n-grams over all n-grams of the given pairs' responses together; None if they have none."""
    o = enc.order(n)
    chosen = np.zeros(enc.P, dtype=bool)
    chosen[pairs] = True
    total = np.maximum(enc.hyp_len[pairs] - n + 1, 0).sum()
    if total == 0:
        return None
    return float(len(sorted_unique(o.hyp_gram[chosen[o.hyp_pair]])) / total)


# ---------------------------------------------------------------- the metric objects
LEXICAL_VERSION = "1"
ORDER = 10   # where these metrics stand in the registry's (and the pages') order


def lexical_signature(metric: Metric, plan, *extra: str) -> Signature:
    """Tokenizer, n-gram identity, corpus and sentence rules, flavor, version (and what else a
    metric's numbers depend on)."""
    return Signature(metric.name, (
        plan.tokenizer.signature, f"ngram:{'joined' if plan.flavor.joined_ngrams else 'tuple'}",
        f"corpus:{metric.corpus}", f"sentence:{metric.sentence}", f"flavor:{plan.flavor.name}",
        f"v:lexical-{LEXICAL_VERSION}", *(e for e in extra if e)))


def encoded(batch: Batch) -> Encoded:
    """The batch's tokens as n-gram ids, made once for every lexical metric of the batch (with the
    track's references as documents when CIDEr is among them)."""
    plan = batch.plan

    def make() -> Encoded:
        docs = plan.docs if any(isinstance(m, Cider) for m in plan.metrics) else None
        return Encoded.from_texts(plan.tokenizer, batch.hyps, batch.refs, docs, joined=plan.flavor.joined_ngrams)

    return batch.shared("lexical-encoded", make)


class Lexical(Metric):
    groups = ("lexical",)
    forks = True

    def signature(self, plan) -> Signature:
        return lexical_signature(self, plan)

    def compute(self, batch: Batch) -> Result:
        stats = self.stats(encoded(batch), batch)
        return Result(self.sentence_values(stats), stats)

    def stats(self, enc: Encoded, batch: Batch) -> np.ndarray:
        raise NotImplementedError


class F1(Lexical):
    name, corpus, sentence = "F1", "micro-average", "f1"
    description = "Token-overlap F1 between response and reference (best reference per response)"

    def stats(self, enc, batch):
        return f1_stats(enc)

    def sentence_values(self, stats):
        return f1_value(stats)

    def corpus_from(self, stats):
        return f1_corpus(stats)

    def from_sums(self, sums, counts):
        # hits, hypothesis length, reference length: 2PR/(P+R) = 2h/(hl+rl)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(sums[:, 0] > 0, 2 * sums[:, 0] / (sums[:, 1] + sums[:, 2]), 0.0)


class BLEU(Lexical):
    corpus, sentence = "corpus-bleu-no-smoothing", "coco-eps-smoothing"

    def __init__(self, n: int):
        self.n, self.name = n, f"BLEU{n}"
        self.description = (f"BLEU-{n}: geometric mean of clipped 1..{n}-gram precisions times a brevity penalty "
                            "(closest reference length)")

    def stats(self, enc, batch):
        bleu = batch.shared("bleu-stats", lambda: bleu_stats(enc))   # 1..4 once for BLEU1..BLEU4
        return np.column_stack([bleu[:, :2 + self.n], bleu[:, 6:6 + self.n]])  # hyp, ref, m1..mn, t1..tn

    def sentence_values(self, stats):
        return bleu_sentence(stats, self.n, max_n=self.n)

    def corpus_from(self, stats):
        return bleu_corpus(stats, self.n, max_n=self.n)

    def from_sums(self, sums, counts):
        # hyp len, ref len, matches 1..n, totals 1..n; no smoothing
        n = self.n
        m, t = sums[:, 2:2 + n], sums[:, 2 + n:2 + 2 * n]
        with np.errstate(invalid="ignore", divide="ignore"):
            logs = np.where((m > 0) & (t > 0), np.log(np.where(m > 0, m, 1) / np.where(t > 0, t, 1)), -np.inf)
            c, r = sums[:, 0], sums[:, 1]
            bp = np.where(c >= r, 1.0, np.exp(1 - r / np.where(c > 0, c, np.nan)))
            return np.where(np.isinf(logs).any(axis=1), 0.0, bp * np.exp(logs.sum(axis=1) / n))


class Distinct(Lexical):
    # the sentence rule names what a response without n-grams gets (none): its values changed from 0 with it
    corpus, sentence = "pooled-ngrams", "per-response-none-without-ngrams"
    needs_references = False
    pools = True
    no_resample = "DIST pools n-grams over all of a model's responses: no per-item statistics to resample"

    def __init__(self, n: int):
        self.n, self.name = n, f"DIST{n}"
        grams = {1: "unigrams", 2: "bigrams"}.get(n, f"{n}-grams")
        self.description = f"Distinct-{n}: distinct {grams} / all {grams} of the responses"

    def stats(self, enc, batch):
        return distinct_stats(enc, self.n)

    def sentence_values(self, stats):
        return distinct_value(stats)

    def pooled_value(self, plan, texts, idx, memo):
        if not len(idx):
            return None
        # pooled n-grams need every one of the model's responses, not only new ones; they are encoded one
        # model at a time (a whole 500,000-response track at once took gigabytes) and every DIST order
        # is counted on them then, so the encoding is let go at once
        key = ("DIST", hashlib.md5(np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest())
        if key not in memo:
            enc = pooled_texts(plan, [texts[i] for i in idx])
            memo[key] = {n: distinct_corpus(enc, n, np.arange(enc.P)) for n in DIST_ORDERS}
        return memo[key][self.n]


def pooled_texts(plan, texts: list[str]) -> Encoded:
    """Responses encoded without references: DIST's corpus value pools a model's n-grams over them."""
    return Encoded.from_texts(plan.tokenizer, texts, [[] for _ in texts], joined=plan.flavor.joined_ngrams)


class MeteorExact(Lexical):
    name, sentence = "METEOR-exact", "max-over-references"
    description = ("METEOR's formula as in nltk (alpha 0.9, beta 3, gamma 0.5) with exact matching only: no stemming, "
                   "no WordNet synonyms, no paraphrases (not METEOR 1.5: see METEOR)")

    def stats(self, enc, batch):
        return meteor(enc)


class Rouge(Lexical):
    name, sentence = "ROUGE", "best-p-and-r-over-references"
    description = "ROUGE-L F-measure (LCS, beta 1.2) as in pycocoevalcap"

    def stats(self, enc, batch):
        return rouge_l(enc)


class Cider(Lexical):
    name, sentence = "CIDEr", "mean-over-references"
    description = ("CIDEr as in pycocoevalcap (CIDEr-D: clipped TF-IDF n-grams 1-4, length penalty sigma 6, x10), "
                   "document frequencies from the track's references")

    def needs_docs(self, opts) -> bool:
        return True

    def signature(self, plan):
        return lexical_signature(self, plan, plan.df_tag)

    def stats(self, enc, batch):
        return cider(enc)


DIST_ORDERS = (1, 2)
METRICS = [F1(), *(BLEU(n) for n in (1, 2, 3, 4)), *(Distinct(n) for n in DIST_ORDERS), MeteorExact(), Rouge(),
           Cider()]
