"""Rating tasks as stored: a task, its units, and every answer annotators give (append-only), with the rows
those answers stand for elsewhere: an absolute task's latest rating per unit, annotator and dimension is a
human rating (origin 'task:<id>'), a pairwise task's latest vote is a pairwise judgment (source 'human').

Each answer is written when it is given, in its own short transaction, so a closed tab, a restart or a crash
loses nothing submitted. Who rates which unit: every annotator walks the units in their own seeded order and
gets the first one that they have not finished and that fewer than K other annotators have taken (a unit is
taken by a rating, a vote, or a claim younger than CLAIM_TTL: being shown it); the check and the claim are
one transaction, so two annotators never both become a unit's K-th."""
from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pandas as pd

from evalcore.core import names
from evalcore.core.errors import StoreError
from evalcore.store import bump_revision, history, transaction

MODES = ("absolute", "pairwise")
SAMPLINGS = ("stratified", "disagreement")   # how a task picks its units (evalcore.services.tasks)
WINNERS = {"a": 1.0, "b": 0.0, "tie": 0.5}
CLAIM_TTL = timedelta(minutes=30)  # a unit shown and left unanswered this long goes to someone else
MAX_COMMENT = 2000                 # characters of a flag's comment
MAX_NAME = 80                      # characters of an annotator's name


class TaskClosed(StoreError):
    """A write to a task that is closed or deleted."""


@dataclass(frozen=True)
class Dimension:
    dimension: str
    min: float
    max: float
    description: str = ""
    question: str = ""   # pairwise: "Which response is more informative?"

    def scale(self) -> list[float]:
        """The values one click can give: whole steps from min to max."""
        return [float(v) for v in np.arange(self.min, self.max + 0.5, 1.0)]


@dataclass(frozen=True)
class Task:
    task_id: int
    name: str
    dataset: str
    mode: str
    dimensions: tuple[Dimension, ...]
    per_item: int
    ties: bool
    guidelines: str
    seed: int
    sampling: str
    access_code: str
    state: str
    created_by: str | None
    created_at: datetime

    @property
    def origin(self) -> str:
        return f"task:{self.task_id}"


def create(con: duckdb.DuckDBPyConnection, *, name: str, dataset: str, mode: str, dimensions: list[Dimension],
           per_item: int, units: pd.DataFrame, ties: bool = True, guidelines: str = "", seed: int = 0,
           sampling: str = "stratified", created_by: str | None = None) -> int:
    """Store a task and its units (columns item_id, track, model_a, model_b) in one transaction; its id."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    if per_item < 1:
        raise ValueError(f"--per-item must be at least 1, got {per_item}")
    if units.empty:
        raise ValueError("no units to rate: the dataset has no responses for the tracks and models asked for")
    with transaction(con):
        bump_revision(con)
        task_id = con.execute("SELECT coalesce(max(task_id), 0) + 1 FROM tasks").fetchall()[0][0]
        con.execute("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, NULL)",
                    [task_id, name, dataset, mode, json.dumps([d.__dict__ for d in dimensions], ensure_ascii=False),
                     per_item, ties, guidelines, seed, sampling, secrets.token_hex(3), created_by,
                     datetime.now().replace(microsecond=0)])
        for d in dimensions:   # the ratings to come are on these scales (the store's other readers know them)
            con.execute("INSERT OR IGNORE INTO dimensions VALUES (?, ?, ?, ?, ?)",
                        [dataset, d.dimension, d.min, d.max, d.description or None])
        frame = units.reset_index(drop=True).assign(task_id=task_id, unit=lambda f: f.index + 1)
        frame = frame.reindex(columns=["task_id", "unit", "item_id", "track", "model_a", "model_b"])
        con.register("_evalcore_units", frame)
        try:
            con.execute("INSERT INTO task_units SELECT * FROM _evalcore_units")
        finally:
            con.unregister("_evalcore_units")
    return int(task_id)


def get(con: duckdb.DuckDBPyConnection, task_id: int) -> Task:
    rows = con.execute("SELECT task_id, name, dataset, mode, dimensions, per_item, ties, guidelines, seed, sampling, "
                       "access_code, state, created_by, created_at FROM tasks WHERE task_id = ?", [task_id]).fetchall()
    if not rows:
        known = [str(t) for (t,) in con.execute("SELECT task_id FROM tasks ORDER BY 1").fetchall()]
        names.require("task", str(task_id), known)
    r = rows[0]
    dims = tuple(Dimension(**d) for d in json.loads(r[4]))
    return Task(r[0], r[1], r[2], r[3], dims, r[5], r[6], r[7] or "", r[8], r[9], r[10], r[11], r[12], r[13])


def listing(con: duckdb.DuckDBPyConnection, *, include_deleted: bool = False) -> pd.DataFrame:
    """One row per task: id, name, dataset, mode, state, units, K, annotators, answers given."""
    return con.execute("""
        SELECT t.task_id, t.name, t.dataset, t.mode, t.state, count(DISTINCT u.unit) AS units, t.per_item AS k,
               (SELECT count(DISTINCT annotator) FROM task_answers a WHERE a.task_id = t.task_id
                AND a.kind IN ('rating', 'vote')) AS annotators,
               (SELECT count(*) FROM task_answers a WHERE a.task_id = t.task_id AND a.kind IN ('rating', 'vote'))
                AS answers,
               t.created_at
        FROM tasks t LEFT JOIN task_units u USING (task_id)
        WHERE ? OR t.state <> 'deleted'
        GROUP BY ALL ORDER BY t.task_id
    """, [include_deleted]).df()


def units(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    return con.execute("SELECT unit, item_id, track, model_a, model_b FROM task_units WHERE task_id = ? ORDER BY unit",
                       [task_id]).df()


def answers(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    return con.execute("SELECT answer_id, unit, annotator, dimension, value, kind, comment, seconds, given_at "
                       "FROM task_answers WHERE task_id = ? ORDER BY answer_id", [task_id]).df()


def latest(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    """The answers that count: the latest rating or vote per unit, annotator and dimension, with the unit's
    item, track and models; `seconds` from the unit's claim to the first answer on it."""
    return con.execute("""
        SELECT a.unit, u.item_id, u.track, u.model_a, u.model_b, a.annotator, a.dimension, a.value, a.kind,
               a.given_at, a.seconds
        FROM task_answers a JOIN task_units u USING (task_id, unit)
        WHERE a.task_id = ? AND a.kind IN ('rating', 'vote')
        QUALIFY row_number() OVER (PARTITION BY a.unit, a.annotator, a.dimension ORDER BY a.answer_id DESC) = 1
        ORDER BY a.unit, a.annotator, a.dimension
    """, [task_id]).df()


def mine(con: duckdb.DuckDBPyConnection, task_id: int, unit: int, annotator: str) -> dict[str, float]:
    """The latest value this annotator gave per dimension on one unit."""
    return dict(con.execute("""
        SELECT dimension, arg_max(value, answer_id) FROM task_answers
        WHERE task_id = ? AND unit = ? AND annotator = ? AND kind IN ('rating', 'vote') GROUP BY dimension
    """, [task_id, unit, annotator]).fetchall())


def done_by(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> tuple[int, int]:
    """(units this annotator finished or skipped, units in the task), in one query."""
    return con.execute("""
        SELECT (SELECT count(*) FROM (
                    SELECT unit FROM task_answers WHERE task_id = ? AND annotator = ? GROUP BY unit
                    HAVING count(DISTINCT dimension) FILTER (WHERE kind IN ('rating', 'vote')) >= ?
                        OR bool_or(kind = 'skip'))),
               (SELECT count(*) FROM task_units WHERE task_id = ?)
    """, [task.task_id, annotator, len(task.dimensions), task.task_id]).fetchall()[0]


def order_for(task: Task, annotator: str, n_units: int) -> np.ndarray:
    """The annotator's own order of the task's units (1-based), seeded by the task and the name."""
    return np.random.default_rng(_seed(task.seed, "order", annotator)).permutation(n_units) + 1


def swapped(task: Task, annotator: str, unit: int) -> bool:
    """Pairwise: whether this annotator sees model_b on the left for this unit (randomised, but stable)."""
    return bool(np.random.default_rng(_seed(task.seed, "side", annotator, unit)).integers(2))


def _seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()[:8], "little")


def check_annotator(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ValueError("an annotator needs a name")
    if len(name) > MAX_NAME:
        raise ValueError(f"an annotator's name has at most {MAX_NAME} characters")
    return name


def progress(con: duckdb.DuckDBPyConnection, task: Task) -> pd.DataFrame:
    """Per annotator: units finished (every dimension answered, or skipped), flagged, median seconds per unit."""
    frame = con.execute("""
        WITH per_unit AS (
            SELECT annotator, unit,
                   count(DISTINCT dimension) FILTER (WHERE kind IN ('rating', 'vote')) AS dims,
                   bool_or(kind = 'skip') AS skipped, bool_or(kind = 'flag') AS flagged,
                   min(seconds) FILTER (WHERE kind IN ('rating', 'vote')) AS seconds
            FROM task_answers WHERE task_id = ? GROUP BY ALL)
        SELECT annotator, count(*) FILTER (WHERE dims >= ? OR skipped) AS done,
               count(*) FILTER (WHERE skipped) AS skipped, count(*) FILTER (WHERE flagged) AS flagged,
               median(seconds) AS median_seconds
        FROM per_unit GROUP BY annotator ORDER BY annotator
    """, [task.task_id, len(task.dimensions)]).df()
    return frame


def _status(con, task: Task) -> pd.DataFrame:
    """Per unit and annotator: finished (all dimensions or a skip), started, last claim."""
    return con.execute("""
        SELECT unit, annotator,
               count(DISTINCT dimension) FILTER (WHERE kind IN ('rating', 'vote')) AS dims,
               bool_or(kind = 'skip') AS skipped,
               max(given_at) FILTER (WHERE kind = 'claim') AS claimed_at
        FROM task_answers WHERE task_id = ? GROUP BY ALL
    """, [task.task_id]).df()


def next_unit(con: duckdb.DuckDBPyConnection, task: Task, annotator: str, *, now: datetime | None = None) -> int | None:
    """The unit this annotator rates next, claimed for them (None: nothing left for them). One transaction:
    the check that fewer than K others hold the unit and the claim cannot interleave with another's."""
    annotator = check_annotator(annotator)
    now = now or datetime.now()
    n = con.execute("SELECT count(*) FROM task_units WHERE task_id = ?", [task.task_id]).fetchall()[0][0]
    with transaction(con):
        _writable(con, task.task_id)
        status = _status(con, task)
        full = len(task.dimensions)
        fresh = status["claimed_at"].notna() & (status["claimed_at"] > now - CLAIM_TTL)
        ours = status["annotator"] == annotator
        others = status[~ours & ~status["skipped"].astype(bool) & ((status["dims"] > 0) | fresh)]
        held = others.groupby("unit")["annotator"].nunique().to_dict()
        order = [int(u) for u in order_for(task, annotator, n)]
        over = status["skipped"].astype(bool) | (status["dims"] >= full)
        finished = set(status.loc[ours & over, "unit"].astype(int))
        # theirs to resume first: started, or shown to them recently
        started = set(status.loc[ours & ~over & ((status["dims"] > 0) | fresh), "unit"].astype(int))
        choice = next((u for u in order if u in started), None)
        if choice is None:
            choice = next((u for u in order if u not in finished and held.get(u, 0) < task.per_item), None)
        if choice is not None:
            _insert(con, task.task_id, choice, annotator, None, None, "claim", None, None, now)
    return choice


def units_of(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> list[int]:
    """The units this annotator has answered or skipped, in the order they first answered them (for "back")."""
    return [int(u) for (u,) in con.execute("""
        SELECT unit FROM task_answers WHERE task_id = ? AND annotator = ? AND kind IN ('rating', 'vote', 'skip')
        GROUP BY unit ORDER BY min(answer_id)""", [task.task_id, annotator]).fetchall()]


def answer(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str, dimension: str, value: float,
           *, now: datetime | None = None) -> int:
    """One rating (absolute) or vote (pairwise: 1 = model_a, 0 = model_b, 0.5 = tie) in its own transaction,
    and the human rating or pairwise judgment it stands for (replacing this annotator's earlier one)."""
    annotator = check_annotator(annotator)
    dim = next((d for d in task.dimensions if d.dimension == dimension), None)
    if dim is None:
        raise ValueError(f"task {task.task_id} does not rate {dimension!r}; it rates "
                         f"{', '.join(d.dimension for d in task.dimensions)}")
    if task.mode == "absolute" and not (dim.min <= value <= dim.max):
        raise ValueError(f"{dimension} is rated from {dim.min:g} to {dim.max:g}, got {value:g}")
    if task.mode == "pairwise" and (value not in WINNERS.values() or (value == 0.5 and not task.ties)):
        raise ValueError("a vote is model_a (1), model_b (0)" + (" or a tie (0.5)" if task.ties else ""))
    now = now or datetime.now()
    row = con.execute("SELECT item_id, track, model_a, model_b FROM task_units WHERE task_id = ? AND unit = ?",
                      [task.task_id, unit]).fetchall()
    if not row:
        raise ValueError(f"task {task.task_id} has no unit {unit}")
    item_id, track, model_a, model_b = row[0]
    with transaction(con):
        _writable(con, task.task_id)
        shown = con.execute("SELECT max(given_at) FROM task_answers WHERE task_id = ? AND unit = ? AND annotator = ? "
                            "AND kind = 'claim'", [task.task_id, unit, annotator]).fetchall()[0][0]
        seconds = (now - shown).total_seconds() if shown else None
        kind = "rating" if task.mode == "absolute" else "vote"
        answer_id = _insert(con, task.task_id, unit, annotator, dimension, float(value), kind, None, seconds, now)
        bump_revision(con, task.dataset)
        if task.mode == "absolute":
            con.execute("DELETE FROM human_ratings WHERE origin = ? AND item_id = ? AND model = ? AND annotator = ? "
                        "AND dimension = ?", [task.origin, item_id, model_a, annotator, dimension])
            con.execute("INSERT INTO human_ratings (dataset, track, target, item_id, model, annotator, dimension, score, "
                        "origin) VALUES (?, ?, 'response', ?, ?, ?, ?, ?, ?)",
                        [task.dataset, track, item_id, model_a, annotator, dimension, float(value), task.origin])
        else:
            winner = {1.0: "model_1", 0.0: "model_2", 0.5: "tie"}[float(value)]
            con.execute("INSERT OR REPLACE INTO pairwise_judgments (dataset, track, item_id, model_1, model_2, judge, "
                        "prompt, g1_winner, g2_winner, origin, dimension, source) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'human')",
                        [task.dataset, track, item_id, model_a, model_b, annotator, task.origin, winner, winner,
                         f"{task.origin} unit {unit}", dimension])
    return answer_id


def skip(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str) -> int:
    """This annotator passes on the unit (another takes it); their answers on it, if any, still count."""
    with transaction(con):
        _writable(con, task.task_id)
        return _insert(con, task.task_id, unit, check_annotator(annotator), None, None, "skip", None, None, datetime.now())


def flag(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str, comment: str) -> int:
    """A comment on the unit for whoever runs the task (stored as text, at most MAX_COMMENT characters)."""
    comment = (comment or "").strip()
    if not comment:
        raise ValueError("a flag needs a comment saying what is wrong")
    if len(comment) > MAX_COMMENT:
        raise ValueError(f"a comment has at most {MAX_COMMENT} characters, this one {len(comment)}")
    with transaction(con):
        _writable(con, task.task_id)
        return _insert(con, task.task_id, unit, check_annotator(annotator), None, None, "flag", comment, None,
                       datetime.now())


def set_state(con: duckdb.DuckDBPyConnection, task_id: int, state: str) -> None:
    """Close (no more answers) or reopen a task."""
    task = get(con, task_id)
    if task.state == "deleted":
        raise TaskClosed(f"task {task_id} was deleted (submission: `evalcore restore` brings it back)")
    with transaction(con):
        bump_revision(con)
        con.execute("UPDATE tasks SET state = ? WHERE task_id = ?", [state, task_id])


def delete(con: duckdb.DuckDBPyConnection, task_id: int, *, uploader: str | None = None) -> int:
    """Set the task's ratings and votes aside (restorable with `evalcore restore <submission>`) and mark it
    deleted; its answers stay in task_answers. Returns the submission's id."""
    task = get(con, task_id)
    if task.state == "deleted":
        raise TaskClosed(f"task {task_id} is deleted already")
    scope = {"responses": False, "ratings": "origin", "scores": "none", "origin": task.origin}
    models = sorted(set(units(con, task_id)[["model_a", "model_b"]].stack().dropna()))
    with transaction(con):
        bump_revision(con)
        sid = history.record(con, kind="delete", dataset=task.dataset, models=models, tracks=[], scope=scope,
                             uploader=uploader or history.current_user())
        for model in models:
            history.run_statements(con, history.set_aside(task.dataset, model, None, scope), sid)
        con.execute("UPDATE tasks SET state = 'deleted', deleted_by = ? WHERE task_id = ?", [sid, task_id])
    return sid


def _writable(con, task_id: int) -> None:
    state = con.execute("SELECT state FROM tasks WHERE task_id = ?", [task_id]).fetchall()
    if not state:
        raise ValueError(f"no task {task_id}")
    if state[0][0] != "open":
        raise TaskClosed(f"task {task_id} is {state[0][0]}: it takes no more answers"
                         + (" (reopen it with `evalcore task reopen`)" if state[0][0] == "closed" else ""))


def _insert(con, task_id, unit, annotator, dimension, value, kind, comment, seconds, now) -> int:
    answer_id = con.execute("SELECT coalesce(max(answer_id), 0) + 1 FROM task_answers").fetchall()[0][0]
    con.execute("INSERT INTO task_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [answer_id, task_id, unit, annotator, dimension, value, kind, comment, seconds, now])
    return int(answer_id)
