"""Do the store's prediction-powered intervals cover? Coverage, width and power on released data where people rated
every response (issue 63, "Must show" 2 and 3).

    python bench/ppi_coverage.py [--draws 1000] [--out DIR] [--shared ../shared/data] [--quick] [--seed 0]

Each dataset becomes a store in a temporary folder through the project's own importers (`import dstc10` for USR,
GRADE and FED's turn-level entries, `import msde` for the MSDE release), and its predictor is a lexical metric that
`evalcore score` computes offline (evalcore.scoring.score, read back per response with response_scores):
ROUGE (ROUGE-L) against the reference where the items have one (USR, GRADE, MSDE's CPC track), DIST2 where they
have none (FED, MSDE's other tracks). A dataset whose files are absent is skipped with the reason printed.

Per (dataset, track, model, dimension) with at least MIN_UNITS responses rated by people, the truth is the
all-people value (the mean over responses of the mean over annotators). For each budget n, `draws` seeded subsamples
of the people's ratings:
- uniform: a simple random sample of n of the M responses;
- active: Poisson sampling with the active tasks' own probabilities (analysis.inclusion: pi_i proportional to the
  predictor's uncertainty p(1 - p), p the predictor rescaled to [0, 1] over the dataset, floored at
  inclusion.FLOOR (0.6) n / M, capped at 1, summing to n: `inclusion.probabilities(u, n)` as the tasks call it);
  people are never looked at.
Each draw gets analysis.ppi.finite_mean with its pi (PPI++: lam tuned) and with lam = 0 (people only) at the same
ratings; the draws are computed for all of them at once with the same arithmetic (checked against finite_mean
itself on the first draws of every cell and on every draw withheld: `max_abs_diff` in the JSON). A draw whose
sample shows no spread gets no interval from finite_mean (withheld): reported apart, as a share of the draws, and
left out of coverage and width. Reported: coverage of the truth over the draws given an interval, the share
withheld, mean width, and the gain as a width ratio (mean PPI++ width over mean people-only width: below 1 is
narrower; `evalcore estimate`'s `gain` column is its inverse).

A predictor that tracks people: the metrics correlate with people at |r| <= 0.3, which shows validity but not the
gain PPI brings with a predictor that tracks them (an LLM judge commonly reaches r 0.4-0.7), and no judge runs
offline here. So, where responses have several ratings (USR 3, FED 5, GRADE 10; MSDE has one and is left out), one
annotator is held out and made the predictor (`held_out`): f = a1's score, a1 being the first score in each
response's list as the release gives it (the releases name no annotators, so a1 need not be the same person
everywhere), and the people and the truth are the other annotators' ratings only (a1's scores never enter y or the
truth). The same designs, budgets and draws then run on those groups (predictor `one rater (held out)`; active
sampling with p = a1's score over the dimension's scale), reported in tables of their own. It stands in for a judge
whose errors are like one person's; a real judge's errors can be more systematic, which PPI corrects but which costs
gain.

Power: for every pair of models in a track on a dimension (the effect: their all-people difference), the planner's
predicted power (analysis.planning.plan_difference as `evalcore plan` calls it: spreads from all the ratings,
population M, the t critical value at n - 1) against the share of `draws` uniform subsamples (n per model) whose
people-only difference interval (ppi.difference) excludes 0; a draw withheld counts as not excluding it.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # run as a script from a checkout where the package is not installed (CI's venv)

from evalcore.analysis import inclusion, planning, ppi  # noqa: E402
from evalcore.analysis.judge_values import human_ratings, scale  # noqa: E402
from evalcore.scoring import response_scores, score  # noqa: E402
from evalcore.store import connect  # noqa: E402


MIN_UNITS = 30          # a group's responses rated by people, at least (MSDE rated 30 per model and track)
FIXED_BUDGETS = (20, 40, 80)
MOST_SHARE = 0.7        # a fixed budget is used where n <= 0.7 M (a larger share leaves little to sample)
QUARTER = 0.25          # and a quarter of M (at least 10)
ALPHA = 0.05
CHECKED_DRAWS = 3       # draws per cell recomputed with ppi.finite_mean itself
IN_RANGE = (0.2, 0.95)  # predicted powers where comparing with the realised one means something

USR = {"usr/tc": "tc_usr_data.json", "usr/pc": "pc_usr_data.json"}
USR_SCALES = {"Understandable": (0, 1), "Natural": (1, 3), "Maintains Context": (1, 3), "Engaging": (1, 3),
              "Uses Knowledge": (0, 1), "Overall": (1, 5)}
USR_HUMAN = "Original Ground Truth"
GRADE = {"grade/convai2": "convai2", "grade/dailydialog": "dailydialog",
         "grade/empatheticdialogues": "empatheticdialogues"}
GRADE_LABEL = {"dailydialog": "dailydialog_EVAL"}
FED_SCALES = {"Overall": (0, 4), "Understandable": (0, 1), "Consistent": (0, 1)}   # every other quality: 0-2


# ---------------------------------------------------------------- the stores, through the project's importers
def _dstc10(con, tmp: Path, name: str, entries: list[dict], *, dataset: str, track: str, scales: dict,
            missing: list[str] | None = None) -> None:
    from evalcore.ingest.formats.dstc10 import import_dstc10
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    import_dstc10(con, path, dataset=dataset, track=track, language="en", scales=scales, missing=missing)


def build_usr(con, shared: Path, tmp: Path, quick: bool) -> dict[str, str]:
    """USR-TopicalChat and -PersonaChat: one DSTC10 entry per response, the human reply ('Original Ground Truth', a
    model as USR ships it) the item's reference, annotators a1-a3."""
    predictors = {}
    for track, name in list(USR.items())[:1 if quick else None]:
        raw = json.loads((shared / "usr" / name).read_text(encoding="utf-8"))
        entries = []
        for n, d in enumerate(raw):
            truth = [r["response"].strip() for r in d["responses"] if r["model"] == USR_HUMAN]
            entries += [{"dialogue_id": f"{track[4:]}-{n:03d}", "model": r["model"], "context": d["context"],
                         "response": r["response"].strip(), "reference": truth,
                         "annotations": {q: r[q] for q in USR_SCALES}} for r in d["responses"]]
        _dstc10(con, tmp, track.replace("/", "_"), entries, dataset="usr", track=track, scales=USR_SCALES)
        predictors[track] = "ROUGE"
    return predictors


def build_grade(con, shared: Path, tmp: Path, quick: bool) -> dict[str, str]:
    """GRADE's three corpora: per model its 150 responses (contexts and references from eval_data), the ten scores of
    human_judgement.json (sorted by ID they follow the lines) as annotations of Coherence, 1-5."""
    base = shared / "grade" / "evaluation"
    judgements = sorted(json.loads((base / "human_score" / "human_judgement.json").read_text(encoding="utf-8")),
                        key=lambda j: j["ID"])
    predictors = {}
    for track, folder in GRADE.items():
        scores: dict[str, list] = {}
        for j in judgements:
            if j["Dataset"] == GRADE_LABEL.get(folder, folder):
                scores.setdefault(j["DialogModel"], []).append(json.loads(j["HumanScores"]))
        entries = []
        for model_dir in sorted(p for p in (base / "eval_data" / folder).iterdir() if p.is_dir()):
            ctx, ref, hyp = ((model_dir / f"human_{k}.txt").read_text(encoding="utf-8").rstrip("\n").split("\n")
                             for k in ("ctx", "ref", "hyp"))
            tens = scores[model_dir.name]
            if not len(ctx) == len(ref) == len(hyp) == len(tens):
                raise SystemExit(f"GRADE {folder}/{model_dir.name}: lines and scores differ in number")
            entries += [{"dialogue_id": f"{folder}-{model_dir.name}-{i:03d}", "model": model_dir.name,
                         "context": c.replace("|||", "\n"), "response": h, "reference": [r],
                         "annotations": {"Coherence": s}} for i, (c, r, h, s) in enumerate(zip(ctx, ref, hyp, tens))]
        _dstc10(con, tmp, folder, entries, dataset="grade", track=track, scales={"Coherence": (1, 5)})
        predictors[track] = "ROUGE"
    return predictors


def build_fed(con, shared: Path, tmp: Path, quick: bool) -> dict[str, str]:
    """FED's turn-level entries (the dialogue-level ones rate whole dialogues, for which no per-response predictor
    stands), N/A answers kept as missing."""
    raw = json.loads((shared / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    turns = [{"dialogue_id": f"t{n:03d}", "model": e["system"], "context": e["context"], "response": e["response"],
              "reference": [], "annotations": e["annotations"]} for n, e in enumerate(raw) if "response" in e]
    qualities = sorted({q for e in turns for q in e["annotations"]})
    _dstc10(con, tmp, "fed_turns", turns, dataset="fed", track="fed/turn",
            scales={q: FED_SCALES.get(q, (0, 2)) for q in qualities}, missing=["N/A*"])
    return {"fed/turn": "DIST2"}


def build_msde(con, shared: Path, tmp: Path, quick: bool) -> dict[str, str]:
    """The MSDE release (its 30 rated responses per model and track are the population); CPC has references."""
    from evalcore.ingest.formats.msde import import_msde
    import_msde(con, shared / "msde", progress=False)
    tracks = [t for (t,) in con.execute("SELECT DISTINCT track FROM human_ratings WHERE dataset = 'msde' ORDER BY 1")
              .fetchall()]
    return {t: "ROUGE" if t == "lic2021/persona" else "DIST2" for t in tracks}


@dataclass(frozen=True)
class Source:
    name: str
    needs: tuple[str, ...]     # paths under ../shared/data
    build: object


SOURCES = [Source("usr", ("usr/tc_usr_data.json", "usr/pc_usr_data.json"), build_usr),
           Source("grade", ("grade/evaluation/human_score/human_judgement.json", "grade/evaluation/eval_data"),
                  build_grade),
           Source("fed", ("fed/fed_data.json",), build_fed),
           Source("msde", ("msde/data",), build_msde)]


def load(source: Source, shared: Path, tmp: Path, quick: bool) -> tuple[pd.DataFrame, str]:
    """One dataset as rows (dataset, track, predictor, model, dimension, unit, annotator, score, f, lo, hi): every
    rating of a response whose predictor value exists, with its dimension's scale (lo, hi). The second value says
    what was left out."""
    db = tmp / f"{source.name}.duckdb"
    con = connect(db)
    try:
        predictors = source.build(con, shared, tmp, quick)
        frames, notes = [], []
        for metric in sorted(set(predictors.values())):
            score(con, metrics=[metric], dataset=source.name, progress=False)
        for track, metric in predictors.items():
            people = human_ratings(con, source.name, track)
            people = people[people["level"] == "turn"].rename(columns={"target_id": "unit"})
            values = response_scores(con, source.name, track)
            values = values[values["metric"] == metric].rename(columns={"item_id": "unit", "value": "f"})
            rows = people.merge(values[["unit", "model", "f"]], on=["unit", "model"], how="left")
            lost = rows[rows["f"].isna()]
            if len(lost):
                notes.append(f"{track}: {lost[['unit', 'model']].drop_duplicates().shape[0]} rated responses have "
                             f"no {metric} value and are left out of the population")
            ends = {d: scale(con, source.name, d) or (math.nan, math.nan) for d in rows["dimension"].unique()}
            rows = rows.assign(lo=rows["dimension"].map(lambda d: ends[d][0]),
                               hi=rows["dimension"].map(lambda d: ends[d][1]))
            frames.append(rows.dropna(subset=["f"]).assign(dataset=source.name, track=track, predictor=metric))
    finally:
        con.close()
    return pd.concat(frames, ignore_index=True), "; ".join(notes)


# ---------------------------------------------------------------- a predictor that tracks people: one rater held out
HELD_OUT = "one rater (held out)"
HELD = "a1"     # the first score in each response's list as the release gives it (the importer names it a1)


def held_out(rows: pd.DataFrame, annotator: str = HELD) -> tuple[pd.DataFrame, dict[str, str]]:
    """The people's ratings with one annotator taken out of them and made the predictor: per response, f = that
    annotator's score, and the rows left are the other annotators' ratings (so y, the mean of a response's ratings,
    and the truth, the mean of y, never contain the held-out score), predictor HELD_OUT. A response the held-out
    annotator did not rate (no f), or that only it rated (no y), is left out of the population; a dataset with one
    rating per response (MSDE) gives no rows. No LLM judge runs offline here: this stands in for a judge whose
    errors are like one person's. The second value: per dataset, what was left out."""
    keys = ["dataset", "track", "model", "dimension", "unit"]
    ratings = rows.drop(columns=["f", "predictor"]).drop_duplicates([*keys, "annotator"])
    f = ratings[ratings["annotator"] == annotator][[*keys, "score"]].rename(columns={"score": "f"})
    rest = ratings[ratings["annotator"] != annotator]
    out = rest.merge(f, on=keys, how="inner").assign(predictor=HELD_OUT)
    notes = {}
    for ds, g in ratings.groupby("dataset"):
        if g.groupby(keys).size().max() < 2:
            continue                                   # one rating per response: nothing to hold out
        rated = g[keys].drop_duplicates()
        kept = out[out["dataset"] == ds][keys].drop_duplicates()
        lost = len(rated) - len(kept)
        if lost:
            notes[ds] = (f"{HELD_OUT}: {lost} of {len(rated)} rated (response, dimension) pairs left out "
                         f"({annotator} gave no score, or no one else did)")
    return out[rows.columns], notes


# ---------------------------------------------------------------- the sampling designs
def budgets(big_m: int) -> list[tuple[str, int]]:
    """(label, n): the fixed budgets where n <= 0.7 M, and a quarter of M (at least 10)."""
    out = [(str(n), n) for n in FIXED_BUDGETS if n <= MOST_SHARE * big_m]
    quarter = max(10, round(QUARTER * big_m))
    return out + [("25%", quarter)]


def uniform_masks(rng, big_m: int, n: int, draws: int) -> np.ndarray:
    """draws x M: True on the n units of each draw's simple random sample."""
    order = np.argsort(rng.random((draws, big_m)), axis=1)[:, :n]
    mask = np.zeros((draws, big_m), bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def poisson_masks(rng, pi: np.ndarray, draws: int) -> np.ndarray:
    """draws x M: inclusion.draw's Poisson draw (each unit on its own with its pi), `draws` times at once."""
    return rng.random((draws, len(pi))) < pi


# ---------------------------------------------------------------- ppi.finite_mean for every draw at once
def finite_means(mask: np.ndarray, y: np.ndarray, f: np.ndarray, pi: np.ndarray, *, tuned: bool,
                 alpha: float = ALPHA) -> dict[str, np.ndarray]:
    """ppi.finite_mean(y[S], f[S], f, pi=pi[S], lam=None if tuned else 0) for each row S of `mask`, as arrays
    (estimate, lower, upper, se, n, lam; NaN where finite_mean gives no interval): the same steps (lam the
    c-weighted slope, clipped, tuned only from 3 units; the Hajek residual mean; n / (n - 1 - tuned); Satterthwaite's
    degrees of freedom, at most n - 1 - tuned), summed over masked rows instead of over the sample.

    `withheld`: finite_mean's "no spread" (the residuals' range about 0 in a sample, some pi < 1);
    `too_few`: fewer than 2 rated units. A draw whose sampled ratings (or residuals) are all alike is handed to
    finite_mean itself:
    whether its terms sum to exactly 0 depends on how its weighted mean rounds (a sample all 0.6 at pi = 1/3 leaves
    terms of about 1e-33, and finite_mean then gives an interval of width 1e-16), which summing over masked rows
    does not reproduce. `alike_kept` marks those finite_mean nevertheless gave an interval."""
    big_m = len(y)
    s = mask.astype(float)
    n = mask.sum(axis=1)
    w = 1 / pi
    c = (1 - pi) * w * w
    sc = s * c
    fitted = (n > 2) if tuned else np.zeros(len(mask), bool)     # finite_mean tunes lam from 3 rated units
    with np.errstate(invalid="ignore", divide="ignore"):
        if tuned:
            csum = sc.sum(axis=1)
            fc = f - (sc * f).sum(axis=1, keepdims=True) / csum[:, None]
            yc = y - (sc * y).sum(axis=1, keepdims=True) / csum[:, None]
            var = (sc * fc * fc).sum(axis=1)
            lam = np.where(var > 0, np.clip((sc * fc * yc).sum(axis=1) / np.where(var > 0, var, 1), 0, 1), 0.0)
            # finite_mean's rule: a predictor constant on the rated units (up to float noise) gets lam 0 (a held-out
            # rater often gives every sampled response the same score; var is then ~1e-33, not 0)
            f_range = np.where(mask, f, -np.inf).max(axis=1) - np.where(mask, f, np.inf).min(axis=1)
            flat = f_range <= 1e-9 * np.maximum(1.0, np.where(mask, np.abs(f), 0).max(axis=1))
            lam = np.where((csum > 0) & fitted & ~flat, lam, 0.0)
            # f varying only on units drawn with pi = 1 (c = 0) leaves a c-weighted slope of noise over noise, which
            # finite_mean's rule (on all rated units) does not catch: such draws are handed to finite_mean itself
            weighted = mask & (c > 0)
            fw_range = np.where(weighted, f, -np.inf).max(axis=1) - np.where(weighted, f, np.inf).min(axis=1)
            noisy = (csum > 0) & fitted & ~flat & (fw_range <= 1e-9 * np.maximum(1.0, np.abs(f).max()))
        else:
            lam = np.zeros(len(mask))
            noisy = np.zeros(len(mask), bool)
        r = y - lam[:, None] * f
        sw = s * w
        r_bar = (sw * r).sum(axis=1) / sw.sum(axis=1)
        estimate = lam * f.mean() + r_bar
        terms = sc * (r - r_bar[:, None]) ** 2
        total, squares = terms.sum(axis=1), (terms * terms).sum(axis=1)
        most = n - 1 - fitted
        se = np.sqrt(total / big_m ** 2 * n / most)
        df = np.where(squares > 0, np.maximum(1.0, np.minimum(most, total * total / np.where(squares > 0, squares, 1))),
                      np.maximum(most, 1))
        half = stats.t.ppf(1 - alpha / 2, df) * se
    too_few = n < 2
    out = {"estimate": estimate, "lower": estimate - half, "upper": estimate + half, "se": se, "lam": lam, "df": df}
    withheld = np.zeros(len(mask), bool)
    alike_kept = np.zeros(len(mask), bool)
    alike = ~too_few & (np.where(mask, y, np.inf).min(axis=1) == np.where(mask, y, -np.inf).max(axis=1))
    # and draws whose residuals are alike though the ratings are not (y = lam f + constant in the sample: a predictor
    # that is one rater, 0 or 1, and ratings 0 or 0.5), near finite_mean's range rule, which they are handed to
    r_range = np.where(mask, r, -np.inf).max(axis=1) - np.where(mask, r, np.inf).min(axis=1)
    alike |= ~too_few & (r_range <= 1e-9 * np.maximum(1.0, np.where(mask, np.abs(r), 0).max(axis=1)))
    for d in np.flatnonzero(alike | (noisy & ~too_few)):
        at = np.flatnonzero(mask[d])
        e = ppi.finite_mean(y[at], f[at], f, pi=pi[at], lam=None if tuned else 0.0, alpha=alpha)
        withheld[d] = bool(e.reason)
        alike_kept[d] = alike[d] and not e.reason
        for k in ("estimate", "lower", "upper", "se", "lam"):
            out[k][d] = getattr(e, k)
    for k in out:
        out[k] = np.where(too_few | withheld, np.nan, out[k])
    out |= {"n": n, "withheld": withheld, "too_few": too_few, "alike_kept": alike_kept}
    return out


def check_draws(mask, y, f, pi, got: dict, tuned: bool) -> float:
    """The largest difference between the arrays and ppi.finite_mean on the first CHECKED_DRAWS draws and on every
    draw the arrays withheld (inf where one gives an interval and the other none)."""
    worst = 0.0
    for d in dict.fromkeys([*range(min(CHECKED_DRAWS, len(mask))), *np.flatnonzero(got["withheld"])]):
        at = np.flatnonzero(mask[d])
        e = ppi.finite_mean(y[at], f[at], f, pi=pi[at], lam=None if tuned else 0.0, alpha=ALPHA)
        if bool(e.reason) != bool(np.isnan(got["estimate"][d])):
            return math.inf
        if e.reason:
            continue
        for k in ("estimate", "lower", "upper", "se"):
            worst = max(worst, abs(getattr(e, k) - got[k][d]))
    return worst


# ---------------------------------------------------------------- coverage
def groups_of(rows: pd.DataFrame) -> tuple[list[dict], list[str]]:
    """Per (dataset, track, model, dimension) with at least MIN_UNITS rated responses: y, f, truth, ratings; and
    the groups left out because people gave every response the same value (nothing to estimate: every interval
    is that value, width 0)."""
    out, constant = [], []
    for (ds, track, pred, model, dim), g in rows.groupby(["dataset", "track", "predictor", "model", "dimension"],
                                                         sort=True):
        units = g.groupby("unit").agg(y=("score", "mean"), f=("f", "first"), k=("score", "size"))
        if len(units) < MIN_UNITS:
            continue
        if units["y"].nunique() == 1:
            constant.append(f"{ds} {track} {model} {dim} (all {units['y'].iloc[0]:g})")
            continue
        out.append({"dataset": ds, "track": track, "predictor": pred, "model": model, "dimension": dim,
                    "y": units["y"].to_numpy(float), "f": units["f"].to_numpy(float),
                    "raters": units["k"].to_numpy(), "truth": float(units["y"].mean()), "M": len(units),
                    "ratings": g[["unit", "annotator", "score"]],
                    "scale": (float(g["lo"].iloc[0]), float(g["hi"].iloc[0])) if "lo" in g else (math.nan, math.nan)})
    return out, constant


def coverage(groups: list[dict], extremes: dict, draws: int, seed: int) -> tuple[pd.DataFrame, float]:
    """One row per group, budget and design: coverage and mean width of PPI++ and of people only, and the largest
    difference found against ppi.finite_mean."""
    rows, worst = [], 0.0
    for gi, g in enumerate(groups):
        y, f, big_m = g["y"], g["f"], g["M"]
        # a metric rescaled over its dataset; a held-out rater's score over its dimension's scale
        u = inclusion.boundary(f, *(g["scale"] if g["predictor"] == HELD_OUT else
                                    extremes[(g["dataset"], g["predictor"])]))
        corr = float(np.corrcoef(y, f)[0, 1]) if np.ptp(f) > 0 and np.ptp(y) > 0 else math.nan
        for bi, (label, n) in enumerate(budgets(big_m)):
            for design in ("uniform", "active"):
                rng = np.random.default_rng([seed, gi, bi, design == "active"])
                if design == "uniform":
                    pi = np.full(big_m, n / big_m)
                    mask = uniform_masks(rng, big_m, n, draws)
                else:
                    pi = inclusion.probabilities(u, n)
                    mask = poisson_masks(rng, pi, draws)
                row = {k: g[k] for k in ("dataset", "track", "predictor", "model", "dimension", "M", "truth")}
                row |= {"r_pearson": corr, "budget": label, "n": n, "design": design}
                for kind, tuned in (("ppi", True), ("people", False)):
                    est = finite_means(mask, y, f, pi, tuned=tuned)
                    worst = max(worst, check_draws(mask, y, f, pi, est, tuned))
                    ok = ~np.isnan(est["estimate"])     # coverage and width over the draws given an interval
                    covered = (est["lower"][ok] <= g["truth"]) & (g["truth"] <= est["upper"][ok])
                    row |= {f"{kind}_cover": float(covered.mean()), f"{kind}_width": float(
                        (est["upper"] - est["lower"])[ok].mean()), f"{kind}_draws": int(ok.sum()),
                        f"{kind}_withheld": float(est["withheld"].mean()), f"{kind}_too_few": float(est["too_few"].mean()),
                        f"{kind}_alike_kept": float(est["alike_kept"].mean())}
                    # a diagnostic, not the store's interval: the same se with the t quantile at n - 1 (- 1 for a
                    # tuned lam) degrees of freedom instead of Satterthwaite's, which says what the latter adds
                    most = est["n"][ok] - 1 - (tuned & (est["n"][ok] > 2))
                    half = stats.t.ppf(1 - ALPHA / 2, most) * est["se"][ok]
                    row[f"{kind}_cover_plain_df"] = float((np.abs(est["estimate"][ok] - g["truth"]) <= half).mean())
                    if tuned:
                        row["lam_mean"] = float(est["lam"][ok].mean())
                        row["n_mean"] = float(est["n"].mean())
                row["width_ratio"] = row["ppi_width"] / row["people_width"]
                rows.append(row)
    return pd.DataFrame(rows), worst


def head(*columns: str) -> list[str]:
    """A markdown table's header and separator lines."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def by_draws(frame: pd.DataFrame, column: str, draws: str = "ppi_draws") -> float:
    """`column` averaged over the frame's groups, each weighted by its draws given an interval."""
    return float((frame[column] * frame[draws]).sum() / frame[draws].sum())


def pooled(cells: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, predictor, dimension, budget and design: the groups' coverage pooled (draws weighted), mean
    widths, the gain (mean PPI width over mean people-only width), and the worst group (coverage farthest from 95%)."""
    out = []
    keys = ["dataset", "predictor", "dimension", "budget", "design"]
    for key, g in cells.groupby(keys, sort=False):
        far = (g["ppi_cover"] - 0.95).abs().idxmax()
        out.append(dict(zip(keys, key)) | {
            "groups": len(g), "n_range": f"{g['n'].min()}" + (f"-{g['n'].max()}" if g['n'].nunique() > 1 else ""),
            "r_pearson": float(g["r_pearson"].mean()),
            "ppi_cover": by_draws(g, "ppi_cover"), "people_cover": by_draws(g, "people_cover", "people_draws"),
            "ppi_cover_plain_df": by_draws(g, "ppi_cover_plain_df"),
            "ppi_withheld": float(g["ppi_withheld"].mean()), "people_withheld": float(g["people_withheld"].mean()),
            "ppi_too_few": float(g["ppi_too_few"].mean()),
            "ppi_width": float(g["ppi_width"].mean()), "people_width": float(g["people_width"].mean()),
            "width_ratio": float(g["ppi_width"].mean() / g["people_width"].mean()),
            "lam_mean": float(g["lam_mean"].mean()),
            "worst_group": f"{g.loc[far, 'track']} {g.loc[far, 'model']}", "worst_cover": float(g.loc[far, "ppi_cover"])})
    return pd.DataFrame(out)


# ---------------------------------------------------------------- power
def power(groups: list[dict], draws: int, seed: int) -> pd.DataFrame:
    """Every pair of models of a track on a dimension, at every budget both allow: predicted and realised power."""
    by = {}
    for g in groups:
        by.setdefault((g["dataset"], g["track"], g["dimension"]), []).append(g)
    rows = []
    for pi_, ((ds, track, dim), members) in enumerate(sorted(by.items())):
        spreads = {g["model"]: planning.spread_of(g["ratings"], source="all ratings") for g in members}
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                effect = a["truth"] - b["truth"]
                population = min(a["M"], b["M"])
                raters = max(1, round(1 / np.mean(1 / np.concatenate([a["raters"], b["raters"]]))))
                for bi, (label, n) in enumerate(budgets(population)):
                    plan = planning.plan_difference(spreads[a["model"]], spreads[b["model"]], effect, raters=raters,
                                                    budget=n, population=population)
                    rng = np.random.default_rng([seed, 7, pi_, i, members.index(b), bi])
                    ea, eb = (finite_means(uniform_masks(rng, g["M"], n, draws), g["y"], g["f"],
                                           np.full(g["M"], n / g["M"]), tuned=False) for g in (a, b))
                    se = np.hypot(ea["se"], eb["se"])
                    half = stats.t.ppf(1 - ALPHA / 2, n - 1) * se      # ppi.difference: the smaller n's df
                    diff = ea["estimate"] - eb["estimate"]
                    # over all draws: one whose difference is withheld (a model's sample without spread) settles
                    # nothing, as the tool would say, so it counts as not telling the two apart
                    apart = (diff - half > 0) | (diff + half < 0)
                    realised = float(apart.mean())
                    given = ~np.isnan(diff)
                    rows.append({"dataset": ds, "track": track, "dimension": dim, "model_a": a["model"],
                                 "model_b": b["model"], "effect": effect, "M": population, "raters": raters,
                                 "budget": label, "n": n, "predicted": plan.power_at_budget, "realised": realised,
                                 "gap": realised - plan.power_at_budget,
                                 "withheld": float(1 - given.mean()),
                                 "realised_given": float(apart[given].mean()) if given.any() else math.nan,
                                 "in_range": IN_RANGE[0] <= plan.power_at_budget <= IN_RANGE[1]})
    return pd.DataFrame(rows)


def check_difference(groups: list[dict]) -> float:
    """The arrays' difference interval against ppi.difference of two finite_means, on one draw of the first pair
    (of the next where that draw is withheld)."""
    for a, b in zip(groups, groups[1:]):
        if a["track"] == b["track"] and a["dimension"] == b["dimension"]:
            n = budgets(min(a["M"], b["M"]))[0][1]
            rng = np.random.default_rng(0)
            ma, mb = uniform_masks(rng, a["M"], n, 1), uniform_masks(rng, b["M"], n, 1)
            ea, eb = (finite_means(m, g["y"], g["f"], np.full(g["M"], n / g["M"]), tuned=False)
                      for m, g in ((ma, a), (mb, b)))
            half = stats.t.ppf(1 - ALPHA / 2, n - 1) * np.hypot(ea["se"], eb["se"])[0]
            d = ppi.difference(*(ppi.finite_mean(g["y"][m[0]], g["f"][m[0]], g["f"], lam=0.0)
                                 for m, g in ((ma, a), (mb, b))))
            mine = ea["estimate"][0] - eb["estimate"][0]
            if bool(d.reason) != bool(np.isnan(mine)):
                return math.inf
            if d.reason:
                continue
            return max(abs(d.lower - (mine - half)), abs(d.upper - (mine + half)))
    return 0.0


# ---------------------------------------------------------------- tables
def pct(x: float) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def withheld(row) -> str:
    """PPI++'s share of draws withheld (%), the people-only one beside it where it differs."""
    ppi_, people = pct(row["ppi_withheld"]), pct(row["people_withheld"])
    return ppi_ if ppi_ == people else f"{ppi_} (people {people})"


def coverage_table(pool: pd.DataFrame) -> str:
    wide = pool.pivot_table(index=["dataset", "predictor", "dimension", "budget"], columns="design",
                            values=["ppi_cover", "people_cover", "worst_cover"], aggfunc="first", sort=False)
    worst = pool.set_index(["dataset", "predictor", "dimension", "budget", "design"])
    lines = head("dataset", "predictor", "dimension", "budget n", "groups", "uniform PPI++", "uniform people",
                 "uniform withheld", "active PPI++", "active people", "active withheld",
                 "worst group, uniform (PPI++)", "worst group, active (PPI++)")
    for key, r in wide.iterrows():
        u, a = worst.loc[(*key, "uniform")], worst.loc[(*key, "active")]
        flag = lambda v: f"**{pct(v)}**" if not 93 <= round(100 * v, 1) <= 97 else pct(v)   # noqa: E731
        lines.append(f"| {' | '.join(key[:3])} | {key[3]} ({u['n_range']}) | {u['groups']} | "
                     f"{flag(r[('ppi_cover', 'uniform')])} | {flag(r[('people_cover', 'uniform')])} | "
                     f"{withheld(u)} | {flag(r[('ppi_cover', 'active')])} | {flag(r[('people_cover', 'active')])} | "
                     f"{withheld(a)} | "
                     f"{u['worst_group']}: {pct(u['worst_cover'])} | {a['worst_group']}: {pct(a['worst_cover'])} |")
    return "\n".join(lines)


def gain_table(pool: pd.DataFrame) -> str:
    lines = head("dataset", "predictor", "dimension", "budget n", "r (predictor, people)", "mean lam, uniform",
                 "people-only width, uniform", "PPI++ width, uniform", "PPI++ / people-only, uniform",
                 "people-only width, active", "PPI++ width, active", "PPI++ / people-only, active",
                 "active PPI++ / uniform people-only")
    idx = pool.set_index(["dataset", "predictor", "dimension", "budget", "design"])
    for key in dict.fromkeys(tuple(k) for k in pool[["dataset", "predictor", "dimension", "budget"]].to_numpy()):
        u, a = idx.loc[(*key, "uniform")], idx.loc[(*key, "active")]
        lines.append(f"| {' | '.join(key[:3])} | {key[3]} ({u['n_range']}) | {u['r_pearson']:.2f} | "
                     f"{u['lam_mean']:.2f} | {u['people_width']:.3f} | {u['ppi_width']:.3f} | {u['width_ratio']:.3f} | "
                     f"{a['people_width']:.3f} | {a['ppi_width']:.3f} | {a['width_ratio']:.3f} | "
                     f"{a['ppi_width'] / u['people_width']:.3f} |")
    return "\n".join(lines)


def df_table(cells: pd.DataFrame) -> str:
    """Per dataset, budget and design (all dimensions pooled, draws weighted): PPI++ coverage as the store computes it
    (Satterthwaite's degrees of freedom), with n - 1 - tuned degrees of freedom instead, both over the draws given an
    interval, and the share of draws withheld (no spread: every sampled rating alike; groups weighted alike)."""
    lines = head("dataset", "budget n", "design", "PPI++ coverage (store)", "with n - 1 - tuned df", "draws withheld")
    for (ds, budget, design), g in cells.groupby(["dataset", "budget", "design"], sort=False):
        lines.append(f"| {ds} | {budget} | {design} | {pct(by_draws(g, 'ppi_cover'))} | "
                     f"{pct(by_draws(g, 'ppi_cover_plain_df'))} | "
                     f"{pct(float(g['ppi_withheld'].mean()))} |")
    return "\n".join(lines)


def span(values: pd.Series, fmt: str = ".2f") -> str:
    """The median of the dimensions' values and their range."""
    return (f"{values.median():{fmt}} ({values.min():{fmt}}-{values.max():{fmt}})" if values.nunique() > 1
            else f"{values.iloc[0]:{fmt}}")


def held_out_table(cells: pd.DataFrame, pool: pd.DataFrame) -> str:
    """Per dataset and budget, the held-out rater's rows in short: coverage pooled over all groups (draws weighted),
    and per dimension r and the width ratios, as the median over the dimensions with their range."""
    lines = head("dataset", "budget n", "dimensions", "groups", "r (rater, people)", "uniform: PPI++ covers",
                 "people covers", "PPI++ / people-only width", "active: PPI++ covers", "people covers",
                 "PPI++ / people-only width", "active PPI++ / uniform people-only", "withheld, uniform / active")
    for (ds, budget), g in cells.groupby(["dataset", "budget"], sort=False):
        side = {d: g[g["design"] == d] for d in ("uniform", "active")}
        cover = {(d, k): by_draws(x, f"{k}_cover", f"{k}_draws") for d, x in side.items() for k in ("ppi", "people")}
        dims = pool[(pool["dataset"] == ds) & (pool["budget"] == budget)].set_index(["dimension", "design"])
        u, a = dims.xs("uniform", level="design"), dims.xs("active", level="design")
        lines.append(f"| {ds} | {budget} ({g['n'].min()}" + (f"-{g['n'].max()}" if g["n"].nunique() > 1 else "")
                     + f") | {len(u)} | {len(side['uniform'])} | {span(u['r_pearson'])} | "
                     f"{pct(cover[('uniform', 'ppi')])} | {pct(cover[('uniform', 'people')])} | "
                     f"{span(u['width_ratio'], '.3f')} | {pct(cover[('active', 'ppi')])} | "
                     f"{pct(cover[('active', 'people')])} | {span(a['width_ratio'], '.3f')} | "
                     f"{span(a['ppi_width'] / u['people_width'], '.3f')} | "
                     f"{pct(float(side['uniform']['ppi_withheld'].mean()))} / "
                     f"{pct(float(side['active']['ppi_withheld'].mean()))} |")
    return "\n".join(lines)


def power_table(pw: pd.DataFrame) -> str:
    lines = head("dataset", "budget n", "pairs", "predicted power in 0.2-0.95", "of them within 0.05",
                 "mean gap (realised - predicted)", "mean abs gap", "largest gap", "all pairs: within 0.05",
                 "draws withheld")
    for (ds, budget), g in pw.groupby(["dataset", "budget"], sort=False):
        r = g[g["in_range"]]
        big = r.loc[r["gap"].abs().idxmax()] if len(r) else None
        lines.append(f"| {ds} | {budget} ({g['n'].min()}" + (f"-{g['n'].max()}" if g["n"].nunique() > 1 else "")
                     + f") | {len(g)} | {len(r)} | {(r['gap'].abs() <= 0.05).sum()} | "
                     + (f"{r['gap'].mean():+.3f} | {r['gap'].abs().mean():.3f} | {big['gap']:+.3f} ({big['track']} "
                        f"{big['dimension']}: {big['model_a']} vs {big['model_b']}, n {big['n']}, predicted "
                        f"{big['predicted']:.2f})" if big is not None else " | | ")
                     + f" | {(g['gap'].abs() <= 0.05).sum()} of {len(g)} | "
                     + f"{pct(float(g['withheld'].mean()))} |")
    return "\n".join(lines)


def machine() -> str:
    """The CPU's model and count, the load, and Python: what a reader needs to set the seconds against."""
    cpu = platform.processor() or platform.machine()
    info = Path("/proc/cpuinfo")
    if info.exists():
        names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines() if line.startswith("model name")]
        cpu = names[0] if names else cpu
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{os.cpu_count()} x {cpu}{load}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--out", help="folder for coverage_cells.csv, coverage.csv, power.csv, summary.json, report.md")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--quick", action="store_true", help="100 draws, USR-TopicalChat only (a smoke test)")
    ap.add_argument("--datasets", default="usr,grade,fed,msde", help="comma-separated: usr, grade, fed, msde")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    draws = 100 if args.quick and args.draws == 1000 else args.draws
    chosen = ["usr"] if args.quick else [d.strip() for d in args.datasets.split(",") if d.strip()]
    shared = Path(args.shared)
    started = time.perf_counter()
    frames, skipped, notes = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="evalcore-ppi-") as tmp:
        for source in SOURCES:
            if source.name not in chosen:
                continue
            absent = [p for p in source.needs if not (shared / p).exists()]
            if absent:
                skipped[source.name] = "absent: " + ", ".join(str(shared / p) for p in absent)
                print(f"skipped {source.name}: {skipped[source.name]}", file=sys.stderr)
                continue
            folder = Path(tmp) / source.name
            folder.mkdir()
            rows, note = load(source, shared, folder, args.quick)
            frames.append(rows)
            if note:
                notes[source.name] = note
                print(f"{source.name}: {note}", file=sys.stderr)
    built = time.perf_counter() - started
    if not frames:
        print("no dataset to measure: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()), file=sys.stderr)
        return 1
    rows = pd.concat(frames, ignore_index=True)
    extremes = {k: (float(g["f"].min()), float(g["f"].max())) for k, g in rows.groupby(["dataset", "predictor"])}
    groups, constant = groups_of(rows)
    # the held-out rater's groups come after the metrics' ones, so those keep their seeds and draws
    rater_rows, rater_notes = held_out(rows)
    for ds, note in rater_notes.items():
        notes[ds] = "; ".join(filter(None, [notes.get(ds), note]))
        print(f"{ds}: {note}", file=sys.stderr)
    rater_groups, rater_constant = groups_of(rater_rows)
    cells, worst = coverage(groups + rater_groups, extremes, draws, args.seed)
    pool = pooled(cells)
    metric_cells, metric_pool = cells[cells["predictor"] != HELD_OUT], pool[pool["predictor"] != HELD_OUT]
    rater_cells, rater_pool = cells[cells["predictor"] == HELD_OUT], pool[pool["predictor"] == HELD_OUT]
    pw = power(groups, draws, args.seed)             # people only: the metrics' groups hold every rating
    worst_difference = check_difference(groups)
    elapsed = time.perf_counter() - started
    if not (worst <= 1e-9 and worst_difference <= 1e-9):   # the arrays must be finite_mean's arithmetic
        print(f"the vectorised intervals differ from ppi.finite_mean by {worst:.3g} and from ppi.difference by "
              f"{worst_difference:.3g}: the bench's copy of the arithmetic is out of date", file=sys.stderr)
        return 2

    in_range = pw[pw["in_range"]]
    summary = {"draws": draws, "seed": args.seed, "datasets": sorted(rows["dataset"].unique()), "skipped": skipped,
               "notes": notes, "groups": len(groups), "constant_groups_left_out": constant, "cells": len(metric_cells),
               "min_units": MIN_UNITS,
               "held_out_rater": {"annotator": HELD, "groups": len(rater_groups), "cells": len(rater_cells),
                                  "constant_groups_left_out": rater_constant,
                                  "coverage_ppi": {d: float(rater_cells.loc[rater_cells["design"] == d, "ppi_cover"]
                                                            .mean()) for d in ("uniform", "active")}},
               "max_abs_diff_vs_finite_mean": worst, "max_abs_diff_vs_difference": worst_difference,
               "coverage_ppi": {d: float(metric_cells.loc[metric_cells["design"] == d, "ppi_cover"].mean())
                                for d in ("uniform", "active")},
               "power_pairs": len(pw), "power_pairs_in_range": len(in_range),
               "power_in_range_within_0.05": int((in_range["gap"].abs() <= 0.05).sum()),
               "power_in_range_within_0.05_over_draws_given": int(
                   ((in_range["realised_given"] - in_range["predicted"]).abs() <= 0.05).sum()),
               "power_mean_abs_gap_in_range": float(in_range["gap"].abs().mean()) if len(in_range) else None,
               "withheld_share": {d: float(metric_cells.loc[metric_cells["design"] == d, "ppi_withheld"].mean())
                                  for d in ("uniform", "active")},
               "too_few_share_active": float(metric_cells.loc[metric_cells["design"] == "active", "ppi_too_few"].mean()),
               "alike_given_interval_share": float(metric_cells[["ppi_alike_kept", "people_alike_kept"]].to_numpy()
                                                   .mean()),
               "seconds_build": round(built, 1), "seconds_total": round(elapsed, 1),
               "machine": machine(),
               "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    report = "\n\n".join([
        f"draws {draws}, seed {args.seed}, {len(groups)} groups (and {len(rater_groups)} with one rater held out), {summary['date']}, {summary['machine']}, {elapsed:.0f} s "
        f"(stores {built:.0f} s); vectorised draws against ppi.finite_mean: largest difference {worst:.2e}",
        "### Coverage of the all-people value (%, over the draws given an interval; target 93-97; bold: outside), "
        "and the draws withheld (%, no spread)", coverage_table(metric_pool),
        "### Where coverage leaves the band: the degrees of freedom, and draws withheld", df_table(metric_cells),
        "### Width and gain (mean PPI++ width over mean people-only width at the same ratings; below 1: narrower)",
        gain_table(metric_pool),
        f"### A predictor that tracks people: one rater held out ({HELD}, the first score of each response; people "
        "and truth without it), per dataset and budget (coverage %, width ratios: median over the dimensions, range)",
        held_out_table(rater_cells, rater_pool),
        "### One rater held out: coverage per dimension", coverage_table(rater_pool),
        "### One rater held out: width and gain per dimension", gain_table(rater_pool),
        "### Planner's predicted power against realised power (people only, uniform; a withheld draw counts as "
        "not telling the pair apart)", power_table(pw)])
    print(report)
    if skipped:
        print("\nskipped: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        cells.to_csv(out / "coverage_cells.csv", index=False)
        pool.to_csv(out / "coverage.csv", index=False)
        pw.to_csv(out / "power.csv", index=False)
        (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        (out / "report.md").write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
