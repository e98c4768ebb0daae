"""`import inspect`: an inspect_ai evaluation log (.eval or .json), read through `inspect_ai.log.read_eval_log`, the
interface its maintainers keep stable across log format versions. inspect-ai is an optional extra: without it the
import is refused, saying so.

What is stored, in one transaction, for the log's model (or --model): each first-epoch sample's output completion as
the response to the item named by the sample's id, and each scorer's value, made a number by inspect's own
`value_to_float` (C 1, I 0, P 0.5, N 0, numbers as they are), as the external metric `inspect:<scorer>`. With
--context, an item not in the store is created from the sample's input (a text, or its chat messages' texts as
turns), its target as the reference. Samples of later epochs are counted and left out. The samples go through the
lm-evaluation-harness importer (evalcore.ingest.formats.lmeval) in its shape, so the rules are one; a problem names the
sample, not that shape's line.
"""
from __future__ import annotations

import importlib
import json
import re
import tempfile
from pathlib import Path

import duckdb

from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest.batch import ImportReport
from evalcore.ingest.formats.lmeval import import_lmeval

PREFIX = "inspect:"
FIRST_EPOCH = "epoch 1"


def _inspect():
    """(read_eval_log, value_to_float) of the installed inspect_ai, or None."""
    try:
        log = importlib.import_module("inspect_ai.log")
        scorer = importlib.import_module("inspect_ai.scorer")
    except ImportError:
        return None
    return log.read_eval_log, scorer.value_to_float


def _turns(value) -> list[str]:
    """A sample's input as turns: a text is one turn; chat messages give their texts."""
    if isinstance(value, str):
        return [value]
    return [m if isinstance(m, str) else str(getattr(m, "text", "") or getattr(m, "content", "")) for m in value or []]


def _target(value) -> str:
    return value if isinstance(value, str) else "\n".join(str(v) for v in value or [])


def rows_of(file: str, log, to_float) -> tuple[list[dict], list[str]]:
    """The log's samples in the lm-evaluation-harness shape (one per line, in the log's order), and where each is;
    a scorer's value that inspect's value_to_float cannot make a number refuses the log, naming the sample."""
    rows, places, problems = [], [], []
    for k, sample in enumerate(log.samples or []):
        output = getattr(sample, "output", None)
        where = f"sample {k + 1} (id {short(sample.id)}, epoch {getattr(sample, 'epoch', 1)})"
        scores = {}
        for name, score in (getattr(sample, "scores", None) or {}).items():
            try:
                scores[name] = float(to_float(score.value))
            except (TypeError, ValueError):
                problems.append(Problem(file, where, name, "a score inspect's value_to_float makes a number (C, I, "
                                        "P, N, a number, a boolean)", short(score.value)))
        rows.append({"doc_id": k, "doc": {"id": str(sample.id), "input": _turns(sample.input)},
                     "target": _target(getattr(sample, "target", "")),
                     "filter": f"epoch {getattr(sample, 'epoch', 1)}",
                     "filtered_resps": [getattr(output, "completion", None)], "metrics": list(scores), **scores})
        places.append(where)
    if problems:
        raise ImportRefused(problems)
    return rows, places


def import_inspect(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str,
                   model: str | None = None, context: bool = False, language: str | None = None) -> ImportReport:
    file = str(path)
    found = _inspect()
    if found is None:
        raise ImportRefused([Problem(file, "", "inspect_ai", "the inspect-ai package, which reads its logs "
                                     "(pip install inspect-ai)", "not installed")])
    read_eval_log, value_to_float = found
    try:
        log = read_eval_log(file)
    except Exception as exc:   # noqa: BLE001 - inspect's own reader says what is wrong with its file
        raise ImportRefused([Problem(file, "", "log", "an inspect_ai evaluation log", f"{type(exc).__name__}: "
                                     f"{short(str(exc))}")]) from None
    rows, places = rows_of(file, log, value_to_float())
    model = model or str(getattr(log.eval, "model", "") or "")
    task = str(getattr(log.eval, "task", "") or "unnamed")
    later = sum(1 for r in rows if r["filter"] != FIRST_EPOCH)
    with tempfile.TemporaryDirectory(prefix="evalcore-inspect-") as tmp:
        shape = Path(tmp) / "samples.jsonl"
        shape.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        try:
            report = import_lmeval(con, shape, dataset=dataset, track=track, model=model, doc_id="doc.id",
                                   doc_context="doc.input" if context else None, filter_name=FIRST_EPOCH,
                                   language=language, shown=Path(file).name, prefix=PREFIX,
                                   signature=f"inspect_ai eval log; task {task}; model {model}; first epoch")
        except ImportRefused as refused:
            raise ImportRefused([_named(p, str(shape), file, places) for p in refused.problems]) from None
    report.file = file
    if later:
        report.notes.append(f"{later:,} sample(s) of later epochs left out (the first epoch's are the responses)")
    return report


def _named(problem: Problem, shape: str, file: str, places: list[str]) -> Problem:
    """A problem of the lm-eval shape, told about the log: its sample, and the log's own field names."""
    line = re.fullmatch(r"line ([\d,]+)", problem.where or "")
    k = int(line.group(1).replace(",", "")) if line else 0
    where = places[k - 1] if 0 < k <= len(places) else problem.where
    field = {"doc.id": "id", "doc.input": "input", "filtered_resps": "output.completion",
             "filtered_resps[0]": "output.completion", "--doc-context": "--context"}.get(problem.field, problem.field)
    expected = problem.expected.replace("--doc-context", "--context")
    return Problem(file if problem.file == shape else problem.file, where, field, expected, problem.got)


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_inspect(con, args.file, dataset=args.dataset, track=args.track, model=args.model,
                          context=args.context, language=args.language)
