"""The Python API for notebooks, in the shape people know from sacrebleu.

    import evalcore
    result = evalcore.score(hypotheses, references, metrics=["BLEU4", "F1"], language="zh")
    result.corpus["BLEU4"], result.sentence, result.signatures["BLEU4"]

    with evalcore.open("lab.duckdb") as store:
        store.leaderboard("demo-zh", "kdconv/knowledge")

`score` needs no store: the same code as `evalcore score` computes the values, so they equal the
store's for the same texts and signature. `open` reads a store; each call opens it and lets it go
(the dashboard and the CLI can use the store between calls).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from evalcore.analysis import correlate
from evalcore.analysis import leaderboard as lb
from evalcore.analysis import trust as tr
from evalcore.analysis.agreement_corr import agreement_table
from evalcore.analysis.trust_opening import opening
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.registry import get_flavor, pick_tokenizer, resolve_metrics
from evalcore.scoring import SENTENCE_MEAN, Plan, compute, needs_docs
from evalcore.store import connect, lock_wait, queries, resolve_db_path


@dataclass
class Scores:
    """What `score` gives: one row per hypothesis (a column per metric), the corpus value and the
    signature of each metric, and the metrics that could not run here with the reason."""

    sentence: pd.DataFrame
    corpus: dict[str, float | None]
    signatures: dict[str, str]
    unavailable: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, list] = field(default_factory=dict)   # judge metrics: why a response has no value

    def __repr__(self) -> str:
        lines = [f"{name} = {value if value is None else round(value, 4)}  ({self.signatures[name]})"
                 for name, value in self.corpus.items()]
        lines += [f"{name}: unavailable ({why})" for name, why in self.unavailable.items()]
        return "\n".join(lines) or "no metric ran"


def _reference_lists(hypotheses: list[str], references) -> list[list[str]]:
    if references is None:
        return [[] for _ in hypotheses]
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    if len(refs) != len(hypotheses):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(refs)} reference entries: give one entry "
                         "(a string or a list of strings) per hypothesis")
    return refs


def score(hypotheses: list[str], references=None, *, metrics: str | list[str] = "lexical", language: str = "zh",
          flavor: str = "default", tokenizer: str | None = None, contexts: list[list[str]] | None = None,
          system_aggregate: str = "corpus", **options) -> Scores:
    """Metric values of `hypotheses` against `references` (per hypothesis: a string or a list of
    strings), without a store. `metrics`: names or groups as `evalcore score --metrics` takes them.
    `language` picks the default tokenizer (char for Chinese, en for English) and METEOR's mode.
    `contexts` (per hypothesis, the dialogue so far) is read by ABLSTM and the LLM judges.
    Model options (`bertscore_model`, `bertscore_layer`, `idf`, `device`, `judge` (an
    evalcore.metrics.judge.Endpoint), `judge_concurrency`, ...) are NeuralOptions' fields.
    Corpus values follow each metric's corpus rule (BLEU's corpus statistics, DIST pooled, means
    otherwise); system_aggregate="sentence-mean" gives the mean of the sentence values instead."""
    hyps = [str(h) for h in hypotheses]
    refs = _reference_lists(hyps, references)
    lang = "en" if language.lower().startswith("en") else "zh"
    opts = replace(NeuralOptions(**options), lang=lang)
    fl = get_flavor(flavor)
    infos = resolve_metrics(metrics)
    docs = [r for r in refs if r] if needs_docs(infos, opts) else []
    plan = Plan(infos, fl, pick_tokenizer(fl, language, tokenizer), docs, opts, system_aggregate)
    last_turns = [c[-1] if c else "" for c in contexts] if contexts is not None else [""] * len(hyps)
    has_ref = np.array([bool(r) for r in refs])
    why: dict = {}
    rows = pd.DataFrame({"context": list(contexts) if contexts is not None else [[] for _ in hyps]})
    try:
        results = compute(plan, hyps, refs, last_turns, rows=rows, reasons=why) if hyps and plan.metrics else {}
    finally:
        for m in infos:
            m.release()
    sentence, corpus, signatures = {}, {}, {}
    memo: dict = {}
    mean_of_sentences = plan.system_aggregate == "sentence-mean"
    for m in plan.metrics:
        values, stats = results.get(m.name, (np.full(len(hyps), np.nan), np.full((len(hyps), 1), np.nan)))
        usable = has_ref if m.needs_references else np.ones(len(hyps), bool)
        values = np.where(usable, values, np.nan)   # no reference: no value, never a 0
        sentence[m.name] = values
        idx = np.flatnonzero(usable)
        if m.pools and not mean_of_sentences:
            corpus[m.name] = m.pooled_value(plan, hyps, idx, memo)
        else:
            corpus[m.name] = m.sentence_mean(stats[idx]) if mean_of_sentences else m.corpus_value(stats[idx])
        signatures[m.name] = plan.signatures[m.name] + (SENTENCE_MEAN if mean_of_sentences else "")
    return Scores(pd.DataFrame(sentence), corpus, signatures, dict(plan.unavailable),
                  {name: list(r) for name, r in why.items()})


class Store:
    """A store's tables as DataFrames (what the dashboard's pages and the CLI show)."""

    def __init__(self, db: str | None = None):
        self.path = resolve_db_path(db)
        if not self.path.exists():
            raise FileNotFoundError(f"no store at {self.path}; `evalcore init --db {self.path}` builds one")

    def _call(self, fn, *args, **kwargs):
        con = connect(self.path, wait=lock_wait())
        try:
            return fn(con, *args, **kwargs)
        finally:
            con.close()

    def summary(self, dataset: str | None = None) -> pd.DataFrame:
        return self._call(queries.summary, dataset)

    def leaderboard(self, dataset: str, track: str | None = None, **options) -> pd.DataFrame:
        """As `evalcore leaderboard`: options flavor, tokenizer, rank_by, partial, resamples, seed."""
        return self._call(lb.leaderboard, dataset, track, **options)

    def signatures(self, dataset: str, track: str | None = None, **options) -> pd.DataFrame:
        return self._call(lb.signatures, dataset, track, **options)

    def correlations(self, dataset: str, track: str | None = None, **options) -> pd.DataFrame:
        """As `evalcore correlate`: options level, origin, methods, bootstrap, seed, aggregate, ..."""
        return self._call(correlate.correlations, dataset, track, **options)

    def agreement(self, dataset: str, track: str | None = None, **options) -> pd.DataFrame:
        """As `evalcore agreement`: options statistics (('chance',) default; 'corr_pairwise', 'corr_loo',
        'corr_item_mean'), methods, raters ('ids' or 'slots'), outliers ('none' or 'fed'), bootstrap, seed. The
        outlier rule's counts per dimension are in the table's attrs['outliers']."""
        table, removed = self._call(agreement_table, dataset, track, **options)
        table.attrs["outliers"] = removed
        return table

    def trust(self, dataset: str, **options) -> pd.DataFrame:
        """As `evalcore trust`: options level, method, dimension, origin, ...; without a level, the first level
        (and origin) where some skill has a verdict (evalcore.analysis.trust_opening.opening), as the command and the
        page open. The table's attrs say which and why ('level', 'origin', 'why')."""
        def run(con, dataset: str, **options) -> pd.DataFrame:
            why = ""
            if "level" not in options:
                chosen = {k: v for k, v in options.items() if k in OPENING_OPTIONS}
                found = opening(con, dataset, **chosen)
                if found.level is not None:
                    options = {**options, "level": found.level, "origin": found.origin}
                why = found.why
            table = tr.trust(con, dataset, **options)
            table.attrs.update(level=options.get("level", "system"), origin=options.get("origin", "computed"), why=why)
            return table

        return self._call(run, dataset, **options)

    def close(self) -> None:
        """Nothing is held between calls; here so `with evalcore.open(...)` reads naturally."""

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"evalcore.Store({str(self.path)!r})"


# the options of trust() that also decide where it opens (evalcore.analysis.trust_opening.opening)
OPENING_OPTIONS = ("method", "dimension", "flavor", "tokenizer", "aggregate", "models", "system_aggregate", "origin")


def open(db: str | None = None) -> Store:  # noqa: A001 - evalcore.open, as in the README
    """The store at `db` (default: $EVALCORE_DB, else the per-user default store)."""
    return Store(db)
