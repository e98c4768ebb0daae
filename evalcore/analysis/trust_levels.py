"""What a dataset offers the trust table: the levels and origins with something to correlate, the human
dimensions, and why there is nothing to correlate (for the command, and worded for the dashboard)."""
from __future__ import annotations

import pandas as pd

from evalcore.metrics.registry import HUMAN_ORDER, ordered
from evalcore.store.queries import require_dataset


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


def nothing_at(con, dataset: str, level: str, origin: str, frame: pd.DataFrame) -> str:
    """Why a dataset has nothing to show at this level and origin, and what does work."""
    why = frame["note"].iloc[0] if not frame.empty else f"no {origin} metric values at {level} level"
    other = [f"--level {lv} --origin {o}" for lv, o in choices(con, dataset) if (lv, o) != (level, origin)]
    hint = f"; try {' or '.join(other)}" if other else "; it needs metric values and human ratings of the same units"
    return f"nothing to correlate in {dataset!r} at {level} level ({origin}): {why}{hint}"


def missing_words(con, dataset: str) -> str:
    """Why a dataset has nothing to correlate at all, worded for the dashboard (missing() is the command's)."""
    rated = con.execute("SELECT count(*) FROM human_ratings WHERE dataset = ?", [dataset]).fetchall()[0][0]
    if not rated:
        return "no human ratings yet: rate its responses in a rating task, or upload a ratings file"
    return "no metric values of the rated units yet: score its responses (the Upload page scores what is missing)"
