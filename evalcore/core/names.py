"""Names a command is given (dataset, track, model, dimension, flavor) checked against the store before
it runs: an unknown one is an error that lists what exists, closest match first, never "(nothing)"."""
from __future__ import annotations

import argparse
import difflib
import json
from typing import TYPE_CHECKING

from evalcore.core.text import normalise_id

if TYPE_CHECKING:   # annotations only: the CLI parses its options (count) without loading DuckDB
    import duckdb

SHOWN = 20  # names listed at most; the rest are counted


class UnknownName(ValueError):
    """A name the store does not have (exit code 2, like a refused file)."""


# The options that name what is in the store, read in the one normal form of names (evalcore.core.text, NFKC) as
# the importers store them: '--dataset ｔｏｙ' is toy, '--metric ＢＬＥＵ４' is BLEU4 (not a second column beside it).
NAMED = ("dataset", "track", "model", "metric", "judge", "dimension")
LISTS = ("tracks", "models", "exclude_models", "metrics")   # comma-separated: each name


def normalise(args: argparse.Namespace) -> None:
    """Put the names a command is given (NAMED, LISTS) in the normal form, in place, before anything reads them.
    Control characters are not refused here: an importer refuses them naming its option (a name already stored
    with one must stay reachable by the commands that read or delete it)."""
    for attr in NAMED:
        value = getattr(args, attr, None)
        if isinstance(value, str):
            setattr(args, attr, normalise_id(value))
    for attr in LISTS:
        value = getattr(args, attr, None)
        if isinstance(value, str):
            setattr(args, attr, ",".join(normalise_id(v) for v in value.split(",")))


def closest_first(name: str, options: list[str]) -> list[str]:
    """Every option, the most similar to `name` first (difflib's ratio; case ignored), then by name."""
    key = name.lower()
    return sorted(options, key=lambda o: (-difflib.SequenceMatcher(None, key, o.lower()).ratio(), o))


def require(kind: str, name: str, options: list[str], where: str = "") -> None:
    if name in options:
        return
    if not options:
        raise UnknownName(f"unknown {kind} {name!r}: there is no {kind} {where or 'in this store'}".rstrip())
    ranked = closest_first(name, options)
    more = f" (and {len(ranked) - SHOWN} more)" if len(ranked) > SHOWN else ""
    raise UnknownName(f"unknown {kind} {name!r}{' ' + where if where else ''}; known, closest first: "
                      + ", ".join(ranked[:SHOWN]) + more)


def _column(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[str]:
    return [r[0] for r in con.execute(sql, params).fetchall()]


# Commands that create what they name (their dataset may be new) are not checked here.
CREATES = {"init", "import", "intent"}
# the tables that hold a model's rows: `delete-model` knows a model from them (and sets aside its rows there)
MODEL_TABLES = ("responses", "human_ratings", "system_scores")


def submission(con: duckdb.DuckDBPyConnection, sid: int) -> None:
    """Raise UnknownName unless submission `sid` is in the store's history, listing those that are (newest
    first)."""
    ids = _column(con, "SELECT submission_id FROM submissions ORDER BY submission_id DESC", [])
    if sid in ids:
        return
    if not ids:
        raise UnknownName(f"no submission {sid}: there is no submission in this store")
    more = f" (and {len(ids) - SHOWN} more)" if len(ids) > SHOWN else ""
    raise UnknownName(f"no submission {sid}; known, newest first: " + ", ".join(map(str, ids[:SHOWN])) + more
                      + " (see `python -m evalcore submissions`)")


def check(con: duckdb.DuckDBPyConnection, args) -> None:
    """Raise UnknownName for the first name in `args` the store does not have."""
    if args.command in CREATES:
        return
    if args.command in ("restore", "purge"):
        submission(con, args.submission)
    dataset = getattr(args, "dataset", None)
    if dataset is not None:
        known = "SELECT dataset FROM datasets"
        if args.command == "submissions":   # history also names datasets whose rows were set aside
            known += " UNION SELECT dataset FROM submissions WHERE dataset IS NOT NULL"
        require("dataset", dataset, _column(con, f"SELECT * FROM ({known}) ORDER BY 1", []))
    if args.command in ("learned", "generate") and dataset is not None:
        tracks = [t.strip() for t in (getattr(args, "tracks", None) or "").split(",") if t.strip()]
        known = _column(con, "SELECT track FROM tracks WHERE dataset = ? ORDER BY track", [dataset]) if tracks else []
        for name in tracks:
            require("track", name, known, f"in dataset {dataset!r}")
    if args.command == "submissions" and getattr(args, "model", None) is not None:
        # a history names models deleted since; an empty history lists nothing for any name
        named = {m for (text,) in con.execute("SELECT models FROM submissions").fetchall()
                 for m in json.loads(text or "[]")}
        if named:
            require("model", args.model, sorted(named | set(_column(con, "SELECT model FROM models", []))))
    if args.command == "delete-model":
        require("model", args.model, _column(con, "SELECT model FROM models UNION " + " UNION ".join(
            f"SELECT DISTINCT model FROM {t}" for t in MODEL_TABLES) + " ORDER BY 1", []))
    judge = getattr(args, "judge", None)
    if args.command == "winrate" and judge is not None:
        track = getattr(args, "track", None)
        where = f"in dataset {dataset!r}" + (f", track {track!r}" if track else "")
        require("judge", judge, _column(con, "SELECT DISTINCT judge FROM pairwise_judgments WHERE dataset = ? "
                                             "AND (? IS NULL OR track = ?) ORDER BY judge", [dataset, track, track]),
                where)
    track = getattr(args, "track", None)
    if track and dataset is not None and not track.startswith("skill:"):
        require("track", track, _column(con, "SELECT track FROM tracks WHERE dataset = ? ORDER BY track", [dataset]),
                f"in dataset {dataset!r}")
    elif track and dataset is None:
        require("track", track, _column(con, "SELECT DISTINCT track FROM tracks ORDER BY track", []))
    # --model (delete-model's is checked above; submissions lists the history of models deleted since, and
    # says "(nothing)" for a model without any), --models, --exclude-models
    # generate's and endpoint add's --model is a new name (the one replies are stored under, the one a server serves)
    given = ([] if args.command in ("delete-model", "submissions", "generate", "endpoint")
             or getattr(args, "model", None) is None
             else [args.model])
    given += [m.strip() for a in ("models", "exclude_models") for m in (getattr(args, a, None) or "").split(",")]
    given = [m for m in given if m]
    known = _column(con, "SELECT model FROM models ORDER BY model", []) if given else []
    for name in given:
        require("model", name, known)
    dimension = getattr(args, "dimension", None)
    if dimension is not None and dimension != "mean" and dataset is not None and args.command != "bt":
        dims = _column(con, "SELECT DISTINCT dimension FROM dimensions WHERE dataset = ? ORDER BY dimension", [dataset])
        if dims:  # a dataset without a dimensions list: the command itself says what it lacks
            require("dimension", dimension, dims, f"in dataset {dataset!r}")


def count(least: int = 0):
    """An argparse type for a count (--bootstrap, --epochs, --actors ...): a whole number >= `least`; anything
    else is an argparse error (exit 2, the option named, no traceback)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, got {text!r}")
        return value

    parse.__name__ = "count"
    return parse
