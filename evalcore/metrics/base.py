"""What a metric is: one object that owns its metadata, its per-response statistics, its sentence and
corpus values from those statistics, its signature, and why it cannot run here.

The scorer, the leaderboard, the rank bootstrap, correlations and the pages only call these methods:
a metric's own rules live in its own module (lexical.py, chrf.py, meteor15.py, external.py) or in its
family's folder (neural/metric.py, learned/metric.py, judge/metric.py). The registry collects every module
of this package, and every family folder's `metric` module, that has a METRICS list, so adding a metric is
adding a module (docs/development/architecture.md, "Adding a metric").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

TRANSIENT = "request failed"   # a reason that does not last (a judge's failed request): asked again next run


@dataclass(frozen=True)
class Signature:
    """Everything that changes a number, sacrebleu style: the metric's name, then its settings, joined
    by '|'. Two scores with different signatures are different metrics; the cache is keyed by it."""

    name: str
    parts: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "|".join((self.name, *self.parts))

    @classmethod
    def parse(cls, text: str) -> Signature:
        name, *parts = text.split("|")
        return cls(name, tuple(parts))

    def field(self, key: str) -> str | None:
        """The value of a 'key:value' part, or None."""
        for part in self.parts:
            if part.startswith(key + ":"):
                return part[len(key) + 1:]
        return None


@dataclass
class Result:
    """A metric's output for a batch: each response's value (NaN where it has none), its statistics
    (a row per response), and optionally why a response has no value."""

    values: np.ndarray
    stats: np.ndarray
    reasons: np.ndarray | None = None

    @classmethod
    def of_values(cls, values: np.ndarray) -> Result:
        values = np.asarray(values, dtype=float)
        return cls(values, values[:, None].copy())


class Batch:
    """Responses scored together, with what several metrics of one batch share (token encodings, BLEU
    statistics, one BERTScore pass) made once: `shared(key, make)`."""

    def __init__(self, plan, hyps: list[str], refs: list[list[str]], contexts: list[str] | None = None, rows=None):
        self.plan, self.hyps, self.refs = plan, hyps, refs
        self.contexts = contexts if contexts is not None else [""] * len(hyps)
        # each response's item (context, grounding, a pairwise baseline's text) as a DataFrame
        self.rows = rows if rows is not None else pd.DataFrame(index=range(len(hyps)))
        self._shared: dict = {}

    def __len__(self) -> int:
        return len(self.hyps)

    def shared(self, key, make):
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


class Metric:
    """A metric. Subclasses set the metadata and implement `signature` and `compute`; the defaults
    below are those of a metric whose statistic is its value (corpus value: the mean)."""

    name: str = ""
    description: str = ""
    corpus: str = "mean"          # how the per-model value is formed (named in the signature)
    sentence: str = ""            # how the per-response value is formed
    family: str = "lexical"       # lexical | neural | judge | external
    groups: tuple[str, ...] = ()  # `--metrics` groups it belongs to (lexical, neural, learned, judge, ...)
    level: str = "response"       # values per response; system values aggregate them
    higher_is_better: bool = True
    needs_references: bool = True
    needs_context: bool = False   # scored against the item's last context turn (cache keyed by it)
    needs_model: bool = False     # runs a neural model or a server
    per_item: bool = False        # its value belongs to one item's response: cached under the item id and text
    needs_item: bool = False      # reads the item's whole context and grounding (load_track(full=True))
    tokenized: bool = True        # depends on the flavor and tokenizer (else stored under 'any')
    batch_size: int | None = None  # responses per batch at most (a progress step of a minute or less)
    group_by_item: bool = False   # an item's responses in one batch (its references encoded once)
    retries_failures: bool = False  # values missing for a TRANSIENT reason are asked again
    pools: bool = False           # its corpus value is pooled from the texts, not formed from statistics
    no_resample: str | None = None  # why a per-item bootstrap cannot rebuild its corpus value
    scale_out: bool = False       # `score --engine ray` runs it on Ray actors (heavy models); else it stays local
    forks: bool = False           # pure CPU work (no model, server or thread of its own): computed in forked helpers too

    # ------------------------------------------------------------------ what the scorer asks first
    def availability(self, opts) -> str | None:
        """Why it cannot run with these options here (a package, a checkpoint, a server), or None."""
        return None

    def needs_docs(self, opts) -> bool:
        """Does it read the track's references as a document collection (CIDEr's df, BERTScore's idf)?"""
        return False

    def prepare(self, con, data, opts):
        """Before a track is scored: read what the options leave open from the store (a trained
        model), add columns it needs to the track's rows; returns the options to score with."""
        return opts

    # ------------------------------------------------------------------ its numbers
    def signature(self, plan) -> Signature:
        raise NotImplementedError

    def compute(self, batch: Batch) -> Result:
        raise NotImplementedError

    def sentence_values(self, stats: np.ndarray) -> np.ndarray:
        """Each response's own value from its statistics."""
        return stats[:, 0]

    def corpus_value(self, stats: np.ndarray) -> float | None:
        """A model's corpus value from its responses' statistics (rows with NaN have no value)."""
        stats = stats[~np.isnan(stats).any(axis=1)]
        return self.corpus_from(stats) if len(stats) else None

    def corpus_from(self, stats: np.ndarray) -> float:
        return float(stats[:, 0].mean())

    def from_sums(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Corpus values from summed statistics (a row per bootstrap resample; `counts` responses each)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums[:, 0] / counts

    def sentence_mean(self, stats: np.ndarray) -> float | None:
        """The mean of the responses' values (the sentence-mean system aggregate), over the responses that have one
        (a blank response has no DIST)."""
        stats = stats[~np.isnan(stats).any(axis=1)]
        values = self.sentence_values(stats) if len(stats) else np.array([])
        values = values[~np.isnan(values)]
        return float(np.mean(values)) if len(values) else None

    def pooled_value(self, plan, texts: list[str], idx: np.ndarray, memo: dict) -> float | None:
        """For `pools` metrics: the corpus value of the responses `idx` of `texts` (memo: per track)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ what a run says
    def notes(self, plan, stats: np.ndarray | None, reasons: np.ndarray | None) -> list[str]:
        """What to tell about this run's responses (after 'track: '): how many got no value and why."""
        if reasons is None or len(reasons) == 0:
            return []
        failed = [w for w in reasons if w]
        if not failed:
            return []
        kinds: dict[str, str] = {}
        for w in failed:
            kinds.setdefault(w.split(":", 1)[0], w)
        return [f"{self.name}: {len(failed)} of {len(reasons)} judgments gave no value (stored with the reason, "
                "no number): " + "; ".join(f"{sum(w.startswith(k) for w in failed)} {k}, e.g. {e!r}"
                                           for k, e in kinds.items())]

    def release(self) -> None:
        """After a scoring run: let go of what it holds (a METEOR Java process)."""

    def __repr__(self) -> str:
        return f"<metric {self.name}>"
