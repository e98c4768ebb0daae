"""What each metric is: names as in the MSDE paper's tables, metadata the UI reads, signatures.

A signature names everything that changes a number (sacrebleu style). Two scores with different
signatures are different metrics; the cache is keyed by signature.
"""
from __future__ import annotations

from dataclasses import dataclass

from evalcore.tokenize import Tokenizer, get_tokenizer

LEXICAL_VERSION = "1"


@dataclass(frozen=True)
class MetricInfo:
    name: str
    kind: str                  # f1 | bleu | rouge | meteor | dist | cider | bertscore | embedding | sentence | bleurt
    description: str
    corpus: str                # how the per-model value is formed
    sentence: str              # how the per-response value is formed
    n: int | None = None
    family: str = "lexical"
    higher_is_better: bool = True
    needs_references: bool = True
    needs_context: bool = False      # scored against the item's last context turn (learned metrics)
    per_item: bool = False           # its value belongs to one item's response (external scores, judges
                                     # that read the whole context): cached under the item id and text


def _bleu(n: int) -> MetricInfo:
    return MetricInfo(
        f"BLEU{n}", "bleu",
        f"BLEU-{n}: geometric mean of clipped 1..{n}-gram precisions times a brevity penalty "
        "(closest reference length)",
        corpus="corpus-bleu-no-smoothing", sentence="coco-eps-smoothing", n=n)


METRICS: dict[str, MetricInfo] = {m.name: m for m in [
    MetricInfo("F1", "f1", "Token-overlap F1 between response and reference (best reference per response)",
               corpus="micro-average", sentence="f1"),
    *[_bleu(n) for n in (1, 2, 3, 4)],
    MetricInfo("DIST1", "dist", "Distinct-1: distinct unigrams / all unigrams of the responses",
               corpus="pooled-ngrams", sentence="per-response", n=1, needs_references=False),
    MetricInfo("DIST2", "dist", "Distinct-2: distinct bigrams / all bigrams of the responses",
               corpus="pooled-ngrams", sentence="per-response", n=2, needs_references=False),
    MetricInfo("METEOR-exact", "meteor", "METEOR's formula as in nltk (alpha 0.9, beta 3, gamma 0.5) with exact "
               "matching only: no stemming, no WordNet synonyms, no paraphrases (not METEOR 1.5: see METEOR)",
               corpus="mean", sentence="max-over-references"),
    MetricInfo("ROUGE", "rouge", "ROUGE-L F-measure (LCS, beta 1.2) as in pycocoevalcap",
               corpus="mean", sentence="best-p-and-r-over-references"),
    MetricInfo("CIDEr", "cider", "CIDEr as in pycocoevalcap (CIDEr-D: clipped TF-IDF n-grams 1-4, "
               "length penalty sigma 6, x10), document frequencies from the track's references",
               corpus="mean", sentence="mean-over-references"),
]}
LEXICAL = list(METRICS)
# METEOR 1.5 runs in Java (evalcore/metrics/meteor15.py): asked for by name, not in the quick `lexical` set.
METRICS["METEOR"] = MetricInfo(
    "METEOR", "meteor15", "METEOR 1.5 through pycocoevalcap's jar: exact, stem, WordNet synonym and paraphrase "
    "matching for English (-l en -norm); METEOR's language-independent exact matching on the track's tokens for "
    "other languages (-l other); needs a Java runtime", corpus="mean", sentence="meteor-1.5-segment")


def _neural(name: str, kind: str, description: str) -> MetricInfo:
    return MetricInfo(name, kind, description, corpus="mean", sentence="max-over-references", family="neural")


METRICS.update({m.name: m for m in [
    _neural("BS-P", "bertscore", "BERTScore precision: idf-weighted mean over response tokens of the best cosine "
            "with a reference token (contextual embeddings of one model layer; bert-score's rules)"),
    _neural("BS-R", "bertscore", "BERTScore recall: the same over reference tokens"),
    _neural("BS-F1", "bertscore", "BERTScore F1: 2PR / (P + R)"),
    _neural("EV", "embedding", "Embedding Average: cosine of the summed token vectors (USE multilingual v3 "
            "token table) of response and reference, as in nlg-eval"),
    _neural("VE", "embedding", "Vector Extrema: cosine of the per-dimension extreme values of the token vectors "
            "(USE multilingual v3 token table), as in nlg-eval"),
    _neural("GM", "embedding", "Greedy Matching: mean best token-to-token cosine in both directions, averaged "
            "(USE multilingual v3 token table), as in nlg-eval"),
    _neural("ST", "sentence", "Sentence-encoder cosine (multilingual Universal Sentence Encoder v3). NOT "
            "Skip-Thought: it stands in for the MSDE paper's ST column because no Chinese Skip-Thought model exists"),
    _neural("BLEURT", "bleurt", "BLEURT: a learned regression from (reference, response) to a quality score; "
            "only with a checkpoint given by --bleurt-checkpoint"),
]})
METRICS["ABLSTM"] = MetricInfo(
    "ABLSTM", "ablstm", "AB-LSTM-bi-MLP (seed 004): probability that the response really follows the last context "
    "turn, from a discriminator trained on the store's own dialogues (no references, no human labels); "
    "its signature names the training data and held-out accuracy",
    corpus="mean", sentence="p-real", family="neural", needs_references=False, needs_context=True)


def _judge(name: str, kind: str, description: str) -> MetricInfo:
    return MetricInfo(name, kind, description, corpus="mean", sentence="judge-rating", family="judge",
                      needs_references=False, per_item=True)


# LLM judges through an OpenAI-compatible endpoint (evalcore/judge): the judge reads the item's whole
# context and grounding, so its values are cached per item and response text.
METRICS.update({m.name: m for m in [
    *[_judge(f"Judge-{d}", "geval", f"G-Eval-style LLM judge of {d} on the MSDE paper's 0-2 scale, with a rubric "
             "from the paper's definition (Chinese or English by the dataset's language)")
      for d in ("Info", "Coh", "Know", "Rec")],
    _judge("Judge-MTBench", "mtbench", "MT-Bench single-answer grading 1-10 (FastChat's single-v1 prompt)"),
    _judge("Judge-Pairwise", "pairwise", "MT-Bench pairwise against a baseline model (FastChat's pair-v2 prompt), "
           "judged in both orders: 1 win, 0.5 tie, 0 loss per order, averaged; the system value is the win rate"),
]})
BUILTIN = frozenset(METRICS)


def external_info(name: str, higher_is_better: bool, description: str | None) -> MetricInfo:
    return MetricInfo(name, "external", description or "external metric: values imported with `import scores`",
                      corpus="mean", sentence="imported", family="external", higher_is_better=higher_is_better,
                      needs_references=False, per_item=True)


def use_external(rows: list[tuple[str, bool, str | None]]) -> None:
    """Register the opened store's external metrics (name, higher_is_better, description), replacing those
    of a store opened before: readers look every metric up in METRICS, built-in or imported."""
    for name in [n for n, m in METRICS.items() if m.family == "external"]:
        del METRICS[name]
    for name, better, description in rows:
        if name not in BUILTIN:
            METRICS[name] = external_info(name, bool(better), description)


GROUPS = {"lexical": LEXICAL, "neural": [n for n, m in METRICS.items() if m.family == "neural" and m.kind != "ablstm"],
          "learned": ["ABLSTM"], "judge": [n for n, m in METRICS.items() if m.family == "judge"]}


@dataclass(frozen=True)
class Flavor:
    name: str
    tokenizer: str | None      # None: by the dataset's language
    joined_ngrams: bool
    description: str


FLAVORS = {
    "default": Flavor("default", None, False,
                      "char tokens for Chinese (en tokens for English), n-grams as token tuples"),
    "msde": Flavor("msde", "space", True,
                   "the MSDE paper's numbers: the LIC 2019 DuConv script's semantics on whitespace tokens "
                   "of the stored texts (n-grams identified by their joined tokens)"),
}


def resolve_metrics(spec: str | list[str]) -> list[MetricInfo]:
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[MetricInfo] = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        if name in GROUPS:
            out += [METRICS[m] for m in GROUPS[name] if METRICS[m] not in out]
        elif name in METRICS:
            if METRICS[name] not in out:
                out.append(METRICS[name])
        else:
            from evalcore.names import require

            require("metric", name, [*GROUPS, *METRICS])  # raises, listing the closest first
    if not out:
        raise ValueError("no metrics given")
    return out


def get_flavor(name: str) -> Flavor:
    try:
        return FLAVORS[name]
    except KeyError:
        raise ValueError(f"unknown flavor {name!r}; known: {', '.join(FLAVORS)}") from None


def pick_tokenizer(flavor: Flavor, language: str | None, override: str | None = None) -> Tokenizer:
    if override:
        return get_tokenizer(override)
    if flavor.tokenizer:
        return get_tokenizer(flavor.tokenizer)
    return get_tokenizer("en" if (language or "").lower().startswith("en") else "char")


def signature(metric: MetricInfo, flavor: Flavor, tokenizer: Tokenizer, extra: str = "") -> str:
    if metric.kind == "meteor15":  # the jar's own matching; the tokenizer only where METEOR has no -norm
        tok = "tok:meteor-norm" if extra.startswith("meteor:1.5|l:en") else tokenizer.signature
        return "|".join([metric.name, extra, tok, f"corpus:{metric.corpus}", f"flavor:{flavor.name}"])
    parts = [
        metric.name, tokenizer.signature, f"ngram:{'joined' if flavor.joined_ngrams else 'tuple'}",
        f"corpus:{metric.corpus}", f"sentence:{metric.sentence}", f"flavor:{flavor.name}",
        f"v:lexical-{LEXICAL_VERSION}",
    ]
    if extra:
        parts.append(extra)
    return "|".join(parts)
