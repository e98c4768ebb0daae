"""chrF (Popović 2015) and chrF++ (Popović 2017) with sacrebleu's default rules (CHRF(), CHRF(word_order=2)).

Per response: character n-gram counts for n = 1..6 on the text with all whitespace removed (and for
chrF++ word uni- and bigrams of the whitespace-split words, punctuation split off a word's ends), and
for each order (hypothesis n-grams, reference n-grams, clipped matches) against the reference with the
best F-score (the first on ties). These 3 x orders counts are the statistics: the sentence value is
the F-beta (beta 2) of the orders' mean precision and recall over the orders both sides have
("effective order", sacrebleu's default), and the corpus value the same of the summed statistics, as
sacrebleu's corpus_score. Values are on 0-1, the scale of every other metric of a leaderboard table
(sacrebleu's 0-100 value divided by 100; `scale:0-1` in the signature, and `v:chrf-2`, so values
cached under the old 0-100 signature `v:chrf-1` are never mixed with these). Chinese text needs no tokenizer:
characters are the units, so the values depend on no flavor or tokenizer.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from evalcore.metrics.base import Metric, Result, Signature

ORDER = 15
CHRF_VERSION = "2"   # 2: on 0-1 (1 was sacrebleu's 0-100)
SCALE = "0-1"
CHAR_ORDER, BETA = 6, 2
PUNCTUATION = set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


def words(text: str) -> list[str]:
    """Whitespace-split words with one punctuation mark split off the end (else the start) of a word."""
    out = []
    for w in text.split():
        if len(w) > 1 and w[-1] in PUNCTUATION:
            out += [w[:-1], w[-1]]
        elif len(w) > 1 and w[0] in PUNCTUATION:
            out += [w[0], w[1:]]
        else:
            out.append(w)
    return out


def ngram_counts(text: str, word_order: int) -> list[Counter]:
    """Counters of character n-grams 1..6 (whitespace removed), then word n-grams 1..word_order."""
    chars = "".join(text.split())
    out = [Counter(chars[i:i + n] for i in range(len(chars) - n + 1)) for n in range(1, CHAR_ORDER + 1)]
    ws = words(text) if word_order else []
    out += [Counter(" ".join(ws[i:i + n]) for i in range(len(ws) - n + 1)) for n in range(1, word_order + 1)]
    return out


def pair_stats(hyp: list[Counter], ref: list[Counter]) -> list[int]:
    """Per order: hypothesis n-grams (0 when the reference has none of that order), reference n-grams,
    clipped matches."""
    out = []
    for h, r in zip(hyp, ref):
        out += [sum(h.values()) if r else 0, sum(r.values()), sum(min(c, r[g]) for g, c in h.items() if g in r)]
    return out


def f_scores(stats: np.ndarray, beta: float = BETA) -> np.ndarray:
    """chrF of each row of statistics (3 per order): F-beta of the mean precision and recall over the
    orders where both sides have n-grams; 0 where there is none. On 0-1 (sacrebleu's value / 100)."""
    stats = np.atleast_2d(np.asarray(stats, dtype=float))
    hyp, ref, match = stats[:, 0::3], stats[:, 1::3], stats[:, 2::3]
    effective = (hyp > 0) & (ref > 0)
    k = effective.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.where(effective, match / np.where(hyp > 0, hyp, 1), 0.0).sum(axis=1) / np.where(k > 0, k, 1)
        rec = np.where(effective, match / np.where(ref > 0, ref, 1), 0.0).sum(axis=1) / np.where(k > 0, k, 1)
        factor = beta ** 2
        score = (1 + factor) * prec * rec / (factor * prec + rec)
    return np.where(prec + rec > 0, score, 0.0)


class CharF(Metric):
    corpus, sentence = "summed-statistics", "best-reference"
    groups = ("chrf",)
    tokenized = False   # characters and whitespace-split words: no tokenizer, no flavor
    forks = True

    def __init__(self, name: str, word_order: int, description: str):
        self.name, self.word_order, self.description = name, word_order, description

    def signature(self, plan) -> Signature:
        return Signature(self.name, (f"nc:{CHAR_ORDER}", f"nw:{self.word_order}", f"beta:{BETA}", "case:mixed",
                                     "space:no", "eff:yes", f"corpus:{self.corpus}", f"sentence:{self.sentence}",
                                     f"scale:{SCALE}", f"v:chrf-{CHRF_VERSION}"))

    def compute(self, batch) -> Result:
        width = 3 * (CHAR_ORDER + self.word_order)
        stats = np.full((len(batch), width), np.nan)
        for i, (hyp, refs) in enumerate(zip(batch.hyps, batch.refs)):
            if not refs:
                continue   # no reference: no value
            h = ngram_counts(hyp, self.word_order)
            candidates = [pair_stats(h, ngram_counts(r, self.word_order)) for r in refs]
            scores = f_scores(np.array(candidates))
            stats[i] = candidates[int(np.argmax(scores))]   # the first best, as sacrebleu's strict '>'
        return Result(self.sentence_values(stats), stats)

    def sentence_values(self, stats):
        return np.where(np.isnan(stats).any(axis=1), np.nan, f_scores(np.nan_to_num(stats)))

    def corpus_from(self, stats):
        return float(f_scores(stats.sum(axis=0))[0])

    def from_sums(self, sums, counts):
        return f_scores(sums)


METRICS = [
    CharF("chrF", 0, "chrF (sacrebleu's CHRF() / 100, on 0-1): F-beta (beta 2) of character 1-6-gram precision and recall "
          "averaged over orders, best reference per response; corpus value from summed statistics"),
    CharF("chrF++", 2, "chrF++ (sacrebleu's CHRF(word_order=2) / 100, on 0-1): chrF with word uni- and bigrams added to the "
          "character 1-6-grams"),
]
