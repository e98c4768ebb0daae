"""LLM judges through an OpenAI-compatible endpoint (evalcore/metrics/judge): G-Eval-style rubrics for the MSDE
dimensions, MT-Bench single grading, MT-Bench pairwise against a baseline model. A judge reads the
item's whole context and grounding, so its values are cached per item and response text; a request
that failed is stored with its reason and asked again on the next run."""
from __future__ import annotations

from evalcore.core.names import require
from evalcore.metrics.base import Metric, Result, Signature
from evalcore.metrics.judge import client, prompts
from evalcore.metrics.judge import scorer as J
from evalcore.metrics.judge.prompts import DIMENSION_SCALES, MTBENCH_SCALE, geval_messages, mtbench_single_messages
from evalcore.metrics.judge.scorer import bias_note, signature_parts

ORDER = 40
JUDGE_CHUNK = 256  # requests per progress step


class Judge(Metric):
    family, groups, sentence = "judge", ("judge",), "judge-rating"
    needs_references, needs_model, per_item, needs_item, tokenized = False, True, True, True, False
    batch_size = JUDGE_CHUNK
    retries_failures = True
    template, dimension, pairwise = "", None, False

    def availability(self, opts):
        return client.availability(opts.judge)

    def signature(self, plan):
        return Signature(self.name, signature_parts(self.template, self.dimension, plan.neural, self.pairwise))

    def compute(self, batch):

        opts = batch.plan.neural
        lang = prompts.norm_lang(opts.lang)
        contexts, groundings = J.item_texts(batch.rows, len(batch))
        values, reasons = J.ratings(opts, self.conversations(lang, contexts, batch.hyps, batch.refs, groundings),
                                    *self.scale())
        return Result(values, values[:, None].copy(), reasons)


class GEval(Judge):
    template = "geval"

    def __init__(self, dimension: str):
        self.dimension, self.name = dimension, f"Judge-{dimension}"
        self.description = (f"G-Eval-style LLM judge of {dimension} on the MSDE paper's 0-2 scale, with a rubric "
                            "from the paper's definition (Chinese or English by the dataset's language)")

    def scale(self):
        return DIMENSION_SCALES[self.dimension]

    def conversations(self, lang, contexts, hyps, refs, groundings):
        return [geval_messages(self.dimension, lang, c, h, r, g) for c, h, r, g in zip(contexts, hyps, refs, groundings)]


class MTBenchSingle(Judge):
    name, template = "Judge-MTBench", "mtbench-single"
    description = "MT-Bench single-answer grading 1-10 (FastChat's single-v1 prompt)"

    def scale(self):
        return MTBENCH_SCALE

    def conversations(self, lang, contexts, hyps, refs, groundings):
        return [mtbench_single_messages(c, h, lang) for c, h in zip(contexts, hyps)]


class Pairwise(Judge):
    name, template, pairwise = "Judge-Pairwise", "pairwise", True
    description = ("MT-Bench pairwise against a baseline model (FastChat's pair-v2 prompt), judged in both orders: "
                   "1 win, 0.5 tie, 0 loss per order, averaged; the system value is the win rate")

    def availability(self, opts):
        why = super().availability(opts)
        if why is None and not opts.judge_baseline:
            return "pairwise judging needs a baseline model: give --judge-baseline MODEL (a model of the track)"
        return why

    def prepare(self, con, data, opts):
        """Each response's item gets the baseline's response to it (baseline_text) and whether it is the
        baseline's own (is_baseline)."""
        if opts.judge_baseline:
            if opts.judge_baseline not in set(data["model"]):
                require("model", opts.judge_baseline, sorted(set(data["model"])))   # raises, closest names first
            own = data["model"].to_numpy() == opts.judge_baseline
            data["baseline_text"] = data["item_id"].map(data.loc[own].set_index("item_id")["text"])
            data["is_baseline"] = own
        return opts

    def compute(self, batch):

        opts = batch.plan.neural
        contexts, _ = J.item_texts(batch.rows, len(batch))
        return Result(*J.pairwise(opts, batch.hyps, contexts, batch.rows, prompts.norm_lang(opts.lang)))

    def notes(self, plan, stats, reasons):
        out = super().notes(plan, stats, reasons)
        note = bias_note(stats) if stats is not None else None
        return out + ([f"{self.name} vs {plan.neural.judge_baseline}: {note}"] if note else [])


METRICS = [*(GEval(d) for d in ("Info", "Coh", "Know", "Rec")), MTBenchSingle(), Pairwise()]
