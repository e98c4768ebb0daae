"""The Leaderboard page's tables: a track's or skill's board with response counts, what it can be ranked by,
its display form with rank intervals and notes, why cells are blank, one model's ranks on every track, the best
value per column and the board as LaTeX. The ranking itself is evalcore.analysis.leaderboard's."""
from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import leaderboard as ranking
from evalcore.analysis.leaderboard import N_COLUMN, OFFICIAL, RANK_COLUMNS, leaderboard, value_table
from evalcore.analysis.leaderboard import signatures as signatures_of
from evalcore.core.i18n import N_, _
from evalcore.metrics.base import Metric
from evalcore.metrics.registry import METRICS, higher_is_better
from evalcore.pagedata import catalog
from evalcore.pagedata.openings import merge_places
from evalcore.pagedata.scope import dataset_scoped, per_dataset
from evalcore.store import queries

FRONT = ["track", "model", "origin", *RANK_COLUMNS]
PARTIAL = N_("partial submission")   # the note of a row ranked while partial
# the ranking's notes (evalcore.analysis.leaderboard and rank_ci: English, as the CLI prints them) as the page shows
# them: a fixed note translated whole, a note with a value in it by its pattern (the value kept as it is)
NOTES = (N_("the skill's official ranking rule: no interval"), N_("published value: no per-item data to resample"),
         N_("partial submission: not ranked ('Show partial submissions' ranks it)"),
         N_("no response that is not blank: not ranked"), N_("official rule"))
NOTE_PATTERNS = (
    (re.compile(r"no (?P<column>.+) value for this row"), N_("no {column} value for this row")),
    (re.compile(r"no per-response (?P<column>.+) ratings on this track"),
     N_("no per-response {column} ratings on this track")),
    (re.compile(r"paired bootstrap over items, B=(?P<b>\d+), seed=(?P<seed>\d+), 95% percentile"),
     N_("paired bootstrap over items, B={b}, seed={seed}, 95% percentile")))


def shown_note(text):
    """A ranking note (rank_ci, a model's note) in the viewer's language; anything else (a blank, a reason this
    module does not know) as it is."""
    if not isinstance(text, str) or not text:
        return text
    if text in NOTES:
        return _(text)
    for pattern, message in NOTE_PATTERNS:
        found = pattern.fullmatch(text)
        if found:
            return _(message).format(**found.groupdict())
    return text


def shown_choice(choice: str | None) -> str | None:
    """A rank-by choice as a page shows it: the official rule in the viewer's language, a column's name as it is
    (the choice itself, an id kept in the link, stays English)."""
    return _(OFFICIAL) if choice == OFFICIAL else choice


def value_columns(frame: pd.DataFrame) -> list[str]:
    """A leaderboard's metric and human-dimension columns (the board table's own columns left out)."""
    return [c for c in ranking.value_columns(frame) if c not in ("rank 95% CI", "note")]


@dataset_scoped
def board(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, flavor: str = "default",
          rank_by: str | None = None, partial: bool = False) -> pd.DataFrame:
    """Leaderboard of one track or of every track of a skill, ranked by `rank_by` (None: the skill's
    official rule where there is one)."""
    wanted = catalog.tracks_of(con, dataset, choice)
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


@dataset_scoped
def board_columns(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, flavor: str = "default") -> list[str]:
    """Columns a leaderboard of this choice can be ranked by (cheap: no ranking)."""
    return value_columns(board(con, dataset, choice, flavor))


@dataset_scoped
def rank_choices(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, columns: list[str]) -> tuple[list[str], str | None]:
    """(options, default) of the rank-by box: analysis.leaderboard's rule for the tracks `choice` names."""
    return ranking.rank_choices(con, dataset, catalog.tracks_of(con, dataset, choice), columns)


@dataset_scoped
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


@dataset_scoped
def board_part(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The dataset's tracks whose board, as the page first shows it, has a row: a model with values that answered
    every item (partial submissions are hidden until asked for), or a published table where no computed row is
    (the page opens on computed rows when there are any). Values and coverage only, no ranking."""
    values = value_table(con, dataset, None)
    filled = values[values[value_columns(values)].notna().any(axis=1)] if len(values) else values
    if filled.empty:
        return []
    cover = ranking.coverage(con, dataset)[["track", "model", "coverage"]].assign(origin="computed")
    rows = filled.merge(cover, on=["track", "model", "origin"], how="left")
    computed = rows[rows["origin"] == "computed"]
    complete = set(computed.loc[computed["coverage"].fillna(1.0) >= 1, "track"])
    published = set(rows.loc[rows["origin"] == "published", "track"]) - set(computed["track"])
    return sorted(complete | published)


@per_dataset(board_part, merge_places)
def board_tracks(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(dataset, track) pairs where the Leaderboard shows a row without being asked for partial submissions: where
    it opens (evalcore.pagedata.openings). A chat task's dataset, whose endpoints each answered only their own
    conversations, has none until one endpoint answered them all."""
    return merge_places({d: board_part(con, d) for d in catalog.datasets(con)})


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
    note = note.where(~part, PARTIAL).map(shown_note)
    out = out.assign(**{"rank 95% CI": rank_interval(out), "note": note})
    return out[["track", "rank", "rank 95% CI", "model", "coverage", *metrics, N_COLUMN, "note"]]


def blank_reasons(frame: pd.DataFrame, columns: list[str], dataset: str,
                  known: dict[str, Metric] | None = None) -> pd.DataFrame:
    """Why cells are blank: per column, the models without a value and the reason (not scored, with the
    command that scores it; unavailable here, with the reason; not in a published table)."""
    rows = []
    for col in columns:
        empty = frame[frame[col].isna()] if col in frame.columns else frame.iloc[0:0]
        for origin, group in empty.groupby("origin", sort=True):
            if origin == "published":
                why = _("not in the source's published table")
            elif col not in (METRICS if known is None else known):
                why = _("no rating of these models on this dimension")
            else:
                reason = catalog.unavailable_here(col, known)
                why = (_("unavailable here: {reason}").format(reason=reason) if reason else
                       _("not scored yet ({hint})").format(hint=catalog.score_hint(' --metrics ' + col)))
            rows.append({"column": col, "origin": _(origin), "models": ", ".join(sorted(set(group["model"]))),
                         "why blank": why})
    return pd.DataFrame(rows, columns=["column", "origin", "models", "why blank"])


@dataset_scoped
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


@dataset_scoped
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
    skills = catalog.tracks(con, dataset).set_index("track")["skill"]
    counts = frame.groupby("track")["rank"].count()   # models ranked per track

    answered = queries.answered_tracks(con, dataset, model)
    rows = []
    for track in sorted(skills.index, key=lambda t: (str(skills[t]), t)):
        mine = frame[(frame["track"] == track) & (frame["model"] == model)]
        if mine.empty:
            rows.append({"track": track, "skill": skills[track], "ranked": int(counts.get(track, 0)),
                         "note": (_("not scored here yet ({hint})").format(hint=catalog.score_hint())
                                  if track in answered else _("no response of this model here"))})
            continue
        row = mine.iloc[0]
        rows.append({"track": track, "skill": skills[track], "rank": row["rank"], "rank_ci_low": row["rank_ci_low"],
                     "rank_ci_high": row["rank_ci_high"], "ranked": int(counts.get(track, 0)),
                     "value": row[by] if by in frame.columns else np.nan, "coverage": row["coverage"],
                     "note": shown_note(row["rank_ci"]) if pd.isna(row["rank"]) else ""})
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


@dataset_scoped
def signatures(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, flavor: str = "default") -> pd.DataFrame:
    frame = signatures_of(con, dataset, None, flavor=flavor)
    return frame[frame["track"].isin(catalog.tracks_of(con, dataset, choice))].reset_index(drop=True)


def split_columns(dims: list[str], frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """A leaderboard's value columns as (metrics, human dimensions `dims`)."""
    dims = set(dims)
    values = value_columns(frame)
    return [c for c in values if c not in dims], [c for c in values if c in dims]
