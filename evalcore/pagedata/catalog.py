"""What the store holds, as the dashboard's controls and the overview show it: datasets, tracks and the
choices they offer, models, metrics and human dimensions, and the store's summary. Reads only what no analysis
gives (names and counts), in parameterised SQL."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.core.i18n import N_, _
from evalcore.metrics import registry
from evalcore.metrics.base import Metric
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.registry import HUMAN_ORDER, METRICS
from evalcore.pagedata.scope import catalog_scoped, dataset_scoped, global_scoped, per_dataset
from evalcore.store import queries

SKILL_PREFIX = "skill:"

# The overview's table headers (grid() shows each through the catalog; the frames keep these names)
HEADERS = (N_("dataset"), N_("track"), N_("items"), N_("references"), N_("models"), N_("responses"),
           N_("human_ratings"), N_("system_scores"), N_("language"), N_("language_from"), N_("licence"),
           N_("source"), N_("description"), N_("model"), N_("added_at"), N_("added_by"), N_("tracks"),
           N_("metric"), N_("status"), N_("why"))
# Where a dataset's language came from (queries.dataset_languages), as the overview shows it
LANGUAGE_FROM = (N_("declared"), N_("detected from the texts"), N_("none: scored as non-English (char tokens)"))


@catalog_scoped
def datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY dataset").fetchall()]


@dataset_scoped
def tracks(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return con.execute("SELECT track, skill, corpus FROM tracks WHERE dataset = ? ORDER BY track", [dataset]).df()


@dataset_scoped
def track_options(con: duckdb.DuckDBPyConnection, dataset: str, *, skills: bool = True) -> list[str]:
    """Every track, then 'skill:<name>' for each skill that has two or more tracks."""
    frame = tracks(con, dataset)
    options = frame["track"].tolist()
    if skills:
        counts = frame["skill"].dropna().value_counts()
        options += [SKILL_PREFIX + s for s in sorted(counts[counts >= 2].index)]
    return options


@dataset_scoped
def tracks_of(con: duckdb.DuckDBPyConnection, dataset: str, choice: str) -> list[str]:
    frame = tracks(con, dataset)
    if choice.startswith(SKILL_PREFIX):
        return frame.loc[frame["skill"] == choice[len(SKILL_PREFIX):], "track"].tolist()
    return [choice] if choice in set(frame["track"]) else []


@catalog_scoped
def track_count(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT count(*) FROM tracks").fetchall()[0][0]


@catalog_scoped
def dataset_languages(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """queries.dataset_languages with where each language came from in the page's language (data() keys it)."""
    frame = queries.dataset_languages(con)
    frame["language_from"] = frame["language_from"].map(_)
    return frame


@dataset_scoped
def summary_part(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    return queries.summary(con, dataset)


def merge_frames(parts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The parts one under the other, in dataset order (each part in its own order)."""
    frames = [parts[d] for d in sorted(parts)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@per_dataset(summary_part, merge_frames)
def summary(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per track of every dataset (queries.summary), from one part per dataset."""
    return merge_frames({d: summary_part(con, d) for d in datasets(con)})


@dataset_scoped
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


@per_dataset(model_part, merge_models)
def model_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every model with where it has responses or scores (queries.models), from one part per dataset."""
    return merge_models({d: model_part(con, d) for d in datasets(con)})


@dataset_scoped
def models_ranked(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """Models with responses in the dataset, newest first (a submitter looks for the one just uploaded)."""
    # the dataset's models first, then their rows of `models` (one each): joined per response, 10 million
    # responses took 1.7 s
    return [m for (m,) in con.execute("""
        SELECT d.model FROM (SELECT DISTINCT model FROM responses WHERE dataset = ?) d LEFT JOIN models m USING (model)
        ORDER BY m.added_at DESC NULLS LAST, d.model""", [dataset]).fetchall()]


@dataset_scoped
def models_of(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[str]:
    rows = con.execute("""
        SELECT DISTINCT r.model FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = ? AND i.track = ? ORDER BY 1""", [dataset, track]).fetchall()
    return [m for (m,) in rows]


@dataset_scoped
def rated_dimensions(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The human dimensions a dataset has ratings in."""
    return sorted(d for (d,) in con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ?",
                                            [dataset]).fetchall())


@dataset_scoped
def dimensions_of(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[str]:
    rows = con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ? AND track = ? "
                       "AND target = 'response'", [dataset, track]).fetchall()
    names = [d for (d,) in rows]
    return [d for d in HUMAN_ORDER if d in names] + sorted(d for d in names if d not in HUMAN_ORDER)


@global_scoped
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
    return _("Upload page: 'Score what is missing on this track', or `evalcore score{options}` in a "
             "terminal").format(options=options)


def missing_metrics(columns: list[str], known: dict[str, Metric] | None = None) -> pd.DataFrame:
    """Metrics of the registry with no column here: unavailable (with the reason) or not scored yet."""
    rows = []
    for name in METRICS if known is None else known:
        if name in columns:
            continue
        reason = unavailable_here(name, known)
        rows.append({"metric": name, "status": _("unavailable") if reason else _("not scored"),
                     "why": reason or _("not scored yet ({hint})").format(hint=score_hint(" --metrics " + name))})
    return pd.DataFrame(rows, columns=["metric", "status", "why"])


def describe(name: str, known: dict[str, Metric] | None = None) -> str:
    info = (METRICS if known is None else known).get(name)
    if info:
        return info.description
    if name in HUMAN_ORDER:
        return _("human score (mean)")
    return _("published value (see the dataset's source)")
