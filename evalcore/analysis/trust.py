"""Which metric to trust for which skill: metric-human correlations per track, pooled per skill.

Cells are (metric, skill, track): the correlation of the metric with one human dimension, or with
the mean of the track's dimensions (`dimension="mean"`: units rated on every dimension of the track,
their scores averaged), at system, dialogue or turn level (see evalcore.analysis.correlate for the units).

- Track cell: r (Pearson, Spearman or Kendall, equal to scipy), two-sided p, n and a 95% interval
  from Fisher's z with standard error 1/sqrt(n - 3) (for Spearman and Kendall a common
  approximation, stated in the `ci` column).
- Pooled cell per skill: fixed-effect meta-analysis of Fisher z over the skill's tracks where the
  cell is defined, weights n - 3: z = sum((n_i - 3) z_i) / sum(n_i - 3), se = 1/sqrt(sum(n_i - 3)),
  r = tanh(z), CI tanh(z -+ 1.96 se), p from z / se against the normal. A skill with one track keeps
  that track's own p (its r and CI are the same either way).
- p_adjusted: the column's p values (a track's, or a skill's pooled ones) adjusted for comparing
  that many metrics, by Holm's step-down method (adjust="holm", the default) or not at all ("none").
- mark: `best` is the highest r among the significantly positive cells of the column (adjusted p <
  alpha and r > 0); a column with no such cell has no best, whatever its highest r. `tied`: a
  significantly positive cell not significantly worse than the best. `disagrees`: a significantly
  negative cell (people and metric disagree): never best, never tied.
- tied_with_best: not significantly worse than the column's best. On a track: Williams' test of
  r(best, human) > r(metric, human) given r(best, metric), one-sided alpha, on the units where all
  three are known. Pooled: the tracks' one-sided p values combined by Stouffer's weighted Z (weights
  sqrt(n_i - 3)). None where the column has no best.
- rank: 1 = highest r within the track, or highest pooled r within the skill (an order, not a verdict).

verdicts() turns the pooled cells into one sentence per skill; robustness() asks the same question
under every method and human dimension, so a reader sees whether the answer depends on the setting, and a
verdict whose metric leads under half the settings or fewer says so in its first words ("not a clear
choice"), never "trust". opening() is where a view opens when nobody chose a level: the first level (in
choices() order) at which some skill has a verdict, with why the ones before it had none, or, when none
has one, what is missing in the words of someone who rates responses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from evalcore.analysis.correlate import Models, check_options, human_scores, metric_scores
from evalcore.analysis.options import ADJUSTMENTS
from evalcore.analysis.stats import METHODS, Correlation, correlate, fisher_interval, williams
from evalcore.core.words import count
from evalcore.metrics.registry import HUMAN_ORDER, PAPER_ORDER, ordered
from evalcore.store.queries import require_dataset

POOLED = "pooled"
ALPHA = 0.05
Z95 = float(special.ndtri(0.975))
SKILL_ORDER = ["chitchat", "knowledge", "recommendation", "persona", "task-oriented"]
COLUMNS = ["metric", "skill", "track", "dimension", "r", "ci_low", "ci_high", "n", "p", "tied_with_best", "rank",
           "dimensions", "ci", "note", "p_adjusted", "mark"]
LOW_POWER_N = 30  # below this many units a Williams test rarely separates two metrics (say so)
VERDICT_N = 4  # a skill's verdict pools tracks with n > 3 (Fisher z's weight is n - 3): a track needs 4 units
UNIT = {"system": "model", "dialogue": "dialogue", "turn": "response"}  # what one unit is, at each level


def fisher_z(r: float) -> float:
    """atanh(r), with |r| = 1 kept finite (a perfect correlation on few points is still a point)."""
    return math.atanh(max(-1 + 1e-12, min(1 - 1e-12, r)))


def fisher_ci(r: float, n: int) -> tuple[float, float]:
    return (math.nan, math.nan) if n <= 3 or math.isnan(r) else fisher_interval(r, n)


def pool(rs: list[float], ns: list[int]) -> dict:
    """Fixed-effect meta-analysis of Fisher z with weights n - 3 (cells with n <= 3 carry no weight)."""
    cells = [(r, n) for r, n in zip(rs, ns) if n > 3 and not math.isnan(r)]
    if not cells:
        return {"r": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": sum(ns), "p": math.nan,
                "note": "no track with n > 3"}
    w = np.array([n - 3 for _, n in cells], dtype=float)
    z = float(np.dot(w, [fisher_z(r) for r, _ in cells]) / w.sum())
    se = 1 / math.sqrt(w.sum())
    return {"r": math.tanh(z), "ci_low": math.tanh(z - Z95 * se), "ci_high": math.tanh(z + Z95 * se),
            "n": int(sum(n for _, n in cells)), "p": float(2 * special.ndtr(-abs(z / se))), "note": ""}


def stouffer(ps: list[float], ns: list[int]) -> float:
    """One-sided p values combined by Stouffer's Z with weights sqrt(n - 3)."""
    cells = [(p, n) for p, n in zip(ps, ns) if not math.isnan(p) and n > 3]
    if not cells:
        return math.nan
    w = np.sqrt([n - 3 for _, n in cells])
    z = np.array([special.ndtri(1 - min(max(p, 1e-300), 1 - 1e-16)) for p, _ in cells])
    return float(special.ndtr(-(w @ z) / math.sqrt(float(w @ w))))


def human_vector(wide: pd.DataFrame, dimension: str) -> tuple[pd.Series | None, str, str]:
    """(values per unit, dimensions used, reason when undefined) for one track's wide human frame."""
    if wide.empty:
        return None, "", "no human scores at this level"
    if dimension != "mean":
        if dimension not in wide.columns:
            return None, "", f"no {dimension} ratings on this track"
        return wide[dimension].dropna(), dimension, ""
    dims = ordered(wide.columns, HUMAN_ORDER)
    complete = wide[dims].dropna()
    if complete.empty:
        return None, ",".join(dims), "no unit rated on every dimension"
    return complete.mean(axis=1), ",".join(dims), ""


def _track_cells(metrics: pd.DataFrame, human: pd.Series, method: str) -> dict[str, Correlation]:
    out = {}
    for metric in metrics.columns:
        m = metrics[metric].reindex(human.index)
        out[metric] = correlate(m.to_numpy(float), human.to_numpy(float), method)
    return out


class _Williams:
    """Williams' tests on the tracks' data, each (track, best, other) run once: the track's best and
    the skill's best are often the same metric."""

    def __init__(self, method: str):
        self.method = method
        self.data: dict[str, tuple[pd.DataFrame, pd.Series]] = {}  # track -> (metrics by unit, human by unit)
        self.done: dict[tuple[str, str, str], tuple[float, int]] = {}

    def p(self, track: str, best: str, other: str) -> tuple[float, int]:
        key = (track, best, other)
        if key not in self.done:
            metrics, human = self.data[track]
            self.done[key] = _williams_p(metrics, human, best, other, self.method)
        return self.done[key]


def _williams_p(metrics: pd.DataFrame, human: pd.Series, best: str, other: str, method: str) -> tuple[float, int]:
    """One-sided p of Williams' test that `best` correlates more with people than `other` does."""
    frame = pd.concat([human.rename("__h"), metrics[best].rename("__b"), metrics[other].rename("__o")],
                      axis=1, join="inner").dropna()
    n = len(frame)
    r12 = correlate(frame["__b"], frame["__h"], method)
    r13 = correlate(frame["__o"], frame["__h"], method)
    r23 = correlate(frame["__b"], frame["__o"], method)
    if not (r12.defined and r13.defined and r23.defined):
        return math.nan, n  # e.g. a metric constant on these units: the test says nothing
    return williams(r12.r, r13.r, r23.r, n).p, n


@dataclass
class _Track:
    """One track's units: metric values (unit x metric) and human scores (unit x dimension)."""

    track: str
    skill: str
    metrics: pd.DataFrame
    wide: pd.DataFrame


def _load(con, dataset: str, level: str, origin: str, flavor: str, tokenizer: str | None, aggregate: str,
          models: Models, system_aggregate: str) -> list[_Track]:
    """Every track's metric and human values at this level, read once (the verdicts' sweep over methods
    and dimensions reuses them)."""
    tracks = con.execute("SELECT track, coalesce(skill, 'other') FROM tracks WHERE dataset = ? ORDER BY track",
                         [dataset]).fetchall()
    out = []
    for track, skill in tracks:
        scores = models.apply(metric_scores(con, dataset, track, level, origin, flavor, tokenizer, system_aggregate),
                              level)
        if scores.empty:
            continue  # nothing to correlate on this track: no metric has values here
        humans = models.apply(human_scores(con, dataset, track, level, aggregate), level)
        metrics = scores.pivot_table(index="unit", columns="metric", values="value", aggfunc="first")
        wide = (humans.pivot_table(index="unit", columns="dimension", values="value", aggfunc="first")
                if not humans.empty else pd.DataFrame())
        out.append(_Track(track, skill, metrics[ordered(metrics.columns, PAPER_ORDER)], wide))
    return out


def trust(con, dataset: str, *, level: str = "system", method: str = "spearman", dimension: str = "mean",
          origin: str = "computed", flavor: str = "default", tokenizer: str | None = None,
          aggregate: str = "mean", models: Models = Models(), system_aggregate: str = "corpus",
          alpha: float = ALPHA, adjust: str = "holm") -> pd.DataFrame:
    """Long table (COLUMNS): one row per metric, skill and track, plus one `pooled` row per metric and skill."""
    return _read_and_table(con, dataset, level, method, dimension, origin, flavor, tokenizer, aggregate, models,
                           system_aggregate, alpha, adjust)[1]


def _read_and_table(con, dataset: str, level: str, method: str, dimension: str, origin: str, flavor: str,
                    tokenizer: str | None, aggregate: str, models: Models, system_aggregate: str, alpha: float,
                    adjust: str) -> tuple[list[_Track], pd.DataFrame]:
    """The options checked, the values read, and the table at one setting (an error that says what exists
    when there is nothing to correlate)."""
    check_options(level, origin, [method], aggregate)
    _check_adjust(adjust, alpha)
    require_dataset(con, dataset)
    loaded = _load(con, dataset, level, origin, flavor, tokenizer, aggregate, models, system_aggregate)
    frame = _table(loaded, method, dimension, alpha=alpha, adjust=adjust)
    if frame.empty or frame["r"].isna().all():
        raise ValueError(_nothing(con, dataset, level, origin, frame))
    return loaded, frame


def _check_adjust(adjust: str, alpha: float) -> None:
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {adjust!r}; known: {', '.join(ADJUSTMENTS)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")


def _table(loaded: list[_Track], method: str, dimension: str, *, alpha: float, adjust: str,
           ties: bool = True) -> pd.DataFrame:
    """The long table for one method and dimension. Without `ties`, no Williams test is run (the sweep
    over settings needs only each column's best)."""
    rows: list[dict] = []
    tests = _Williams(method)
    for t in loaded:
        human, dims, reason = human_vector(t.wide, dimension)
        if human is None:
            rows += [_row(m, t.skill, t.track, dimension, dims, Correlation(method, 0, reason=reason)) for m in t.metrics]
            continue
        tests.data[t.track] = (t.metrics, human)
        for metric, c in _track_cells(t.metrics, human, method).items():
            rows.append(_row(metric, t.skill, t.track, dimension, dims, c))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if frame.empty or frame["r"].isna().all():
        return frame
    frame = pd.concat([frame, _pooled(frame)], ignore_index=True)
    frame = _marks(frame, tests, alpha=alpha, adjust=adjust, ties=ties)
    frame = _sorted(frame)[COLUMNS]
    frame["rank"] = frame["rank"].astype("Int64")
    return frame


def _row(metric: str, skill: str, track: str, dimension: str, dims: str, c: Correlation) -> dict:
    low, high = fisher_ci(c.r, c.n) if c.defined else (math.nan, math.nan)
    return {"metric": metric, "skill": skill, "track": track, "dimension": dimension, "r": c.r if c.defined else math.nan,
            "ci_low": low, "ci_high": high, "n": c.n, "p": c.p if c.defined else math.nan,
            "tied_with_best": None, "rank": math.nan, "dimensions": dims,
            "ci": "fisher-z 95% se=1/sqrt(n-3)" if not math.isnan(low) else "",
            "note": c.reason or ("" if c.n > 3 else f"n = {c.n}: no interval"), "p_adjusted": math.nan, "mark": ""}


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjusted p values (Holm 1979): the i-th smallest of m p values becomes
    max over j <= i of min(1, (m - j + 1) p_(j)). NaN stays NaN and is not counted in m."""
    idx = [i for i, p in enumerate(ps) if not math.isnan(p)]
    out = [math.nan] * len(ps)
    m, running = len(idx), 0.0
    for j, i in enumerate(sorted(idx, key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - j) * ps[i]))
        out[i] = running
    return out


def _marks(frame: pd.DataFrame, tests: _Williams, *, alpha: float, adjust: str, ties: bool) -> pd.DataFrame:
    """Per column (a track, or a skill's pooled cells): rank by r, p adjusted over the column's metrics,
    and the marks. `best`: the highest r among the significantly positive cells (adjusted p < alpha,
    r > 0), none when there is no such cell; `tied`: significantly positive and not significantly worse
    than the best (Williams' test, one-sided alpha; pooled: the tracks' tests combined by Stouffer's Z);
    `disagrees`: significantly negative. tied_with_best is True for the best and its ties, False for
    the rest of the defined cells, None where the column has no best or the test says nothing."""
    frame = frame.copy()
    frame["tied_with_best"] = frame["tied_with_best"].astype(object)
    for (skill, track), part in frame.groupby(["skill", "track"], sort=False):
        defined = part[part["r"].notna()]
        if defined.empty:
            continue
        frame.loc[defined.index, "rank"] = defined["r"].rank(ascending=False, method="min")
        padj = holm(defined["p"].tolist()) if adjust == "holm" else defined["p"].tolist()
        frame.loc[defined.index, "p_adjusted"] = padj
        significant = defined[pd.Series(padj, index=defined.index) < alpha]
        frame.loc[significant.index[significant["r"] < 0], "mark"] = "disagrees"
        positive = significant[significant["r"] > 0]
        if positive.empty:
            continue
        best = positive.loc[positive["r"].idxmax(), "metric"]
        for idx in defined.index:
            metric = frame.at[idx, "metric"]
            if metric == best:
                frame.at[idx, "tied_with_best"], frame.at[idx, "mark"] = True, "best"
                continue
            if not ties:
                continue
            p = _tie_p(frame, tests, skill, track, best, metric, idx)
            frame.at[idx, "tied_with_best"] = None if math.isnan(p) else bool(p >= alpha)
            if frame.at[idx, "tied_with_best"] is True and idx in positive.index:
                frame.at[idx, "mark"] = "tied"
    return frame


def _tie_p(frame: pd.DataFrame, tests: _Williams, skill: str, track: str, best: str, metric: str, idx) -> float:
    """One-sided p that `best` correlates more with people than `metric` does: Williams' test on a
    track (a low-power note below LOW_POWER_N units), the tracks' tests by Stouffer's Z when pooled."""
    if track != POOLED:
        p, n = tests.p(track, best, metric)
        if n < LOW_POWER_N:
            note = frame.at[idx, "note"]
            frame.at[idx, "note"] = (note + "; " if note else "") + f"low power: Williams' test on n = {n}"
        return p
    ps, ns = [], []
    for t in dict.fromkeys(frame.loc[(frame["skill"] == skill) & (frame["track"] != POOLED), "track"]):
        if t not in tests.data:
            continue
        metrics, _ = tests.data[t]
        if best in metrics and metric in metrics:
            p, n = tests.p(t, best, metric)
            ps.append(p)
            ns.append(n)
    return stouffer(ps, ns)


def _pooled_note(part: pd.DataFrame, ok: pd.DataFrame, pooled: dict) -> str:
    """Why a pooled cell is undefined (the tracks' own reason first), else how many tracks it pools."""
    if ok.empty:
        return part["note"].iloc[0]
    if pooled["note"]:
        return pooled["note"]
    return f"pools {count(len(ok), 'track')}" + (f"; undefined on {len(part) - len(ok)}" if len(part) > len(ok) else "")


def _pooled(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (skill, metric), part in frame.groupby(["skill", "metric"], sort=False):
        ok = part[part["r"].notna()]
        pooled = pool(ok["r"].tolist(), ok["n"].astype(int).tolist())
        if len(ok) == 1:  # one track: its own test (exact, as scipy's), not the normal approximation of Fisher z
            pooled["p"] = float(ok["p"].iloc[0])
        rows.append({"metric": metric, "skill": skill, "track": POOLED, "dimension": part["dimension"].iloc[0],
                     "r": pooled["r"], "ci_low": pooled["ci_low"], "ci_high": pooled["ci_high"], "n": pooled["n"],
                     "p": pooled["p"], "tied_with_best": None, "rank": math.nan,
                     "dimensions": ";".join(dict.fromkeys(d for d in part["dimensions"] if d)),
                     "ci": "fixed-effect fisher-z 95%, weights n-3" if not math.isnan(pooled["r"]) else "",
                     "note": _pooled_note(part, ok, pooled), "p_adjusted": math.nan, "mark": ""})
    return pd.DataFrame(rows, columns=frame.columns)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    skills = {s: i for i, s in enumerate(SKILL_ORDER)}
    order = frame.assign(_s=frame["skill"].map(lambda s: skills.get(s, len(skills))),
                         _t=frame["track"].eq(POOLED).map({True: 0, False: 1}),
                         _m=frame["metric"].map({m: i for i, m in enumerate(ordered(frame["metric"], PAPER_ORDER))}))
    return order.sort_values(["_s", "skill", "_t", "track", "_m"]).reset_index(drop=True)


def choices(con, dataset: str) -> list[tuple[str, str]]:
    """The (level, origin) pairs with something to correlate in the dataset, most informative first:
    published system tables, computed system scores (three or more models on a track), then
    per-response scores at turn and dialogue level."""
    def count(sql: str) -> int:
        return con.execute(sql, [dataset]).fetchall()[0][0]

    rated = count("SELECT count(*) FROM human_ratings WHERE dataset = ?")
    per_response = count("SELECT count(*) FROM human_ratings WHERE dataset = ? AND target <> 'system'")
    published = count("SELECT count(*) FROM system_scores WHERE dataset = ? AND origin = 'published'")
    systems = count("""SELECT coalesce(max(k), 0) FROM (SELECT count(DISTINCT model) AS k FROM system_scores
                       WHERE dataset = ? AND origin = 'computed' GROUP BY track)""")
    out = []
    if rated and published:
        out.append(("system", "published"))
    if rated and systems >= 3:
        out.append(("system", "computed"))
    if per_response and systems:
        out += [("turn", "computed"), ("dialogue", "computed")]
    return out


def dimensions(con, dataset: str) -> list[str]:
    """The human dimensions a trust view can use: mean, then the dataset's own in the papers' order."""
    rows = con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ?", [dataset]).fetchall()
    return ["mean"] + ordered([d for (d,) in rows], HUMAN_ORDER)


def missing(con, dataset: str) -> str:
    """Why a dataset has no (level, origin) pair to correlate at all, and what to import."""
    require_dataset(con, dataset)
    rated = con.execute("SELECT count(*) FROM human_ratings WHERE dataset = ?", [dataset]).fetchall()[0][0]
    if not rated:
        return (f"nothing to correlate in {dataset!r}: it has no human ratings (import some with `evalcore import "
                "ratings`, or a paper's tables with `evalcore import published`)")
    return (f"nothing to correlate in {dataset!r}: no metric values of the rated units (score its responses with "
            "`evalcore score`, or import a paper's tables with `evalcore import published`)")


def _nothing(con, dataset: str, level: str, origin: str, frame: pd.DataFrame) -> str:
    """Why a dataset has nothing to show at this level and origin, and what does work."""
    why = frame["note"].iloc[0] if not frame.empty else f"no {origin} metric values at {level} level"
    other = [f"--level {lv} --origin {o}" for lv, o in choices(con, dataset) if (lv, o) != (level, origin)]
    hint = f"; try {' or '.join(other)}" if other else "; it needs metric values and human ratings of the same units"
    return f"nothing to correlate in {dataset!r} at {level} level ({origin}): {why}{hint}"


@dataclass(frozen=True)
class Opening:
    """Where a trust view opens when nobody chose a level: `level` and `origin` (None when no level of the
    dataset has a verdict), and `why`: why the levels before it were passed over ("" when it is the first),
    or, with no level, what is missing."""

    level: str | None
    origin: str | None
    why: str


def opening(con, dataset: str, *, method: str = "spearman", dimension: str = "mean", flavor: str = "default",
            tokenizer: str | None = None, aggregate: str = "mean", models: Models = Models(),
            system_aggregate: str = "corpus", level: str | None = None, origin: str | None = None) -> Opening:
    """The first (level, origin) of choices() (only those at `level` or of `origin` where given) at which some
    skill has a verdict (a pooled correlation: a track with at least VERDICT_N units rated and scored, neither
    side constant) for `method` and `dimension`.
    Used by the Metric trust page and `evalcore trust` alike, so both open on an answer: after a rating task
    of 16 responses of three models, system level has n <= 3 per track and turn level n = 15."""
    require_dataset(con, dataset)
    offered = [(lv, o) for lv, o in choices(con, dataset) if level in (None, lv) and origin in (None, o)]
    if not offered:
        return Opening(None, None, missing_words(con, dataset))
    passed, most = [], {}
    for level, origin in offered:
        loaded = _load(con, dataset, level, origin, flavor, tokenizer, aggregate, models, system_aggregate)
        frame = _table(loaded, method, dimension, alpha=ALPHA, adjust="none", ties=False)
        pooled = frame[frame["track"] == POOLED] if len(frame) else frame
        if len(pooled) and pooled["r"].notna().any():
            return Opening(level, origin, "; ".join(passed))
        cells = frame[frame["track"] != POOLED] if len(frame) else frame
        most[level] = int(cells["n"].max()) if len(cells) else 0
        passed.append(_passed_over(level, origin, cells))
    return Opening(None, None, f"no verdict at any level yet: {'; '.join(passed)}" + _advice(most))


def _where(level: str, origin: str) -> str:
    return f"{level} level" + (" (published values)" if origin == "published" else "")


def _passed_over(level: str, origin: str, cells: pd.DataFrame) -> str:
    """Why a level has no verdict, in units a rater counts: models, dialogues or responses."""
    where = _where(level, origin)
    if cells.empty:
        return f"{where} has no {origin} metric values of rated {UNIT[level]}s"
    most = int(cells["n"].max())
    tracks = int((cells.groupby("track")["n"].max() > 0).sum())   # tracks with a rated unit
    if 0 < most < VERDICT_N:
        per = " per track" if tracks > 1 else ""
        return (f"{where} has {'at most ' if tracks > 1 else ''}{count(most, UNIT[level])} with both ratings and "
                f"metric values{per} (n = {most}; a verdict needs {VERDICT_N})")
    notes = cells["note"][cells["note"] != ""]
    return f"{where}: {notes.mode().iloc[0] if len(notes) else 'nothing to correlate'}"


def _advice(most: dict[str, int]) -> str:
    """What to rate next, from the level of single responses where it was tried."""
    if "turn" in most and most["turn"] < VERDICT_N:
        return (f". Rate {count(VERDICT_N - most['turn'], 'more response')} of one track (a rating task, or "
                "an imported ratings file) for a first verdict at turn level")
    return ""


def missing_words(con, dataset: str) -> str:
    """Why a dataset has nothing to correlate at all, worded for the dashboard (missing() is the command's)."""
    rated = con.execute("SELECT count(*) FROM human_ratings WHERE dataset = ?", [dataset]).fetchall()[0][0]
    if not rated:
        return "no human ratings yet: rate its responses in a rating task, or upload a ratings file"
    return "no metric values of the rated units yet: score its responses (the Upload page scores what is missing)"


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
        if defined.empty:
            rows.append({**row, "verdict": "undefined", "metric": "", "text": f"{skill}: {_no_verdict(frame, skill, level)}"})
            continue
        best = defined[defined["mark"] == "best"]
        c = best.iloc[0] if len(best) else defined.iloc[0]
        values = {k: c[k] for k in ("metric", "r", "ci_low", "ci_high", "p", "p_adjusted", "n")}
        if len(best):
            held, settings = _held(sweep, skill, c["metric"])
            if settings and 2 * held <= settings:
                text = (f"{skill}: {c['metric']} leads at this setting ({_cell_text(c, adjust)}), but only under "
                        f"{held} of {settings} settings of method and human dimension: not a clear choice")
                verdict = "unclear"
            else:
                text = f"{skill}: trust {c['metric']} ({_cell_text(c, adjust)})"
                if held < settings:
                    text += f"; it leads under {held} of {settings} settings of method and human dimension"
                verdict = "trust"
            if tied:
                text += f"; not significantly worse: {', '.join(tied)}"
        else:
            text = f"{skill}: no metric agrees reliably with people"
            if c["r"] > 0 and c["mark"] != "disagrees":  # a negative r is no agreement, not even the highest
                text += f" (highest: {c['metric']}, {_cell_text(c, adjust)})"
            verdict = "none"
        if disagree:
            text += f"; disagreeing with people (significantly negative): {', '.join(disagree)}"
        rows.append({**row, **values, "verdict": verdict, "text": text})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _no_verdict(frame: pd.DataFrame, skill: str, level: str | None) -> str:
    """Why a skill has no verdict: too few units (counted in the level's units), else the pooled cells' reason."""
    tracks = frame[(frame["skill"] == skill) & (frame["track"] != POOLED)]
    most = int(tracks["n"].max()) if len(tracks) else 0
    if level in UNIT and 0 < most < VERDICT_N:
        has = f"only {count(most, UNIT[level])} {'has' if most == 1 else 'have'}"
        return (f"no verdict: {has} both ratings and metric values{' on any one track' if tracks['track'].nunique() > 1 else ''}"
                f" (a verdict needs {VERDICT_N})")
    pooled = frame.loc[(frame["skill"] == skill) & (frame["track"] == POOLED), "note"]
    return f"nothing to correlate ({pooled.iloc[0] if len(pooled) else ''})"


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
    _check_adjust(adjust, alpha)
    loaded = _load(con, dataset, level, origin, flavor, tokenizer, aggregate, models, system_aggregate)
    return _sweep(loaded, dimensions, alpha=alpha, adjust=adjust)


def _sweep(loaded: list[_Track], dimensions: list[str], *, alpha: float, adjust: str) -> pd.DataFrame:
    rows = []
    for method in METHODS:
        for dimension in dimensions:
            frame = _table(loaded, method, dimension, alpha=alpha, adjust=adjust, ties=False)
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
        return f"the same under all {len(part)} settings of method and human dimension"
    groups = part.groupby("answer", sort=False)
    order = sorted(groups.groups, key=lambda a: (a != answer, -len(groups.groups[a]), a))
    said = []
    for a in order:
        settings = groups.get_group(a)
        where = ", ".join(m.capitalize() + "/" + d for m, d in zip(settings["method"], settings["dimension"]))
        said.append(f"{a} under {len(settings)} of {len(part)} ({where})")
    return "depends on the setting: " + "; ".join(said)


def report(con, dataset: str, *, level: str, method: str, dimension: str, origin: str, dimensions: list[str],
           flavor: str = "default", tokenizer: str | None = None, aggregate: str = "mean", models: Models = Models(),
           system_aggregate: str = "corpus", alpha: float = ALPHA,
           adjust: str = "holm") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trust()'s table, verdicts() with `robust`: how each skill's answer holds across the sweep over
    methods and `dimensions`), from values read once."""
    loaded, frame = _read_and_table(con, dataset, level, method, dimension, origin, flavor, tokenizer, aggregate,
                                    models, system_aggregate, alpha, adjust)
    sweep = _sweep(loaded, dimensions, alpha=alpha, adjust=adjust)
    said = verdicts(frame, adjust=adjust, sweep=sweep, level=level)
    said["robust"] = [robustness_text(sweep, s, m if v in ("trust", "unclear") else "none") if v != "undefined" else ""
                      for s, v, m in zip(said["skill"], said["verdict"], said["metric"])]
    return frame, said
