"""The commands that read a store's figures: leaderboard, correlate, agreement, judge-audit, ensemble, ranking,
bt and winrate, and intent (two files compared, no store); with the notes they print about a dataset's data
(responses copied from the references, lexical scores only under another flavor)."""
from __future__ import annotations

import sys

import pandas as pd

from evalcore.analysis import agreement as ag
from evalcore.analysis import judge_audit as ja
from evalcore.analysis import leaderboard as lb
from evalcore.analysis.bradley_terry import table as bt_table
from evalcore.analysis.correlate import Models, correlations
from evalcore.analysis.ensemble import ensemble as ensemble_of
from evalcore.analysis.ranking import ranking as ranking_of
from evalcore.analysis.taskoriented import intent_scores
from evalcore.analysis.winrates import win_rates
from evalcore.cli.output import emit
from evalcore.ingest.readers import read_table
from evalcore.scoring import elsewhere
from evalcore.store import queries


def chosen_models(args) -> Models:
    """--models and --exclude-models."""
    split = lambda text: tuple(m.strip() for m in (text or "").split(",") if m.strip())  # noqa: E731
    return Models(split(args.models), split(args.exclude_models))


def other_configs(con, args) -> None:
    """Say so when the dataset's lexical scores exist only under another flavor or tokenizer (the
    computed lexical columns would otherwise be silently absent)."""
    if getattr(args, "origin", "computed") == "published":
        return
    other = elsewhere(con, args.dataset, args.flavor, args.tokenizer)
    if other:
        print(f"note: no lexical scores of {args.dataset!r} under --flavor {args.flavor}"
              f"{' --tokenizer ' + args.tokenizer if args.tokenizer else ''}; they exist under: "
              + "; ".join(other), file=sys.stderr)


def reference_copies(con, args) -> None:
    """A note for each model whose responses are copies of their item's reference (usually the
    reference imported as a model: it is scored against itself and inflates correlations)."""
    copies = queries.reference_copies(con, args.dataset, getattr(args, "track", None))
    for row in copies[chosen_models(args).mask(copies["model"])].itertuples():
        # Most of a model's responses copied: likely the reference itself. A few: a model that
        # sometimes says exactly what the reference says (they score as perfect matches).
        why = (f"was the reference imported as a model? --exclude-models {row.model} leaves it out"
               if row.identical * 2 >= row.responses else "they count as perfect matches")
        print(f"note: {row.identical:,} of {row.responses:,} responses of model {row.model!r} are identical to a "
              f"reference of their item ({why})", file=sys.stderr)


def leaderboard(con, args) -> None:
    opts = dict(flavor=args.flavor, tokenizer=args.tokenizer, partial=args.partial, resamples=args.bootstrap,
                seed=args.seed)
    if args.rank_by is not None:
        board = lb.leaderboard(con, args.dataset, args.track, rank_by=args.rank_by, **opts)
    else:
        board = lb.default_ranked(con, args.dataset, args.track, **opts)
    emit(board, args.format, 4)
    if args.signatures:
        sig = lb.signatures(con, args.dataset, args.track, flavor=args.flavor, tokenizer=args.tokenizer)
        print() if args.format == "table" else None
        emit(sig, args.format)


def correlate(con, args) -> None:
    reference_copies(con, args)
    other_configs(con, args)
    frame = correlations(con, args.dataset, args.track, level=args.level, origin=args.origin,
                         methods=[m.strip() for m in args.method.split(",") if m.strip()],
                         bootstrap=args.bootstrap, seed=args.seed, aggregate=args.aggregate,
                         flavor=args.flavor, tokenizer=args.tokenizer,
                         compare_published=args.compare_published, models=chosen_models(args),
                         system_aggregate=args.system_aggregate)
    emit(frame, args.format, 4)


def agreement(con, args) -> None:
    frame = (ag.annotator_bias(con, args.dataset, args.track) if args.bias else
             ag.agreement(con, args.dataset, args.track, bootstrap=args.bootstrap, seed=args.seed))
    emit(frame, args.format, 4)


def judge_audit(con, args) -> None:
    frame = ja.audit_part(con, args.dataset, args.part, judge=args.judge, across=args.across,
                          bootstrap=args.bootstrap, seed=args.seed)
    if frame.empty:
        print(f"note: {ja.nothing_to_audit(con, args.dataset, args.part)}", file=sys.stderr)
    emit(frame, args.format, 4)


def ensemble(con, args) -> None:
    reference_copies(con, args)
    results, weights = ensemble_of(con, args.dataset, level=args.level, holdout=args.holdout, origin=args.origin,
                                   method=args.method, power=args.power, aggregate=args.aggregate,
                                   models=chosen_models(args))
    frame = weights if args.weights else results
    emit(frame, args.format, 4)


def ranking(con, args) -> None:
    reference_copies(con, args)
    frame = ranking_of(con, args.dataset, args.track, dimension=args.dimension,
                       rankers=[r.strip() for r in args.rankers.split(",")] if args.rankers else None,
                       thresholds=[float(t) for t in args.thresholds.split(",")], aggregate=args.aggregate,
                       flavor=args.flavor, models=chosen_models(args))
    emit(frame, args.format, 4)


def bt(con, args) -> None:
    emit(bt_table(con, args.dataset, source=args.source, dimension=args.dimension, resamples=args.bootstrap,
                  seed=args.seed, anchor=args.anchor), args.format, 2)


def winrate(con, args) -> None:
    emit(win_rates(con, args.dataset, args.track, args.judge), args.format, 4)


def intent(args) -> int:
    """Needs no store: it compares two files."""
    gold, pred = ({str(r.get("id")): str(r.get("label")) for r in read_table(f).records} for f in (args.gold, args.pred))
    missing = sorted(set(gold) - set(pred))
    if missing:
        raise ValueError(f"{args.pred}: no prediction for {len(missing)} gold id(s), e.g. {missing[0]!r}")
    ids = sorted(gold)
    emit(pd.DataFrame([intent_scores([gold[i] for i in ids], [pred[i] for i in ids])]), args.format)
    return 0
