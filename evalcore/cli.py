"""`evalcore ...` (or `python -m evalcore ...`): everything the dashboard shows, computable headless."""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd

from evalcore import __version__
from evalcore.analysis.options import (
    ADJUSTMENTS,
    ENSEMBLE_LEVELS,
    HOLDOUTS,
    JUDGE_AUDIT_PARTS,
    LEVELS,
    METHODS,
    ORIGINS,
    said,
)
from evalcore.analysis.taskoriented import MAX_TURNS
from evalcore.core import names
from evalcore.core.errors import ImportRefused, ReadOnlyStore, StoreError
from evalcore.core.processes import PARENT_VAR
from evalcore.core.text import CONTROL, bad_character
from evalcore.core.tokenize import TOKENIZERS
from evalcore.metrics import judge, neural
from evalcore.scoring import ray
from evalcore.scoring.plan import SYSTEM_AGGREGATES
from evalcore.services.tasks import SAMPLINGS
from evalcore.store import Handle, bound_memory, connect, history, queries, resolve_db_path
from evalcore.store.tasks import MAX_SEED as TASK_MAX_SEED
from evalcore.store.tasks import MODES as TASK_MODES

FORMATS = ("table", "json", "csv")


def _import_kind(kinds, name: str, importer, *, help: str, path: str = "file", dataset: bool = True):
    """An `import` kind: its importer, the path it reads, --db and (for most) --dataset."""
    p = kinds.add_parser(name, help=help)
    p.set_defaults(importer=importer)
    p.add_argument(path)
    _db(p)
    if dataset:
        p.add_argument("--dataset", required=True)
    return p


def _db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="store file (default: $EVALCORE_DB, else ~/.local/share/evalcore/evalcore.duckdb)")


def _flavor(p: argparse.ArgumentParser) -> None:
    p.add_argument("--flavor", default="default", help="default, or msde to reproduce the MSDE paper")
    p.add_argument("--tokenizer", help="override the flavor's tokenizer: " + ", ".join(TOKENIZERS))


def _aggregate(p: argparse.ArgumentParser) -> None:
    from evalcore.analysis.humans import AGGREGATES

    p.add_argument("--aggregate", default="mean", choices=AGGREGATES, help="how annotators' scores combine")


def _system_aggregate(p: argparse.ArgumentParser, verb: str) -> None:
    p.add_argument("--system-aggregate", default=SYSTEM_AGGREGATES[0], choices=SYSTEM_AGGREGATES,
                   help=f"system scores {verb}: each metric's corpus value, or the mean of its sentence values")


def _models(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", help="comma-separated: only these models' responses count")
    p.add_argument("--exclude-models", help="comma-separated: leave these models out (e.g. a reference imported "
                   "as a model)")


def _chosen_models(args):
    from evalcore.analysis.correlate import Models

    split = lambda text: tuple(m.strip() for m in (text or "").split(",") if m.strip())  # noqa: E731
    return Models(split(args.models), split(args.exclude_models))


def _other_configs(con, args) -> None:
    """Say so when the dataset's lexical scores exist only under another flavor or tokenizer (the
    computed lexical columns would otherwise be silently absent)."""
    from evalcore.scoring import elsewhere

    if getattr(args, "origin", "computed") == "published":
        return
    other = elsewhere(con, args.dataset, args.flavor, args.tokenizer)
    if other:
        print(f"note: no lexical scores of {args.dataset!r} under --flavor {args.flavor}"
              f"{' --tokenizer ' + args.tokenizer if args.tokenizer else ''}; they exist under: "
              + "; ".join(other), file=sys.stderr)


def _reference_copies(con, args) -> None:
    """A note for each model whose responses are copies of their item's reference (usually the
    reference imported as a model: it is scored against itself and inflates correlations)."""
    copies = queries.reference_copies(con, args.dataset, getattr(args, "track", None))
    for row in copies[_chosen_models(args).mask(copies["model"])].itertuples():
        # Most of a model's responses copied: likely the reference itself. A few: a model that
        # sometimes says exactly what the reference says (they score as perfect matches).
        why = (f"was the reference imported as a model? --exclude-models {row.model} leaves it out"
               if row.identical * 2 >= row.responses else "they count as perfect matches")
        print(f"note: {row.identical:,} of {row.responses:,} responses of model {row.model!r} are identical to a "
              f"reference of their item ({why})", file=sys.stderr)


def _on_dataset(sub, name: str, help: str, track: bool = True) -> argparse.ArgumentParser:
    """A command over one dataset of a store (and optionally one of its tracks)."""
    p = sub.add_parser(name, help=help)
    _db(p)
    p.add_argument("--dataset", required=True)
    if track:
        p.add_argument("--track")
    return p


def _format(p: argparse.ArgumentParser, default: str = "table") -> None:
    p.add_argument("--format", choices=FORMATS, default=default)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalcore", description=__doc__)
    parser.add_argument("--version", action="version", version=f"evalcore {__version__}")
    # Each command's parser names its handler (set_defaults(handler=...)), each import kind its importer;
    # run() calls the handler.
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", help="build the store from the embedded default data (data/)")
    p.set_defaults(handler=_cmd_init)
    _db(p)
    p = sub.add_parser("app", help="serve the dashboard on a store (Streamlit), from any directory")
    p.set_defaults(handler=_cmd_app)
    _db(p)
    p.add_argument("--port", type=int, help="port (default: Streamlit's, 8501)")
    p.add_argument("--address", help="address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 for "
                   "every interface, e.g. a lab server, with EVALCORE_UPLOAD_PASSWORD set when uploads should need a password)")
    p.add_argument("--processes", type=names.count(1), default=1,
                   help="page-serving processes, on ports PORT, PORT+1, ... (default 1): more than one uses more than "
                        "one core (README, \"More than one page-serving process\")")

    imp = sub.add_parser("import", help="import a file; a bad file is refused whole")
    imp.set_defaults(handler=_cmd_import)
    kinds = imp.add_subparsers(dest="kind", required=True)
    _import_kind(kinds, "items", _import_items, dataset=False,
                 help="JSONL: item_id, dataset, track, context, references, ...")
    p = _import_kind(kinds, "responses", _import_responses,
                     help="CSV/TSV/JSONL/xlsx: item_id, response[, model][, track]; the MSDE release's workbook "
                     "(History, response) with --track and --model; a folder or .zip of one file per track, named after it")
    p.add_argument("--track", help="the track every row answers (else the file's 'track' column: all tracks at once)")
    p.add_argument("--model", help="model name for every row (else a 'model' column)")
    p = _import_kind(kinds, "ratings", _import_ratings,
                     help="CSV/TSV/JSONL/xlsx: item_id|dialogue_id, model, annotator, dimension, score[, track]")
    p.add_argument("--track", help="the track every row rates (else the file's 'track' column: all tracks at once)")
    p.add_argument("--scale", action="append", default=[], metavar="DIM=MIN:MAX")
    p = _import_kind(kinds, "scores", _import_scores,
                     help="per-response values of a metric computed elsewhere: CSV/TSV/JSONL/xlsx with item_id, model, "
                     "value; it then sits beside the built-in metrics (signature marked external)")
    p.add_argument("--track", help="the track every row answers (default: each item's own track)")
    p.add_argument("--metric", required=True, help="the metric's name (not a built-in one)")
    way = p.add_mutually_exclusive_group()
    way.add_argument("--higher-is-better", dest="higher_is_better", action="store_true", default=None,
                     help="(default for a new metric)")
    way.add_argument("--lower-is-better", dest="higher_is_better", action="store_false")
    p.add_argument("--signature", help="what produced the values (judge model, prompt, version): part of the "
                   "metric's signature")
    p = _import_kind(kinds, "dstc10", _import_dstc10,
                     help="DSTC10 metric-track turn-level JSON: a list of {dialogue_id, model, context (turns joined by "
                     "newlines), response, reference [list], annotations {dim: [scores]}}")
    p.add_argument("--track", required=True)
    p.add_argument("--language", help="the dataset's language when it is new (en, zh, ...; default: detected from the texts)")
    p.add_argument("--scale", action="append", default=[], metavar="DIM=MIN:MAX")
    p = _import_kind(kinds, "mtbench", _import_mtbench, path="dir",
                     help="a FastChat llm_judge folder: question.jsonl, model_answer/*.jsonl, reference_answer/*.jsonl, "
                     "model_judgment/*_single.jsonl and *_pair.jsonl")
    p.add_argument("--language", help="the dataset's language when it is new (default: detected from the texts)")
    _import_kind(kinds, "msde", _import_msde, path="dir", dataset=False,
                 help="the MSDE release folder (github IRIP-LLM/MSDE)")
    p = _import_kind(kinds, "published", _import_published, path="dir",
                     help="a paper's system-level tables in long CSV form")
    p.add_argument("--scale", action="append", default=[], metavar="DIM=MIN:MAX")
    _import_kind(kinds, "votes", _import_votes,
                 help="people's side-by-side votes: item_id, model_a, model_b, winner (a|b|tie), annotator, dimension")
    p = _import_kind(kinds, "sessions", _import_sessions,
                     help="task-oriented test sessions: system, test_case, completed, turns, reviewer, satisfaction, "
                     "fluency, guidance")
    p.add_argument("--track", required=True)
    p.add_argument("--max-turns", type=float, default=MAX_TURNS, help="turns counted for an unfinished task")

    p = sub.add_parser("intent", help="intent classification: macro P, R and F1 = 2PR/(P+R) (no store needed)")
    p.set_defaults(handler=_cmd_intent)
    p.add_argument("--gold", required=True, help="CSV/TSV/JSONL with columns id, label")
    p.add_argument("--pred", required=True, help="CSV/TSV/JSONL with columns id, label")
    _format(p)

    p = sub.add_parser("score", help="compute metrics for stored responses (only what is missing)")
    p.set_defaults(handler=_cmd_score)
    _db(p)
    p.add_argument("--dataset")
    p.add_argument("--track")
    p.add_argument("--metrics", default="lexical",
                   help="comma-separated names, or a group: 'lexical' (default), 'neural', 'judge'")
    _flavor(p)
    _system_aggregate(p, "written")
    neural.add_arguments(p)   # each family's options, as it defines them
    ray.add_arguments(p)
    judge.add_arguments(p)
    p = _on_dataset(sub, "leaderboard", "one row per model and origin, a column per metric and human dimension")
    p.set_defaults(handler=_cmd_leaderboard)
    _flavor(p)
    p.add_argument("--signatures", action="store_true", help="also print each computed column's signature")
    p.add_argument("--rank-by", metavar="COLUMN", help="rank each track's models by this column (a metric or a "
                   "human dimension), with a 95%% bootstrap interval of the rank; default, as on the dashboard's "
                   "Leaderboard page: the skill's official rule where it has one, else F1, else the track's first "
                   "column")
    p.add_argument("--partial", action="store_true", help="also rank submissions that answer only part of a track")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples of the rank interval (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the rank bootstrap (default 0)")
    _format(p)
    p = _on_dataset(sub, "correlate", "metric-human correlations per track (system, dialogue or turn level)")
    p.set_defaults(handler=_cmd_correlate)
    p.add_argument("--level", default=LEVELS[0], help=said(LEVELS))
    p.add_argument("--origin", default=ORIGINS[0], help=f"{ORIGINS[0]}, or {ORIGINS[1]} (system level)")
    p.add_argument("--method", default=",".join(METHODS), help="comma-separated: " + ", ".join(METHODS))
    p.add_argument("--bootstrap", type=names.count(0), default=0, help="percentile bootstrap CI with N resamples")
    p.add_argument("--seed", type=int, help="seed of the bootstrap (required with --bootstrap)")
    _aggregate(p)
    _flavor(p)
    p.add_argument("--compare-published", action="store_true", help="add the published value and the difference")
    _models(p)
    _system_aggregate(p, "read")
    _format(p)
    p = _on_dataset(sub, "template", "the responses file to fill in: every item with its context and reference")
    p.set_defaults(handler=_cmd_template)
    p.add_argument("--format", choices=["csv", "jsonl", "xlsx"], default="csv")
    p.add_argument("--out", help="write here (xlsx needs it); default: standard output")
    p = _on_dataset(sub, "trust", "which metric to trust for which skill: correlations per track, pooled per skill",
                    track=False)
    p.set_defaults(handler=_cmd_trust)
    p.add_argument("--level", choices=LEVELS,
                   help="default: the first with data, as the dashboard picks (published system tables, computed "
                   "system scores, then turn and dialogue level)")
    p.add_argument("--method", default="spearman", choices=["spearman", *(m for m in METHODS if m != "spearman")])
    p.add_argument("--dimension", default="mean", help="a human dimension, or mean (of each track's dimensions)")
    p.add_argument("--origin", choices=ORIGINS,
                   help="metric values: computed, or a paper's published tables (system level); default: the first "
                   "with data at the level")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the verdicts (default 0.05)")
    p.add_argument("--adjust", default=ADJUSTMENTS[0], choices=ADJUSTMENTS,
                   help="p values adjusted for the number of metrics compared per skill (default holm)")
    _aggregate(p)
    _flavor(p)
    _models(p)
    _system_aggregate(p, "read")
    _format(p)
    p = _on_dataset(sub, "agreement", "inter-annotator agreement per track and dimension, with bootstrap CIs")
    p.set_defaults(handler=_cmd_agreement)
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples of rated targets for the CIs (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bias", action="store_true", help="per-annotator means and bias instead")
    _format(p)
    p = _on_dataset(sub, "judge-audit", "every LLM judge against the lab's people: agreement beside the human "
                    "ceiling, position consistency, length preference, length-controlled win rates, drift", track=False)
    p.set_defaults(handler=_cmd_judge_audit)
    p.add_argument("--judge", metavar="SIGNATURE", help="one judge only: its signature or its name (e.g. Judge-Coh)")
    p.add_argument("--part", choices=JUDGE_AUDIT_PARTS, default="agreement",
                   help="which table (default %(default)s; headline: one line per judge and dimension)")
    p.add_argument("--across", choices=("samples", "judges"), default="samples",
                   help="uncertainty: over the --judge-sample runs of one judge, or over every signature of a judge name")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples for the CIs (0: none)")
    p.add_argument("--seed", type=int, default=0)
    _format(p)
    p = _on_dataset(sub, "ensemble", "MME-CRS metric ensembling, evaluated on held-out tracks or competitions",
                    track=False)
    p.set_defaults(handler=_cmd_ensemble)
    p.add_argument("--level", default=ENSEMBLE_LEVELS[0], choices=ENSEMBLE_LEVELS)
    p.add_argument("--holdout", default="competition", choices=HOLDOUTS)
    p.add_argument("--origin", default="auto", choices=["auto", *ORIGINS],
                   help="metric values: auto = published at system level when nothing is computed")
    p.add_argument("--method", default="spearman", help="correlation behind the weights: " + ", ".join(METHODS))
    p.add_argument("--power", type=float, default=2.0, help="p in w = max(r, 0)^p / sum")
    _aggregate(p)
    p.add_argument("--weights", action="store_true", help="print the weights instead of the held-out results")
    _models(p)
    _format(p)
    p = _on_dataset(sub, "ranking", "response ranking: P@1, MAP, MRR of a ranker against graded human scores")
    p.set_defaults(handler=_cmd_ranking)
    p.add_argument("--dimension", default="Overall", help="the human dimension that grades candidates")
    p.add_argument("--rankers", help="comma-separated: tfidf, bm25 and/or metric names (default: all available)")
    p.add_argument("--thresholds", default="3,4,5", help="a candidate is positive when its score >= threshold")
    _aggregate(p)
    _flavor(p)
    _models(p)
    _format(p)
    learned = sub.add_parser("learned", help="learned reference-free metrics (ABLSTM, seed 004)")
    learned.set_defaults(handler=_cmd_learned)
    lsub = learned.add_subparsers(dest="action", required=True)
    p = _on_dataset(lsub, "train", "train AB-LSTM-bi-MLP on the store's dialogues; registers metric ABLSTM",
                    track=False)
    p.add_argument("--tracks", help="comma-separated tracks (default: all of the dataset's dialogues)")
    p.add_argument("--out", required=True, help="directory for the trained model")
    p.add_argument("--epochs", type=names.count(1), default=4, help="at most this many (early stopping on validation accuracy)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--ablations", action="store_true",
                   help="also train the seed's ablations (no attention; one-directional match; no match) on the same split")
    _format(p)
    p = _on_dataset(sub, "winrate", "pairwise judgments (MT-Bench *_pair.jsonl): wins, losses, ties and win rates "
                    "per judge and model, as FastChat's show_result.py computes them")
    p.set_defaults(handler=_cmd_winrate)
    p.add_argument("--judge", help="only this judge model's verdicts")
    _format(p)
    task = sub.add_parser("task", help="human rating tasks: create, list, show, close, reopen, delete, export, "
                                       "annotators, reset-key")
    task.set_defaults(handler=_cmd_task)
    tsub = task.add_subparsers(dest="action", required=True)
    p = _on_dataset(tsub, "create", "sample units of a dataset for people to rate; prints the task id", track=False)
    p.add_argument("--mode", choices=TASK_MODES, default=TASK_MODES[0],
                   help="absolute: each response rated on each dimension; pairwise: two models' responses side by side")
    p.add_argument("--dimensions", required=True, help="comma-separated, e.g. Info,Coh")
    p.add_argument("--items", type=names.count(1), required=True, help="units to rate (responses, or pairs)")
    p.add_argument("--per-item", type=names.count(1), default=2, help="different annotators per unit, K (default 2)")
    p.add_argument("--tracks", help="comma-separated (default: every track)")
    p.add_argument("--models", help="comma-separated (default: every model)")
    p.add_argument("--seed", type=_task_seed, default=0, help=f"0 to {TASK_MAX_SEED} (default 0)")
    p.add_argument("--name", type=_written_text("name"))
    p.add_argument("--sampling", choices=SAMPLINGS, default=SAMPLINGS[0],
                   help="stratified: at least 3 units per track, the rest by the tracks' sizes, over their models in "
                        "turn; or where the metrics disagree most (needs scores)")
    p.add_argument("--no-ties", action="store_true", help="pairwise: annotators must pick a side")
    p.add_argument("--guidelines", type=_written_text("guidelines"), default="",
                   help="text shown to annotators above every unit")
    p = tsub.add_parser("list", help="every task with its progress")
    _db(p)
    _format(p)
    for action, what in (("show", "a task's settings and progress"), ("close", "take no more answers"),
                         ("reopen", "take answers again"), ("delete", "set the task's ratings aside (restorable)")):
        p = tsub.add_parser(action, help=what)
        p.add_argument("task_id", type=int)
        _db(p)
    p = tsub.add_parser("export", help="every rating or vote that counts, and every flag, with annotator and time")
    p.add_argument("task_id", type=int)
    _db(p)
    p.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    p = tsub.add_parser("annotators", help="everyone who entered a task: name, signed in or not, when their key was "
                                           "issued (never the key)")
    _db(p)
    _format(p)
    p = tsub.add_parser("reset-key", help="a new personal key for an annotator who lost theirs (printed once; the old "
                                          "one stops working; their answers stay theirs)")
    p.add_argument("annotator", help="their name (compared ignoring case and width)")
    _db(p)
    p = _on_dataset(sub, "bt", "Bradley-Terry ratings (Elo scale) from pairwise votes, with bootstrap intervals",
                    track=False)
    p.set_defaults(handler=_cmd_bt)
    p.add_argument("--dimension", help="one question's votes (default: each dimension)")
    p.add_argument("--source", default="human", help="human, or judge:NAME")
    p.add_argument("--anchor", metavar="MODEL", help="this model rated 1000 (default: the mean is 1000)")
    p.add_argument("--bootstrap", type=names.count(0), default=1000, help="resamples of the votes (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    _format(p)
    p = sub.add_parser("summary", help="per track: items, references, models, responses, ratings, system scores")
    p.set_defaults(handler=_cmd_summary)
    _db(p)
    p.add_argument("--dataset")
    _format(p)
    p = sub.add_parser("storage", help="what takes the space in the store's file: bytes per table and column, "
                                       "indexes, free blocks")
    p.set_defaults(handler=_cmd_storage)
    _db(p)
    _format(p)
    p = sub.add_parser("models", help="models and where they have data")
    p.set_defaults(handler=_cmd_models)
    _db(p)
    p.add_argument("--dataset")
    _format(p)
    p = sub.add_parser("jobs", help="scoring jobs the dashboard started (after uploads): state and progress")
    p.set_defaults(handler=_cmd_jobs)
    _db(p)
    p.add_argument("--dataset")
    p.add_argument("--limit", type=names.count(1), default=50)
    _format(p)
    p = sub.add_parser("worker", help="run scoring jobs: one (--job N), or every queued one and every one whose "
                       "worker ended unfinished (the dashboard starts a worker per job itself)")
    p.set_defaults(handler=_cmd_worker)
    _db(p)
    p.add_argument("--job", type=names.count(1), help="the job to run (default: every job no live process runs)")
    p = sub.add_parser("submissions", help="every import, replace, delete and restore: file, sha256, rows, who; "
                       "what each set aside and whether it can come back")
    p.set_defaults(handler=_cmd_submissions)
    _db(p)
    p.add_argument("--dataset")
    p.add_argument("--model")
    _format(p)
    p = sub.add_parser("restore", help="undo a replace or delete: bring back the rows it set aside (one transaction)")
    p.set_defaults(handler=_cmd_restore)
    p.add_argument("submission", type=int)
    _db(p)
    p = sub.add_parser("purge", help="drop for good the rows a submission set aside")
    p.set_defaults(handler=_cmd_purge)
    p.add_argument("submission", type=int)
    _db(p)
    p.add_argument("--yes", action="store_true", help="really drop them")
    p = sub.add_parser("delete-model", help="set aside a model's responses, ratings and scores (one transaction; "
                       "restorable until purge)")
    p.set_defaults(handler=_cmd_delete_model)
    p.add_argument("model")
    _db(p)
    p.add_argument("--dataset", help="only in this dataset")
    p.add_argument("--yes", action="store_true", help="really delete (without it, only show what would go)")
    return parser


def emit(frame: pd.DataFrame, fmt: str, digits: int | None = None) -> None:
    """Print a frame as a table, JSON records or CSV; `digits` rounds the table only (files keep
    full precision). This output is for programs: cells are written as stored, a name that begins with `=`
    included (no quote added: a program reading it gets the model's real name). Files for people, which a
    spreadsheet program opens (the dashboard's downloads, `evalcore template`), are neutralised by
    evalcore.core.export instead."""
    if fmt == "table" and digits is not None:
        frame = frame.round(digits)
    if fmt == "json":
        print(json.dumps(json.loads(frame.to_json(orient="records", date_format="iso")), ensure_ascii=False, indent=2))
    elif fmt == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    else:
        print(frame.to_string(index=False) if not frame.empty else "(nothing)")


def _scales(items: list[str]) -> dict[str, tuple[float, float]]:
    from evalcore.ingest.ratings import parse_scale

    out = {}
    for text in items:
        name, lo, hi = parse_scale(text)
        out[name] = (lo, hi)
    return out


def _on_wait(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# Commands that only read the store (or change what is in it already): on a store file that does not
# exist they are an error naming the path, never a new empty store. init, import, score and learned
# create the store when it is absent.
NEEDS_STORE = {"leaderboard", "correlate", "template", "trust", "agreement", "judge-audit", "ensemble", "ranking",
               "winrate", "bt", "task",
               "summary", "storage", "models", "jobs", "submissions", "restore", "purge", "delete-model"}
SCORERS = {"score", "worker"}   # their stores are opened under store.SCORING_MEMORY (store.bound_memory)
# Of NEEDS_STORE, the ones that write: a command, or a command and its action. The others only read, so a store
# the file system will not let be written (a read-only mount) serves them (store.connect(reads_only=True)).
WRITERS = {"restore", "purge", "delete-model", "task create", "task close", "task reopen", "task delete"}


def _writes(args: argparse.Namespace) -> bool:
    command = getattr(args, "command", None)
    return command in WRITERS or f"{command} {getattr(args, 'action', '')}" in WRITERS


def _opens_store(handler):
    """A command on the store: `handler(con, args)` becomes `handler(args)`, which opens the store,
    checks the names it is given (names.check), runs, and closes the store however it ends."""

    @functools.wraps(handler)
    def command(args: argparse.Namespace) -> int:
        from evalcore.store import lock_wait

        path = resolve_db_path(args.db)
        if getattr(args, "command", None) in NEEDS_STORE and not path.exists():
            raise StoreError(f"no store at {path} (`{args.command}` reads a store and creates none); build one "
                             f"with `evalcore init --db {path}` or import data into it, or give --db an existing store")
        reads = getattr(args, "command", None) in NEEDS_STORE and not _writes(args)  # a read-only store serves these
        con = connect(args.db, wait=lock_wait(), on_wait=_on_wait, reads_only=reads)
        try:
            names.check(con, args)
            if getattr(args, "flavor", None) is not None:
                from evalcore.metrics.registry import FLAVORS

                names.require("flavor", args.flavor, list(FLAVORS))
            return handler(con, args) or 0
        finally:
            con.close()

    return command


@_opens_store
def _cmd_init(con, args) -> None:
    from evalcore.services.defaults import init_store

    start = time.perf_counter()
    reports = init_store(con, progress=True)
    for r in reports:
        print(r.render())
    if not reports:
        print("the embedded default datasets are already in the store")
    print(f"store: {resolve_db_path(args.db)} ({time.perf_counter() - start:.1f} s)")


@_opens_store
def _cmd_import(con, args) -> None:
    start = time.perf_counter()
    report = args.importer(con, args)  # the kind's own importer (_import_<kind>)
    print(report.render())
    print(f"took {time.perf_counter() - start:.1f} s")


def _import_items(con, args):
    from evalcore.ingest.items import import_items
    return import_items(con, args.file)


def _import_responses(con, args):
    from evalcore.ingest.responses import import_responses
    return import_responses(con, args.file, dataset=args.dataset, track=args.track, model=args.model)


def _import_ratings(con, args):
    from evalcore.ingest.ratings import import_ratings
    return import_ratings(con, args.file, dataset=args.dataset, track=args.track, scales=_scales(args.scale))


def _import_scores(con, args):
    from evalcore.ingest.scores import import_scores
    return import_scores(con, args.file, dataset=args.dataset, track=args.track, metric=args.metric,
                         higher_is_better=args.higher_is_better, signature=args.signature)


def _import_dstc10(con, args):
    from evalcore.ingest.dstc10 import import_dstc10
    return import_dstc10(con, args.file, dataset=args.dataset, track=args.track, language=args.language,
                         scales=_scales(args.scale))


def _import_mtbench(con, args):
    from evalcore.ingest.mtbench import import_mtbench
    return import_mtbench(con, args.dir, dataset=args.dataset, language=args.language)


def _import_msde(con, args):
    from evalcore.ingest.msde import import_msde
    return import_msde(con, args.dir)


def _import_published(con, args):
    from evalcore.ingest.published import import_published
    return import_published(con, args.dir, dataset=args.dataset, scales=_scales(args.scale))


def _import_votes(con, args):
    from evalcore.ingest.votes import import_votes
    return import_votes(con, args.file, dataset=args.dataset)


def _import_sessions(con, args):
    from evalcore.ingest.sessions import import_sessions
    return import_sessions(con, args.file, dataset=args.dataset, track=args.track, max_turns=args.max_turns)


@_opens_store
def _cmd_score(con, args) -> int | None:
    from evalcore.metrics.registry import GROUPS
    from evalcore.scoring import score
    from evalcore.store import lock_wait

    start = time.perf_counter()
    opts = neural.options(args, **judge.options(args))
    # The store is let go while values are computed: the dashboard serves pages meanwhile.
    handle = Handle(resolve_db_path(args.db), con, lock_wait(), _on_wait)
    try:
        report = score(con, metrics=args.metrics, dataset=args.dataset, track=args.track,
                       flavor=args.flavor, tokenizer=args.tokenizer, neural=opts, handle=handle,
                       system_aggregate=args.system_aggregate, ray=ray.options(args))
    finally:
        if handle.con is not con:  # let go and taken back: the new connection is ours to close (_opens_store closes con)
            handle.con.close()
    print(report.render())
    print(f"took {time.perf_counter() - start:.1f} s")
    # a metric asked for by name that could not run anywhere (a bad path, no Java) is a failure
    named = [m.strip() for m in args.metrics.split(",") if m.strip() and m.strip() not in GROUPS]
    failed = [m for m in named if m in report.unavailable]
    if failed:
        print(f"error: {', '.join(failed)} could not run (see the notes above)", file=sys.stderr)
        return 1
    return None


@_opens_store
def _cmd_leaderboard(con, args) -> None:
    from evalcore.analysis import leaderboard as lb

    opts = dict(flavor=args.flavor, tokenizer=args.tokenizer, partial=args.partial, resamples=args.bootstrap,
                seed=args.seed)
    if args.rank_by is not None:
        board = lb.leaderboard(con, args.dataset, args.track, rank_by=args.rank_by, **opts)
    else:
        board = _default_ranked(con, args.dataset, args.track, **opts)
    emit(board, args.format, 4)
    if args.signatures:
        sig = lb.signatures(con, args.dataset, args.track, flavor=args.flavor, tokenizer=args.tokenizer)
        print() if args.format == "table" else None
        emit(sig, args.format)


def _default_ranked(con, dataset: str, track: str | None, **opts) -> pd.DataFrame:
    """Each track ranked by what the dashboard's Leaderboard page ranks it by when nobody chooses
    (views.rank_choices): the skill's official rule where it has one, else F1, else the track's first
    value column."""
    from evalcore.analysis import leaderboard as lb
    from evalcore.pagedata import boards as views

    unranked = lb.leaderboard(con, dataset, track, **{**opts, "resamples": 0})
    tracks = [track] if track else list(dict.fromkeys(unranked["track"]))
    parts = []
    for tr in tracks:
        columns = views.value_columns(lb.leaderboard(con, dataset, tr, **{**opts, "resamples": 0}))
        default = views.rank_choices(con, dataset, tr, columns)[1]
        by = None if default in (None, views.OFFICIAL) else default
        parts.append(lb.leaderboard(con, dataset, tr, rank_by=by, **opts))
    if not parts:
        return unranked
    board = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)
    return board[[c for c in unranked.columns if c in board.columns] +
                 [c for c in board.columns if c not in unranked.columns]]


@_opens_store
def _cmd_correlate(con, args) -> None:
    from evalcore.analysis.correlate import correlations

    _reference_copies(con, args)
    _other_configs(con, args)
    frame = correlations(con, args.dataset, args.track, level=args.level, origin=args.origin,
                         methods=[m.strip() for m in args.method.split(",") if m.strip()],
                         bootstrap=args.bootstrap, seed=args.seed, aggregate=args.aggregate,
                         flavor=args.flavor, tokenizer=args.tokenizer,
                         compare_published=args.compare_published, models=_chosen_models(args),
                         system_aggregate=args.system_aggregate)
    emit(frame, args.format, 4)


@_opens_store
def _cmd_template(con, args) -> None:
    from evalcore.ingest.template import render, template

    if args.format == "xlsx" and not args.out:
        raise ValueError("an xlsx template needs --out FILE")
    data = render(template(con, args.dataset, args.track), args.format)
    if args.out:
        with open(args.out, "wb") as f:
            f.write(data)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


@_opens_store
def _cmd_trust(con, args) -> None:
    from evalcore.analysis import trust as tr

    args.level, args.origin = _trust_setting(con, args)
    _reference_copies(con, args)
    _other_configs(con, args)
    options = dict(flavor=args.flavor, tokenizer=args.tokenizer, aggregate=args.aggregate, models=_chosen_models(args),
                   system_aggregate=args.system_aggregate, alpha=args.alpha, adjust=args.adjust)
    dims = tr.dimensions(con, args.dataset)
    frame, said = tr.report(con, args.dataset, level=args.level, method=args.method, dimension=args.dimension,
                            origin=args.origin, dimensions=dims, **options)
    # The verdicts first, one line per skill: on standard output before a table, on standard error before
    # CSV or JSON (which stay machine-readable).
    out = sys.stdout if args.format == "table" else sys.stderr
    print(f"{args.method.capitalize()} with human {args.dimension} at {args.level} level ({args.origin} metric "
          f"values); significant: p < {args.alpha:g}" + (", Holm-adjusted over each skill's metrics" if args.adjust ==
                                                          "holm" else ""), file=out)
    for row in said.itertuples():
        print(row.text + (f"\n    {row.robust}" if row.robust else ""), file=out)
    print(file=out)
    if args.format != "table":
        emit(frame, args.format, 3)
        return
    table, undefined = _trust_table(frame)
    for line in undefined:
        print(line)
    if table:
        print(("\n" if undefined else "") + table)


def _trust_setting(con, args) -> tuple[str, str]:
    """The level and origin: as given, else the first with a verdict for some skill (evalcore.analysis.trust.opening,
    as the dashboard opens), saying which and why; a dataset with no level to correlate is an error saying what
    is missing."""
    from evalcore.analysis.trust import choices, missing, opening

    if args.level and args.origin:
        return args.level, args.origin
    if not choices(con, args.dataset):
        raise ValueError(missing(con, args.dataset))
    found = opening(con, args.dataset, method=args.method, dimension=args.dimension, flavor=args.flavor,
                    tokenizer=args.tokenizer, aggregate=args.aggregate, models=_chosen_models(args),
                    system_aggregate=args.system_aggregate, level=args.level, origin=args.origin)
    if found.level is None:
        if args.level or args.origin:   # the user's own level or origin: trust() says why, and what works here
            return args.level or "system", args.origin or "computed"
        raise ValueError(f"nothing to correlate in {args.dataset!r}: {found.why}")
    print(f"note: --level {found.level} --origin {found.origin} (the first with a verdict in {args.dataset!r}"
          + (f"; {found.why}" if found.why else "") + "; give both to choose)", file=sys.stderr)
    return found.level, found.origin


def _trust_table(frame):
    """The trust table as printed for a person: every defined cell, blanks for what a cell lacks (no NaN, None
    or <NA>), and the cells with no correlation as one line per track and reason (the table would repeat it
    for every metric)."""
    from evalcore.analysis.trust import POOLED
    from evalcore.core.words import count

    undefined = frame[frame["r"].isna()].sort_values("track", key=lambda t: t.eq(POOLED), kind="stable")
    shown = frame[frame["r"].notna()].drop(columns=["ci"])
    lines, said = [], set()
    for (skill, track, note), part in undefined.groupby(["skill", "track", "note"], sort=False):
        if track == POOLED and (skill, note) in said:
            continue   # the pooled cell of a skill whose tracks said it already
        said.add((skill, note))
        where = f"{skill}, pooled over its tracks" if track == POOLED else f"{skill}, {track}"
        lines.append(f"no correlation ({where}): {note or 'undefined'}, for {count(len(part), 'metric')}")
    text = shown.round(3).astype(object).where(shown.notna(), "")
    return text.to_string(index=False) if len(shown) else "", lines


@_opens_store
def _cmd_agreement(con, args) -> None:
    from evalcore.analysis import agreement as ag

    frame = (ag.annotator_bias(con, args.dataset, args.track) if args.bias else
             ag.agreement(con, args.dataset, args.track, bootstrap=args.bootstrap, seed=args.seed))
    emit(frame, args.format, 4)


@_opens_store
def _cmd_judge_audit(con, args) -> None:
    from evalcore.analysis import judge_audit as ja

    frame = ja.audit_part(con, args.dataset, args.part, judge=args.judge, across=args.across,
                          bootstrap=args.bootstrap, seed=args.seed)
    if frame.empty:
        print(f"note: {ja.nothing_to_audit(con, args.dataset, args.part)}", file=sys.stderr)
    emit(frame, args.format, 4)


@_opens_store
def _cmd_ensemble(con, args) -> None:
    from evalcore.analysis.ensemble import ensemble

    _reference_copies(con, args)
    results, weights = ensemble(con, args.dataset, level=args.level, holdout=args.holdout, origin=args.origin,
                                method=args.method, power=args.power, aggregate=args.aggregate,
                                models=_chosen_models(args))
    frame = weights if args.weights else results
    emit(frame, args.format, 4)


@_opens_store
def _cmd_ranking(con, args) -> None:
    from evalcore.analysis.ranking import ranking

    _reference_copies(con, args)
    frame = ranking(con, args.dataset, args.track, dimension=args.dimension,
                    rankers=[r.strip() for r in args.rankers.split(",")] if args.rankers else None,
                    thresholds=[float(t) for t in args.thresholds.split(",")], aggregate=args.aggregate,
                    flavor=args.flavor, models=_chosen_models(args))
    emit(frame, args.format, 4)


@_opens_store
def _cmd_learned(con, args) -> None:
    from evalcore.metrics.learned.train import train_command

    frame = train_command(con, args)
    if args.format == "json" and len(frame) == 1:   # one model: one object with its figures
        print(json.dumps(json.loads(frame.to_json(orient="records"))[0], indent=2))
    else:
        emit(frame, args.format, 4)


def _task_seed(text: str) -> int:
    """--seed of `task create`: a whole number a task's 32-bit seed column holds (argparse error otherwise)."""
    value = names.count(0)(text)
    if value > TASK_MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {TASK_MAX_SEED}, got {text!r}")
    return value


def _written_text(what: str):
    """An argparse type for text people will read (a task's name, its guidelines): refused with the character
    named when it holds a control character (a terminal would act on it, the export would carry it)."""
    def parse(text: str) -> str:
        bad = bad_character(text)
        if bad:
            raise argparse.ArgumentTypeError(f"a task's {what} may not hold a {bad}")
        return text

    parse.__name__ = what
    return parse


def _visible(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells with their control characters written as escapes (ESC as \\x1b): what an older store may hold
    goes to a terminal as text, never as a command to it."""
    shown = lambda v: CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", v) if isinstance(v, str) else v  # noqa: E731
    return frame.map(shown) if len(frame) else frame


@_opens_store
def _cmd_task(con, args) -> int | None:
    from evalcore.services import tasks
    from evalcore.store import annotators
    from evalcore.store import tasks as stored

    if args.action == "create":
        split = lambda text: [t.strip() for t in (text or "").split(",") if t.strip()] or None  # noqa: E731
        task_id = tasks.create_task(con, dataset=args.dataset, mode=args.mode, dimensions=split(args.dimensions) or [],
                                    items=args.items, per_item=args.per_item, tracks=split(args.tracks),
                                    models=split(args.models), seed=args.seed, name=args.name, sampling=args.sampling,
                                    ties=not args.no_ties, guidelines=args.guidelines, created_by=history.current_user())
        task = stored.get(con, task_id)
        print(task_id)
        print(f"task {task_id}: {len(stored.units(con, task_id))} units, K = {task.per_item}; annotators open the "
              f"dashboard's /annotate?task={task_id} page and give the access code {task.access_code} with their name",
              file=sys.stderr)
        for note in tasks.coverage(con, task_id):
            print(f"warning: {note}", file=sys.stderr)
        return None
    if args.action == "list":
        emit(_visible(stored.listing(con)), args.format)
        return None
    if args.action == "export":
        frame = tasks.export(con, args.task_id)
        if sys.stdout.isatty():   # to a terminal: escaped; to a file: the stored text (an importer says what is wrong)
            frame = _visible(frame)
        if args.format == "csv":
            frame.to_csv(sys.stdout, index=False)
        else:
            print(frame.to_json(orient="records", lines=True, force_ascii=False, date_format="iso"), end="")
        return None
    if args.action == "show":
        shown = tasks.describe(stored.get(con, args.task_id))
        print(CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(shown, indent=2, ensure_ascii=False)))
        emit(_visible(stored.progress(con, stored.get(con, args.task_id))), "table")
        return None
    if args.action == "annotators":
        emit(_visible(annotators.listing(con)), args.format)
        return None
    if args.action == "reset-key":
        person, key = annotators.reset(con, args.annotator)
        print(key)
        print(f"a new personal key for {person}, shown this once (the old one no longer works): they enter with "
              "their name and this key", file=sys.stderr)
        return None
    if args.action == "delete":
        sid = stored.delete(con, args.task_id)
        print(f"task {args.task_id} deleted: its ratings and votes are set aside under submission {sid} "
              f"(`python -m evalcore restore {sid}` brings them back)")
        return None
    stored.set_state(con, args.task_id, "closed" if args.action == "close" else "open")
    print(f"task {args.task_id} {'closed' if args.action == 'close' else 'open again'}")
    return None


@_opens_store
def _cmd_bt(con, args) -> None:
    from evalcore.analysis.bradley_terry import table

    emit(table(con, args.dataset, source=args.source, dimension=args.dimension, resamples=args.bootstrap,
               seed=args.seed, anchor=args.anchor), args.format, 2)


@_opens_store
def _cmd_winrate(con, args) -> None:
    from evalcore.analysis.winrates import win_rates

    emit(win_rates(con, args.dataset, args.track, args.judge), args.format, 4)


@_opens_store
def _cmd_summary(con, args) -> None:
    emit(queries.summary(con, args.dataset), args.format)


@_opens_store
def _cmd_storage(con, args) -> None:
    emit(queries.storage(con), args.format)


@_opens_store
def _cmd_models(con, args) -> None:
    emit(queries.models(con, args.dataset), args.format)


@_opens_store
def _cmd_jobs(con, args) -> None:
    from evalcore.services.jobs import listing

    emit(listing(con, args.dataset, args.limit).round({"progress": 3}), args.format)


def _cmd_worker(args) -> int:
    """Not through _opens_store: the worker holds the store only to write (jobs.work lets it go meanwhile)."""
    from evalcore.services import jobs
    from evalcore.store import writable

    path = resolve_db_path(args.db)
    if not path.exists():
        raise StoreError(f"no store at {path}; give --db the store whose jobs to run")
    if not writable(path):
        raise ReadOnlyStore(f"{path} cannot be written here (a read-only file system, or a file this user may not "
                            "write): a job writes its scores into the store, so none was run")
    if hasattr(os, "nice"):
        os.nice(jobs.NICE)   # background work: the page servers' runs come first when the cores are busy
    done = jobs.work(path, args.job, on_wait=_on_wait)
    for job, state in done:
        print(f"job {job}: {state}")
    if not done:
        print("no job to run")
    return 0


@_opens_store
def _cmd_delete_model(con, args) -> int | None:
    footprint = queries.model_footprint(con, args.model, args.dataset)
    where = f" in {args.dataset}" if args.dataset else ""
    if not any(footprint.values()):
        print(f"model {args.model!r} has nothing{where}", file=sys.stderr)
        return 1
    listing = ", ".join(f"{n} {t}" for t, n in footprint.items())
    if not args.yes:
        print(f"would delete {listing} of model {args.model!r}{where}; add --yes to do it")
        return 1
    sid = history.delete_model(con, args.model, args.dataset)
    print(f"deleted {listing} of model {args.model!r}{where} (submission {sid}; set aside, not destroyed: "
          f"`python -m evalcore restore {sid}` brings them back, `purge {sid} --yes` drops them for good)")
    return None


@_opens_store
def _cmd_submissions(con, args) -> None:
    from evalcore.store.history import listing

    emit(listing(con, args.dataset, args.model), args.format)


@_opens_store
def _cmd_restore(con, args) -> None:
    from evalcore.store.history import restore

    new = restore(con, args.submission)
    print(f"restored what submission {args.submission} set aside (as submission {new}; "
          f"`python -m evalcore restore {new}` undoes this restore)")


@_opens_store
def _cmd_purge(con, args) -> int | None:
    from evalcore.store.history import purge

    if not args.yes:
        print(f"would drop for good the rows submission {args.submission} set aside; add --yes to do it")
        return 1
    counts = purge(con, args.submission)
    print("purged " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    return None


def _cmd_intent(args) -> int:
    """Needs no store: it compares two files."""
    from evalcore.analysis.taskoriented import intent_scores
    from evalcore.ingest.readers import read_table

    gold, pred = ({str(r.get("id")): str(r.get("label")) for r in read_table(f).records} for f in (args.gold, args.pred))
    missing = sorted(set(gold) - set(pred))
    if missing:
        raise ValueError(f"{args.pred}: no prediction for {len(missing)} gold id(s), e.g. {missing[0]!r}")
    ids = sorted(gold)
    emit(pd.DataFrame([intent_scores([gold[i] for i in ids], [pred[i] for i in ids])]), args.format)
    return 0


def _cmd_app(args) -> int:
    """The dashboard opens the store itself, page by page: not opened here."""
    note = capacity_note(args.processes)
    if note:
        print(note, file=sys.stderr, flush=True)
    if args.processes > 1:
        return run_group(args.db, args.port or 8501, args.address, args.processes)
    return run_app(args.db, args.port, args.address)


def cores() -> int:
    """The cores this process may run on (a container's or taskset's share, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def capacity_note(processes: int, available: int | None = None) -> str | None:
    """What `evalcore app` says at start when it serves with fewer page-serving processes than the cores it may
    use (None: it uses them all, or there is one core). Not a default of one process per core: the servers listen
    on ports P, P+1, ..., and only a proxy that keeps each browser on one server spreads users over them
    (README); without one, every user reaches the first server and the others only take memory (each its own
    Python, Streamlit and DuckDB instance), so one process stays the default and the start says when more pay."""
    available = cores() if available is None else available
    if processes >= available:
        return None
    return (f"evalcore: {processes} page-serving process{'es' if processes > 1 else ''} on {available} cores: one "
            f"process serves pages on one core, so with many users at once (README, \"More than one page-serving "
            f"process\") run `evalcore app --processes {available}`, one per core, behind a proxy that keeps each "
            "browser on one server")


LOCAL = "127.0.0.1"  # `evalcore app` listens here unless --address says otherwise


def run_app(db: str | None, port: int | None, address: str | None, extra: list[str] | None = None) -> int:
    """`evalcore app`: the dashboard on `db`, served by Streamlit (app.py's own `python app.py` path,
    which keeps Streamlit out of evalcore) on `address`, 127.0.0.1 unless another is given.

    On POSIX this process becomes the server (os.execve): a SIGTERM or SIGINT sent to `evalcore app`
    reaches Streamlit itself, which stops serving and exits; no child is left holding the port.
    Elsewhere the server runs as a child that is sent the signal this process gets, and waited for."""
    from evalcore.core.paths import app_root, streamlit_flags

    root = app_root()
    env = dict(os.environ)
    if db:
        env["EVALCORE_DB"] = str(resolve_db_path(db))
    args = [sys.executable, str(root / "app.py"), *streamlit_flags(root)]
    if port:
        args.append(f"--server.port={port}")
    args.append(f"--server.address={address or LOCAL}")
    args += extra or []
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, args, env)  # does not return
    return _child(args, env)




def run_group(db: str | None, port: int, address: str | None, processes: int) -> int:
    """`evalcore app --processes N`: N dashboard servers on one store, on ports port..port+N-1, each its own
    process (its own core: one Python process serves pages on one core). They share the store as the CLI
    shares it with a server: DuckDB lets one process at a time open the file, each page run holds it only
    while it queries (a page whose tables are cached never does), and every write is a transaction. This
    process holds the one-server-per-store lock for the group and hands it down (store.GROUP_VAR), records
    the group's pids in it (a refused server names them), waits, and passes on SIGTERM/SIGINT; when one server
    ends, the others are stopped; when this process dies, however (SIGKILL included), the servers end with it
    (die_with_parent). A reverse proxy in front (README) must keep each browser on one server: a session and
    its uploads live in one process. A store this process cannot write is served read-only, with no lock."""
    from evalcore.core.paths import app_root, streamlit_flags
    from evalcore.store import GROUP_VAR, lock_descriptor, record_holders, server_lock

    path = resolve_db_path(db)
    lock = server_lock(path)   # refused here when another server already serves the store
    root = app_root()
    env = {**os.environ, "EVALCORE_DB": str(path), PARENT_VAR: str(os.getpid())}
    fds: tuple[int, ...] = ()
    if lock is not None:
        fds = (lock_descriptor(lock),)
        env[GROUP_VAR] = str(fds[0])
    procs = [subprocess.Popen([sys.executable, str(root / "app.py"), *streamlit_flags(root), f"--server.port={port + i}",
                               f"--server.address={address or LOCAL}"], env=env, pass_fds=fds)
             for i in range(processes)]
    if lock is not None:
        record_holders(lock, [os.getpid(), *(proc.pid for proc in procs)])
    print(f"evalcore: {processes} servers on {path}: " + ", ".join(f"http://{address or LOCAL}:{port + i}"
                                                                   for i in range(processes)), flush=True)

    stopping: list[int] = []

    def stop(signum, _frame=None) -> None:
        if stopping:   # once: a second signal cuts a server's own orderly shutdown short
            return
        stopping.append(signum)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while all(proc.poll() is None for proc in procs):
            time.sleep(0.2)
        stop(signal.SIGTERM)   # one server ended (or we were told to stop): the others follow
        codes = [proc.wait() for proc in procs]
        # a server that ended on the signal it was sent stopped as asked
        return max((0 if stopping and c in (-signal.SIGTERM, -signal.SIGINT) else abs(c) for c in codes), default=0)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _child(args: list[str], env: dict) -> int:
    """The server as a child process that gets every SIGTERM/SIGINT this one gets; its exit status."""
    proc = subprocess.Popen(args, env=env)

    def forward(signum, _frame) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # forwarded already; wait for the server to stop
                continue
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)



def run(args: argparse.Namespace) -> int:
    """Run the command the parser chose (each subparser names its handler)."""
    return args.handler(args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names.normalise(args)   # '--dataset ｔｏｙ' is toy: the names as the store holds them
    from evalcore.core.malloc import tune
    from evalcore.core.threads import one_blas_thread

    tune()
    one_blas_thread()
    scorer = getattr(args, "command", None) in SCORERS
    if scorer:
        bound_memory()
    try:
        return run(args)
    except ImportRefused as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    except names.UnknownName as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (StoreError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if scorer:
            bound_memory("")   # main() may run again in this process (the tests, the API) for another command
