"""How several annotators' scores of one target become one score: the aggregation rules.

- mean, median: of the annotators' scores;
- majority: the most frequent score; a target without a unique most frequent score is left out;
- pair-filter: the two-annotator rule of the SMP2018-ECDT human evaluation (seed 002): keep a target
  whose scores differ by at most 1 (max - min <= 1) and average them; others are left out.
Every rule is one SQL fragment over the store, so millions of ratings stay there.
"""
from __future__ import annotations

AGGREGATES = ("mean", "median", "majority", "pair-filter")

_EXPR = {"mean": "avg(score)", "median": "median(score)",
         "pair-filter": "CASE WHEN max(score) - min(score) <= 1 THEN avg(score) END"}
KEYS = "target, item_id, dialogue_id, model, dimension"


def check(aggregate: str) -> str:
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregation {aggregate!r}; known: {', '.join(AGGREGATES)}")
    return aggregate


def per_target_cte(aggregate: str, base: str) -> str:
    """`per_target AS (...)`: one score per (target, item, dialogue, model, dimension) from the
    rows of the CTE named `base` (columns KEYS and score)."""
    check(aggregate)
    if aggregate == "majority":
        return f"""
        counted AS (SELECT {KEYS}, score, count(*) AS c FROM {base} GROUP BY ALL),
        top AS (SELECT *, max(c) OVER (PARTITION BY {KEYS}) AS mx FROM counted),
        per_target AS (
            SELECT {KEYS}, arg_max(score, c) AS score FROM top GROUP BY ALL
            HAVING count(*) FILTER (WHERE c = mx) = 1)"""
    return f"""
        per_target AS (
            SELECT {KEYS}, {_EXPR[aggregate]} AS score FROM {base} GROUP BY ALL
            HAVING {_EXPR[aggregate]} IS NOT NULL)"""
