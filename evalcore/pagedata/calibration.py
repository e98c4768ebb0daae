"""The pages' people-calibrated estimates and plans (issue 63): a system's mean on a human dimension from a judge's
or metric's values calibrated by people's ratings (evalcore.services.estimate, PPI++), as the Leaderboard, Judge
audit and Rating tasks pages show it, and the planner of ratings (evalcore.services.planner) for Rating tasks.

A refusal (the people's ratings are not a random sample, a predictor without values or off the scale, a plan
missing what it needs) comes back as its sentence under 'refused', never as a number; the CLI's flags in it are
put in the page's words (the page has boxes, not flags)."""
from __future__ import annotations

import math
import re

import duckdb
import pandas as pd

from evalcore.analysis.judge_values import judge_names
from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.pagedata import catalog
from evalcore.pagedata.formatting import ci_text
from evalcore.pagedata.scope import dataset_scoped
from evalcore.scoring import response_scores
from evalcore.services import estimate as estimating
from evalcore.services import planner
from evalcore.store import tasks as stored_tasks

RANDOM_BOX = N_("Imported ratings are a random sample")   # the page's box for --assume-random (shown through _())
# the CLI's flags in the services' sentences, as the pages name the box that sets each (its label, through _())
FLAGS = {"assume-random": RANDOM_BOX, "effect": N_("Effect"), "sd": N_("Rating SD"),
         "r": N_("Expected correlation"), "p": N_("Expected agreement"), "half-width": N_("Half-width"),
         "raters": N_("Raters per unit (K)"), "dataset": N_("Dataset"), "dimension": N_("Dimension"),
         "budget": N_("Budget")}
NONE = N_("(none)")   # a select's choice of no predictor: an id (a link leaves it out), shown through shown_none


def shown_none(value: str) -> str:
    """A select's option as shown: NONE in the viewer's language, a name (a dimension, a judge) as it is."""
    return _(NONE) if value == NONE else value


def flag_words(flag: str) -> str:
    """A CLI flag named as the page's box that sets it, in the viewer's language."""
    if flag == "assume-random":
        return _("the box '{box}'").format(box=_(RANDOM_BOX))
    # quoted as the language quotes (a message of a placeholder and quotes alone would read as any quoted text)
    return ("'{box}'" if i18n.current() == i18n.EN else "“{box}”").format(box=_(FLAGS[flag]))


def page_words(text: str) -> str:
    """A service's sentence with its CLI flags (--effect) named as the page's boxes ('Effect')."""
    return re.sub(r"(?<![\w`-])--([a-z][a-z-]*)\b",
                  lambda m: flag_words(m.group(1)) if m.group(1) in FLAGS else m.group(0), text)


@dataset_scoped
def response_dimensions(con: duckdb.DuckDBPyConnection, dataset: str, choice: str | None = None) -> list[str]:
    """The human dimensions people rated single responses on, on the tracks of `choice` (a track or a skill; None:
    every track): what a predictor can be calibrated on."""
    tracks = catalog.tracks_of(con, dataset, choice) if choice else catalog.tracks(con, dataset)["track"].tolist()
    return [d for (d,) in con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ? AND target = "
                                      "'response' AND list_contains(?, track) ORDER BY 1", [dataset, tracks]).fetchall()]


@dataset_scoped
def predictors(con: duckdb.DuckDBPyConnection, dataset: str, choice: str | None = None,
               judges_only: bool = False) -> list[str]:
    """The judges and metrics with per-response values on the tracks of `choice` (None: every track): what can
    stand in for people's ratings there. `judges_only`: the judges among them."""
    tracks = catalog.tracks_of(con, dataset, choice) if choice else catalog.tracks(con, dataset)["track"].tolist()
    found = set()
    for track in tracks:
        found |= set(response_scores(con, dataset, track)["metric"].unique())
    if judges_only:
        found &= set(judge_names(con))
    return sorted(found)


@dataset_scoped
def judges_scored(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The judges `evalcore score` ran on the dataset (one light query on the system scores: the Judge audit page
    lists them on its first view; the values per response are read only when one is chosen)."""
    return [n for (n,) in con.execute("SELECT DISTINCT name FROM system_scores WHERE dataset = ? AND origin = "
                                      "'computed' AND list_contains(?, name) ORDER BY 1",
                                      [dataset, judge_names(con)]).fetchall()]


@dataset_scoped
def calibrated(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str, predictor: str,
               choice: str | None = None, assume_random: bool = False) -> dict:
    """evalcore.services.estimate's result for the tracks of `choice` (a track, a skill's tracks, None: all of
    them with the 'all tracks' rows), or {'refused': the sentence}."""
    tracks = catalog.tracks_of(con, dataset, choice) if choice else None
    try:
        got = estimating.estimate(con, dataset, dimension, predictor,
                                  track=tracks[0] if tracks and len(tracks) == 1 else None,
                                  assume_random=assume_random)
    except ValueError as exc:   # NotRandom among them: the reason, never a number
        return {"refused": page_words(str(exc))}
    if tracks and len(tracks) > 1:   # a skill: its tracks' rows (the store's other tracks were strata beside them)
        got["rows"] = got["rows"][got["rows"]["track"].isin(tracks)].reset_index(drop=True)
        got["differences"] = got["differences"][got["differences"]["track"].isin(tracks)].reset_index(drop=True)
    got["assumption"] = page_words(got["assumption"])
    got["rows"] = got["rows"].assign(sampling=got["rows"]["sampling"].map(page_words))
    return got


def spec_of(values: pd.Series) -> str:
    """Digits for a dimension's means: two on a scale past 1 (1-5, 0-2), three on 0-1."""
    finite = pd.to_numeric(values, errors="coerce").abs().dropna()
    top = finite.max() if len(finite) else 1.0
    return ".1f" if top > 100 else ".2f" if top > 1 else ".3f"


def interval(est: pd.Series, low: pd.Series, high: pd.Series, spec: str) -> pd.Series:
    """'1.63 [1.49, 1.76]' per row; 'unavailable' where the estimate cannot be made (the note says why)."""
    text = pd.Series(ci_text(low, high, spec, missing=""), index=est.index)
    return pd.Series([(_("unavailable") if pd.isna(e) else f"{e:{spec}} {t}".strip()) for e, t in zip(est, text)],
                     index=est.index, dtype=object)


# the tables' headers (grid() shows each through _())
CALIBRATED, PEOPLE, COUNTS, PEOPLE_ONLY, GAIN = (N_("calibrated 95%"), N_("people"), N_("rated / valued"),
                                                 N_("people only 95%"), N_("gain"))
ANYTIME, WIDTH, UNIFORM = N_("anytime 95%"), N_("width"), N_("uniform width")
HEADERS = (N_("track"), N_("model"), N_("rank 95%"), N_("sampling"), N_("note"), N_("rated"), N_("uniform / reached"))


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """The estimate's rows as the pages show them: track, model, the calibrated estimate with its 95% interval, how
    many responses people rated of how many the predictor valued, the people-only estimate at the same ratings,
    the gain (people-only width / calibrated width), the anytime interval (valid however often it is looked at),
    the rank interval, how the ratings were sampled and a note."""
    spec = spec_of(pd.concat([rows["estimate"], rows["people_estimate"]]))
    rank = [("" if pd.isna(a) or pd.isna(b) else f"{int(a)}" if a == b else f"{int(a)}–{int(b)}")
            for a, b in zip(rows["rank_low"], rows["rank_high"])]
    return pd.DataFrame({
        "track": rows["track"], "model": rows["model"],
        CALIBRATED: interval(rows["estimate"], rows["lower"], rows["upper"], spec),
        COUNTS: [f"{i18n.number(int(n))} / {i18n.number(int(big))}" for n, big in zip(rows["n_people"], rows["n_predicted"])],
        PEOPLE_ONLY: interval(rows["people_estimate"], rows["people_lower"], rows["people_upper"], spec),
        GAIN: rows["gain"].astype(float),
        ANYTIME: pd.Series(ci_text(rows["anytime_lower"], rows["anytime_upper"], spec), index=rows.index),
        "rank 95%": rank, "sampling": rows["sampling"], "note": rows["note"].fillna("")}).reset_index(drop=True)


def widths(rows: pd.DataFrame) -> pd.DataFrame:
    """For an active task: per model, the calibrated interval's width reached and the width a uniform sample of
    the same number of ratings would have reached (uniform_width), with their ratio."""
    reached = (rows["upper"] - rows["lower"]).astype(float)
    uniform = rows["uniform_width"].astype(float)
    return pd.DataFrame({"track": rows["track"], "model": rows["model"], "rated": rows["n_people"],
                         WIDTH: reached, UNIFORM: uniform,
                         "uniform / reached": [u / w if w > 0 and not (math.isnan(u) or math.isnan(w)) else math.nan
                                               for u, w in zip(uniform, reached)]}).reset_index(drop=True)


def notes(table: pd.DataFrame) -> list[str]:
    """The table's notes as sentences ('gamma: 1 unit rated by people: ...'; the track named where there are
    several): a note explains a blank estimate, and in a table's cell it was cut."""
    several = table["track"].nunique() > 1
    return [f"{r['model']}{' (' + r['track'] + ')' if several else ''}: {r['note']}"
            for r in table.to_dict("records") if r["note"]]


def apart(rows: pd.DataFrame) -> list[str]:
    """'a above b' for each pair of models on a track whose anytime intervals (confidence sequences, valid however
    often they are looked at) do not overlap: what may be called settled while ratings still arrive. Each sequence is
    a 95% one, so the two hold together at least 90% of the time (the page says so)."""
    out = []
    for track, group in rows.dropna(subset=["anytime_lower", "anytime_upper"]).groupby("track", sort=False):
        ranked = group.sort_values("estimate", ascending=False).to_dict("records")
        for i, a in enumerate(ranked):
            for b in ranked[i + 1:]:
                if a["anytime_lower"] > b["anytime_upper"]:
                    out.append((_("{a} above {b} ({track})") if rows["track"].nunique() > 1 else
                                _("{a} above {b}")).format(a=a["model"], b=b["model"], track=track))
    return out


def one_track_less(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame without its track column when every row is of one track (the page names it above)."""
    return frame.drop(columns=["track"]) if "track" in frame and frame["track"].nunique() <= 1 else frame


def caption(got: dict) -> str:
    """What every calibrated figure rests on: the estimator, the predictor and its signature, the assumption on the
    people's ratings, and what the intervals assume about stopping."""
    return _("{dimension} from {predictor} calibrated by people's ratings. Estimator: {estimator}. Predictor's "
             "signature: {signature}. Assumption: {assumption}. Stopping: {stopping}.").format(
        dimension=got["dimension"], predictor=got["predictor"], estimator=got["estimator"],
        signature=got["signature"] or _("none stored"), assumption=got["assumption"],
        stopping=stopping(got["stopping"]))


def stopping(note: str) -> str:
    """The service's stopping note with its columns named as the pages name them."""
    return note.replace("lower/upper", _("the 95% intervals")).replace("anytime_lower/anytime_upper",
                                                                       f"'{_(ANYTIME)}'")


# ---------------------------------------------------------------- the planner

def pilot_size(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str) -> int:
    """How many people's ratings of responses on the dimension the store holds (0: a plan needs an assumed sd)."""
    return len(planner.pilot(con, dataset, dimension))


def pilot_models(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str) -> list[str]:
    """The models people rated on the dimension (the systems a difference can be planned between)."""
    return sorted(planner.pilot(con, dataset, dimension)["model"].unique())


PLAN_COLUMNS = {"with": N_("with"), "units_needed": N_("units needed"), "budget": N_("budget"),
                "power_at_budget": N_("power at budget"), "half_width_at_budget": N_("± at budget"),
                "mde_at_budget": N_("smallest detectable"), "raters": N_("raters (K)"), "notes": N_("notes")}


def plan(con: duckdb.DuckDBPyConnection, question: str, **spec) -> dict:
    """planner.plan's result with its rows in the page's columns ('rows'), where the spread came from ('source'),
    or {'refused': the sentence}."""
    try:
        got = planner.plan(con, question, **spec)
    except ValueError as exc:
        return {"refused": page_words(str(exc))}
    rows = got["rows"].reindex(columns=list(PLAN_COLUMNS)).rename(columns=PLAN_COLUMNS)
    if spec.get("budget") is None:   # no budget stated: no column of what it reaches
        rows = rows.drop(columns=["budget", "power at budget", "± at budget", "smallest detectable"])
    return {"rows": rows, "source": got["source"], "settles": got["settles"]}


SETTLES = {"model_a": "a", "model_b": "b", "difference": "a - b", "interval": N_("95% interval (fixed size)"),
           "settled": N_("excludes 0 (fixed size)"), "detectable": N_("smallest detectable"), "note": N_("note")}


def settles(con: duckdb.DuckDBPyConnection, task_id: int) -> dict:
    """What a task's ratings settle so far, people only: each pair of models' difference with its 95% interval,
    whether that excludes 0, and the smallest difference these ratings detect with power 0.8 ('rows'; empty
    before any rating), or {'refused': the sentence}. These intervals assume the number of ratings was fixed in
    advance: the page says so beside them."""
    try:
        rows = planner.settles(con, stored_tasks.get(con, task_id))
    except ValueError as exc:
        return {"refused": page_words(str(exc))}
    if rows.empty:
        return {"rows": rows}
    spec = spec_of(rows["difference"])
    out = rows.assign(interval=ci_text(rows["lower"], rows["upper"], spec),
                      settled=rows["settled"].map({True: _("yes"), False: _("no")}))
    return {"rows": out.reindex(columns=list(SETTLES)).rename(columns=SETTLES)}
