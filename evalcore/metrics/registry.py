"""Every metric by name, collected from the modules of this package that define a METRICS list (their
ORDER sets where they stand); a store's own imported (external) metrics beside them (`of`); display
order and direction; flavors and tokenizers.

A metric is one object (evalcore/metrics/base.py): its name as in the MSDE paper's tables, metadata
the UI reads, its statistics, values, signature and availability. A signature names everything that
changes a number (sacrebleu style); the cache is keyed by it.
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass

import evalcore.metrics as _package
from evalcore.core.names import require
from evalcore.core.tokenize import Tokenizer, get_tokenizer
from evalcore.metrics.base import Metric
from evalcore.metrics.external import External


def _discover() -> dict[str, Metric]:
    """The built-in metrics: every module of evalcore.metrics with a METRICS list, and every family folder's
    `metric` module (evalcore/metrics/neural/metric.py), in ORDER."""
    modules = []
    for info in pkgutil.iter_modules(_package.__path__):
        name = f"{_package.__name__}.{info.name}" + (".metric" if info.ispkg else "")
        if info.ispkg and importlib.util.find_spec(name) is None:
            continue
        module = importlib.import_module(name)
        if isinstance(getattr(module, "METRICS", None), list):
            modules.append(module)
    modules.sort(key=lambda m: (getattr(m, "ORDER", 100), m.__name__))
    found: dict[str, Metric] = {}
    for module in modules:
        for metric in module.METRICS:
            if metric.name in found:
                raise ValueError(f"metric {metric.name!r} is defined twice ({module.__name__})")
            found[metric.name] = metric
    return found


METRICS: dict[str, Metric] = _discover()
BUILTIN = frozenset(METRICS)

# Column order of the MSDE paper's Tables 4-9 (metrics, then the task-oriented measures) and of its human
# dimensions; other names follow alphabetically (ordered()).
PAPER_ORDER = ["F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4", "DIST1", "DIST2", "METEOR", "METEOR-exact", "ROUGE", "CIDEr",
               "ST", "EV", "VE", "GM", "BS-P", "BS-R", "BS-F1", "BLEURT", "ABLSTM", "C", "T", "Sa", "F", "G"]
HUMAN_ORDER = ["Info", "Coh", "Know", "Rec", "Sa", "F", "G"]


def ordered(names, preferred: list[str]) -> list[str]:
    """`names` once each: those in `preferred` in its order, then the rest alphabetically."""
    names = list(dict.fromkeys(names))
    return [n for n in preferred if n in names] + sorted(n for n in names if n not in preferred)


def of(con) -> dict[str, Metric]:
    """The metrics of one store: the built-in ones and the store's imported (external) ones. Read from the
    store each time (one small table), so two stores open in one process never see each other's."""
    rows = con.execute("SELECT metric, higher_is_better, description FROM external_metrics").fetchall()
    return METRICS | {name: External(name, bool(better), description) for name, better, description in rows
                      if name not in BUILTIN}


def higher_is_better(name: str, known: dict[str, Metric] | None = None) -> bool:
    """A metric's direction among `known` (default: the built-in metrics; `of(con)` adds a store's own);
    a name they do not hold, e.g. a human dimension: higher."""
    info = (METRICS if known is None else known).get(name)
    return info.higher_is_better if info else True


def _group(name: str) -> list[str]:
    return [n for n, m in METRICS.items() if name in m.groups]


GROUPS = {g: _group(g) for g in dict.fromkeys(g for m in METRICS.values() for g in m.groups)}
LEXICAL = GROUPS["lexical"]


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


def resolve_metrics(spec: str | list[str], known: dict[str, Metric] | None = None) -> list[Metric]:
    """The metrics a comma-separated spec names (groups expanded), among `known` (default: built-in)."""
    metrics = METRICS if known is None else known
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[Metric] = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        if name in GROUPS:
            out += [metrics[m] for m in GROUPS[name] if metrics[m] not in out]
        elif name in metrics:
            if metrics[name] not in out:
                out.append(metrics[name])
        else:
            require("metric", name, [*GROUPS, *metrics])  # raises, listing the closest first
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
