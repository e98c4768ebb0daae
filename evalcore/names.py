"""Names a command is given (dataset, track, model, dimension, flavor) checked against the store before
it runs: an unknown one is an error that lists what exists, closest match first, never "(nothing)"."""
from __future__ import annotations

import difflib

import duckdb

SHOWN = 20  # names listed at most; the rest are counted


class UnknownName(ValueError):
    """A name the store does not have (exit code 2, like a refused file)."""


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
CREATES = {"init", "import", "learned", "intent", "submissions", "restore", "purge"}


def check(con: duckdb.DuckDBPyConnection, args) -> None:
    """Raise UnknownName for the first name in `args` the store does not have."""
    if args.command in CREATES:
        return
    dataset = getattr(args, "dataset", None)
    if dataset is not None:
        require("dataset", dataset, _column(con, "SELECT dataset FROM datasets ORDER BY dataset", []))
    track = getattr(args, "track", None)
    if track and dataset is not None and not track.startswith("skill:"):
        require("track", track, _column(con, "SELECT track FROM tracks WHERE dataset = ? ORDER BY track", [dataset]),
                f"in dataset {dataset!r}")
    elif track and dataset is None:
        require("track", track, _column(con, "SELECT DISTINCT track FROM tracks ORDER BY track", []))
    # --model (but delete-model says itself what a model holds), --models, --exclude-models
    given = [] if args.command == "delete-model" or getattr(args, "model", None) is None else [args.model]
    given += [m.strip() for a in ("models", "exclude_models") for m in (getattr(args, a, None) or "").split(",")]
    given = [m for m in given if m]
    known = _column(con, "SELECT model FROM models ORDER BY model", []) if given else []
    for name in given:
        require("model", name, known)
    dimension = getattr(args, "dimension", None)
    if dimension is not None and dimension != "mean" and dataset is not None:
        dims = _column(con, "SELECT DISTINCT dimension FROM dimensions WHERE dataset = ? ORDER BY dimension", [dataset])
        if dims:  # a dataset without a dimensions list: the command itself says what it lacks
            require("dimension", dimension, dims, f"in dataset {dataset!r}")
    flavor = getattr(args, "flavor", None)
    if flavor is not None:
        from evalcore.metrics.registry import FLAVORS

        require("flavor", flavor, list(FLAVORS))


def count(least: int = 0):
    """An argparse type for a count (--bootstrap, --epochs, --actors ...): a whole number >= `least`; anything
    else is an argparse error (exit 2, the option named, no traceback)."""
    import argparse

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
