"""An audit of LLM judges against the lab's own people, per skill and human dimension.

Judges are the computed metrics of the judge family (G-Eval rubrics, MT-Bench single, MT-Bench pairwise
against a baseline), one per signature (judge model, server, temperature, prompt), and the pairwise
judgments a store holds with source 'judge' (MT-Bench's imported verdicts).

- agreement(): a rating judge against people, per track and human dimension:
  * Spearman and Kendall with the mean of the annotators, at turn and system level (bootstrap CIs);
  * the same question put fairly to people: for each annotator a, the correlation of a's scores with the
    mean of the *other* annotators on the same responses, and the judge's with that same leave-a-out mean;
    each averaged over annotators ('human ceiling' vs 'judge, leave-one-out'), as FastChat compares
    judge-human with human-human agreement. A judge at or above the ceiling agrees with people as well as
    people agree with each other;
  * quadratic-weighted Cohen's kappa of the judge's values rounded to the human scale against each
    annotator, beside the mean kappa between annotators (only when judge and people share a scale).
- pairwise(): a pairwise judge, per track:
  * position consistency: the share of pairs whose verdict survives swapping the two answers (both
    orders are asked; a verdict that flips counts as a tie in the judge's value, stated);
  * P(first): the share of single-order verdicts that chose the answer shown first (0.5 = none);
  * P(longer): among pairs the judge decided (not a tie) whose answers differ in length, the share where
    it preferred the longer answer; the same for people's votes on the same pairs (length in characters
    for Chinese, words for English);
  * agreement with people's votes on the same pairs, with and without ties.
- length_controlled(): AlpacaEval's length-controlled win rate of each model against the pairwise
  judge's baseline (see lc_winrate).
- drift(): two signatures of one judge over the same responses: their turn-level Spearman, and Kendall's
  tau between the leaderboards (models by mean value) they induce, with a bootstrap CI over items.
- uncertainty(): a judge sampled k times (`--judge-sample`) or several judges: each model's mean, the judge's
  spread per response, and rank intervals with and without the judge's own variance.
"""
from __future__ import annotations

import warnings
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.agreement import cohen_kappa
from evalcore.analysis.stats import correlate
from evalcore.metrics import registry
from evalcore.metrics.base import Signature
from evalcore.metrics.judge.metric import Pairwise
from evalcore.scoring.plan import keys_by_metric, load_track
from evalcore.store import registered

AGREEMENT_COLUMNS = ["track", "skill", "judge", "asked", "signature", "dimension", "level", "statistic", "who", "value",
                     "ci_low", "ci_high", "n", "note"]
PAIRWISE_COLUMNS = ["track", "skill", "judge", "asked", "signature", "pairs", "consistency", "p_first", "decided",
                    "p_longer_judge", "p_longer_people", "people_pairs", "agreement_with_ties",
                    "agreement_without_ties", "note"]
LC_COLUMNS = ["track", "judge", "asked", "signature", "model", "baseline", "n", "win_rate", "lc_win_rate",
              "length_weight", "note"]
UNCERTAINTY_COLUMNS = ["track", "judge", "asked", "samples", "model", "items", "mean", "judge_sd", "rank",
                       "rank_low_items", "rank_high_items", "rank_low", "rank_high"]
PAIRWISE = Pairwise.name   # the judge whose values are win rates against a baseline, both orders in its stats
SEPARATED = 10.0   # |w_len| beyond this: the verdicts are (nearly) separable by length (a logit change of 10 per unit)
DRIFT_COLUMNS = ["track", "judge", "asked_a", "asked_b", "signature_a", "signature_b", "n", "spearman_turn", "models",
                 "kendall_tau_system", "ci_low", "ci_high"]


def asked(signature: str) -> str:
    """Which judge model answered, at which temperature, from a signature: 'gpt-4o@api.openai.com, t 0.0' (an
    imported judgment's signature is its prompt's name)."""
    sig = Signature.parse(signature)
    model = sig.field("judge")
    return f"{model}, t {sig.field('t')}" if model else signature


# ---------------------------------------------------------------- reading the store
def _tracks(con, dataset: str) -> list[tuple[str, str]]:
    return con.execute("SELECT track, coalesce(skill, 'other') FROM tracks WHERE dataset = ? ORDER BY track",
                       [dataset]).fetchall()


def judge_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of the judge family's metrics (the store's imported ones included)."""
    return [n for n, m in registry.of(con).items() if getattr(m, "family", None) == "judge"]


def judge_values(con: duckdb.DuckDBPyConnection, dataset: str, track: str, judge: str | None = None,
                 data: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per response, each judge signature's value and statistics: columns item_id, model, judge, signature,
    value, stats (pairwise: [value, score as first, score as second]). `judge`: one signature or name only."""
    known = registry.of(con)
    names = set(judge_names(con))
    # every signature a judge was ever asked under (the system scores keep only the latest configuration;
    # the per-response values of earlier ones stay cached, which is what drift compares)
    sigs = [(n, s) for n, s in con.execute("SELECT metric, signature FROM metric_signatures ORDER BY metric, signature"
                                           ).fetchall()
            if n in names and judge in (None, n, s)]
    columns = ["item_id", "model", "judge", "signature", "value", "stats"]
    if not sigs:
        return pd.DataFrame(columns=columns)
    data = load_track(con, dataset, track) if data is None else data
    keys = keys_by_metric(sorted({n for n, _ in sigs}), data, known)
    frames = []
    for name, sig in sigs:
        lookup = pd.DataFrame({"text_key": keys[name], "item_id": data["item_id"], "model": data["model"]})
        with registered(con, "_evalcore_keys", lookup):
            frames.append(con.execute("""
                SELECT k.item_id, k.model, ? AS judge, ? AS signature, m.value, m.stats FROM _evalcore_keys k
                JOIN metric_scores m ON m.text_key = k.text_key AND m.signature = ? WHERE m.value IS NOT NULL
            """, [name, sig, sig]).df())
    frames = [f for f in frames if len(f)]   # signatures of other tracks' scoring
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def human_ratings(con, dataset: str, track: str) -> pd.DataFrame:
    """Response-level ratings: item_id, model, annotator, dimension, score (an annotator's repeated rating of
    one response averaged)."""
    return con.execute("""
        SELECT item_id, model, annotator, dimension, avg(score) AS score FROM human_ratings
        WHERE dataset = ? AND track = ? AND target = 'response' GROUP BY ALL ORDER BY ALL""", [dataset, track]).df()


def scale(con, dataset: str, dimension: str) -> tuple[float, float] | None:
    row = con.execute("SELECT scale_min, scale_max FROM dimensions WHERE dataset = ? AND dimension = ?",
                      [dataset, dimension]).fetchall()
    return (float(row[0][0]), float(row[0][1])) if row and row[0][0] is not None and row[0][1] is not None else None


def _judge_dimension(name: str, dimensions: list[str]) -> list[str]:
    """The human dimensions a judge is audited on: its own (Judge-Info: Info), else every one."""
    own = name.removeprefix("Judge-")
    return [own] if own in dimensions else dimensions


# ---------------------------------------------------------------- agreement of a rating judge with people
def loo(judge: pd.Series | None, ratings: pd.DataFrame, method: str = "spearman") -> dict:
    """Leave-one-annotator-out: for each annotator a (at least 3 responses rated by a and by someone else),
    r(a, mean of the others) and r(judge, mean of the others) on those responses; their means over
    annotators. `judge`: values indexed by unit (None: people only); `ratings`: columns unit, annotator, score."""
    wide = ratings.pivot_table(index="unit", columns="annotator", values="score", aggfunc="mean")
    people, judged = _loo_rs(wide.to_numpy(float), None if judge is None else judge.reindex(wide.index).to_numpy(float),
                             method)
    return {"human": float(np.mean(people)) if people else np.nan,
            "judge": float(np.mean(judged)) if judged else np.nan, "annotators": len(people),
            "spread": (float(np.min(people)), float(np.max(people))) if people else (np.nan, np.nan)}


def loo_gap(judge: pd.Series, ratings: pd.DataFrame, *, bootstrap: int, seed: int) -> tuple[float, float, float]:
    """The judge's leave-one-out Spearman minus the people's (loo()), and its 95% bootstrap interval over the
    rated responses (each resample recomputes both on the same responses)."""
    wide = ratings.pivot_table(index="unit", columns="annotator", values="score", aggfunc="mean")
    scores, j = wide.to_numpy(float), judge.reindex(wide.index).to_numpy(float)

    def gap_of(rows) -> float:
        people, judged = _loo_rs(scores[rows], j[rows], "spearman")
        return float(np.mean(judged) - np.mean(people)) if people else np.nan

    gap = gap_of(slice(None))
    if bootstrap <= 0 or np.isnan(gap):
        return gap, np.nan, np.nan
    rng = np.random.default_rng(seed)
    draws = np.array([gap_of(rng.integers(0, len(j), len(j))) for _ in range(bootstrap)])
    draws = draws[~np.isnan(draws)]
    return (gap, *np.percentile(draws, [2.5, 97.5])) if len(draws) else (gap, np.nan, np.nan)


def _loo_rs(scores: np.ndarray, judge: np.ndarray | None, method: str) -> tuple[list[float], list[float]]:
    """Per annotator (a column of `scores`, responses x annotators, NaN = not rated) with at least 3 responses
    also rated by others: r(annotator, the others' mean) and r(judge, the others' mean); judge None: people only."""
    people, judged = [], []
    for a in range(scores.shape[1]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # a response no one else rated: NaN, dropped below
            others = np.nanmean(np.delete(scores, a, axis=1), axis=1)
        ok = ~np.isnan(scores[:, a]) & ~np.isnan(others) & (True if judge is None else ~np.isnan(judge))
        if ok.sum() < 3:
            continue
        h = correlate(scores[ok, a], others[ok], method).r   # NaN where undefined (a constant input)
        jr = h if judge is None else correlate(judge[ok], others[ok], method).r
        if not (np.isnan(h) or np.isnan(jr)):
            people.append(h)
            judged.append(jr)
    return people, judged


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


def agreement(con: duckdb.DuckDBPyConnection, dataset: str, *, judge: str | None = None, bootstrap: int = 1000,
              seed: int = 0) -> pd.DataFrame:
    """AGREEMENT_COLUMNS: each rating judge against people, beside people against each other."""
    rows = []
    known = registry.of(con)
    for track, skill in _tracks(con, dataset):
        values = judge_values(con, dataset, track, judge)
        values = values[values["judge"] != PAIRWISE]   # its values are win rates: see pairwise()
        if values.empty:
            continue
        people = human_ratings(con, dataset, track)
        if people.empty:
            continue
        people["unit"] = people["item_id"] + "\x1f" + people["model"]
        dims = sorted(people["dimension"].unique())
        for (name, sig), part in values.groupby(["judge", "signature"], sort=True):
            judged = pd.Series(part["value"].to_numpy(float), index=part["item_id"] + "\x1f" + part["model"])
            judged = judged[~judged.index.duplicated()]
            for dim in _judge_dimension(name, dims):
                rated = people[people["dimension"] == dim]
                base = {"track": track, "skill": skill, "judge": name, "asked": asked(sig), "signature": sig,
                        "dimension": dim}
                mean = rated.groupby("unit")["score"].mean()
                both = pd.DataFrame({"judge": judged, "people": mean}).dropna()
                for method in ("spearman", "kendall"):
                    c = correlate(both["judge"], both["people"], method, bootstrap=bootstrap, seed=seed)
                    rows.append({**base, "level": "turn", "statistic": method, "who": "judge vs people's mean",
                                 "value": c.r, "ci_low": c.ci_low, "ci_high": c.ci_high, "n": c.n, "note": c.reason})
                models = both.assign(model=[u.split("\x1f", 1)[1] for u in both.index]).groupby("model").mean()
                c = correlate(models["judge"], models["people"], "spearman", bootstrap=bootstrap, seed=seed)
                rows.append({**base, "level": "system", "statistic": "spearman", "who": "judge vs people's mean",
                             "value": c.r, "ci_low": c.ci_low, "ci_high": c.ci_high, "n": c.n, "note": c.reason})
                for method in ("spearman", "kendall"):
                    out = loo(judged, rated[["unit", "annotator", "score"]], method)
                    note = (f"mean over {out['annotators']} annotators of r(annotator, the others' mean)"
                            if out["annotators"] else "fewer than 2 annotators on 3 responses: no ceiling")
                    rows.append({**base, "level": "turn", "statistic": method, "who": "human ceiling (leave-one-out)",
                                 "value": out["human"], "ci_low": out["spread"][0], "ci_high": out["spread"][1],
                                 "n": out["annotators"], "note": note + "; the interval is the range over annotators"})
                    rows.append({**base, "level": "turn", "statistic": method, "who": "judge (leave-one-out)",
                                 "value": out["judge"], "ci_low": np.nan, "ci_high": np.nan, "n": out["annotators"],
                                 "note": "mean over the same annotators of r(judge, the others' mean)"})
                gap, lo, hi = loo_gap(judged, rated[["unit", "annotator", "score"]], bootstrap=bootstrap, seed=seed)
                rows.append({**base, "level": "turn", "statistic": "spearman", "who": "gap (judge - ceiling)",
                             "value": gap, "ci_low": lo, "ci_high": hi, "n": rated["unit"].nunique(),
                             "note": "leave-one-out Spearman, judge minus people; 95% bootstrap over responses"})
                bounds = scale(con, dataset, dim)
                judge_scale = getattr(known.get(name), "scale", None)
                same = bounds is not None and callable(judge_scale) and tuple(judge_scale()) == bounds
                if same:
                    k = kappas(judged, rated[["unit", "annotator", "score"]], *bounds)
                    rows.append({**base, "level": "turn", "statistic": "kappa_quadratic", "who": "judge vs each annotator",
                                 "value": k["judge"], "ci_low": np.nan, "ci_high": np.nan, "n": k["n_judge"],
                                 "note": "mean over annotators; the judge's values rounded to the scale's points"})
                    rows.append({**base, "level": "turn", "statistic": "kappa_quadratic", "who": "human ceiling (pairs)",
                                 "value": k["human"], "ci_low": np.nan, "ci_high": np.nan, "n": k["n_human"],
                                 "note": "mean over pairs of annotators"})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def ceiling(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """The bar a judge must clear, from people alone: per track and dimension rated by two or more annotators,
    the mean over annotators of Spearman(annotator, the others' mean), its range, and how many annotators."""
    rows = []
    for track, skill in _tracks(con, dataset):
        people = human_ratings(con, dataset, track)
        people["unit"] = people["item_id"] + "\x1f" + people["model"]
        for dim, rated in people.groupby("dimension", sort=True):
            if rated["annotator"].nunique() < 2:
                continue
            out = loo(None, rated[["unit", "annotator", "score"]])
            rows.append({"track": track, "skill": skill, "dimension": dim, "human ceiling (leave-one-out)": out["human"],
                         "lowest annotator": out["spread"][0], "highest annotator": out["spread"][1],
                         "annotators": out["annotators"], "responses": rated["unit"].nunique()})
    return pd.DataFrame(rows, columns=["track", "skill", "dimension", "human ceiling (leave-one-out)",
                                       "lowest annotator", "highest annotator", "annotators", "responses"])


def headline(table: pd.DataFrame) -> pd.DataFrame:
    """One line per judge, track and dimension: the judge's leave-one-out Spearman against the human ceiling."""
    part = table[(table["statistic"] == "spearman") & (table["level"] == "turn")]
    keys = ["track", "skill", "judge", "asked", "signature", "dimension"]
    if part.empty:
        return pd.DataFrame(columns=keys + ["verdict"])
    wide = part.pivot_table(index=keys, columns="who", values="value", aggfunc="first").reset_index()
    for col in ("judge (leave-one-out)", "human ceiling (leave-one-out)", "judge vs people's mean",
                "gap (judge - ceiling)"):
        if col not in wide:
            wide[col] = np.nan
    gaps = part[part["who"] == "gap (judge - ceiling)"][keys + ["ci_low", "ci_high"]]
    wide = wide.merge(gaps.rename(columns={"ci_low": "gap_ci_low", "ci_high": "gap_ci_high"}), on=keys, how="left")
    gap, hi = wide["gap (judge - ceiling)"], wide["gap_ci_high"]
    # "as well as" on the point estimate; "below" only where the whole interval is below 0 (without an
    # interval, on the point); else the data cannot tell the judge from the ceiling
    below = np.where(hi.notna(), hi < 0, gap < 0)
    wide["verdict"] = np.where(gap.isna(), "no ceiling: fewer than two annotators per response",
                               np.where(gap >= 0, "agrees with people as well as people agree with each other",
                                        np.where(below, "below the human ceiling",
                                                 "not distinguishable from the human ceiling")))
    first = ["track", "skill", "judge", "asked", "dimension", "verdict", "judge (leave-one-out)",
             "human ceiling (leave-one-out)", "gap (judge - ceiling)", "gap_ci_low", "gap_ci_high",
             "judge vs people's mean"]
    return wide[first + [c for c in wide.columns if c not in first]]


# ---------------------------------------------------------------- pairwise judges
def text_length(texts: pd.Series, language: str | None) -> pd.Series:
    """Characters for Chinese (and any language not English), words for English."""
    if (language or "").lower().startswith("en"):
        return texts.fillna("").str.split().str.len()
    return texts.fillna("").str.len()


def _language(con, dataset: str) -> str | None:
    row = con.execute("SELECT language FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    return row[0][0] if row else None


def verdicts(con: duckdb.DuckDBPyConnection, dataset: str, track: str, judge: str | None = None) -> pd.DataFrame:
    """Every pairwise verdict of a judge on a track: judge, signature, item_id, model_1, model_2, first and
    second (the verdict with model_1's answer shown first, then second: 1 = model_1 won, 0 = model_2, 0.5 tie),
    text_1, text_2. From the Judge-Pairwise metric (model_1 = the baseline) and from imported judgments."""
    columns = ["judge", "signature", "item_id", "model_1", "model_2", "first", "second"]
    frames = []
    values = judge_values(con, dataset, track, judge)
    pw = values[values["judge"] == PAIRWISE]
    for sig, part in pw.groupby("signature"):
        baseline = Signature.parse(sig).field("baseline")
        baseline = baseline.split("|")[0] if baseline else None
        stats = np.stack(part["stats"].to_numpy())
        # stats: [value, score of the test answer shown first, score of it shown second]; model_1 = the baseline
        frames.append(pd.DataFrame({"judge": part["judge"].to_numpy(), "signature": sig,
                                    "item_id": part["item_id"].to_numpy(), "model_1": baseline,
                                    "model_2": part["model"].to_numpy(),
                                    "first": 1 - stats[:, 2], "second": 1 - stats[:, 1]}))
    winner = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}
    imported = con.execute("""
        SELECT judge || ' (' || prompt || ')' AS judge, prompt AS signature, item_id, model_1, model_2,
               g1_winner, g2_winner FROM pairwise_judgments
        WHERE dataset = ? AND track = ? AND source = 'judge' AND g1_winner <> 'error' AND g2_winner <> 'error'
    """, [dataset, track]).df()
    if judge is not None:
        imported = imported[(imported["judge"] == judge) | (imported["signature"] == judge)]
    if len(imported):
        frames.append(imported.assign(first=imported["g1_winner"].map(winner),
                                      second=imported["g2_winner"].map(winner))[columns])
    out = pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    texts = con.execute("SELECT r.item_id, r.model, r.text FROM responses r JOIN items i USING (dataset, item_id) "
                        "WHERE r.dataset = ? AND i.track = ?", [dataset, track]).df()
    texts = texts.set_index(["item_id", "model"])["text"]
    out["text_1"] = [texts.get((i, m)) for i, m in zip(out["item_id"], out["model_1"])]
    out["text_2"] = [texts.get((i, m)) for i, m in zip(out["item_id"], out["model_2"])]
    return out


def people_votes(con, dataset: str, track: str) -> pd.DataFrame:
    """People's votes: item_id, model_1, model_2, voter, score (1 = model_1 won, 0 = model_2, 0.5 tie)."""
    frame = con.execute("""
        SELECT item_id, model_1, model_2, judge AS voter, g1_winner FROM pairwise_judgments
        WHERE dataset = ? AND track = ? AND source = 'human' AND g1_winner <> 'error'""", [dataset, track]).df()
    return frame.assign(score=frame["g1_winner"].map({"model_1": 1.0, "model_2": 0.0, "tie": 0.5}))


def _oriented(votes: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """People's votes on the judge's pairs, scored from the judge pair's model_1 side."""
    fwd = votes.merge(pairs[["item_id", "model_1", "model_2"]], on=["item_id", "model_1", "model_2"])
    rev = votes.rename(columns={"model_1": "model_2", "model_2": "model_1"}).merge(
        pairs[["item_id", "model_1", "model_2"]], on=["item_id", "model_1", "model_2"])
    rev["score"] = 1 - rev["score"]
    return pd.concat([fwd, rev], ignore_index=True)


def p_longer(score: pd.Series, len_1: pd.Series, len_2: pd.Series) -> tuple[float, int]:
    """Among decided preferences (score 1: side 1 preferred, 0: side 2) between answers of different length,
    the share where the longer answer was preferred; and how many such preferences there were."""
    mask = (score != 0.5) & score.notna() & (len_1 != len_2)
    if not mask.any():
        return np.nan, 0
    longer_first = (len_1 > len_2)[mask]
    chose_first = (score > 0.5)[mask]
    return float((longer_first == chose_first).mean()), int(mask.sum())


def pairwise(con: duckdb.DuckDBPyConnection, dataset: str, *, judge: str | None = None) -> pd.DataFrame:
    """PAIRWISE_COLUMNS: position consistency, first-position preference, length preference (judge and people),
    agreement with people's votes, per judge signature and track."""
    rows = []
    language = _language(con, dataset)
    for track, skill in _tracks(con, dataset):
        found = verdicts(con, dataset, track, judge)
        if found.empty:
            continue
        votes = people_votes(con, dataset, track)
        for (name, sig), part in found.groupby(["judge", "signature"], sort=True):
            part = part.reset_index(drop=True)
            consistent = part["first"] == part["second"]
            # a single-order verdict chose the answer shown first: model_1 in the first order, model_2 in the second
            chose_first = np.r_[(part["first"] == 1.0).to_numpy(), (part["second"] == 0.0).to_numpy()]
            decided_any = np.r_[(part["first"] != 0.5).to_numpy(), (part["second"] != 0.5).to_numpy()]
            value = (part["first"] + part["second"]) / 2   # a flipped verdict averages to a tie
            len_1, len_2 = text_length(part["text_1"], language), text_length(part["text_2"], language)
            pl_judge, decided = p_longer(value, len_1, len_2)
            theirs = _oriented(votes, part)
            note = []
            pl_people, people_pairs, agree, agree_decided = np.nan, 0, np.nan, np.nan
            if len(theirs):
                lengths = part.set_index(["item_id", "model_1", "model_2"])
                key = list(zip(theirs["item_id"], theirs["model_1"], theirs["model_2"]))
                t1 = text_length(pd.Series([lengths["text_1"].get(k) for k in key]), language)
                t2 = text_length(pd.Series([lengths["text_2"].get(k) for k in key]), language)
                pl_people, _ = p_longer(theirs["score"].reset_index(drop=True), t1, t2)
                verdict = pd.Series(value.to_numpy(), index=pd.MultiIndex.from_frame(part[["item_id", "model_1", "model_2"]]))
                verdict = verdict[~verdict.index.duplicated()]
                judged = np.array([verdict.get(k, np.nan) for k in key])
                people_pairs = len(set(key))
                same = judged == theirs["score"].to_numpy()
                agree = float(same.mean())
                no_tie = (judged != 0.5) & (theirs["score"].to_numpy() != 0.5)
                agree_decided = float(same[no_tie].mean()) if no_tie.any() else np.nan
            else:
                note.append("no people's votes on these pairs")
            rows.append({"track": track, "skill": skill, "judge": name, "asked": asked(sig), "signature": sig,
                         "pairs": len(part),
                         "consistency": float(consistent.mean()),
                         "p_first": float(chose_first[decided_any].mean()) if decided_any.any() else np.nan,
                         "decided": decided, "p_longer_judge": pl_judge, "p_longer_people": pl_people,
                         "people_pairs": people_pairs, "agreement_with_ties": agree,
                         "agreement_without_ties": agree_decided,
                         "note": "; ".join(note + ([] if decided else ["the judge decided no pair of unequal length"]))})
    return pd.DataFrame(rows, columns=PAIRWISE_COLUMNS)


# ---------------------------------------------------------------- length-controlled win rate
def lc_winrate(preference, len_model, len_baseline, *, n_splits: int = 5) -> dict:
    """AlpacaEval's length-controlled win rate, its `length_controlled_minimal` GLM, term by term:
    - preference p in [0, 1] that the model's answer beats the baseline's (1 win, 0.5 tie, 0 loss);
    - x = tanh(d / sd(d)), d = len(baseline's answer) - len(model's answer) in characters, sd with ddof 1;
    - logit P(model wins) = w_len * x + w_0 (a constant column, AlpacaEval's not_gamed_baseline; no
      intercept besides it), fitted by L1-penalised logistic regression (liblinear, random_state 123) on
      the soft labels (each pair twice, labelled 1 with weight p and 0 with weight 1 - p), the penalty
      chosen by 5-fold grouped cross-validation (the two copies of a pair in one fold) on the log loss;
    - the LC win rate is the prediction at zero length difference, 100 * logistic(w_0).
    Returns win_rate (100 * mean p), lc_win_rate, length_weight (w_len: < 0, the judge favours the longer
    answer; > 0, the shorter), n, and a note where the number cannot be read as it stands."""
    p = np.asarray(preference, float)
    delta = np.asarray(len_baseline, float) - np.asarray(len_model, float)
    n = len(p)
    out = {"n": n, "win_rate": float(p.mean() * 100) if n else np.nan, "lc_win_rate": np.nan, "length_weight": np.nan,
           "note": ""}
    sd = np.std(delta, ddof=1) if n > 1 else 0.0
    if n < 2 * n_splits or not sd:
        out["note"] = (f"{n} pairs: the cross-validation needs {2 * n_splits}" if n < 2 * n_splits else
                       "every pair's answers differ in length by the same amount: nothing to control for")
        return out
    x = np.tanh(delta / sd)
    design = pd.DataFrame({"np.tanh(std_delta_len)": np.r_[x, x], "not_gamed_baseline.astype(float)": 1.0})
    prob = np.r_[p, 1 - p]
    y = np.r_[np.ones(n), np.zeros(n)].astype(int)
    groups = np.r_[np.arange(n), np.arange(n)]

    def loss(y_true, y_pred, true_prob):
        target = np.where(y_true == 1, true_prob, 1 - true_prob)
        pred = np.clip(y_pred, 1e-15, 1 - 1e-15)
        return -np.mean(target * np.log(pred) + (1 - target) * np.log(1 - pred))

    # imported here: scikit-learn takes ~0.7 s to import, on the first run of every page that imports this module
    from sklearn import config_context
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GroupKFold

    with config_context(enable_metadata_routing=True):
        scorer = make_scorer(loss, response_method="predict_proba", greater_is_better=False
                             ).set_score_request(true_prob=True)
        model = LogisticRegressionCV(cv=GroupKFold(n_splits=n_splits), scoring=scorer, random_state=123, dual=False,
                                     penalty="l1", solver="liblinear", n_jobs=None, fit_intercept=False)
        model.set_fit_request(sample_weight=True)
        model.fit(design, y, sample_weight=prob, groups=groups, true_prob=prob)
    w_len, w_0 = model.coef_[0]
    out.update(lc_win_rate=float(100 / (1 + np.exp(-w_0))), length_weight=float(w_len))
    if abs(w_len) > SEPARATED:
        out["note"] = (f"length alone (nearly) decides the verdicts (|w_len| = {abs(w_len):.0f}): the rate at zero length "
                       "difference is an extrapolation, not a measurement")
    return out


def length_controlled(con: duckdb.DuckDBPyConnection, dataset: str, *, judge: str | None = None) -> pd.DataFrame:
    """LC_COLUMNS: per pairwise judge against its baseline, each model's raw and length-controlled win rate."""
    rows = []
    for track, _ in _tracks(con, dataset):
        found = verdicts(con, dataset, track, judge)
        found = found[found["model_1"].notna()]
        for (name, sig, base, model), part in found.groupby(["judge", "signature", "model_1", "model_2"], sort=True):
            pref = 1 - (part["first"] + part["second"]) / 2      # the model's (model_2's) side
            out = lc_winrate(pref, part["text_2"].fillna("").str.len(), part["text_1"].fillna("").str.len())
            rows.append({"track": track, "judge": name, "asked": asked(sig), "signature": sig, "model": model,
                         "baseline": base, "n": out["n"], "win_rate": out["win_rate"], "lc_win_rate": out["lc_win_rate"],
                         "length_weight": out["length_weight"], "note": out["note"]})
    return pd.DataFrame(rows, columns=LC_COLUMNS)


def audit_part(con: duckdb.DuckDBPyConnection, dataset: str, name: str, *, judge: str | None = None,
         across: str = "samples", bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One table of the audit by its name (JUDGE_AUDIT_PARTS): what `judge-audit --part` and the page show."""
    if name in ("agreement", "headline"):
        table = agreement(con, dataset, judge=judge, bootstrap=bootstrap, seed=seed)
        return headline(table) if name == "headline" else table
    if name == "pairwise":
        return pairwise(con, dataset, judge=judge)
    if name == "length-controlled":
        return length_controlled(con, dataset, judge=judge)
    if name == "uncertainty":
        return uncertainty(con, dataset, across=across, bootstrap=bootstrap, seed=seed)
    return drift(con, dataset, bootstrap=bootstrap, seed=seed)


def nothing_to_audit(con: duckdb.DuckDBPyConnection, dataset: str, part: str) -> str:
    """Why a part of the audit is empty, in one sentence saying what to do."""
    judged = con.execute("SELECT count(*) FROM metric_signatures WHERE list_contains(?, metric)",
                         [judge_names(con)]).fetchall()[0][0]
    imported = con.execute("SELECT count(*) FROM pairwise_judgments WHERE dataset = ? AND source = 'judge'",
                           [dataset]).fetchall()[0][0]
    rated = con.execute("SELECT count(*) FROM human_ratings WHERE dataset = ? AND target = 'response'",
                        [dataset]).fetchall()[0][0]
    if not judged and not imported:
        return (f"no LLM judge has scored {dataset!r}: run `evalcore score --metrics judge --judge-base-url URL "
                f"--judge-model NAME` (or import MT-Bench judgments) first")
    if part in ("agreement", "headline") and not rated:
        return f"{dataset!r} has no human ratings of responses to audit a rating judge against"
    if part == "drift":
        return "drift needs one judge scored under two signatures (another judge model, prompt or temperature)"
    if part == "uncertainty":
        return ("the judge's spread needs it asked k times: score with --judge-temperature 0.7 and --judge-sample 1, "
                "then 2, ... (or, with --across judges, two judge models)")
    if part in ("pairwise", "length-controlled"):
        return f"no pairwise judge (Judge-Pairwise with --judge-baseline, or imported judgments) on {dataset!r}"
    return f"no rating judge on {dataset!r} has values for responses people rated"


# ---------------------------------------------------------------- a judge's own variance in the ranks
def unsampled(signature: str) -> str:
    """A signature without its `sample:i` part: the judge that was sampled."""
    return "|".join(p for p in signature.split("|") if not p.startswith("sample:"))


def uncertainty(con: duckdb.DuckDBPyConnection, dataset: str, *, across: str = "samples", bootstrap: int = 1000,
                seed: int = 0) -> pd.DataFrame:
    """UNCERTAINTY_COLUMNS: a rating judge asked several times per response, its spread and the ranks it gives.
    `across`: 'samples' groups the runs of one judge that differ only in `--judge-sample` (k samples at
    temperature > 0); 'judges' groups every signature of a judge name (several judge models or prompts).
    Per model: the mean over items of the mean over the group's answers; judge_sd, the mean over the model's
    responses of the standard deviation between answers; its rank (1 = highest mean) and two 95% rank intervals
    from `bootstrap` resamples of items: over items only (each response's mean answer), and over items and the
    judge (each resampled response takes one of its answers at random), which is wider by what the judge's
    own variance adds."""
    rows = []
    rng_seed = seed
    for track, _ in _tracks(con, dataset):
        values = judge_values(con, dataset, track)
        values = values[values["judge"] != PAIRWISE]
        if values.empty:
            continue
        values["group"] = values["signature"].map(unsampled) if across == "samples" else values["judge"]
        for (name, group), part in values.groupby(["judge", "group"], sort=True):
            runs = sorted(part["signature"].unique())
            if len(runs) < 2:
                continue
            wide = part.pivot_table(index=["item_id", "model"], columns="signature", values="value", aggfunc="first")
            wide = wide.dropna()   # responses every run answered
            if wide.empty:
                continue
            answers = wide.to_numpy(float)                       # responses x runs
            keys = wide.index.to_frame(index=False)
            models = sorted(keys["model"].unique())
            items = sorted(keys["item_id"].unique())
            m_idx = keys["model"].map({m: i for i, m in enumerate(models)}).to_numpy()
            i_idx = keys["item_id"].map({it: i for i, it in enumerate(items)}).to_numpy()
            means = answers.mean(axis=1)

            def board(weights: np.ndarray, per_response: np.ndarray) -> np.ndarray:
                """Model means given item weights (bootstrap counts) and one value per response."""
                w = weights[i_idx]
                total = np.bincount(m_idx, w * per_response, minlength=len(models))
                count = np.bincount(m_idx, w, minlength=len(models))
                with np.errstate(invalid="ignore", divide="ignore"):
                    return total / count

            point = board(np.ones(len(items)), means)
            rank = pd.Series(-point).rank(method="average").to_numpy()
            rng = np.random.default_rng(rng_seed)
            only_items, with_judge = [], []
            for _ in range(bootstrap):
                weights = rng.multinomial(len(items), np.full(len(items), 1 / len(items))).astype(float)
                only_items.append(pd.Series(-board(weights, means)).rank(method="average").to_numpy())
                pick = answers[np.arange(len(answers)), rng.integers(0, answers.shape[1], len(answers))]
                with_judge.append(pd.Series(-board(weights, pick)).rank(method="average").to_numpy())
            sd = pd.Series(answers.std(axis=1, ddof=1)).groupby(m_idx).mean().to_numpy()
            lo_i, hi_i = (np.nanpercentile(only_items, q, axis=0) if bootstrap else np.full(len(models), np.nan)
                          for q in (2.5, 97.5))
            lo_j, hi_j = (np.nanpercentile(with_judge, q, axis=0) if bootstrap else np.full(len(models), np.nan)
                          for q in (2.5, 97.5))
            for k, model in enumerate(models):
                rows.append({"track": track, "judge": name, "asked": asked(group) if across == "samples" else
                             f"{len(runs)} signatures", "samples": len(runs), "model": model,
                             "items": int((m_idx == k).sum()), "mean": point[k], "judge_sd": sd[k], "rank": rank[k],
                             "rank_low_items": lo_i[k], "rank_high_items": hi_i[k], "rank_low": lo_j[k],
                             "rank_high": hi_j[k]})
    return pd.DataFrame(rows, columns=UNCERTAINTY_COLUMNS)


# ---------------------------------------------------------------- drift between two signatures of a judge
def drift(con: duckdb.DuckDBPyConnection, dataset: str, *, bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """DRIFT_COLUMNS: every two signatures of one judge name on a track, over the responses both scored."""
    rows = []
    for track, _ in _tracks(con, dataset):
        values = judge_values(con, dataset, track)
        for name, part in values.groupby("judge", sort=True):
            wide = part.pivot_table(index=["item_id", "model"], columns="signature", values="value", aggfunc="first")
            for a, b in combinations(sorted(wide.columns), 2):
                both = wide[[a, b]].dropna()
                turn = correlate(both[a], both[b], "spearman")
                board = both.groupby(level="model").mean()
                tau = correlate(board[a], board[b], "kendall")
                lo, hi = _tau_interval(both, a, b, bootstrap, seed)
                rows.append({"track": track, "judge": name, "asked_a": asked(a), "asked_b": asked(b),
                             "signature_a": a, "signature_b": b, "n": len(both),
                             "spearman_turn": turn.r, "models": len(board), "kendall_tau_system": tau.r,
                             "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows, columns=DRIFT_COLUMNS)


def _tau_interval(both: pd.DataFrame, a: str, b: str, bootstrap: int, seed: int) -> tuple[float, float]:
    """95% percentile interval of the leaderboards' Kendall tau, resampling items (each with all its models)."""
    items = both.index.get_level_values("item_id").unique()
    if bootstrap <= 0 or len(items) < 2:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    by_item = {i: g for i, g in both.groupby(level="item_id")}
    taus = []
    for _ in range(bootstrap):
        sample = pd.concat([by_item[i] for i in rng.choice(items, len(items))])
        board = sample.groupby(level="model").mean()
        r = correlate(board[a], board[b], "kendall").r
        if not np.isnan(r):
            taus.append(r)
    return (float(np.percentile(taus, 2.5)), float(np.percentile(taus, 97.5))) if taus else (np.nan, np.nan)
