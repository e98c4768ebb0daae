"""MkDocs hook: one card per metric of the registry (docs/metrics/<name>.md) and the metrics index, made at
build time from the metric objects themselves, so a card cannot drift from the code. The prose the code does
not hold (scale, limitations, citation) comes from docs/metrics/cards.toml; tests/project/test_docs.py checks that every
metric has an entry there and every entry a metric."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

try:
    from mkdocs.plugins import event_priority
except ImportError:   # tests/project/test_docs.py reads the cards without MkDocs installed
    def event_priority(priority):
        return lambda f: f

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:   # `mkdocs build` from a clone without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from evalcore.core.tokenize import get_tokenizer  # noqa: E402
from evalcore.metrics.judge import Endpoint  # noqa: E402
from evalcore.metrics.neural import NeuralOptions  # noqa: E402
from evalcore.metrics.registry import FLAVORS, METRICS  # noqa: E402
from evalcore.scoring.plan import Plan  # noqa: E402

CARDS = ROOT / "docs" / "metrics" / "cards.toml"
EXAMPLE_JUDGE = Endpoint("http://127.0.0.1:8000/v1", "MODEL")   # a judge's signature names its server and model
WHY_NO_EXAMPLE = {"ABLSTM": "names the trained model (`evalcore learned train`), so it has no example before one is trained"}


def slug(name: str) -> str:
    """A metric's page name: chrF++ -> chrf-plus-plus."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower().replace("+", "-plus")).strip("-")


def prose() -> dict[str, dict[str, str]]:
    return tomllib.loads(CARDS.read_text(encoding="utf-8"))


def example_signature(metric) -> str | None:
    """The signature a default run on a Chinese track gives (char tokens, default flavor)."""
    if metric.name in WHY_NO_EXAMPLE:
        return None
    plan = Plan([metric], FLAVORS["default"], get_tokenizer("char"), [["参考"]], NeuralOptions(judge=EXAMPLE_JUDGE))
    return str(metric.signature(plan))


def inputs(metric) -> str:
    said = ["the response"]
    if metric.needs_references:
        said.append("its references")
    if metric.needs_context:
        said.append("the last context turn")
    if metric.needs_item:
        said.append("the item's whole context and grounding")
    return ", ".join(said)


def card(metric, text: dict[str, str]) -> str:
    signature = example_signature(metric)
    asked = ", ".join(f"`--metrics {g}`" for g in metric.groups) or "by name only"
    lines = [
        f"# {metric.name}",
        "",
        metric.description.rstrip(".") + ".",
        "",
        "| property | |",
        "|---|---|",
        f"| family | {metric.family} |",
        f"| asked for with | `--metrics {metric.name}`; {asked} |",
        f"| inputs | {inputs(metric)} |",
        f"| needs a model or server | {'yes' if metric.needs_model else 'no'} |",
        f"| scale | {text['scale']} |",
        f"| direction | {'higher is better' if metric.higher_is_better else 'lower is better'} |",
        f"| per response | `{metric.sentence}` |" if metric.sentence else "| per response | its value |",
        f"| per model | `{metric.corpus}` |",
        "",
        "## Signature",
        "",
    ]
    if signature:
        lines += ["A default run on a Chinese track (char tokens) signs its values:", "", "```text", signature, "```", "",
                  "Every part names something that changes the number; another value of any part is another metric."]
    else:
        lines += [f"Its signature {WHY_NO_EXAMPLE[metric.name]}."]
    lines += ["", "## Limitations", "", text["limitations"], "", "## Citation", "", text["citation"], ""]
    return "\n".join(lines)


def cell(text: str) -> str:
    """Text for a markdown table cell: its bars escaped."""
    return text.replace("|", "\\|")


def index(texts: dict) -> str:
    rows = [f"| [{m.name}]({slug(m.name)}.md) | {m.family} | {texts[m.name]['scale']} | {cell(m.description.split(':')[0])} |"
            for m in METRICS.values()]
    return "\n".join([
        "# Metrics", "",
        f"{len(METRICS)} metrics ship with evalcore, one card each, made from the registry when this site is built. "
        "A store can hold more: scores computed elsewhere (`evalcore import scores`) and metrics you add "
        "([Adding a metric](../development/architecture.md#adding-a-metric)). "
        "How they are scored and signed: [Scoring](../guide/scoring.md).", "",
        "| metric | family | scale | what |", "|---|---|---|---|", *rows, ""])


def pages() -> dict[str, str]:
    """src path -> markdown of every generated page."""
    texts = prose()
    out = {"metrics/index.md": index(texts)}
    for metric in METRICS.values():
        out[f"metrics/{slug(metric.name)}.md"] = card(metric, texts[metric.name])
    return out


@event_priority(-110)   # after mkdocs-static-i18n's (-100), which rebuilds every file from its source path and cannot
def on_files(files, config):   # take a generated one: the cards join each language's build after it, under its folder
    from mkdocs.structure.files import File

    i18n = config.plugins.get("i18n")
    lang = getattr(i18n, "current_language", None)
    prefix = f"{lang}/" if i18n is not None and lang and lang != i18n.default_language else ""
    for src, text in pages().items():
        card_file = File.generated(config, src, content=text)
        card_file.dest_uri = prefix + card_file.dest_uri   # /zh/metrics/...: the English card in the Chinese site
        files.append(card_file)
    return files
