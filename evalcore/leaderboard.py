"""Leaderboards: one row per track, model and origin; a column per metric and per human dimension."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.humans import per_target_cte


# Column order of the MSDE paper's Tables 4-9; other names follow alphabetically.
PAPER_ORDER = ["F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4", "DIST1", "DIST2", "METEOR", "ROUGE", "CIDEr",
               "ST", "EV", "VE", "GM", "BS-P", "BS-R", "BS-F1", "BLEURT", "ABLSTM", "C", "T", "Sa", "F", "G"]
HUMAN_ORDER = ["Info", "Coh", "Know", "Rec", "Sa", "F", "G"]
# Tracks whose skill has an official ranking get a `rank` column: (column, ascending) in order of
# precedence. SMP2018-ECDT (seed 001): task-oriented systems by completion ratio C, then fewer
# turns T, then satisfaction Sa, fluency F, guidance G; intent classifiers by F1.
RANKING_RULES = {
    "task-oriented": [("C", False), ("T", True), ("Sa", False), ("F", False), ("G", False)],
    "intent": [("F1", False)],
}


def _scores(con, dataset: str, track: str | None, flavor: str, tokenizer: str | None) -> pd.DataFrame:
    from evalcore.scoring import computed_filter

    cond, params = computed_filter(con, dataset, flavor, tokenizer)
    return con.execute(f"""
        SELECT track, model, origin, name, value, signature, n FROM system_scores
        WHERE dataset = ? AND (? IS NULL OR track = ?) AND (origin = 'published' OR {cond})
    """, [dataset, track, track, *params]).df()


def _humans(con, dataset: str, track: str | None, aggregate: str = "mean") -> pd.DataFrame:
    """Mean per dimension: response/dialogue ratings (first aggregated per target across annotators
    by `aggregate`) go with computed rows, whole-system ratings (a paper's table) with published rows."""
    return con.execute(f"""
        WITH base AS (
            SELECT track AS target, item_id, dialogue_id, model, dimension, score  -- track rides in the key column `target`
            FROM human_ratings WHERE dataset = ? AND (? IS NULL OR track = ?) AND target <> 'system'),
        {per_target_cte(aggregate, "base")}
        SELECT target AS track, model, 'computed' AS origin, dimension AS name, avg(score) AS value
        FROM per_target GROUP BY ALL
        UNION ALL
        SELECT track, model, 'published', dimension, avg(score) FROM human_ratings
        WHERE dataset = ? AND (? IS NULL OR track = ?) AND target = 'system' GROUP BY ALL
    """, [dataset, track, track, dataset, track, track]).df()


def leaderboard(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
                flavor: str = "default", tokenizer: str | None = None, aggregate: str = "mean") -> pd.DataFrame:
    scores = _scores(con, dataset, track, flavor, tokenizer)
    humans = _humans(con, dataset, track, aggregate)
    long = pd.concat([scores[["track", "model", "origin", "name", "value"]], humans], ignore_index=True)
    if long.empty:
        return pd.DataFrame(columns=["track", "model", "origin"])
    wide = long.pivot_table(index=["track", "model", "origin"], columns="name", values="value", aggfunc="first")
    metric_cols = [c for c in PAPER_ORDER if c in set(scores["name"])]
    metric_cols += sorted(set(scores["name"]) - set(metric_cols))
    human_cols = [c for c in HUMAN_ORDER if c in set(humans["name"])]
    human_cols += sorted(set(humans["name"]) - set(human_cols) - set(metric_cols))
    wide = wide.reindex(columns=metric_cols + human_cols).reset_index()
    wide.columns.name = None
    wide = wide.sort_values(["track", "origin", "model"], ignore_index=True)
    return _ranked(con, dataset, wide)


def _ranked(con, dataset: str, wide: pd.DataFrame) -> pd.DataFrame:
    """Add `rank` (and that order) for tracks whose skill has a ranking rule."""
    skills = dict(con.execute("SELECT track, skill FROM tracks WHERE dataset = ?", [dataset]).fetchall())
    ruled = {t: RANKING_RULES[s] for t, s in skills.items() if s in RANKING_RULES and t in set(wide["track"])}
    if not ruled:
        return wide
    parts = []
    for (track, origin), group in wide.groupby(["track", "origin"], sort=True):
        rule = [(c, asc) for c, asc in ruled.get(track, []) if c in group.columns]
        if rule:
            group = group.sort_values([c for c, _ in rule], ascending=[a for _, a in rule], kind="stable",
                                      na_position="last")
            group = group.assign(rank=range(1, len(group) + 1))
        parts.append(group)
    out = pd.concat(parts, ignore_index=True)
    return out[["track", "model", "origin", "rank", *[c for c in out.columns if c not in ("track", "model", "origin", "rank")]]]


def signatures(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
               flavor: str = "default", tokenizer: str | None = None) -> pd.DataFrame:
    """What each computed column is: signature and how many responses stand behind it."""
    scores = _scores(con, dataset, track, flavor, tokenizer)
    computed = scores[scores["origin"] == "computed"]
    return (computed.groupby(["track", "name", "signature"], as_index=False)
            .agg(models=("model", "nunique"), responses=("n", "sum"))
            .sort_values(["track", "name"], ignore_index=True))
