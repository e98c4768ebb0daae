"""Leaderboards: one row per track, model and origin; a column per metric and per human dimension."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import rank_ci
from evalcore.analysis.humans import per_target_cte
from evalcore.analysis.ties import snap
from evalcore.core.text import BLANK_PATTERN
from evalcore.metrics import registry
from evalcore.metrics.registry import HUMAN_ORDER, PAPER_ORDER, higher_is_better
from evalcore.scoring import computed_filter
from evalcore.store import registered
from evalcore.store.queries import ANSWERABLE, answerable_items

# Tracks whose skill has an official ranking get a `rank` column: (column, ascending) in order of
# precedence. SMP2018-ECDT (seed 001): task-oriented systems by completion ratio C, then fewer
# turns T, then satisfaction Sa, fluency F, guidance G; intent classifiers by F1.
RANKING_RULES = {
    "task-oriented": [("C", False), ("T", True), ("Sa", False), ("F", False), ("G", False)],
    "intent": [("F1", False)],
}


def _scores(con, dataset: str, track: str | None, flavor: str, tokenizer: str | None) -> pd.DataFrame:
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


def coverage(con, dataset: str, track: str | None = None, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of a track's answerable items each model answered with something: track, model, answered (items with
    a response that is not blank), blank (items answered with nothing but whitespace: core.text.blank, the
    importers' test), items, coverage (answered / items: a model whose responses are all blank covers nothing).
    `items` is answerable_items(con, dataset, track) when the caller has it already."""
    if items is None:   # all in the store: no round trip of every item id (a million at scale)
        frame = con.execute(f"""
            WITH a AS ({ANSWERABLE}), totals AS (SELECT track, count(*) AS items FROM a GROUP BY track)
            SELECT a.track, r.model, count(*) FILTER (regexp_full_match(r.text, ?)) AS blank,
                   count(*) - blank AS answered, any_value(t.items) AS items
            FROM responses r JOIN a USING (item_id) JOIN totals t USING (track)
            WHERE r.dataset = ? GROUP BY a.track, r.model ORDER BY a.track, r.model""",
                            [dataset, track, track, BLANK_PATTERN, dataset]).df()
    else:
        with registered(con, "_evalcore_items", items):
            frame = con.execute("""
                SELECT a.track, r.model, count(*) FILTER (regexp_full_match(r.text, ?)) AS blank,
                       count(*) - blank AS answered
                FROM responses r JOIN _evalcore_items a USING (item_id)
                WHERE r.dataset = ? GROUP BY a.track, r.model""", [BLANK_PATTERN, dataset]).df()
        totals = items.groupby("track").size().rename("items").reset_index()
        frame = frame.merge(totals, on="track", how="left")
    frame["coverage"] = frame["answered"] / frame["items"]
    return frame[["track", "model", "answered", "blank", "items", "coverage"]]


def value_table(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *, flavor: str = "default",
                tokenizer: str | None = None, aggregate: str = "mean") -> pd.DataFrame:
    """The leaderboard's values without coverage or ranks (cheap: no read of the responses): one row per
    (track, model, origin), a column per metric in paper order, then per human dimension."""
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
    return wide


def leaderboard(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
                flavor: str = "default", tokenizer: str | None = None, aggregate: str = "mean",
                rank_by: str | None = None, partial: bool = False, resamples: int = 1000,
                seed: int = 0) -> pd.DataFrame:
    """One row per (track, model, origin): coverage, rank and its bootstrap interval, then a column
    per metric and human dimension. Only complete submissions (coverage 1) are ranked unless
    `partial`; computed and published rows are ranked separately, each among its own origin."""
    wide = value_table(con, dataset, track, flavor=flavor, tokenizer=tokenizer, aggregate=aggregate)
    if wide.empty:
        return pd.DataFrame(columns=["track", "model", "origin", *RANK_COLUMNS])
    # the bootstrap's item order, when there is one to run (fetched once: coverage uses it too)
    items = answerable_items(con, dataset, track) if rank_by is not None else None
    cov = coverage(con, dataset, track, items)[["track", "model", "coverage"]].assign(origin="computed")
    wide = wide.merge(cov, on=["track", "model", "origin"], how="left")
    if rank_by is not None and rank_by not in wide.columns:
        raise ValueError(f"no column {rank_by!r} to rank by in {dataset!r}; columns: "
                         + ", ".join(c for c in wide.columns if c not in ("track", "model", "origin", "coverage")))
    ranked = _ranked(con, dataset, wide, rank_by, items, partial=partial, flavor=flavor, tokenizer=tokenizer,
                     aggregate=aggregate, resamples=resamples, seed=seed)
    front = ["track", "model", "origin", *RANK_COLUMNS]
    return ranked[front + [c for c in ranked.columns if c not in front]]


RANK_COLUMNS = ["coverage", "rank", "rank_ci_low", "rank_ci_high", "rank_by", "rank_ci"]
BOOTSTRAP_THREADS = 2


def _ranked(con, dataset: str, wide: pd.DataFrame, rank_by: str | None, items: pd.DataFrame, *, partial: bool, flavor: str,
            tokenizer: str | None, aggregate: str, resamples: int, seed: int) -> pd.DataFrame:
    """Rank each (track, origin) group: by `rank_by`, or by the skill's official rule when none is given.
    Computed groups also get a bootstrap interval of the rank (rank_ci says how it was made, or why not)."""
    skills = dict(con.execute("SELECT track, skill FROM tracks WHERE dataset = ?", [dataset]).fetchall())
    better = None if rank_by is None else higher_is_better(rank_by, registry.of(con))   # one direction for every track
    parts, bootstraps = [], []   # bootstraps: (group, its ranked rows, track)
    ids_of = {} if items is None else {t: ids.tolist() for t, ids in items.groupby("track", sort=False)["item_id"]}
    for (track, origin), group in wide.groupby(["track", "origin"], sort=True):
        group = group.assign(rank=np.nan, rank_ci_low=np.nan, rank_ci_high=np.nan, rank_by=None, rank_ci=None)
        # coverage is blank where a row stands on no stored responses (published tables, task-oriented
        # session scores): nothing is partial there
        eligible = group["coverage"].fillna(1.0) >= 1.0
        if partial:
            eligible = group["coverage"].fillna(1.0) > 0
        rule = [(c, asc) for c, asc in RANKING_RULES.get(skills.get(track), []) if c in group.columns]
        if rank_by is None and rule:
            # values equal up to float noise tie, so the rule's next column decides between them (ties.snap)
            order = group[eligible].sort_values([c for c, _ in rule], ascending=[a for _, a in rule],
                                                kind="stable", na_position="last",
                                                key=lambda col: pd.Series(snap(col.to_numpy(float)), index=col.index))
            group.loc[order.index, "rank"] = range(1, len(order) + 1)
            group.loc[order.index, "rank_by"] = ", then ".join(c for c, _ in rule)
            group.loc[order.index, "rank_ci"] = "the skill's official ranking rule: no interval"
        elif rank_by is not None:
            pool = group[eligible & group[rank_by].notna()]
            group.loc[pool.index, "rank"] = rank_ci.rank_frame(pool[rank_by], better)
            group.loc[pool.index, "rank_by"] = rank_by
            if origin == "published":
                group.loc[pool.index, "rank_ci"] = "published value: no per-item data to resample"
            elif len(pool):
                bootstraps.append((group, pool, track))
        unranked = group["rank"].isna()
        if rank_by is not None:
            group.loc[unranked & group[rank_by].isna(), "rank_ci"] = f"no {rank_by} value for this row"
        partial_rows = group["coverage"].fillna(1.0) < 1.0
        group.loc[partial_rows & unranked, "rank_ci"] = "partial submission: not ranked (--partial ranks it)"
        # every response empty or whitespace: nothing to rank, even with --partial
        group.loc[(group["coverage"] == 0) & unranked, "rank_ci"] = "no response that is not blank: not ranked"
        parts.append(group)

    def intervals(share: list) -> list:
        """Each track's per-item statistics (a reason where there are none) and intervals, on a cursor of its own."""
        if not share:
            return []
        cur = con.cursor()
        try:
            # the share's stored per-item statistics in a few reads (see item_stats_rows)
            stored = rank_ci.stored_rows(cur, dataset, sorted({t for _, _, t in share}), rank_by,
                                         flavor=flavor, tokenizer=tokenizer)
            stats = [rank_ci.per_item_stats(cur, dataset, track, rank_by, pool["model"].tolist(), ids_of.get(track, []),
                                            flavor=flavor, tokenizer=tokenizer, aggregate=aggregate, stored=stored)
                     for _, pool, track in share]
        finally:
            cur.close()
        ready = [(s, rank_by, better) for s in stats if not isinstance(s, str)]
        cis = iter(rank_ci.bootstrap_tracks(ready, resamples=resamples, seed=seed))
        return [(s, s if isinstance(s, str) else next(cis)) for s in stats]

    # the tracks in two shares, each on a thread from reading its statistics to its bootstrap: reads and matrix
    # products let go of the GIL, so a page ranking a model on every track uses both cores, one share reading
    # while the other resamples; within a share, tracks of as many items share each resample's draws (the
    # same seed on every track: the same intervals either way)
    every = [None] * len(bootstraps)   # each track's (statistics or reason, intervals), in bootstraps' order
    with ThreadPoolExecutor(max_workers=BOOTSTRAP_THREADS) as pool_of_threads:
        for k, share in enumerate(pool_of_threads.map(intervals, [bootstraps[k::BOOTSTRAP_THREADS]
                                                                  for k in range(BOOTSTRAP_THREADS)])):
            every[k::BOOTSTRAP_THREADS] = share
    for (group, pool, _), (stats, cis) in zip(bootstraps, every):
        if isinstance(stats, str):
            group.loc[pool.index, "rank_ci"] = stats
            continue
        models = pool["model"].tolist()
        group.loc[pool.index, ["rank_ci_low", "rank_ci_high"]] = [cis.get(m, (np.nan, np.nan)) for m in models]
        group.loc[pool.index, "rank_ci"] = [rank_ci.describe(resamples, seed) if m in cis
                                            else f"no cached per-response {rank_by} statistics" for m in models]
    parts = [g.sort_values(["rank", "model"], na_position="last", kind="stable") for g in parts]
    out = pd.concat(parts, ignore_index=True)
    for col in ("rank", "rank_ci_low", "rank_ci_high"):
        out[col] = out[col].astype("Int64")
    return out


def signatures(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
               flavor: str = "default", tokenizer: str | None = None) -> pd.DataFrame:
    """What each computed column is: signature and how many responses stand behind it."""
    scores = _scores(con, dataset, track, flavor, tokenizer)
    computed = scores[scores["origin"] == "computed"]
    return (computed.groupby(["track", "name", "signature"], as_index=False)
            .agg(models=("model", "nunique"), responses=("n", "sum"))
            .sort_values(["track", "name"], ignore_index=True))


OFFICIAL = "official rule"  # the rank-by choice of tracks whose skill has an official ranking (RANKING_RULES)
N_COLUMN = "responses"      # how many responses stand behind a computed row


def value_columns(frame: pd.DataFrame) -> list[str]:
    """A leaderboard's metric and human-dimension columns (what it can be ranked by)."""
    front = ["track", "model", "origin", *RANK_COLUMNS, N_COLUMN]
    return [c for c in frame.columns if c not in front]


def rank_choices(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str],
                 columns: list[str]) -> tuple[list[str], str | None]:
    """(options, default) of ranking these tracks: the official rule first where their skill has one, then
    the value columns; default the official rule, else F1, else the first column."""
    frame = con.execute("SELECT track, skill, corpus FROM tracks WHERE dataset = ? ORDER BY track", [dataset]).df()
    skills = set(frame.set_index("track").loc[tracks, "skill"])
    options = ([OFFICIAL] if skills & set(RANKING_RULES) else []) + list(columns)
    default = OFFICIAL if OFFICIAL in options else "F1" if "F1" in columns else (columns[0] if columns else None)
    return options, default


def default_ranked(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, **opts) -> pd.DataFrame:
    """The leaderboard with each track ranked by its default (rank_choices, as the dashboard's Leaderboard page
    ranks it when nobody chooses): the skill's official rule where it has one, else F1, else the track's first
    value column. `opts`: leaderboard()'s, rank_by excepted."""
    unranked = leaderboard(con, dataset, track, **{**opts, "resamples": 0})
    tracks = [track] if track else list(dict.fromkeys(unranked["track"]))
    parts = []
    for tr in tracks:
        columns = value_columns(leaderboard(con, dataset, tr, **{**opts, "resamples": 0}))
        default = rank_choices(con, dataset, [tr], columns)[1]
        by = None if default in (None, OFFICIAL) else default
        parts.append(leaderboard(con, dataset, tr, rank_by=by, **opts))
    if not parts:
        return unranked
    board = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)
    return board[[c for c in unranked.columns if c in board.columns] +
                 [c for c in board.columns if c not in unranked.columns]]
