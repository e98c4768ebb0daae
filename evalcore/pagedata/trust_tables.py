"""The Metric trust page's data: which datasets have something to correlate, where the page opens, the
matrix of metrics x skills with its verdicts (evalcore.analysis.trust_verdicts.report), and its labels and hover texts."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.trust import POOLED
from evalcore.analysis.trust_levels import choices, dimensions
from evalcore.analysis.trust_opening import Opening, opening
from evalcore.analysis.trust_verdicts import report
from evalcore.core.i18n import N_, _
from evalcore.core.processes import alive_on
from evalcore.pagedata import audits, catalog, formatting
from evalcore.pagedata.scope import dataset_scoped, per_dataset


@dataset_scoped
def trust_choice_part(con: duckdb.DuckDBPyConnection, dataset: str) -> tuple[int, list[tuple[str, str]]]:
    """(tracks with human ratings, the (level, origin) pairs with something to correlate) of one dataset."""
    rated = con.execute("SELECT count(DISTINCT track) FROM human_ratings WHERE dataset = ?", [dataset]).fetchall()[0][0]
    return int(rated), choices(con, dataset)


def merge_trust_choices(parts: dict[str, tuple[int, list]]) -> dict[str, list[tuple[str, str]]]:
    return {d: c for d, (__, c) in sorted(parts.items(), key=lambda kv: (-kv[1][0], kv[0])) if c}


@per_dataset(trust_choice_part, merge_trust_choices)
def trust_choices(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """Per dataset with something to correlate, its (level, origin) pairs; richest dataset first
    (most tracks with human ratings), so a page opens on the most telling view."""
    return merge_trust_choices({d: trust_choice_part(con, d) for d in catalog.datasets(con)})


def merge_trust_left_out(parts: dict[str, tuple[int, list]]) -> dict[str, str]:
    """Each left-out dataset's why, in English (a merge over every dataset is kept for every viewer alike: the page
    shows it through _())."""
    return {d: N_("no human ratings yet") if not rated else N_("no metric values of its rated units")
            for d, (rated, c) in sorted(parts.items()) if not c}


@per_dataset(trust_choice_part, merge_trust_left_out)
def trust_left_out(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The datasets a trust view cannot offer, each with why in a few words (the page says so under its
    dataset choice, rather than leaving them out without a word)."""
    return merge_trust_left_out({d: trust_choice_part(con, d) for d in catalog.datasets(con)})


def trust_not_offered(con: duckdb.DuckDBPyConnection, dataset: str) -> str:
    """Why a dataset that a link names is not offered (trust_left_out's words), with its newest scoring job when that
    one is queued, running or failed (a chat task's accepted conversations, an upload): what the page says rather
    than "not a known dataset". Unmarked: a job's progress is a commit, and the next draw says where it stands."""
    why = _(merge_trust_left_out({dataset: trust_choice_part(con, dataset)}).get(dataset, "")) or ""
    job = con.execute("SELECT job_id, state, detail, pid, host FROM jobs WHERE dataset = ? ORDER BY job_id DESC "
                      "LIMIT 1", [dataset]).fetchall()
    if job:
        job_id, state, detail, pid, host = job[0]
        if state in ("queued", "running") and not alive_on(pid, host):
            state = "interrupted"   # its worker is gone: the server's next check runs it again
        if state == "running" and detail:
            why += _("; its scoring job {job} is {state} ({detail})").format(job=job_id, state=_(state), detail=detail)
        elif state in ("queued", "running", "interrupted"):
            why += _("; its scoring job {job} is {state}").format(job=job_id, state=_(state))
        elif state == "failed":
            why += _("; its scoring job {job} failed: {detail}").format(job=job_id, detail=detail)
    return why


@dataset_scoped
def trust_opening(con: duckdb.DuckDBPyConnection, dataset: str, *, method: str, dimension: str) -> Opening:
    """Where Metric trust opens on `dataset` when its link names no level (evalcore.analysis.trust_opening.opening:
    the first level with a verdict for some skill, and why the ones before had none)."""
    return opening(con, dataset, method=method, dimension=dimension)


@dataset_scoped
def trust_view(con: duckdb.DuckDBPyConnection, dataset: str, *, level: str, method: str, dimension: str,
               origin: str, flavor: str = "default", alpha: float = 0.05,
               adjust: str = "holm") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every cell, one verdict per skill with how it holds under other methods and dimensions)
    (evalcore.analysis.trust_verdicts.report), from the store's values read once."""
    return report(con, dataset, level=level, method=method, dimension=dimension, origin=origin,
                  dimensions=dimensions(con, dataset), flavor=flavor, alpha=alpha, adjust=adjust)


@dataset_scoped
def trust_dimensions(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    return dimensions(con, dataset)


# the skills (evalcore.analysis.trust.SKILL_ORDER and a track without one), as a page names them in its language
SKILLS = {"chitchat": N_("chitchat"), "knowledge": N_("knowledge"), "recommendation": N_("recommendation"),
          "persona": N_("persona"), "task-oriented": N_("task-oriented"), "other": N_("other")}


def skill_name(skill: str) -> str:
    """A skill as a page shows it: one of SKILLS in the viewer's language, any other name as it is."""
    return _(SKILLS[skill]) if skill in SKILLS else skill


def trust_grid(frame: pd.DataFrame, *, tracks: bool, sort: str) -> pd.DataFrame:
    """The trust matrix's cells in display order: metrics (rows, best first by `sort`: a skill's pooled
    r, or 'mean' of the pooled r over skills) x columns (each skill's pooled value, then its tracks when
    `tracks`). Columns: metric, column, skill, track and the cell's values."""
    cells = frame if tracks else frame[frame["track"] == POOLED]
    cells = cells.assign(column=np.where(cells["track"] != POOLED, cells["track"],
                                         cells["skill"].map(lambda k: _("{skill} (pooled)").format(skill=skill_name(k)))
                                         if tracks else cells["skill"].map(skill_name)))
    pooled = frame[frame["track"] == POOLED].pivot_table(index="metric", columns="skill", values="r")
    key = pooled[sort] if sort in pooled.columns else pooled.mean(axis=1)
    order = key.sort_values(ascending=False, na_position="last").index.tolist()
    order += [m for m in dict.fromkeys(frame["metric"]) if m not in order]
    rank = {m: i for i, m in enumerate(order)}
    return cells.assign(_row=cells["metric"].map(rank)).sort_values("_row", kind="stable").drop(columns="_row")


TRUST_MARKS = {"best": " ▲", "tied": " ≈", "disagrees": " ▼"}
TRUST_WORDS = {"best": N_("best (▲)"), "tied": N_("not significantly worse (≈)"), "disagrees": N_("disagrees (▼)")}
STATES = (N_("queued"), N_("running"), N_("interrupted"))   # a scoring job's state, as trust_not_offered says it


def _verdict_words(marks: pd.Series) -> pd.Series:
    """A cell's mark (an id) as the words the page shows, in the viewer's language."""
    return marks.map({k: _(v) for k, v in TRUST_WORDS.items()}).fillna("")


@dataset_scoped
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
    cells["label"] = np.where(cells["r"].isna(), "–", formatting.as_text(cells["r"], ".2f") + marks)
    cells["95% CI"] = formatting.ci_text(cells["ci_low"], cells["ci_high"], ".2f", _("none"))
    cells["r (exact)"] = formatting.as_text(cells["r"], ".3f", _("undefined"))
    cells["p value"] = formatting.as_text(cells["p"], ".3g")
    cells["adjusted p"] = formatting.as_text(cells["p_adjusted"], ".3g")
    cells["verdict"] = _verdict_words(cells["mark"])
    # a judge's row: its audit against the lab's people on hover (the Judge audit page has the whole of it)
    headlines = audits.judge_headlines(con, dataset, dimension, level)
    cells = cells.merge(headlines.rename(columns={"audit": "judge audit"}), on=["metric", "skill"], how="left")
    cells["judge audit"] = cells["judge audit"].fillna("")
    skills = list(dict.fromkeys(frame["skill"]))
    # the ranking lists the skills with something to rank: a skill with no pooled value at all has its verdict
    # ("no verdict: only 1 response has ...") and would add a row per metric of blanks
    every = frame[frame["track"] == POOLED]
    pooled = every[every.groupby("skill")["r"].transform(lambda r: r.notna().any()).astype(bool)].assign(
        verdict=lambda f: _verdict_words(f["mark"]),
        ci=lambda f: formatting.ci_text(f["ci_low"], f["ci_high"], ".2f"))
    table = pooled[["skill", "rank", "metric", "r", "ci", "n", "p", "p_adjusted", "verdict", "note"]]
    table = table.sort_values(["skill", "rank"], key=lambda s: s.map({k: i for i, k in enumerate(skills)})
                              if s.name == "skill" else s).reset_index(drop=True)
    return frame, said, cells, table.astype({"note": str})
