"""A sentence per skill from the trust table's pooled cells, and how each answer holds across settings.

verdicts() turns the pooled cells into one sentence per skill; robustness() asks the same question under every
method and human dimension, so a reader sees whether the answer depends on the setting, and a verdict whose
metric leads under half the settings or fewer says so in its first words ("not a clear choice"), never "trust".
report() gives the table and its verdicts from values read once.
"""
from __future__ import annotations

import math

import pandas as pd

from evalcore.analysis.correlate import Models, check_options
from evalcore.analysis.stats import METHODS
from evalcore.analysis.trust import (ALPHA, POOLED, UNIT, VERDICT_N, Track, check_adjust, load_tracks, read_and_table, table,
                                     units)
from evalcore.core.i18n import _, ngettext


def _fmt_p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def _cell_text(c: pd.Series, adjust: str) -> str:
    held = f", Holm {_fmt_p(c['p_adjusted'])}" if adjust == "holm" else ""
    ci = "" if math.isnan(c["ci_low"]) else f" [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
    return f"r = {c['r']:.2f}{ci}, p {'= ' if c['p'] >= 0.001 else ''}{_fmt_p(c['p'])}{held}, n = {int(c['n'])}"


VERDICT_COLUMNS = ["skill", "verdict", "metric", "r", "ci_low", "ci_high", "p", "p_adjusted", "n", "tied", "disagree",
                   "text"]


def verdicts(frame: pd.DataFrame, *, adjust: str = "holm", sweep: pd.DataFrame | None = None,
             level: str | None = None) -> pd.DataFrame:
    """One row per skill from trust()'s pooled cells: verdict `trust` (a best metric exists: named with
    its r, CI, p and n, and the metrics tied with it), `none` (no significantly positive metric: the
    highest r is named as such, not as best), or `undefined` (nothing correlates), and `text`, the
    sentence a page or the CLI prints. Significantly negative metrics are listed as disagreeing.
    With `sweep` (robustness()'s rows), a best metric that leads under half the settings of method and
    human dimension or fewer is `unclear`, and its sentence says so first: "METEOR leads at this setting
    (...), but only under 3 of 12 settings of method and human dimension: not a clear choice"; one that
    leads under more than half but not all says under how many. With `level`, a skill with too few units for
    a verdict says how many it has, in that level's units ("only 1 response has both ratings and metric
    values; a verdict needs 4")."""
    rows = []
    pooled = frame[frame["track"] == POOLED]
    for skill, part in pooled.groupby("skill", sort=False):
        defined = part[part["r"].notna()].sort_values("r", ascending=False)
        tied = defined.loc[defined["mark"] == "tied", "metric"].tolist()
        disagree = defined.loc[defined["mark"] == "disagrees", "metric"].tolist()[::-1]  # the strongest first
        row = {"skill": skill, "tied": ", ".join(tied), "disagree": ", ".join(disagree)}
        # each clause a whole sentence of the catalog (a page's language; English for the CLI), joined by "; "
        if defined.empty:
            rows.append({**row, "verdict": "undefined", "metric": "",
                         "text": _no_verdict(frame, skill, level)})
            continue
        best = defined[defined["mark"] == "best"]
        c = best.iloc[0] if len(best) else defined.iloc[0]
        values = {k: c[k] for k in ("metric", "r", "ci_low", "ci_high", "p", "p_adjusted", "n")}
        said = {"skill": skill, "metric": c["metric"], "cell": _cell_text(c, adjust)}
        if len(best):
            held, settings = _held(sweep, skill, c["metric"])
            if settings and 2 * held <= settings:
                clauses = [_("{skill}: {metric} leads at this setting ({cell}), but only under {held} of {settings} "
                             "settings of method and human dimension: not a clear choice").format(
                    held=held, settings=settings, **said)]
                verdict = "unclear"
            else:
                clauses = [_("{skill}: trust {metric} ({cell})").format(**said)]
                if held < settings:
                    clauses.append(_("it leads under {held} of {settings} settings of method and human "
                                     "dimension").format(held=held, settings=settings))
                verdict = "trust"
            if tied:
                clauses.append(_("not significantly worse: {metrics}").format(metrics=", ".join(tied)))
        else:
            if c["r"] > 0 and c["mark"] != "disagrees":  # a negative r is no agreement, not even the highest
                clauses = [_("{skill}: no metric agrees reliably with people (highest: {metric}, {cell})").format(
                    **said)]
            else:
                clauses = [_("{skill}: no metric agrees reliably with people").format(skill=skill)]
            verdict = "none"
        if disagree:
            clauses.append(_("disagreeing with people (significantly negative): {metrics}").format(
                metrics=", ".join(disagree)))
        rows.append({**row, **values, "verdict": verdict, "text": _("; ").join(clauses)})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _no_verdict(frame: pd.DataFrame, skill: str, level: str | None) -> str:
    """Why a skill has no verdict: too few units (counted in the level's units), else the pooled cells' reason."""
    tracks = frame[(frame["skill"] == skill) & (frame["track"] != POOLED)]
    most = int(tracks["n"].max()) if len(tracks) else 0
    if level in UNIT and 0 < most < VERDICT_N:
        if tracks["track"].nunique() > 1:
            said = ngettext("{skill}: no verdict: only {count} has both ratings and metric values on any one track (a "
                            "verdict needs {needed})", "{skill}: no verdict: only {count} have both ratings and metric "
                            "values on any one track (a verdict needs {needed})", most)
        else:
            said = ngettext("{skill}: no verdict: only {count} has both ratings and metric values (a verdict needs "
                            "{needed})", "{skill}: no verdict: only {count} have both ratings and metric values (a "
                            "verdict needs {needed})", most)
        return said.format(skill=skill, count=units(most, level), needed=VERDICT_N)
    pooled = frame.loc[(frame["skill"] == skill) & (frame["track"] == POOLED), "note"]
    return _("{skill}: nothing to correlate ({why})").format(skill=skill, why=pooled.iloc[0] if len(pooled) else "")


def _held(sweep: pd.DataFrame | None, skill: str, metric: str) -> tuple[int, int]:
    """(settings of the sweep under which `metric` is the skill's best, settings with an answer); (0, 0)
    without a sweep."""
    if sweep is None or sweep.empty:
        return 0, 0
    part = sweep[sweep["skill"] == skill]
    return int((part["answer"] == metric).sum()), len(part)


def robustness(con, dataset: str, *, level: str = "system", origin: str = "computed", dimensions: list[str],
               flavor: str = "default", tokenizer: str | None = None, aggregate: str = "mean",
               models: Models = Models(), system_aggregate: str = "corpus", alpha: float = ALPHA,
               adjust: str = "holm") -> pd.DataFrame:
    """The verdict under every method and each of `dimensions` (same level, origin and models): one row
    per skill, method and dimension with `answer`, the best metric or "none". Settings where the skill's
    tracks do not rate the dimension are left out. No Williams test is needed for a best, so this is a
    dozen cheap tables over values read once."""
    check_options(level, origin, list(METHODS), aggregate)
    check_adjust(adjust, alpha)
    loaded = load_tracks(con, dataset, level, origin, flavor, tokenizer, aggregate, models, system_aggregate)
    return _sweep(loaded, dimensions, alpha=alpha, adjust=adjust)


def _sweep(loaded: list[Track], dimensions: list[str], *, alpha: float, adjust: str) -> pd.DataFrame:
    rows = []
    for method in METHODS:
        for dimension in dimensions:
            frame = table(loaded, method, dimension, alpha=alpha, adjust=adjust, ties=False)
            if frame.empty:
                continue
            pooled = frame[frame["track"] == POOLED]
            for skill, part in pooled.groupby("skill", sort=False):
                if part["r"].isna().all():
                    continue
                best = part.loc[part["mark"] == "best", "metric"]
                rows.append({"skill": skill, "method": method, "dimension": dimension,
                             "answer": best.iloc[0] if len(best) else "none"})
    return pd.DataFrame(rows, columns=["skill", "method", "dimension", "answer"])


def robustness_text(sweep: pd.DataFrame, skill: str, answer: str) -> str:
    """How the skill's answer (a metric, or "none") holds across the sweep's settings, in one line."""
    part = sweep[sweep["skill"] == skill]
    if part.empty:
        return ""
    if (part["answer"] == answer).all():
        return _("the same under all {n} settings of method and human dimension").format(n=len(part))
    groups = part.groupby("answer", sort=False)
    order = sorted(groups.groups, key=lambda a: (a != answer, -len(groups.groups[a]), a))
    said = []
    for a in order:
        settings = groups.get_group(a)
        # a method's and the mean's names in the page's language (the catalog's "Spearman", "mean"); a dimension's
        # id and a metric's name are data
        where = ", ".join(_(m.capitalize()) + "/" + (_(d) if d == "mean" else d)
                          for m, d in zip(settings["method"], settings["dimension"]))
        said.append(_("{answer} under {k} of {n} ({where})").format(answer=_(a) if a == "none" else a,
                                                                    k=len(settings), n=len(part), where=where))
    return _("depends on the setting: {answers}").format(answers=_("; ").join(said))


def report(con, dataset: str, *, level: str, method: str, dimension: str, origin: str, dimensions: list[str],
           flavor: str = "default", tokenizer: str | None = None, aggregate: str = "mean", models: Models = Models(),
           system_aggregate: str = "corpus", alpha: float = ALPHA,
           adjust: str = "holm") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trust()'s table, verdicts() with `robust`: how each skill's answer holds across the sweep over
    methods and `dimensions`), from values read once."""
    loaded, frame = read_and_table(con, dataset, level, method, dimension, origin, flavor, tokenizer, aggregate,
                                    models, system_aggregate, alpha, adjust)
    sweep = _sweep(loaded, dimensions, alpha=alpha, adjust=adjust)
    said = verdicts(frame, adjust=adjust, sweep=sweep, level=level)
    said["robust"] = [robustness_text(sweep, s, m if v in ("trust", "unclear") else "none") if v != "undefined" else ""
                      for s, v, m in zip(said["skill"], said["verdict"], said["metric"])]
    return frame, said
