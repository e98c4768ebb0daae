"""The simulator audit: on a chat task where people and simulators held conversations on the same scenarios with the
same systems, can a simulator stand in for the lab's people, and by how much does it miss?

Rankings. Per measure (each rated dimension, and the goal-reached rate), a system's value on one side is the mean
over that side's counted conversations with it; the two sides' values over the systems are compared by Kendall's
tau-b (equal to scipy.stats.kendalltau's, tested), and each system's difference (simulated minus people) is given. Intervals: 95%
percentile bootstrap over scenarios (the unit both sides share: one draw of scenarios, with replacement, weights
every conversation on a drawn scenario on both sides), 1,000 resamples, seed 0; a draw where one side's values are
all equal has no tau and is left out (counted).

Behaviour. Per conversation, of the user's own messages: rounds, characters per message, distinct-1 and distinct-2
(of characters for Chinese, words otherwise: evalcore.core.tokenize.char_tokens), the share of messages that ask a
question, the share of the scenario's grounding entries the user brought up (an entry's value, written in their
messages), goal reached, and ended early (before the round limit without the goal). Each compared as the mean
difference (simulated minus people) and Hedges' g (pooled standard deviation, small-sample correction
J = 1 - 3 / (4 (n1 + n2) - 9)), with a 95% bootstrap interval of g over conversations (each side resampled within
itself, 1,000 resamples, seed 0). This is where over-cooperation shows: more rounds, more questions, more of the
scenario brought up, more goals reached than people.

Equal values tie (evalcore.analysis.ties), whatever the order they were averaged in. A verdict says only what its interval supports: "ranks as people did" only when the interval of tau lies above
0, "ranks against people" when below, else that it cannot tell."""
from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.ties import RTOL
from evalcore.core.tokenize import char_tokens
from evalcore.simulation.judging import judged
from evalcore.store import chats as stored

PEOPLE = "people"
GOAL = "goal reached"
RESAMPLES = 1000
SEED = 0
BEHAVIOUR = ("rounds", "characters per message", "distinct-1", "distinct-2", "questions asked",
             "scenario brought up", GOAL, "ended early")
QUESTION = ("?", "？")


def conversations(con: duckdb.DuckDBPyConnection, task_id: int, counted: tuple[str, ...] = stored.COUNTED,
                  rated_by: str | None = None) -> pd.DataFrame:
    """One row per counted conversation of the task: who held it (PEOPLE or the simulator's name), scenario, system,
    goal (1.0, 0.0 or NaN), the latest rating per dimension, and the user's messages. `rated_by`: a judge's name; then a
    simulated conversation's dimensions are that judge's ratings of the whole conversation (evalcore.simulation.
    judging; NaN where it has none), not the simulator's own answers; its goal stays the simulator's answer."""
    task = stored.get(con, task_id)
    convs = stored.conversations(con, task_id)
    convs = convs[convs["state"].isin(counted)]
    if convs.empty:
        return pd.DataFrame(columns=["conversation_id", "holder", "scenario", "endpoint", "goal", "rounds", "user"]
                            + [d.dimension for d in task.dimensions])
    ids = [int(c) for c in convs["conversation_id"]]
    ratings = con.execute("""
        SELECT conversation_id, dimension, arg_max(value, rating_id) AS value FROM chat_ratings
        WHERE list_contains(?, conversation_id) GROUP BY ALL""", [ids]).df()
    wide = ratings.pivot(index="conversation_id", columns="dimension", values="value") if len(ratings) else pd.DataFrame()
    said = con.execute("""
        SELECT conversation_id, list(text ORDER BY idx) AS user FROM chat_messages
        WHERE role = 'user' AND list_contains(?, conversation_id) GROUP BY ALL""", [ids]).df()
    out = pd.DataFrame({
        "conversation_id": ids,
        "holder": [PEOPLE if s is None or (isinstance(s, float) and math.isnan(s)) else s for s in convs["simulator"]],
        "scenario": convs["scenario"].astype(int).tolist(),
        "endpoint": convs["endpoint"].tolist(),
        "goal": [np.nan if g is None or pd.isna(g) else float(bool(g)) for g in convs["goal"]],
        "rounds": convs["rounds"].astype(int).tolist()})
    for d in task.dimensions:
        out[d.dimension] = out["conversation_id"].map(wide[d.dimension]) if d.dimension in wide else np.nan
    user = dict(zip(said["conversation_id"].astype(int), said["user"]))
    out["user"] = [list(user.get(c, [])) for c in ids]
    if rated_by:
        simulated = out["holder"] != PEOPLE
        values = judged(con, out.loc[simulated, "conversation_id"].tolist(), rated_by)
        for d in task.dimensions:
            out.loc[simulated, d.dimension] = [values.get((c, d.dimension), np.nan)
                                               for c in out.loc[simulated, "conversation_id"]]
    return out


def entries(grounding: dict) -> list[str]:
    """A scenario's grounding entries as the values a user could bring up: a knowledge triple's value (its last
    field), a goal's or persona's line; values shorter than 2 characters are left out (they match anywhere)."""
    out = []
    for key, value in (grounding or {}).items():
        for entry in value if isinstance(value, list) else [value]:
            text = entry[-1] if isinstance(entry, (list, tuple)) and entry else entry
            text = str(text).strip()
            if len(text) >= 2:
                out.append(text)
    return out


def distinct(messages: list[str], n: int) -> float:
    grams = []
    for m in messages:
        tokens = char_tokens(m)
        grams += [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(set(grams)) / len(grams) if grams else np.nan


def behaviour(frame: pd.DataFrame, scenes: dict[int, list[str]], max_rounds: int) -> pd.DataFrame:
    """The behaviour measures per conversation (module docstring); NaN where one cannot be made (no messages, a
    scenario without grounding entries, no goal answer)."""
    rows = []
    for r in frame.itertuples(index=False):
        msgs = [m for m in r.user]
        said = "\n".join(msgs)
        wanted = scenes.get(int(r.scenario), [])
        rows.append({
            "rounds": float(r.rounds),
            "characters per message": float(np.mean([len(m) for m in msgs])) if msgs else np.nan,
            "distinct-1": distinct(msgs, 1), "distinct-2": distinct(msgs, 2),
            "questions asked": float(np.mean([any(q in m for q in QUESTION) for m in msgs])) if msgs else np.nan,
            "scenario brought up": float(np.mean([e in said for e in wanted])) if wanted else np.nan,
            GOAL: r.goal,
            "ended early": float(r.rounds < max_rounds and r.goal != 1.0)})
    return pd.DataFrame(rows, index=frame.index, columns=list(BEHAVIOUR))


def hedges_g(a: np.ndarray, b: np.ndarray) -> float:
    """Hedges' g of a over b: (mean a - mean b) / pooled SD, times J = 1 - 3 / (4 (n1 + n2) - 9); NaN when it
    cannot be made (fewer than 2 on a side, or no spread at all)."""
    if len(a) < 2 or len(b) < 2:
        return np.nan
    return float(hedges_gs(np.asarray(a, float)[None], np.asarray(b, float)[None])[0])


def hedges_gs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """hedges_g of each row of a over the same row of b (bootstrap draws, or one row), at once; NaN for a row
    without spread (float noise of equal values counts as none)."""
    n1, n2 = a.shape[1], b.shape[1]
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    pooled = np.sqrt(((n1 - 1) * a.var(axis=1, ddof=1) + (n2 - 1) * b.var(axis=1, ddof=1)) / (n1 + n2 - 2))
    flat = pooled <= 1e-12 * np.maximum(1.0, np.maximum(np.abs(ma), np.abs(mb)))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (ma - mb) / pooled * (1 - 3 / (4 * (n1 + n2) - 9))
    out[flat] = np.nan
    return out


def _interval(values: list[float]) -> tuple[float, float]:
    ok = [v for v in values if not math.isnan(v)]
    return (float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5))) if ok else (np.nan, np.nan)


def taus(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of x with the same row of y (rows: bootstrap draws, columns: systems), computed
    at once: sum over pairs of sign(dx) sign(dy) / sqrt((pairs - ties in x) (pairs - ties in y)), two values tied when
    they are at most ties.RTOL apart relative to the larger (as snap ties them); NaN where one side has no two values
    apart. scipy.stats.kendalltau draw by draw took 80% of an audit."""
    i, j = np.triu_indices(x.shape[1], 1)

    def signs(v: np.ndarray) -> np.ndarray:
        a, b = v[:, i], v[:, j]
        d = a - b
        return np.where(np.abs(d) <= RTOL * np.maximum(np.abs(a), np.abs(b)), 0.0, np.sign(d))

    sx, sy = signs(x), signs(y)
    pairs = len(i)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (sx * sy).sum(axis=1) / np.sqrt((pairs - (sx == 0).sum(axis=1)) * (pairs - (sy == 0).sum(axis=1)))
    out[np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1)] = np.nan
    return out


def rankings(frame: pd.DataFrame, simulator: str, measure: str, *, resamples: int = RESAMPLES,
             seed: int = SEED) -> dict:
    """Kendall's tau between the simulator's and people's values of the systems on one measure, each system's
    difference, and their bootstrap intervals over scenarios (module docstring)."""
    column = "goal" if measure == GOAL else measure
    use = frame[frame["holder"].isin([PEOPLE, simulator])].dropna(subset=[column])
    sides = {h: use[use["holder"] == h] for h in (PEOPLE, simulator)}
    systems = sorted(set(sides[PEOPLE]["endpoint"]) & set(sides[simulator]["endpoint"]))
    scenarios = sorted(set(sides[PEOPLE]["scenario"]) & set(sides[simulator]["scenario"]))
    out = {"simulator": simulator, "measure": measure, "systems": systems, "scenarios": len(scenarios)}
    if len(systems) < 2 or not scenarios:
        return out | {"tau": np.nan, "tau_ci": (np.nan, np.nan), "undefined_draws": 0, "people": {}, "simulated": {},
                      "difference": {}, "difference_ci": {}}
    # per side: sums and counts per (scenario, system), so a draw of scenarios is a weighted sum
    cube = {}
    for h, side in sides.items():
        side = side[side["scenario"].isin(scenarios) & side["endpoint"].isin(systems)]
        g = side.groupby(["scenario", "endpoint"])[column].agg(["sum", "count"])
        full = pd.MultiIndex.from_product([scenarios, systems], names=["scenario", "endpoint"])
        g = g.reindex(full, fill_value=0)
        cube[h] = (g["sum"].to_numpy(float).reshape(len(scenarios), len(systems)),
                   g["count"].to_numpy(float).reshape(len(scenarios), len(systems)))

    def means(weights: np.ndarray) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return {h: (weights @ s) / (weights @ n) for h, (s, n) in cube.items()}

    point = means(np.ones(len(scenarios)))
    tau = float(taus(point[simulator][None], point[PEOPLE][None])[0])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(scenarios), size=(resamples, len(scenarios)))
    weights = np.stack([np.bincount(d, minlength=len(scenarios)) for d in draws]).astype(float)
    m = means(weights)   # (resamples, systems) per side
    drawn = taus(m[simulator], m[PEOPLE])   # a system drawn without conversations on a side: no tau that draw
    diffs = m[simulator] - m[PEOPLE]
    return out | {
        "tau": tau, "tau_ci": _interval(drawn.tolist()), "undefined_draws": int(np.isnan(drawn).sum()),
        "people": dict(zip(systems, point[PEOPLE].tolist())), "simulated": dict(zip(systems, point[simulator].tolist())),
        "difference": dict(zip(systems, (point[simulator] - point[PEOPLE]).tolist())),
        "difference_ci": {s: _interval(diffs[:, i].tolist()) for i, s in enumerate(systems)}}


def compare_behaviour(frame: pd.DataFrame, measures: pd.DataFrame, simulator: str, *, resamples: int = RESAMPLES,
                      seed: int = SEED) -> pd.DataFrame:
    """Per behaviour measure: people's mean, the simulator's, their difference, Hedges' g and its interval."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in BEHAVIOUR:
        a = measures.loc[frame["holder"] == simulator, m].dropna().to_numpy(float)
        b = measures.loc[frame["holder"] == PEOPLE, m].dropna().to_numpy(float)
        g = hedges_g(a, b)
        draws = hedges_gs(a[rng.integers(0, len(a), (resamples, len(a)))],
                          b[rng.integers(0, len(b), (resamples, len(b)))]) if len(a) >= 2 and len(b) >= 2 else []
        lo, hi = _interval(list(draws))
        note = ("" if not math.isnan(g) else "fewer than 2 conversations on a side" if min(len(a), len(b)) < 2
                else "every value equal: no g")
        rows.append({"simulator": simulator, "measure": m, "people": float(b.mean()) if len(b) else np.nan,
                     "simulated": float(a.mean()) if len(a) else np.nan,
                     "difference": float(a.mean() - b.mean()) if len(a) and len(b) else np.nan,
                     "hedges g": g, "g 95% CI": (lo, hi), "n people": len(b), "n simulated": len(a), "note": note})
    return pd.DataFrame(rows)


def interval_text(pair, missing: str = "") -> str:
    """An interval as "[lo, hi]" (two decimals), `missing` where it cannot be made."""
    lo, hi = pair
    return missing if pd.isna(lo) or pd.isna(hi) else f"[{lo:.2f}, {hi:.2f}]"


def fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def verdict(r: dict) -> str:
    """One sentence on one measure that claims no more than the intervals support."""
    n, measure = len(r["systems"]), r["measure"]
    if n < 2:
        return f"{measure}: fewer than 2 systems held by both people and the simulator: nothing to rank"
    lo, hi = r["tau_ci"]
    shown = f"tau {fmt(r['tau'])} [{fmt(lo)}, {fmt(hi)}]"
    if math.isnan(r["tau"]):
        head = (f"{measure}: no ranking to compare (one side gives the {n} systems the same value)")
    elif lo > 0:
        head = f"{measure}: ranks the {n} systems as people did: {shown}"
    elif hi < 0:
        head = f"{measure}: ranks the {n} systems against people: {shown}"
    else:
        head = f"{measure}: cannot tell whether it ranks the {n} systems as people did: {shown} (the interval holds 0)"
    off = []
    for s, d in r["difference"].items():
        dlo, dhi = r["difference_ci"][s]
        if not math.isnan(dlo) and (dlo > 0 or dhi < 0):
            off.append(f"{'overrates' if d > 0 else 'underrates'} {s}: simulated minus people {d:+.2f} "
                       f"[{fmt(dlo)}, {fmt(dhi)}]")
    return head + ("; " + "; ".join(off) if off else "")


def audit(con: duckdb.DuckDBPyConnection, task_id: int, *, counted: tuple[str, ...] = stored.COUNTED,
          resamples: int = RESAMPLES, seed: int = SEED, rated_by: str | None = None) -> dict:
    """The whole audit of a task: {"rankings": one row per (simulator, measure), "differences": one row per
    (simulator, measure, system), "behaviour": one row per (simulator, measure), "summary": one row per simulator,
    "verdicts": {simulator: [sentences]}, "missing": why there is nothing to audit, or None}."""
    task = stored.get(con, task_id)
    frame = conversations(con, task_id, counted, rated_by)
    measures = [d.dimension for d in task.dimensions] + [GOAL]
    sims = [s for s in task.simulators if (frame["holder"] == s).any()]
    result = {"task": task, "counted": counted, "rated_by": rated_by or "the simulators themselves",
              "conversations": frame.drop(columns=["user"]), "rankings": pd.DataFrame(),
              "differences": pd.DataFrame(), "behaviour": pd.DataFrame(), "summary": pd.DataFrame(), "verdicts": {},
              "missing": None}
    if not task.simulators:
        result["missing"] = f"chat task {task_id} has no simulators"
    elif not (frame["holder"] == PEOPLE).any():
        result["missing"] = (f"no {' or '.join(counted)} conversations held by people yet: the audit compares "
                             "simulated users with people on the same scenarios")
    elif not sims:
        result["missing"] = f"no {' or '.join(counted)} simulated conversations yet (`evalcore chat simulate {task_id}`)"
    if result["missing"]:
        return result
    scenes = {int(s): entries(stored.scenario(con, task_id, int(s))["grounding"]) for s in frame["scenario"].unique()}
    measured = behaviour(frame, scenes, task.max_rounds)
    ranks, diffs, behave, summary = [], [], [], []
    for sim in sims:
        verdicts = []
        taus = {}
        for m in measures:
            r = rankings(frame, sim, m, resamples=resamples, seed=seed)
            verdicts.append(verdict(r))
            taus[m] = r
            ranks.append({"simulator": sim, "measure": m, "systems": len(r["systems"]), "scenarios": r["scenarios"],
                          "kendall tau": r["tau"], "tau 95% CI": r["tau_ci"], "draws without tau": r["undefined_draws"]})
            for s in r["systems"]:
                diffs.append({"simulator": sim, "measure": m, "system": s, "people": r["people"][s],
                              "simulated": r["simulated"][s], "difference": r["difference"][s],
                              "difference 95% CI": r["difference_ci"][s]})
        b = compare_behaviour(frame, measured, sim, resamples=resamples, seed=seed)
        behave.append(b)
        agree = [m for m, r in taus.items() if not math.isnan(r["tau_ci"][0]) and r["tau_ci"][0] > 0]
        against = [m for m, r in taus.items() if not math.isnan(r["tau_ci"][1]) and r["tau_ci"][1] < 0]
        brought = b.set_index("measure").loc["scenario brought up"]
        summary.append({"simulator": sim, "style": task.simulators[sim].get("style"),
                        "signature": task.simulators[sim].get("signature"),
                        "conversations": int((frame["holder"] == sim).sum()),
                        "ranks as people did on": ", ".join(agree) or "none",
                        "ranks against people on": ", ".join(against) or "none",
                        "brought up: simulated": brought["simulated"], "brought up: people": brought["people"],
                        "brought up: g": brought["hedges g"]})
        result["verdicts"][sim] = verdicts
    result["rankings"] = pd.DataFrame(ranks)
    result["differences"] = pd.DataFrame(diffs)
    result["behaviour"] = pd.concat(behave, ignore_index=True)
    result["summary"] = pd.DataFrame(summary)
    result["people"] = int((frame["holder"] == PEOPLE).sum())
    return result
