"""Which of an evaluation record's metric signatures `record verify` computes again here, and with which options.

A signature names everything that changed its numbers, so the options to compute it again are read from it: a
BERTScore's layer and idf, a judge's model, server, sampling, pairwise baseline and sample. What a signature
cannot carry comes from the verifier's own options (a model directory, a BLEURT checkpoint, the judge's URL and
key variable). Computed again, a metric either gives the record's signature (its values are then compared) or
another one (this machine differs: the record's values stand, and verify says so).

A judge is asked again only when the verifier names the same server (`--judge-base-url` with the record's host)
and the model the record names answers there: a judge that was rerouted or retired gives other numbers, which is
what verify exists to show, but an unreachable one gives none (those values are left as the record's).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from evalcore.metrics import neural, registry
from evalcore.metrics.base import Signature
from evalcore.metrics.neural import NeuralOptions

FAMILIES = ("lexical", "neural", "judge")   # the external family was computed elsewhere: never recomputed
RECORD = "values taken from the record"


@dataclass(frozen=True)
class Redo:
    """One scoring run of the scratch store: these metrics under these options, to give these signatures."""

    options: NeuralOptions
    metrics: tuple[str, ...]
    signatures: tuple[str, ...]


def _judge(sig: Signature, given: NeuralOptions) -> NeuralOptions | str:
    """The record's judge asked again at the verifier's server, with the record's sampling; or why not."""
    named = sig.field("judge") or ""
    model, _, host = named.rpartition("@")
    if given.judge is None:
        return (f"its judge ({named}) is asked again only with --judge-base-url of that server (the model is the "
                f"record's)")
    if given.judge.host != host:
        return f"its judge is {named}; --judge-base-url names {given.judge.host}, another server"
    t = sig.field("t")
    endpoint = replace(given.judge, model=model, temperature=None if t in (None, "None") else float(t),
                       max_tokens=int(sig.field("max") or given.judge.max_tokens))
    sample = sig.field("sample")
    return replace(given, judge=endpoint, judge_baseline=sig.field("baseline") or given.judge_baseline,
                   judge_sample=int(sample) if sample is not None else None)


def _model(sig: Signature, given: NeuralOptions) -> NeuralOptions | str:
    """BERTScore's layer and idf from the signature; the backbone and checkpoints are the verifier's (a backbone
    other than the record's is named before anything is computed: its values could never match)."""
    layer, idf = sig.field("layer"), sig.field("idf")
    if layer is None:
        return given
    opts = replace(given, bertscore_layer=int(layer), idf=idf not in (None, "no"),
                   rescale=sig.field("rescale") not in (None, "no"))
    here = neural.backbone_name(opts)
    if sig.field("model") != here:
        return (f"its backbone is {sig.field('model')}; this machine's is {here} (give the record's with "
                f"--bertscore-model DIR)")
    return opts


def plan(signatures: pd.DataFrame, given: NeuralOptions | None = None) -> tuple[list[Redo], list[str]]:
    """The runs that recompute what this machine can of `signatures` (metric, signature rows), and one line per
    metric or signature that is not recomputed, saying why."""
    given = given or NeuralOptions()
    known = registry.METRICS   # built-ins only: a store's imported metrics were computed elsewhere
    runs: dict[NeuralOptions, tuple[list[str], list[str]]] = {}
    why: list[str] = []
    for metric, rows in signatures.groupby("metric", sort=True):
        info = known.get(metric)
        if info is None or info.family not in FAMILIES:
            why.append(f"{metric}: computed elsewhere (an imported or external metric): {RECORD}")
            continue
        for text in sorted(rows["signature"]):
            sig = Signature.parse(text)
            opts = _judge(sig, given) if info.family == "judge" else _model(sig, given)
            reason = opts if isinstance(opts, str) else info.availability(opts)
            if reason:
                why.append(f"{metric}: {reason}: {RECORD}")
                continue
            names, sigs = runs.setdefault(opts, ([], []))
            if metric not in names:
                names.append(metric)
            sigs.append(text)
    # one line per metric a judge or a model blocked, not one per signature
    return [Redo(o, tuple(n), tuple(s)) for o, (n, s) in runs.items()], list(dict.fromkeys(why))
