"""The commands about a store's contents and history: summary, storage, models, submissions, and restore,
purge and delete-model (each a transaction; what they set aside stays restorable until purged)."""
from __future__ import annotations

import sys

from evalcore.cli.output import emit
from evalcore.store import history, queries


def summary(con, args) -> None:
    emit(queries.summary(con, args.dataset), args.format)


def storage(con, args) -> None:
    emit(queries.storage(con), args.format)


def models(con, args) -> None:
    emit(queries.models(con, args.dataset), args.format)


def submissions(con, args) -> None:
    emit(history.listing(con, args.dataset, args.model), args.format)


def restore(con, args) -> None:
    new = history.restore(con, args.submission)
    print(f"restored what submission {args.submission} set aside (as submission {new}; "
          f"`python -m evalcore restore {new}` undoes this restore)")


def purge(con, args) -> int | None:
    if not args.yes:
        print(f"would drop for good the rows submission {args.submission} set aside; add --yes to do it")
        return 1
    counts = history.purge(con, args.submission)
    print("purged " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    return None


def delete_model(con, args) -> int | None:
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
