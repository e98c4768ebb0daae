"""A rating judge against the lab's people, per track and human dimension: Spearman and Kendall with the
annotators' mean, the leave-one-annotator-out comparison with the human ceiling, quadratic-weighted kappas,
and the one-line headline per judge and dimension."""
from __future__ import annotations

from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.agreement import cohen_kappa
from evalcore.analysis.agreement_corr import loo_rs
from evalcore.analysis.judge_values import PAIRWISE, asked, dialogue_of, human_ratings, judge_values, scale, tracks
from evalcore.analysis.options import DIALOGUE_AGGREGATE, DIALOGUE_VALUE
from evalcore.analysis.stats import correlate, interval
from evalcore.core.i18n import _
from evalcore.metrics import registry

AGREEMENT_COLUMNS = ["track", "skill", "judge", "asked", "signature", "dimension", "level", "statistic", "who", "value",
                     "ci_low", "ci_high", "n", "note"]


def _judge_dimension(name: str, dimensions: list[str]) -> list[str]:
    """The human dimensions a judge is audited on: its own (Judge-Info: Info), else every one."""
    own = name.removeprefix("Judge-")
    return [own] if own in dimensions else dimensions


def loo(judge: pd.Series | None, ratings: pd.DataFrame, method: str = "spearman") -> dict:
    """Leave-one-annotator-out: for each annotator a (at least 3 responses rated by a and by someone else),
    r(a, mean of the others) and r(judge, mean of the others) on those responses; their means over
    annotators. `judge`: values indexed by unit (None: people only); `ratings`: columns unit, annotator, score."""
    wide = ratings.pivot_table(index="unit", columns="annotator", values="score", aggfunc="mean")
    people, judged = loo_rs(wide.to_numpy(float), None if judge is None else judge.reindex(wide.index).to_numpy(float),
                             method)
    return {"human": float(np.mean(people)) if people else np.nan,
            "judge": float(np.mean(judged)) if judged else np.nan, "annotators": len(people),
            "spread": (float(np.min(people)), float(np.max(people))) if people else (np.nan, np.nan)}


def loo_gap(judge: pd.Series, ratings: pd.DataFrame, *, bootstrap: int, seed: int) -> tuple[float, float, float, str]:
    """The judge's leave-one-out Spearman minus the people's (loo()), its 95% bootstrap interval over the rated
    targets (each resample recomputes both on the same targets), and the resamples without a value (a note)."""
    wide = ratings.pivot_table(index="unit", columns="annotator", values="score", aggfunc="mean")
    scores, j = wide.to_numpy(float), judge.reindex(wide.index).to_numpy(float)

    def gap_of(rows) -> float:
        people, judged = loo_rs(scores[rows], j[rows], "spearman")
        return float(np.mean(judged) - np.mean(people)) if people else np.nan

    gap = gap_of(slice(None))
    if bootstrap <= 0 or np.isnan(gap):
        return gap, np.nan, np.nan, ""
    rng = np.random.default_rng(seed)
    return (gap, *interval([gap_of(rng.integers(0, len(j), len(j))) for __ in range(bootstrap)]))


def kappas(judge: pd.Series, ratings: pd.DataFrame, lo: float, hi: float) -> dict:
    """Quadratic-weighted Cohen's kappa: the judge's values rounded onto the scale's points against each
    annotator (mean over annotators), and between each pair of annotators (mean over pairs)."""
    points = np.arange(lo, hi + 1e-9, 1.0)
    rounded = judge.clip(lo, hi).round()
    wide = ratings.pivot_table(index="unit", columns="annotator", values="score", aggfunc="mean")
    vs_judge, vs_people = [], []
    for a in wide.columns:
        both = pd.DataFrame({"a": wide[a].round(), "j": rounded.reindex(wide.index)}).dropna()
        if len(both) >= 3:
            vs_judge.append(cohen_kappa(both["j"], both["a"], "quadratic", categories=points))
    for a, b in combinations(wide.columns, 2):
        both = wide[[a, b]].dropna().round()
        if len(both) >= 3:
            vs_people.append(cohen_kappa(both[a], both[b], "quadratic", categories=points))
    clean = lambda xs: [x for x in xs if not np.isnan(x)]  # noqa: E731
    return {"judge": float(np.mean(clean(vs_judge))) if clean(vs_judge) else np.nan, "n_judge": len(clean(vs_judge)),
            "human": float(np.mean(clean(vs_people))) if clean(vs_people) else np.nan,
            "n_human": len(clean(vs_people))}


def _levels(people: pd.DataFrame, values: pd.DataFrame, dialogues: dict[str, str]):
    """Per level people rated at: (level, their ratings with a `unit` column, the judge values per unit). A
    dialogue's judge value is the mean of its turns' values (DIALOGUE_VALUE)."""
    for level, rated in people.groupby("level", sort=False):
        rated = rated.assign(unit=rated["target_id"] + "\x1f" + rated["model"])
        if level == "turn":
            judged = values.assign(unit=values["item_id"] + "\x1f" + values["model"])
        else:
            judged = values.assign(unit=values["item_id"].map(dialogues) + "\x1f" + values["model"])
        yield level, rated, judged


def agreement(con: duckdb.DuckDBPyConnection, dataset: str, *, judge: str | None = None, bootstrap: int = 1000,
              seed: int = 0) -> pd.DataFrame:
    """AGREEMENT_COLUMNS: each rating judge against people, beside people against each other, at each level people
    rated at (turn: responses; dialogue: whole dialogues, the judge's value the mean of the dialogue's turns)."""
    rows = []
    known = registry.of(con)
    for track, skill in tracks(con, dataset):
        values = judge_values(con, dataset, track, judge)
        values = values[values["judge"] != PAIRWISE]   # its values are win rates: see pairwise()
        if values.empty:
            continue
        people = human_ratings(con, dataset, track)
        if people.empty:
            continue
        people["level"] = pd.Categorical(people["level"], ["turn", "dialogue"])
        people = people.sort_values("level")
        dims = sorted(people["dimension"].unique())
        system_done = set()
        for level, rated_all, judged_all in _levels(people, values, dialogue_of(con, dataset, track)):
            # the notes in a page's language (English for the CLI); each clause whole, joined by "; "
            per_dialogue = "" if level == "turn" else _(DIALOGUE_VALUE) + _("; ")
            for (name, sig), part in judged_all.groupby(["judge", "signature"], sort=True):
                judged = part.groupby("unit")["value"].mean() if level == "dialogue" else \
                    pd.Series(part["value"].to_numpy(float), index=part["unit"])
                judged = judged[~judged.index.duplicated()]
                shown_sig = sig if level == "turn" else f"{sig}|{DIALOGUE_AGGREGATE}"
                for dim in _judge_dimension(name, dims):
                    rated = rated_all[rated_all["dimension"] == dim]
                    if rated.empty:
                        continue
                    base = {"track": track, "skill": skill, "judge": name, "asked": asked(sig), "signature": shown_sig,
                            "dimension": dim}
                    rows += _rows(base, level, per_dialogue, judged, rated, bootstrap, seed,
                                  system=(name, sig, dim) not in system_done)
                    system_done.add((name, sig, dim))
                    bounds = scale(con, dataset, dim)
                    judge_scale = getattr(known.get(name), "scale", None)
                    if bounds is not None and callable(judge_scale) and tuple(judge_scale()) == bounds:
                        k = kappas(judged, rated[["unit", "annotator", "score"]], *bounds)
                        rows.append({**base, "level": level, "statistic": "kappa_quadratic",
                                     "who": "judge vs each annotator", "value": k["judge"], "ci_low": np.nan,
                                     "ci_high": np.nan, "n": k["n_judge"], "note": per_dialogue + _(
                                         "mean over annotators; the judge's values rounded to the scale's points")})
                        rows.append({**base, "level": level, "statistic": "kappa_quadratic",
                                     "who": "human ceiling (pairs)", "value": k["human"], "ci_low": np.nan,
                                     "ci_high": np.nan, "n": k["n_human"], "note": _("mean over pairs of annotators")})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _rows(base: dict, level: str, per_dialogue: str, judged: pd.Series, rated: pd.DataFrame, bootstrap: int,
          seed: int, *, system: bool) -> list[dict]:
    """One judge on one dimension at one level: its correlations with people's mean, the leave-one-out
    comparison with the human ceiling and their gap; at system level once (from the first level rated)."""
    rows = []
    mean = rated.groupby("unit")["score"].mean()
    both = pd.DataFrame({"judge": judged, "people": mean}).dropna()
    for method in ("spearman", "kendall"):
        c = correlate(both["judge"], both["people"], method, bootstrap=bootstrap, seed=seed)
        rows.append({**base, "level": level, "statistic": method, "who": "judge vs people's mean", "value": c.r,
                     "ci_low": c.ci_low, "ci_high": c.ci_high, "n": c.n, "note": per_dialogue + c.reason})
    if system:
        models = both.assign(model=[u.split("\x1f", 1)[1] for u in both.index]).groupby("model").mean()
        c = correlate(models["judge"], models["people"], "spearman", bootstrap=bootstrap, seed=seed)
        rows.append({**base, "level": "system", "statistic": "spearman", "who": "judge vs people's mean",
                     "value": c.r, "ci_low": c.ci_low, "ci_high": c.ci_high, "n": c.n,
                     "note": ("" if level == "turn" else _("from dialogue ratings") + _("; ")) + c.reason})
    people = rated[["unit", "annotator", "score"]]
    for method in ("spearman", "kendall"):
        out = loo(judged, people, method)
        note = (_("mean over {n} annotators of r(annotator, the others' mean)").format(n=out["annotators"])
                if out["annotators"] else _("fewer than 2 annotators on 3 targets: no ceiling"))
        rows.append({**base, "level": level, "statistic": method, "who": "human ceiling (leave-one-out)",
                     "value": out["human"], "ci_low": out["spread"][0], "ci_high": out["spread"][1],
                     "n": out["annotators"], "note": note + _("; ") + _("the interval is the range over annotators")})
        rows.append({**base, "level": level, "statistic": method, "who": "judge (leave-one-out)",
                     "value": out["judge"], "ci_low": np.nan, "ci_high": np.nan, "n": out["annotators"],
                     "note": per_dialogue + _("mean over the same annotators of r(judge, the others' mean)")})
    gap, lo, hi, left_out = loo_gap(judged, people, bootstrap=bootstrap, seed=seed)
    rows.append({**base, "level": level, "statistic": "spearman", "who": "gap (judge - ceiling)", "value": gap,
                 "ci_low": lo, "ci_high": hi, "n": rated["unit"].nunique(),
                 "note": _("; ").join(filter(None, [
                     _("leave-one-out Spearman, judge minus people; 95% bootstrap over responses") if level == "turn"
                     else _("leave-one-out Spearman, judge minus people; 95% bootstrap over dialogues"), left_out]))})
    return rows


def ceiling(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """The bar a judge must clear, from people alone: per track, dimension and level (turn: responses; dialogue:
    whole dialogues) rated by two or more annotators, the mean over annotators of Spearman(annotator, the others'
    mean), its range, and how many annotators."""
    columns = ["track", "skill", "dimension", "level", "human ceiling (leave-one-out)", "lowest annotator",
               "highest annotator", "annotators", "targets"]
    rows = []
    for track, skill in tracks(con, dataset):
        people = human_ratings(con, dataset, track)
        people["unit"] = people["target_id"] + "\x1f" + people["model"]
        for (dim, level), rated in people.groupby(["dimension", "level"], sort=True):
            if rated["annotator"].nunique() < 2:
                continue
            out = loo(None, rated[["unit", "annotator", "score"]])
            rows.append(dict(zip(columns, [track, skill, dim, level, out["human"], out["spread"][0], out["spread"][1],
                                           out["annotators"], rated["unit"].nunique()])))
    frame = pd.DataFrame(rows, columns=columns)
    order = frame["level"].map({"turn": 0, "dialogue": 1})
    return frame.assign(_o=order).sort_values(["track", "_o", "dimension"]).drop(columns="_o").reset_index(drop=True)


def headline(table: pd.DataFrame) -> pd.DataFrame:
    """One line per judge, track and dimension: the judge's leave-one-out Spearman against the human ceiling."""
    part = table[(table["statistic"] == "spearman") & (table["level"] != "system")]
    keys = ["track", "skill", "judge", "asked", "signature", "dimension", "level"]
    if part.empty:
        return pd.DataFrame(columns=keys + ["verdict"])
    wide = part.pivot_table(index=keys, columns="who", values="value", aggfunc="first").reset_index()
    for col in ("judge (leave-one-out)", "human ceiling (leave-one-out)", "judge vs people's mean",
                "gap (judge - ceiling)"):
        if col not in wide:
            wide[col] = np.nan
    gaps = part[part["who"] == "gap (judge - ceiling)"][keys + ["ci_low", "ci_high", "note"]]
    wide = wide.merge(gaps.rename(columns={"ci_low": "gap_ci_low", "ci_high": "gap_ci_high", "note": "gap_note"}),
                      on=keys, how="left")
    gap, hi = wide["gap (judge - ceiling)"], wide["gap_ci_high"]
    withheld = wide["gap_note"].fillna("").str.contains("interval withheld")
    # "as well as" on the point estimate; "below" only where the whole interval is below 0 (without an
    # interval asked for, on the point; a withheld one supports no claim); else the data cannot tell them apart
    below = np.where(hi.notna(), hi < 0, (gap < 0) & ~withheld)
    wide["verdict"] = np.where(gap.isna(), "no ceiling: fewer than two annotators per target",
                               np.where(gap >= 0, "agrees with people as well as people agree with each other",
                                        np.where(below, "below the human ceiling",
                                                 "not distinguishable from the human ceiling")))
    first = ["track", "skill", "judge", "asked", "dimension", "level", "verdict", "judge (leave-one-out)",
             "human ceiling (leave-one-out)", "gap (judge - ceiling)", "gap_ci_low", "gap_ci_high",
             "judge vs people's mean"]
    return wide[first + [c for c in wide.columns if c not in first]]
