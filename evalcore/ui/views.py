"""DataFrames for the dashboard's pages, shaped for display. Pages call these and hold no SQL and no metric
math themselves; the statistics come from the analysis layer, and the few reads here (SQL, parameterised)
are what only a page asks (a track's models, an item's detail, the choices a control offers)."""
from __future__ import annotations

import json
import math
import re
from urllib.parse import urlencode

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import judge_audit
from evalcore.analysis.agreement import agreement
from evalcore.analysis.agreement import annotator_bias as annotator_bias_of
from evalcore.analysis.correlate import correlations
from evalcore.analysis.ensemble import ensemble
from evalcore.analysis.leaderboard import RANK_COLUMNS, RANKING_RULES, leaderboard, value_table
from evalcore.analysis.leaderboard import signatures as signatures_of
from evalcore.analysis.trust import POOLED, Opening, choices, dimensions, opening, report
from evalcore.ingest.template import render, template
from evalcore.metrics import registry
from evalcore.metrics.base import Metric
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.registry import HUMAN_ORDER, METRICS, get_flavor, higher_is_better, pick_tokenizer
from evalcore.scoring import load_track, response_scores
from evalcore.store import queries
from evalcore.store.history import listing
from evalcore.ui.share import to_query

SKILL_PREFIX = "skill:"
N_COLUMN = "responses"  # how many responses stand behind a computed row (the dashboard shows it last)
FRONT = ["track", "model", "origin", *RANK_COLUMNS]
OFFICIAL = "official rule"  # rank-by choice of tracks whose skill has an official ranking


# Views whose first argument is a dataset and which read only that dataset's rows (and what no write
# confined to one dataset changes: the metric registry, signatures' descriptions): the dashboard caches
# them until that dataset changes (store.stamp with the dataset), not until anything does. The text-keyed
# value cache is shared: a value another dataset's scoring adds for identical texts shows here at this
# dataset's next change. Every other view is cached until any change.
DATASET_SCOPED = frozenset({
    "tracks", "track_options", "tracks_of", "board", "board_columns", "rank_choices", "across_choices",
    "models_ranked", "model_ranks", "ranked_everywhere", "signatures", "rated_dimensions", "across_tracks",
    "correlation_view", "across_correlations", "has_published_correlations", "models_of", "template_csv", "track_models",
    "dimensions_of", "response_table", "item_detail", "compare", "agreement_table", "annotator_bias",
    "score_distribution", "ensemble_view", "trust_view", "trust_matrix", "trust_dimensions", "trust_opening",
    "submissions",
    # the judge audit: any write to another dataset (each commit of a scoring job there) emptied it, and the
    # next judge page ran its bootstraps again
    "judge_audit_part", "judge_headlines", "human_ceiling", "nothing_to_audit",
    # one dataset's part of a view over every dataset (PER_DATASET)
    "trust_choice_part", "multi_rated_part", "rated_response_part", "judged_part", "summary_part", "model_part",
})
# Views of what changes only with writes not confined to one dataset (the store's registry of imported metrics:
# its writes are marked global), and views of the catalog (the datasets' and tracks' names): cached through
# imports, scores and ratings of tracks that exist (store.stamp's scopes). Without these, every commit of a
# scoring job emptied them in every page server, and every page's next run waited for the store.
GLOBAL_SCOPED = frozenset({"metrics_of"})
CATALOG_SCOPED = frozenset({"datasets", "track_count", "dataset_languages"})


def value_columns(frame: pd.DataFrame) -> list[str]:
    """A leaderboard's metric and human-dimension columns."""
    return [c for c in frame.columns if c not in FRONT and c not in (N_COLUMN, "rank 95% CI", "note")]


def summary(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per track of every dataset (queries.summary), from one part per dataset."""
    return merge_frames({d: summary_part(con, d) for d in datasets(con)})


def summary_part(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return queries.summary(con, dataset)


def merge_frames(parts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The parts one under the other, in dataset order (each part in its own order)."""
    frames = [parts[d] for d in sorted(parts)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def dataset_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return queries.datasets(con)


def model_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every model with where it has responses or scores (queries.models), from one part per dataset."""
    return merge_models({d: model_part(con, d) for d in datasets(con)})


def model_part(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return queries.models(con, dataset)


def merge_models(parts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per model, its tracks of every dataset ('dataset:track', in that string's order) and its responses summed."""
    frames = [f for f in parts.values() if len(f)]
    if not frames:
        return next(iter(parts.values()), pd.DataFrame()).iloc[0:0]
    rows = pd.concat(frames, ignore_index=True)
    out = rows.groupby("model", sort=True).agg(
        description=("description", "first"), added_at=("added_at", "first"), added_by=("added_by", "first"),
        tracks=("tracks", lambda ts: ", ".join(sorted(t for part in ts for t in part.split(", ")))),
        responses=("responses", "sum")).reset_index()
    return out.astype({"responses": rows["responses"].dtype})


def dataset_languages(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return queries.dataset_languages(con)


def datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY dataset").fetchall()]


def tracks(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return con.execute("SELECT track, skill, corpus FROM tracks WHERE dataset = ? ORDER BY track", [dataset]).df()


def track_options(con: duckdb.DuckDBPyConnection, dataset: str, *, skills: bool = True) -> list[str]:
    """Every track, then 'skill:<name>' for each skill that has two or more tracks."""
    frame = tracks(con, dataset)
    options = frame["track"].tolist()
    if skills:
        counts = frame["skill"].dropna().value_counts()
        options += [SKILL_PREFIX + s for s in sorted(counts[counts >= 2].index)]
    return options


def tracks_of(con: duckdb.DuckDBPyConnection, dataset: str, choice: str) -> list[str]:
    frame = tracks(con, dataset)
    if choice.startswith(SKILL_PREFIX):
        return frame.loc[frame["skill"] == choice[len(SKILL_PREFIX):], "track"].tolist()
    return [choice] if choice in set(frame["track"]) else []


def metrics_of(con: duckdb.DuckDBPyConnection) -> dict[str, Metric]:
    """The store's metrics by name: the built-in ones and its imported (external) ones (registry.of)."""
    return registry.of(con)


def unavailable_here(name: str, known: dict[str, Metric] | None = None) -> str | None:
    """Why a registered metric cannot run on this machine (a model, a Java runtime missing), else None."""
    info = (METRICS if known is None else known).get(name)
    return info.availability(NeuralOptions()) if info is not None else None


# How a dashboard user gets values computed: the Upload page's button (the CLI's `evalcore score` is for
# a terminal; the page's words here, as the Upload page's own messages).
def score_hint(options: str = "") -> str:
    return f"Upload page: 'Score what is missing on this track', or `evalcore score{options}` in a terminal"


def missing_metrics(columns: list[str], known: dict[str, Metric] | None = None) -> pd.DataFrame:
    """Metrics of the registry with no column here: unavailable (with the reason) or not scored yet."""
    rows = []
    for name in METRICS if known is None else known:
        if name in columns:
            continue
        reason = unavailable_here(name, known)
        rows.append({"metric": name, "status": "unavailable" if reason else "not scored",
                     "why": reason or f"not scored yet ({score_hint(' --metrics ' + name)})"})
    return pd.DataFrame(rows, columns=["metric", "status", "why"])


def describe(name: str, known: dict[str, Metric] | None = None) -> str:
    info = (METRICS if known is None else known).get(name)
    if info:
        return info.description
    if name in HUMAN_ORDER:
        return "human score (mean)"
    return "published value (see the dataset's source)"


def board(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, flavor: str = "default",
          rank_by: str | None = None, partial: bool = False) -> pd.DataFrame:
    """Leaderboard of one track or of every track of a skill, ranked by `rank_by` (None: the skill's
    official rule where there is one)."""
    wanted = tracks_of(con, dataset, choice)
    if not wanted:
        return pd.DataFrame(columns=FRONT)
    track = wanted[0] if len(wanted) == 1 else None
    frame = leaderboard(con, dataset, track, flavor=flavor, rank_by=rank_by, partial=partial)
    frame = frame[frame["track"].isin(wanted)].reset_index(drop=True)
    counts = con.execute("""
        SELECT i.track, r.model, 'computed' AS origin, count(*) AS n FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = ? AND list_contains(?, i.track) GROUP BY ALL""", [dataset, wanted]).df()
    frame = frame.merge(counts, on=["track", "model", "origin"], how="left").rename(columns={"n": N_COLUMN})
    # the page's words for the CLI's flag
    frame["rank_ci"] = frame["rank_ci"].str.replace("(--partial ranks it)", "('Show partial submissions' ranks it)",
                                                    regex=False)
    return frame


def board_columns(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, flavor: str = "default") -> list[str]:
    """Columns a leaderboard of this choice can be ranked by (cheap: no ranking)."""
    return value_columns(board(con, dataset, choice, flavor))


def rank_choices(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, columns: list[str]) -> tuple[list[str], str | None]:
    """(options, default) of the rank-by box: the official rule first where the skill has one, then
    the value columns; default the official rule, else F1, else the first column."""
    skills = set(tracks(con, dataset).set_index("track").loc[tracks_of(con, dataset, choice), "skill"])
    options = ([OFFICIAL] if skills & set(RANKING_RULES) else []) + list(columns)
    default = OFFICIAL if OFFICIAL in options else "F1" if "F1" in columns else (columns[0] if columns else None)
    return options, default


def across_choices(con: duckdb.DuckDBPyConnection, dataset: str, flavor: str = "default") -> tuple[list[str], str | None]:
    """(columns with computed values, default) for ranking a model across skills: the default is the
    column with values on the most tracks (paper order breaks ties), since references, and with them
    the reference-based metrics, exist only on some tracks."""
    # the values alone: the whole leaderboard's coverage read every response (1.8 s at 10 million)
    frame = value_table(con, dataset, None, flavor=flavor)
    frame = frame[frame["origin"] == "computed"]
    counts = {c: frame.dropna(subset=[c])["track"].nunique() for c in value_columns(frame)}
    options = [c for c in counts if counts[c]]
    return options, (max(options, key=lambda c: counts[c]) if options else None)


def percent(v) -> str:
    """A share as the page shows it: one decimal, two below 1% (a 10-item submission is 0.25%)."""
    return "" if pd.isna(v) else f"{v:.2%}" if v < 0.01 else f"{v:.1%}"


def rank_interval(frame: pd.DataFrame) -> pd.Series:
    """'1–2' per row from rank_ci_low/high; blank where there is none."""
    low, high = frame["rank_ci_low"], frame["rank_ci_high"]
    return pd.Series([("" if pd.isna(a) or pd.isna(b) else str(int(a)) if a == b else f"{int(a)}–{int(b)}")
                      for a, b in zip(low, high)], index=frame.index, dtype=object)


def board_table(frame: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The leaderboard as the page shows it: rank and its interval first, a note for rows without a
    rank or ranked while partial."""
    out = frame.reset_index(drop=True)
    note = out["rank_ci"].where(out["rank"].isna(), "").fillna("")
    part = out["coverage"].notna() & (out["coverage"] < 1) & out["rank"].notna()
    note = note.where(~part, "partial submission")
    out = out.assign(**{"rank 95% CI": rank_interval(out), "note": note})
    return out[["track", "rank", "rank 95% CI", "model", "coverage", *metrics, N_COLUMN, "note"]]


def models_ranked(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """Models with responses in the dataset, newest first (a submitter looks for the one just uploaded)."""
    # the dataset's models first, then their rows of `models` (one each): joined per response, 10 million
    # responses took 1.7 s
    return [m for (m,) in con.execute("""
        SELECT d.model FROM (SELECT DISTINCT model FROM responses WHERE dataset = ?) d LEFT JOIN models m USING (model)
        ORDER BY m.added_at DESC NULLS LAST, d.model""", [dataset]).fetchall()]


def blank_reasons(frame: pd.DataFrame, columns: list[str], dataset: str,
                  known: dict[str, Metric] | None = None) -> pd.DataFrame:
    """Why cells are blank: per column, the models without a value and the reason (not scored, with the
    command that scores it; unavailable here, with the reason; not in a published table)."""
    rows = []
    for col in columns:
        empty = frame[frame[col].isna()] if col in frame.columns else frame.iloc[0:0]
        for origin, group in empty.groupby("origin", sort=True):
            if origin == "published":
                why = "not in the source's published table"
            elif col not in (METRICS if known is None else known):
                why = "no rating of these models on this dimension"
            else:
                reason = unavailable_here(col, known)
                why = (f"unavailable here: {reason}" if reason else
                       f"not scored yet ({score_hint(' --metrics ' + col)})")
            rows.append({"column": col, "origin": origin, "models": ", ".join(sorted(set(group["model"]))),
                         "why blank": why})
    return pd.DataFrame(rows, columns=["column", "origin", "models", "why blank"])


def ranked_everywhere(con: duckdb.DuckDBPyConnection, dataset: str, rank_by: str, flavor: str = "default",
                      partial: bool = False) -> pd.DataFrame | None:
    """Every track's computed rows ranked by `rank_by` (OFFICIAL: each skill's rule), with their bootstrap
    intervals: what model_ranks picks one model's rows from, the same for every model (a page keeps it, so
    choosing another model does not resample every track again: 4.8 s at 10M). None: nothing to rank by."""
    try:
        frame = leaderboard(con, dataset, None, flavor=flavor, rank_by=None if rank_by == OFFICIAL else rank_by,
                            partial=partial)
    except ValueError:
        return None
    return frame[frame["origin"] == "computed"].reset_index(drop=True)


def model_ranks(con: duckdb.DuckDBPyConnection, dataset: str, model: str, rank_by: str, flavor: str = "default",
                partial: bool = False, ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """Where one model stands on every track of a dataset (computed values): track, skill, rank,
    rank_ci_low, rank_ci_high, ranked (models ranked there), value, coverage, note. `ranked`: ranked_everywhere
    of the same choice, when the caller has it."""
    columns = ["track", "skill", "rank", "rank_ci_low", "rank_ci_high", "ranked", "value", "coverage", "note"]
    by = None if rank_by == OFFICIAL else rank_by
    frame = ranked_everywhere(con, dataset, rank_by, flavor, partial) if ranked is None else ranked
    if frame is None:
        return pd.DataFrame(columns=columns)
    skills = tracks(con, dataset).set_index("track")["skill"]
    counts = frame.groupby("track")["rank"].count()   # models ranked per track

    answered = queries.answered_tracks(con, dataset, model)
    rows = []
    for track in sorted(skills.index, key=lambda t: (str(skills[t]), t)):
        mine = frame[(frame["track"] == track) & (frame["model"] == model)]
        if mine.empty:
            rows.append({"track": track, "skill": skills[track], "ranked": int(counts.get(track, 0)),
                         "note": (f"not scored here yet ({score_hint()})"
                                  if track in answered else "no response of this model here")})
            continue
        row = mine.iloc[0]
        rows.append({"track": track, "skill": skills[track], "rank": row["rank"], "rank_ci_low": row["rank_ci_low"],
                     "rank_ci_high": row["rank_ci_high"], "ranked": int(counts.get(track, 0)),
                     "value": row[by] if by in frame.columns else np.nan, "coverage": row["coverage"],
                     "note": row["rank_ci"] if pd.isna(row["rank"]) else ""})
    out = pd.DataFrame(rows, columns=columns)
    for col in ("rank", "rank_ci_low", "rank_ci_high"):
        out[col] = out[col].astype("Int64")
    return out


def best_rows(frame: pd.DataFrame, known: dict[str, Metric] | None = None) -> dict[str, set[int]]:
    """Per value column, the row labels holding the best value within each track and origin (ties: all of them)."""
    cols = value_columns(frame)
    if not cols or frame.empty:
        return {c: set() for c in cols}
    keys = [k for k in ("track", "origin") if k in frame.columns]
    values = frame[cols].apply(pd.to_numeric, errors="coerce").astype(float)
    # one pass over the groups for every column (a groupby per column cost a leaderboard run 30 ms)
    groups = values.groupby([frame[k] for k in keys] if keys else np.zeros(len(frame)), dropna=False)
    top, low = groups.transform("max"), groups.transform("min")
    best = {}
    for col in cols:
        target = top[col] if higher_is_better(col, known) else low[col]
        best[col] = set(frame.index[(values[col] == target).to_numpy()])
    return best


def to_latex(frame: pd.DataFrame, digits: int = 2, known: dict[str, Metric] | None = None,
             best: dict[str, set[int]] | None = None) -> str:
    """A LaTeX tabular of a leaderboard with the best value of each column in bold (per track). `best`:
    best_rows of the same frame, when the caller has it."""
    best = best_rows(frame, known) if best is None else best

    def esc(text: str) -> str:
        for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                     ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
            text = text.replace(a, b)
        return text

    values = set(value_columns(frame))
    cols = list(frame.columns)
    lines = [r"\begin{tabular}{" + "".join("r" if c in values else "l" for c in cols) + "}", r"\toprule",
             " & ".join(esc(str(c)) for c in cols) + r" \\", r"\midrule"]
    for i, row in frame.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                cells.append("--")
            elif c not in values:
                cells.append(f"{int(v)}" if c == N_COLUMN else esc(str(v)))
            else:
                text = f"{float(v):.{digits}f}"
                cells.append(rf"\textbf{{{text}}}" if i in best[c] else text)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def signatures(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, flavor: str = "default") -> pd.DataFrame:
    frame = signatures_of(con, dataset, None, flavor=flavor)
    return frame[frame["track"].isin(tracks_of(con, dataset, choice))].reset_index(drop=True)


def rated_dimensions(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The human dimensions a dataset has ratings in."""
    return sorted(d for (d,) in con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ?",
                                            [dataset]).fetchall())


def track_count(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT count(*) FROM tracks").fetchall()[0][0]


def split_columns(dims: list[str], frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """A leaderboard's value columns as (metrics, human dimensions `dims`)."""
    dims = set(dims)
    values = value_columns(frame)
    return [c for c in values if c not in dims], [c for c in values if c in dims]


def across_tracks(con: duckdb.DuckDBPyConnection, dataset: str, metric: str, flavor: str = "default") -> pd.DataFrame:
    """A metric for every model in every track of the dataset: track, skill, model, origin, value."""
    frame = leaderboard(con, dataset, None, flavor=flavor)
    if metric not in frame.columns:
        return pd.DataFrame(columns=["track", "skill", "model", "origin", "value"])
    skills = tracks(con, dataset).set_index("track")["skill"]
    out = frame[["track", "model", "origin", metric]].rename(columns={metric: "value"}).dropna(subset=["value"])
    out.insert(1, "skill", out["track"].map(skills))
    return out.reset_index(drop=True)


def correlation_view(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, *, level: str, method: str,
                     origin: str, flavor: str = "default", bootstrap: int = 0, seed: int | None = None) -> pd.DataFrame:
    frames = [correlations(con, dataset, t, level=level, origin=origin, methods=[method], flavor=flavor,
                           bootstrap=bootstrap, seed=seed, compare_published=True)
              for t in tracks_of(con, dataset, choice)]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def across_correlations(con: duckdb.DuckDBPyConnection, dataset: str, metric: str, *, level: str, method: str,
                        origin: str, flavor: str = "default") -> pd.DataFrame:
    """One metric's correlation with every dimension in every track of the dataset."""
    frame = correlations(con, dataset, None, level=level, origin=origin, methods=[method], flavor=flavor)
    return frame[frame["metric"] == metric].reset_index(drop=True) if not frame.empty else frame


def has_published_correlations(con: duckdb.DuckDBPyConnection, dataset: str) -> bool:
    return con.execute("SELECT count(*) FROM published_correlations WHERE dataset = ?", [dataset]).fetchall()[0][0] > 0


# ---------------------------------------------------------------- drill-down
def models_of(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[str]:
    rows = con.execute("""
        SELECT DISTINCT r.model FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = ? AND i.track = ? ORDER BY 1""", [dataset, track]).fetchall()
    return [m for (m,) in rows]


def template_csv(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None) -> bytes:
    """The responses file to fill in for a track (or every track), as CSV bytes."""
    return render(template(con, dataset, track), "csv")


def track_models(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> pd.DataFrame:
    """What a track already holds, per model: responses, share of the track's items answered, ratings."""
    return con.execute("""
        WITH n AS (SELECT count(*) AS items FROM items WHERE dataset = ? AND track = ?)
        SELECT r.model, count(*) AS responses, round(count(*) / any_value(n.items), 4) AS coverage,
               (SELECT count(*) FROM human_ratings h WHERE h.dataset = ? AND h.track = ? AND h.model = r.model)
                   AS human_ratings
        FROM responses r JOIN items i USING (dataset, item_id), n
        WHERE r.dataset = ? AND i.track = ? GROUP BY r.model ORDER BY r.model""",
                       [dataset, track, dataset, track, dataset, track]).df()


def dimensions_of(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[str]:
    rows = con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ? AND track = ? "
                       "AND target = 'response'", [dataset, track]).fetchall()
    names = [d for (d,) in rows]
    return [d for d in HUMAN_ORDER if d in names] + sorted(d for d in names if d not in HUMAN_ORDER)


def rated_response_part(con: duckdb.DuckDBPyConnection, dataset: str) -> list[tuple[str, int]]:
    """(track, ratings) of the dataset's tracks whose responses carry human ratings."""
    return [(t, int(n)) for t, n in con.execute("""
        SELECT h.track, count(*) FROM human_ratings h
        JOIN responses r ON r.dataset = h.dataset AND r.item_id = h.item_id AND r.model = h.model
        WHERE h.dataset = ? AND h.target = 'response' GROUP BY ALL
    """, [dataset]).fetchall()]


def merge_rated_response(parts: dict[str, list[tuple[str, int]]]) -> list[tuple[str, str]]:
    rows = [(d, t, n) for d, part in parts.items() for t, n in part]
    return [(d, t) for d, t, _ in sorted(rows, key=lambda r: (-r[2], r[0], r[1]))]


def rated_response_tracks(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(dataset, track) pairs whose responses carry human ratings, most rated first: where a
    metric-human disagreement sort means something."""
    return merge_rated_response({d: rated_response_part(con, d) for d in datasets(con)})


def range_grid(lo: float, hi: float, steps: int = 100) -> tuple[float, float, float, int]:
    """A slider grid over [lo, hi]: (low, high, step, decimals) with a round step near (hi - lo) / steps
    (1, 2 or 5 times a power of ten) and bounds on that grid, so every position is an exact short
    decimal that survives the round trip through a URL."""
    span = max(hi - lo, 1e-12)
    power = 10 ** math.floor(math.log10(span / steps))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= span / steps)
    decimals = max(0, -math.floor(math.log10(step)))
    low = round(math.floor(lo / step + 1e-9) * step, decimals)
    high = round(math.ceil(hi / step - 1e-9) * step, decimals)
    return low, high, round(step, decimals), decimals


def response_table(con: duckdb.DuckDBPyConnection, dataset: str, track: str, *, flavor: str = "default",
                   models: list[str] | None = None, rated_only: bool = False,
                   items: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One row per response (of `models` and `items` only, when given): item_id, model, text, a column per
    computed metric and per human dimension (mean over annotators). `rated_only`: only the items with a
    response rated by a person, the drill-down's first view (on the 10M store, 1,000 of a track's 50,000
    items: the whole track's table took 15.8 s to appear)."""
    chosen = None if items is None else list(items)
    if rated_only:
        rated = [i for (i,) in con.execute("SELECT DISTINCT item_id FROM human_ratings WHERE dataset = ? AND track = ? "
                                            "AND target = 'response' ORDER BY 1", [dataset, track]).fetchall()]
        chosen = rated if chosen is None else sorted(set(chosen) & set(rated))
    track_data = load_track(con, dataset, track, models=models, items=chosen, bare=True)
    values = response_scores(con, dataset, track, flavor=flavor, data=track_data, items=chosen)
    data = track_data[["item_id", "model", "text"]].reset_index(drop=True)
    if not values.empty:
        # one value per response and metric: placed by position, not pivoted (pivot_table's group-by took
        # 3.2 of 12.5 s for a 500,000-response track)
        item_ix, model_ix = pd.Index(pd.unique(data["item_id"])), pd.Index(pd.unique(data["model"]))
        width = len(model_ix)   # a response's code: its item's number * width + its model's number
        rows = pd.Index(_positions(data["item_id"], item_ix) * width + _positions(data["model"], model_ix))
        at_item, at_model = _positions(values["item_id"], item_ix), _positions(values["model"], model_ix)
        at = np.where((at_item >= 0) & (at_model >= 0), rows.get_indexer(at_item * width + at_model), -1)
        # metric names as codes: comparing 5.5 million names per metric took 0.9 s of 8.1 at 550,000 responses
        metric, names = pd.factorize(values["metric"])
        value = values["value"].to_numpy(dtype=float)
        columns = {}
        for code in np.argsort(np.asarray(names, dtype=object)):
            name = names[code]
            mine = (metric == code) & (at >= 0)
            col = np.full(len(data), np.nan)
            col[at[mine]] = value[mine]
            columns[name] = col
        data = pd.concat([data, pd.DataFrame(columns, index=data.index)], axis=1)
    humans = con.execute("""
        SELECT item_id, model, dimension, avg(score) AS score FROM human_ratings
        WHERE dataset = ? AND track = ? AND target = 'response' GROUP BY ALL""", [dataset, track]).df()
    if not humans.empty:
        wide = humans.pivot_table(index=["item_id", "model"], columns="dimension", values="score").reset_index()
        wide.columns.name = None
        data = data.merge(wide, on=["item_id", "model"], how="left")
    return data


def _positions(column: pd.Series, uniques: pd.Index) -> np.ndarray:
    """Each value's position in `uniques` (-1 where absent), hashed by Arrow on its own strings: Index.get_indexer
    made a Python string of each first (0.85 s against 0.10 s for the 5.5 million values of a 550,000-response
    track)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    at = pc.index_in(pa.array(column), value_set=pa.array(uniques))
    return pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def disagreement(frame: pd.DataFrame, metric: str, dimension: str) -> pd.Series:
    """|percentile rank of the metric - percentile rank of the human score| (NaN when either is missing)."""
    if metric not in frame or dimension not in frame:
        return pd.Series(np.nan, index=frame.index)
    both = frame[[metric, dimension]].dropna()
    gap = (both[metric].rank(pct=True) - both[dimension].rank(pct=True)).abs()
    return gap.reindex(frame.index)


def item_detail(con: duckdb.DuckDBPyConnection, dataset: str, item_id: str) -> dict | None:
    row = con.execute("SELECT track, dialogue_id, context, grounding, skill FROM items WHERE dataset = ? AND item_id = ?",
                      [dataset, item_id]).fetchall()
    if not row:
        return None
    track, dialogue, context, grounding, skill = row[0]
    refs = [t for (t,) in con.execute("SELECT text FROM item_references WHERE dataset = ? AND item_id = ? "
                                      "ORDER BY ref_index", [dataset, item_id]).fetchall()]
    return {"track": track, "dialogue_id": dialogue, "skill": skill, "context": json.loads(context),
            "grounding": json.loads(grounding) if grounding else {}, "references": refs}


def overlap_segments(text: str, references: list[str], language: str | None = "zh") -> list[tuple[str, bool]]:
    """The response cut into (segment, shared with a reference?) pieces, by the default flavor's tokens.

    Whitespace between tokens is kept in the unshared pieces so the text reads as written."""
    tok = pick_tokenizer(get_flavor("default"), language)
    vocab = {t for r in references for t in tok(r)}
    out: list[tuple[str, bool]] = []
    at = 0
    for token in tok(text):
        start = text.find(token, at)
        if start < 0:
            continue
        if start > at:
            out.append((text[at:start], False))
        out.append((token, token in vocab))
        at = start + len(token)
    if at < len(text):
        out.append((text[at:], False))
    merged: list[tuple[str, bool]] = []
    for seg, shared in out:
        if merged and merged[-1][1] == shared:
            merged[-1] = (merged[-1][0] + seg, shared)
        else:
            merged.append((seg, shared))
    return merged


# ---------------------------------------------------------------- compare
def compare(con: duckdb.DuckDBPyConnection, dataset: str, track: str, a: str, b: str, *, flavor: str = "default",
            bootstrap: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(metric deltas with paired-bootstrap CIs, human wins/ties/losses, per-item table) for models a and b
    on the items both answered. Deltas are of per-response means (b minus a)."""
    table = response_table(con, dataset, track, flavor=flavor, models=[a, b])
    left = table[table["model"] == a].set_index("item_id")
    right = table[table["model"] == b].set_index("item_id")
    common = left.index.intersection(right.index)
    left, right = left.loc[common], right.loc[common]
    numeric = [c for c in table.columns if c not in ("item_id", "model", "text")]
    dims = set(dimensions_of(con, dataset, track))
    rng = np.random.default_rng(seed)
    rows, human_rows = [], []
    for col in numeric:
        pair = pd.concat([left[col], right[col]], axis=1, keys=["a", "b"]).dropna()
        if pair.empty:
            continue
        diff = (pair["b"] - pair["a"]).to_numpy()
        if col in dims:
            human_rows.append({"dimension": col, "n": len(diff), "b wins": int((diff > 0).sum()),
                               "ties": int((diff == 0).sum()), "a wins": int((diff < 0).sum())})
            continue
        means = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(bootstrap)] if len(diff) > 1 else []
        low, high = (np.quantile(means, [0.025, 0.975]) if means else (np.nan, np.nan))
        rows.append({"metric": col, "n": len(diff), f"mean {a}": pair["a"].mean(), f"mean {b}": pair["b"].mean(),
                     "delta": diff.mean(), "ci_low": low, "ci_high": high,
                     "ci": f"paired bootstrap 95% B={bootstrap} seed={seed}"})
    contexts = dict(con.execute("SELECT item_id, context FROM items WHERE dataset = ? AND track = ?",
                                [dataset, track]).fetchall())
    items = pd.DataFrame({"item_id": common,
                          "context": [context_snippet(json.loads(contexts.get(i) or "[]")) for i in common],
                          f"{a}": left["text"].to_numpy(), f"{b}": right["text"].to_numpy()})
    for col in numeric:
        items[f"{col} ({b} - {a})"] = (right[col] - left[col]).to_numpy()
    return pd.DataFrame(rows), pd.DataFrame(human_rows), items


def context_snippet(turns: list[str], last: int = 2, width: int = 80) -> str:
    """The last turns of a context on one line, each cut to `width` characters, '… / ' marking turns left out."""
    flat = [" ".join(str(t).split()) for t in turns[-last:]]  # line breaks and runs of spaces as one space
    cut = [t if len(t) <= width else t[: width - 1].rstrip() + "…" for t in flat]
    return ("… / " if len(turns) > last else "") + " / ".join(cut)


def drilldown_link(dataset: str, track: str, item: str, flavor: str = "default") -> str:
    """A relative link (from any page of the app) to the drill-down opened on one item: the same
    query the drill-down page reads and writes (share.to_query), URL-encoded."""

    return "drilldown?" + urlencode(to_query({"dataset": dataset, "track": track, "flavor": flavor, "item": item}))


NOISE = 1e-12  # floating-point residue (e.g. 5.9e-17 for two equal scores), shown and exported as 0


def sensible_format(values) -> str:
    """A printf-style format for numbers of this magnitude (largest finite |x|): '%.1f' above 100, '%.2f'
    above 1, else '%.4f', so values within -1..1 (scores, correlations and their differences) keep 4 decimals."""
    flat = pd.to_numeric(pd.Series(np.ravel(np.asarray(values, dtype=object))), errors="coerce").astype(float).abs()
    top = flat[np.isfinite(flat)].max()  # NaN when there is no finite number: the finest format
    return "%.1f" if top > 100 else "%.2f" if top > 1 else "%.4f"


def column_formats(frame: pd.DataFrame, columns: list[str]) -> dict[str, str]:
    """sensible_format of each column, in one pass over the frame."""
    if not columns:
        return {}
    flat = frame[columns].apply(pd.to_numeric, errors="coerce").astype(float).abs()
    top = flat.where(np.isfinite(flat)).max()
    return {c: "%.1f" if top[c] > 100 else "%.2f" if top[c] > 1 else "%.4f" for c in columns}


def clean_noise(frame: pd.DataFrame, tol: float = NOISE) -> pd.DataFrame:
    """A copy with every float whose magnitude is below `tol` (floating-point noise) set to exactly 0."""
    out = frame.copy()
    for col in out.select_dtypes("floating").columns:
        out[col] = out[col].mask(out[col].abs() < tol, 0.0)
    return out


def round_to_format(frame: pd.DataFrame, formats: dict[str, str]) -> pd.DataFrame:
    """A copy with each column of `formats` ('%.Nf') rounded to its N decimals, negative zero made 0,
    so a value shown as zero is 0 (never '-0.0000')."""
    out = frame.copy()
    for col, spec in formats.items():
        digits = re.fullmatch(r"%\.(\d+)f", spec)
        if col in out and digits and pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].round(int(digits.group(1))) + 0.0
    return out


# ---------------------------------------------------------------- human evaluation page
def agreement_table(con: duckdb.DuckDBPyConnection, dataset: str, track: str, bootstrap: int = 1000) -> pd.DataFrame:
    return agreement(con, dataset, track, bootstrap=bootstrap, seed=0)


def judged_part(con: duckdb.DuckDBPyConnection, dataset: str) -> bool:
    """Did an LLM judge score the dataset (its system scores), or does it hold imported pairwise judgments?"""
    judges = judge_audit.judge_names(con)
    return bool(con.execute("""
        SELECT EXISTS (SELECT 1 FROM system_scores WHERE dataset = ? AND origin = 'computed' AND list_contains(?, name))
            OR EXISTS (SELECT 1 FROM pairwise_judgments WHERE dataset = ? AND source = 'judge')""",
        [dataset, judges, dataset]).fetchall()[0][0])


def merge_judged(parts: dict[str, bool]) -> list[str]:
    return sorted(d for d, judged in parts.items() if judged)


def judged_datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Datasets an LLM judge scored (its system scores) or with imported pairwise judgments, in name order."""
    return merge_judged({d: judged_part(con, d) for d in datasets(con)})


def judge_audit_part(con: duckdb.DuckDBPyConnection, dataset: str, part: str, bootstrap: int = 200) -> pd.DataFrame:
    """One table of the judge audit, as `evalcore judge-audit --part` gives it (fewer resamples: a page)."""
    return judge_audit.audit_part(con, dataset, part, bootstrap=bootstrap, seed=0)


def judge_headlines(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str) -> pd.DataFrame:
    """For Metric trust's hover: per judge metric and skill, its audit headline against `dimension` (the judge's
    own dimension where it has one) under the signature its column holds now. Columns metric, skill, audit."""
    out = pd.DataFrame(columns=["metric", "skill", "audit"])
    if dataset not in judged_datasets(con):
        return out
    head = judge_audit.headline(judge_audit.agreement(con, dataset, bootstrap=0))
    current = {s for (s,) in con.execute("SELECT DISTINCT signature FROM system_scores WHERE dataset = ? AND "
                                         "origin = 'computed'", [dataset]).fetchall()}
    head = head[head["signature"].isin(current)]
    own = head["judge"].str.removeprefix("Judge-") == head["dimension"]
    head = head[own | (head["dimension"] == dimension)]
    if head.empty:
        return out

    def said(r) -> str:
        loo, ceiling, mean = r["judge (leave-one-out)"], r["human ceiling (leave-one-out)"], r["judge vs people's mean"]
        if pd.isna(ceiling):
            return f"audit on {r['dimension']} ({r['asked']}): r = {mean:.2f} with the one rating per response; no ceiling"
        return (f"audit on {r['dimension']} ({r['asked']}): leave-one-out r = {loo:.2f} vs the human ceiling "
                f"{ceiling:.2f}: {r['verdict']}")

    head = head.assign(audit=head.apply(said, axis=1))
    rows = head.groupby(["judge", "skill"])["audit"].agg("; ".join).reset_index()
    return rows.rename(columns={"judge": "metric"})[["metric", "skill", "audit"]]


def judge_headline(agreement_table: pd.DataFrame) -> pd.DataFrame:
    """The headline from the agreement table a page already has (not computed twice)."""
    return judge_audit.headline(agreement_table)


def human_ceiling(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return judge_audit.ceiling(con, dataset)


def nothing_to_audit(con: duckdb.DuckDBPyConnection, dataset: str, part: str) -> str:
    return judge_audit.nothing_to_audit(con, dataset, part)


def multi_rated_part(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The dataset's tracks with a response or dialogue rated by two or more annotators, in name order."""
    return [t for (t,) in con.execute("""
        SELECT DISTINCT track FROM (
            SELECT track FROM human_ratings WHERE dataset = ? AND target <> 'system'
            GROUP BY track, target, item_id, dialogue_id, model, dimension
            HAVING count(DISTINCT annotator) >= 2)
        ORDER BY track
    """, [dataset]).fetchall()]


def merge_multi_rated(parts: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(d, t) for d in sorted(parts) for t in parts[d]]


def multi_rated_tracks(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(dataset, track) pairs with a response or dialogue rated by two or more annotators."""
    return merge_multi_rated({d: multi_rated_part(con, d) for d in datasets(con)})


def annotator_bias(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> pd.DataFrame:
    return annotator_bias_of(con, dataset, track)


def score_distribution(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> pd.DataFrame:
    """Share of each score per dimension and model (the seed's Fig. 2), response/dialogue ratings."""
    frame = con.execute("""
        SELECT dimension, model, score, count(*) AS n FROM human_ratings
        WHERE dataset = ? AND track = ? AND target <> 'system' GROUP BY ALL ORDER BY ALL
    """, [dataset, track]).df()
    frame["share"] = frame["n"] / frame.groupby(["dimension", "model"])["n"].transform("sum")
    return frame


def ensemble_view(con: duckdb.DuckDBPyConnection, dataset: str, level: str, holdout: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return ensemble(con, dataset, level=level, holdout=holdout)


# ---------------------------------------------------------------- trust (metrics x skills)
def trust_choice_part(con: duckdb.DuckDBPyConnection, dataset: str) -> tuple[int, list[tuple[str, str]]]:
    """(tracks with human ratings, the (level, origin) pairs with something to correlate) of one dataset."""
    rated = con.execute("SELECT count(DISTINCT track) FROM human_ratings WHERE dataset = ?", [dataset]).fetchall()[0][0]
    return int(rated), choices(con, dataset)


def merge_trust_choices(parts: dict[str, tuple[int, list]]) -> dict[str, list[tuple[str, str]]]:
    return {d: c for d, (_, c) in sorted(parts.items(), key=lambda kv: (-kv[1][0], kv[0])) if c}


def trust_choices(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """Per dataset with something to correlate, its (level, origin) pairs; richest dataset first
    (most tracks with human ratings), so a page opens on the most telling view."""
    return merge_trust_choices({d: trust_choice_part(con, d) for d in datasets(con)})


def merge_trust_left_out(parts: dict[str, tuple[int, list]]) -> dict[str, str]:
    return {d: "no human ratings yet" if not rated else "no metric values of its rated units"
            for d, (rated, c) in sorted(parts.items()) if not c}


def trust_left_out(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The datasets a trust view cannot offer, each with why in a few words (the page says so under its
    dataset choice, rather than leaving them out without a word)."""
    return merge_trust_left_out({d: trust_choice_part(con, d) for d in datasets(con)})


def trust_opening(con: duckdb.DuckDBPyConnection, dataset: str, *, method: str, dimension: str) -> Opening:
    """Where Metric trust opens on `dataset` when its link names no level (evalcore.analysis.trust.opening:
    the first level with a verdict for some skill, and why the ones before had none)."""
    return opening(con, dataset, method=method, dimension=dimension)


def trust_view(con: duckdb.DuckDBPyConnection, dataset: str, *, level: str, method: str, dimension: str,
               origin: str, flavor: str = "default", alpha: float = 0.05,
               adjust: str = "holm") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every cell, one verdict per skill with how it holds under other methods and dimensions)
    (evalcore.analysis.trust.report), from the store's values read once."""
    return report(con, dataset, level=level, method=method, dimension=dimension, origin=origin,
                  dimensions=dimensions(con, dataset), flavor=flavor, alpha=alpha, adjust=adjust)


def trust_dimensions(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    return dimensions(con, dataset)


def trust_grid(frame: pd.DataFrame, *, tracks: bool, sort: str) -> pd.DataFrame:
    """The trust matrix's cells in display order: metrics (rows, best first by `sort`: a skill's pooled
    r, or 'mean' of the pooled r over skills) x columns (each skill's pooled value, then its tracks when
    `tracks`). Columns: metric, column, skill, track and the cell's values."""
    cells = frame if tracks else frame[frame["track"] == POOLED]
    cells = cells.assign(column=np.where(cells["track"] != POOLED, cells["track"],
                                         cells["skill"] + (" (pooled)" if tracks else "")))
    pooled = frame[frame["track"] == POOLED].pivot_table(index="metric", columns="skill", values="r")
    key = pooled[sort] if sort in pooled.columns else pooled.mean(axis=1)
    order = key.sort_values(ascending=False, na_position="last").index.tolist()
    order += [m for m in dict.fromkeys(frame["metric"]) if m not in order]
    rank = {m: i for i, m in enumerate(order)}
    return cells.assign(_row=cells["metric"].map(rank)).sort_values("_row", kind="stable").drop(columns="_row")


TRUST_MARKS = {"best": " ▲", "tied": " ≈", "disagrees": " ▼"}
TRUST_WORDS = {"best": "best (▲)", "tied": "not significantly worse (≈)", "disagrees": "disagrees (▼)"}


def as_text(values: pd.Series, spec: str, missing: str = "") -> pd.Series:
    """Numbers as text for labels and hovers; NaN as `missing` (text even when there are none: an empty column
    of a skill with no verdict)."""
    return values.map(lambda v: missing if pd.isna(v) else format(v, spec)).astype(object)


def ci_text(low: pd.Series, high: pd.Series, spec: str, missing: str = "") -> np.ndarray:
    """Intervals as "[low, high]" for hovers and tables; `missing` where there is none."""
    return np.where(low.isna(), missing, "[" + as_text(low, spec) + ", " + as_text(high, spec) + "]")


def trust_matrix(con: duckdb.DuckDBPyConnection, dataset: str, *, level: str, method: str, dimension: str,
                 origin: str, flavor: str, alpha: float, adjust: str) -> tuple:
    """Metric trust's page from one computation per choice (trust_view's cells and verdicts), with what it draws of
    them made once, not on every run: (cells, verdicts, every cell with its label and hover texts and a judge's
    audit, the pooled ranking per skill). trust_grid orders the labelled cells for the page's sort and tracks."""
    frame, said = trust_view(con, dataset, level=level, method=method, dimension=dimension, origin=origin,
                             flavor=flavor, alpha=alpha, adjust=adjust)
    cells = frame.copy()
    marks = (np.where(cells["p_adjusted"] < alpha, "*", "")
             + cells["mark"].map(TRUST_MARKS).fillna("").to_numpy())
    cells["label"] = np.where(cells["r"].isna(), "–", as_text(cells["r"], ".2f") + marks)
    cells["95% CI"] = ci_text(cells["ci_low"], cells["ci_high"], ".2f", "none")
    cells["r (exact)"] = as_text(cells["r"], ".3f", "undefined")
    cells["p value"] = as_text(cells["p"], ".3g")
    cells["adjusted p"] = as_text(cells["p_adjusted"], ".3g")
    cells["verdict"] = cells["mark"].map(TRUST_WORDS).fillna("")
    # a judge's row: its audit against the lab's people on hover (the Judge audit page has the whole of it)
    audits = judge_headlines(con, dataset, dimension)
    cells = cells.merge(audits.rename(columns={"audit": "judge audit"}), on=["metric", "skill"], how="left")
    cells["judge audit"] = cells["judge audit"].fillna("")
    skills = list(dict.fromkeys(frame["skill"]))
    # the ranking lists the skills with something to rank: a skill with no pooled value at all has its verdict
    # ("no verdict: only 1 response has ...") and would add a row per metric of blanks
    every = frame[frame["track"] == POOLED]
    pooled = every[every.groupby("skill")["r"].transform(lambda r: r.notna().any()).astype(bool)].assign(
        verdict=lambda f: f["mark"].map(TRUST_WORDS).fillna(""),
        ci=lambda f: ci_text(f["ci_low"], f["ci_high"], ".2f"))
    table = pooled[["skill", "rank", "metric", "r", "ci", "n", "p", "p_adjusted", "verdict", "note"]]
    table = table.sort_values(["skill", "rank"], key=lambda s: s.map({k: i for i, k in enumerate(skills)})
                              if s.name == "skill" else s).reset_index(drop=True)
    return frame, said, cells, table.astype({"note": str})


JOB_WAITING = {"queued": "waiting to start", "running": "starting"}   # a job's detail before its worker writes one


def jobs_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The scoring jobs (services.jobs.listing) as the Upload page shows them: a detail for every row, never
    "None" or "nan" (a queued job has none yet: "waiting to start"), progress 0 until there is one."""
    out = frame.copy()
    empty = out["detail"].isna() | (out["detail"].astype(str) == "")
    out["detail"] = out["detail"].where(~empty, out["state"].map(JOB_WAITING)).fillna("").astype(str)
    out["progress"] = out["progress"].fillna(0.0).astype(float)
    return out


def submissions(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """The dataset's submissions, newest first (evalcore.store.history.listing), worded for the Upload page
    (its "Undo submission" control, not a command)."""
    return listing(con, dataset, restore_hint="restorable: Undo submission {id} below").drop(columns=["dataset"])


# Views over every dataset, made of one part per dataset: name -> (part, merge), where view(con) ==
# merge({d: part(con, d) for d in datasets(con)}). The dashboard keeps each part until that dataset changes
# (pages/views/common.data), so a write to one dataset (a scoring job's commits) recomputes only its part, and
# pages about every dataset keep the others'.
PER_DATASET = {
    "summary": (summary_part, merge_frames),
    "model_table": (model_part, merge_models),
    "trust_choices": (trust_choice_part, merge_trust_choices),
    "trust_left_out": (trust_choice_part, merge_trust_left_out),
    "multi_rated_tracks": (multi_rated_part, merge_multi_rated),
    "rated_response_tracks": (rated_response_part, merge_rated_response),
    "judged_datasets": (judged_part, merge_judged),
}
