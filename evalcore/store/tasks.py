"""Rating tasks as stored: a task, its units, and every answer annotators give (append-only), with the rows
those answers stand for elsewhere: an absolute task's latest rating per unit, annotator and dimension is a
human rating (origin 'task:<id>'), a pairwise task's latest vote is a pairwise judgment (source 'human').

Each answer is written when it is given, in its own short transaction, so a closed tab, a restart or a crash
loses nothing submitted. Who rates which unit: every annotator walks the units in their own seeded order and
gets the first one that they have not finished and that fewer than K other people hold (a person holds a
unit by an answer on it, or for CLAIM_TTL by being shown it); the check and the claim are one transaction.

People, not names: two names are one person when their keys are equal (evalcore.core.text.identity_key), so
'carol' and 'Carol' hold one place. K is a hard limit where answers are written: a first answer on a unit
that K other people have answered is refused (UnitFull), whatever the person's screen still showed (a claim
that lapsed, a unit reached by Back). A skip gives the place up: the skipper's answers on the unit stop
counting (they stay in the unit's history; going Back to the unit and answering again takes a place again
while one is free). A person rates a response (or votes on a pair) on a dimension once in the whole store:
a unit whose response they already rated elsewhere (another task, an imported file) is not offered to them,
and such an answer is refused (RatedElsewhere)."""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pandas as pd

from evalcore.core import names
from evalcore.core.errors import StoreError
from evalcore.core.i18n import EN, LANGS, N_, _, current, ngettext
from evalcore.core.options import TASK_LEVELS, TASK_MAX_SEED, TASK_MODES, TASK_SAMPLINGS
from evalcore.core.seeds import seed
from evalcore.core.text import bad_character, identity_key, invisible, lookalike_letters, skeleton
from evalcore.store import history
from evalcore.store.annotators import CROWD_NAME, check_name
from evalcore.store.transactions import bump_revision, next_id, transaction

MODES = TASK_MODES
LEVELS = TASK_LEVELS
RATED = {"response": "item_id", "dialogue": "dialogue_id"}   # the human_ratings column an absolute unit's item_id is
SAMPLINGS = TASK_SAMPLINGS
WINNERS = {"a": 1.0, "b": 0.0, "tie": 0.5}
CLAIM_TTL = timedelta(minutes=30)  # a unit shown and left unanswered this long goes to someone else
MAX_COMMENT = 2000                 # characters of a flag's comment
MAX_TASK_NAME = 120                # characters of a task's name
MAX_GUIDELINES = 5000              # characters of a task's guidelines
MAX_SEED = TASK_MAX_SEED


AN_IMPORT = N_("an import")   # where a person rated a response already, when no task of the store holds it


class TaskClosed(StoreError):
    """A write to a task that is closed or deleted."""


class UnitFull(ValueError):
    """An answer refused: K other people answered the unit first (nothing was stored)."""


class RatedElsewhere(ValueError):
    """An answer refused: this person rated that response (or voted on that pair) on that dimension already."""


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
    level: str = "response"   # the rated unit: a response, or a whole dialogue (its model's side, as MSDE rated)
    judge: str | None = None  # active sampling: the predictor whose uncertainty chose the units
    lang: str = "en"          # the task's language (zh-CN or en): its people's pages, definitions and questions

    @property
    def origin(self) -> str:
        return f"task:{self.task_id}"

    @property
    def target(self) -> str:
        """What an absolute answer rates, as human_ratings.target names it."""
        return "dialogue" if self.level == "dialogue" else "response"


def create(con: duckdb.DuckDBPyConnection, *, name: str, dataset: str, mode: str, dimensions: list[Dimension],
           per_item: int, units: pd.DataFrame, ties: bool = True, guidelines: str = "", seed: int = 0,
           sampling: str = "stratified", created_by: str | None = None, level: str = "response",
           judge: str | None = None, lang: str = "en") -> int:
    """Store a task and its units (columns item_id, track, model_a, model_b; at dialogue level also dialogue_a and
    dialogue_b; where the sampling knows it, `probability`: the unit's inclusion probability in its track and
    model) in one transaction; its id. A dialogue unit's item_id is its dialogue (absolute) or the pair of
    dialogues (pairwise: 'dialogue_a|dialogue_b', so two pairs on one scenario stay apart). `judge`: the predictor
    that steered an active task. `lang`: the task's language, one of evalcore.core.i18n.LANGS."""
    check_lang(lang)
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; known: {', '.join(LEVELS)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    if per_item < 1:
        raise ValueError(f"--per-item must be at least 1, got {per_item}")
    check_settings(name=name, guidelines=guidelines, seed=seed)
    check_lookalike(con, "tasks", name)
    if units.empty:
        raise ValueError("no units to rate: the dataset has no responses for the tracks and models asked for")
    with transaction(con):
        bump_revision(con)
        task_id = next_id(con, "tasks", "task_id")
        con.execute("INSERT INTO tasks (task_id, name, dataset, mode, dimensions, per_item, ties, guidelines, seed, sampling, "
                    "access_code, state, created_by, created_at, deleted_by, level, judge, lang) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, NULL, ?, ?, ?)",
                    [task_id, name, dataset, mode, json.dumps([d.__dict__ for d in dimensions], ensure_ascii=False),
                     per_item, ties, guidelines, seed, sampling, secrets.token_hex(3), created_by,
                     datetime.now().replace(microsecond=0), level, judge, lang])
        for d in dimensions:   # the ratings to come are on these scales (the store's other readers know them)
            con.execute("INSERT OR IGNORE INTO dimensions VALUES (?, ?, ?, ?, ?)",
                        [dataset, d.dimension, d.min, d.max, d.description or None])
        frame = units.reset_index(drop=True).assign(task_id=task_id, unit=lambda f: f.index + 1)
        frame = frame.reindex(columns=["task_id", "unit", "item_id", "track", "model_a", "model_b", "dialogue_a",
                                       "dialogue_b", "probability"])
        con.register("_evalcore_units", frame)
        try:
            con.execute("INSERT INTO task_units BY NAME SELECT * FROM _evalcore_units")
        finally:
            con.unregister("_evalcore_units")
    return int(task_id)


def check_lang(lang: str) -> None:
    """ValueError unless `lang` is a task's language as stored: one of evalcore.core.i18n.LANGS, spelled as there."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; known: {', '.join(LANGS)}")


def check_settings(*, name: str, guidelines: str, seed: int) -> None:
    """ValueError naming what is wrong with a new task's name, guidelines or seed (before anything is sampled)."""
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"--seed must lie in 0..{MAX_SEED:,} (a task's seed is stored as a 32-bit integer), "
                         f"got {seed:,}")
    for what, text, most in (("name", name, MAX_TASK_NAME), ("guidelines", guidelines, MAX_GUIDELINES)):
        bad = bad_character(text or "")
        if bad:
            raise ValueError(f"a task's {what} may not hold a {bad}")
    hidden = invisible(name or "")
    if hidden:   # 'Pilot' with a zero-width space is shown exactly as 'Pilot'
        raise ValueError(f"a task's name may not hold an invisible character (U+{ord(hidden[0]):04X} at position "
                         f"{(name or '').index(hidden[0]) + 1}): type it again without it")
        if len(text or "") > most:
            raise ValueError(f"a task's {what} has at most {most:,} characters, got {len(text):,}")


# a kind of task's names, for check_lookalike (table names are not parameters: one fixed query per kind)
_NAMES = {"tasks": "SELECT task_id, name FROM tasks ORDER BY task_id",
          "chat_tasks": "SELECT task_id, name FROM chat_tasks ORDER BY task_id"}


def check_lookalike(con: duckdb.DuckDBPyConnection, table: str, name: str) -> None:
    """ValueError when a new task's `name` looks the same as a stored task's (equal skeletons, core.text: a Cyrillic
    'а' for a Latin 'a') without being the same name (their identity keys differ): a second task shown exactly like
    the first is refused as taken, as a look-alike annotator or endpoint is. The same name again stays allowed, as
    before (tasks are told apart by their ids); `table`: 'tasks' (rating tasks) or 'chat_tasks'."""
    mine, key = skeleton(name), identity_key(name)
    for task_id, other in con.execute(_NAMES[table]).fetchall():
        if skeleton(other) == mine and identity_key(other) != key:
            letters = ", ".join(lookalike_letters(name) or lookalike_letters(other))
            raise ValueError(f"the name {name!r} looks the same as task {task_id}'s {other!r}, which is taken (it is "
                             f"written with other letters: {letters}): choose another name")


def get(con: duckdb.DuckDBPyConnection, task_id: int) -> Task:
    rows = con.execute("SELECT task_id, name, dataset, mode, dimensions, per_item, ties, guidelines, seed, sampling, "
                       "access_code, state, created_by, created_at, coalesce(level, 'response'), judge, "
                       "coalesce(lang, 'en') FROM tasks WHERE task_id = ?", [task_id]).fetchall()
    if not rows:
        known = [str(t) for (t,) in con.execute("SELECT task_id FROM tasks ORDER BY 1").fetchall()]
        names.require("task", str(task_id), known)
    r = rows[0]
    dims = tuple(Dimension(**d) for d in json.loads(r[4]))
    return Task(r[0], r[1], r[2], r[3], dims, r[5], r[6], r[7] or "", r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15],
                r[16])


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
    """The task's units in order, each with its inclusion probability in its track and model (`probability`,
    NaN where the sampling does not know it: see migration 21)."""
    return con.execute("SELECT unit, item_id, track, model_a, model_b, dialogue_a, dialogue_b, probability "
                       "FROM task_units WHERE task_id = ? ORDER BY unit", [task_id]).df()


def unit_numbers(con: duckdb.DuckDBPyConnection, task_id: int) -> list[int]:
    """The task's unit numbers (1 to its number of units)."""
    return [int(u) for (u,) in con.execute("SELECT unit FROM task_units WHERE task_id = ? ORDER BY unit",
                                           [task_id]).fetchall()]


def answers(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    return con.execute("SELECT answer_id, unit, annotator, dimension, value, kind, comment, seconds, given_at "
                       "FROM task_answers WHERE task_id = ? ORDER BY answer_id", [task_id]).df()


# The task's answers, each marked `live` when it still counts: a rating or vote given after the person's last
# skip of the unit (a skip gives the place up, and with it the answers given before it).
LIVE = """
    SELECT *, answer_id > coalesce(max(answer_id) FILTER (WHERE kind = 'skip') OVER (PARTITION BY unit, annotator), 0)
              AS live
    FROM task_answers WHERE task_id = ?"""
# the same for one annotator's answers (their own skips are all that decide which of them count)
LIVE_OF = LIVE + " AND annotator = ?"


def latest(con: duckdb.DuckDBPyConnection, task_id: int, *, gold: bool = False, excluded: bool = False) -> pd.DataFrame:
    """The answers that count: the latest live rating or vote per unit, annotator and dimension, with the
    unit's item, track and models; `seconds` from the unit's claim to the answer. A crowd study's gold units
    (known answers, checking the workers: evalcore.store.crowd) are left out unless `gold`, and the answers of the
    workers it excluded unless `excluded` (their ratings have left human_ratings too)."""
    frame = con.execute(f"""
        WITH a AS ({LIVE})
        SELECT a.unit, u.item_id, u.track, u.model_a, u.model_b, a.annotator, a.dimension, a.value, a.kind,
               a.given_at, a.seconds
        FROM a JOIN task_units u USING (task_id, unit)
        WHERE a.kind IN ('rating', 'vote') AND a.live
        QUALIFY row_number() OVER (PARTITION BY a.unit, a.annotator, a.dimension ORDER BY a.answer_id DESC) = 1
        ORDER BY a.unit, a.annotator, a.dimension
    """, [task_id]).df()
    if not gold:
        frame = frame[frame["model_a"] != GOLD_MODEL]
    if not excluded:
        frame = frame[~frame["annotator"].isin(_crowd_of(con, task_id)[1])]
    return frame.reset_index(drop=True)


def _own(con, task_id: int, annotator: str, unit: int | None = None) -> list[tuple]:
    """This annotator's ratings, votes and skips on the task (on one unit), (unit, answer_id, dimension, value,
    kind) in the order given: a plain filter, read on every click of their page. Which of them count (a rating given
    after their last skip of the unit: LIVE) is decided in Python by live(); over one person's few rows that is
    cheaper than the window query."""
    return con.execute("SELECT unit, answer_id, dimension, value, kind FROM task_answers WHERE task_id = ? "
                       "AND annotator = ? AND kind IN ('rating', 'vote', 'skip')"
                       + (" AND unit = ?" if unit is not None else "") + " ORDER BY answer_id",
                       [task_id, annotator] + ([unit] if unit is not None else [])).fetchall()


def live(rows: list[tuple]) -> list[tuple]:
    """Of one annotator's rows (_own, in order), the ratings and votes that count: each given after their last skip
    of its unit (LIVE, for one person)."""
    last_skip = {unit: answer_id for unit, answer_id, __, __, kind in rows if kind == "skip"}
    return [r for r in rows if r[4] != "skip" and r[1] > last_skip.get(r[0], 0)]


def standing(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str) -> tuple[dict[str, float], list[int]]:
    """(mine: their latest answers on `unit` that count; units_of: the units they answered or skipped, in order), from
    one query: what a rater's page draws on every click."""
    rows = _own(con, task.task_id, annotator)
    given = {dimension: value for u, __, dimension, value, __ in live(rows) if u == unit}
    return given, list(dict.fromkeys(int(u) for u, *__ in rows))


def mine(con: duckdb.DuckDBPyConnection, task_id: int, unit: int, annotator: str) -> dict[str, float]:
    """The latest value this annotator gave per dimension on one unit (that still counts)."""
    return {dimension: value for __, __, dimension, value, __ in live(_own(con, task_id, annotator, unit))}


def done_by(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> tuple[int, int]:
    """(units this annotator finished or skipped, units in the task), in one query (the page asks on every click)."""
    return con.execute(f"""
        WITH a AS ({LIVE_OF}),
        per_unit AS (SELECT unit, count(DISTINCT dimension) FILTER (WHERE kind IN ('rating', 'vote') AND live) AS dims,
                            bool_or(kind = 'skip') AS skipped FROM a GROUP BY unit)
        SELECT (SELECT count(*) FROM per_unit WHERE dims >= ? OR (skipped AND dims = 0)),
               (SELECT count(*) FROM task_units WHERE task_id = ?)
    """, [task.task_id, annotator, len(task.dimensions), task.task_id]).fetchall()[0]


def finished_units(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> list[int]:
    """The units this annotator finished by answering every dimension (answers that still count), in the order they
    first answered them (their first answer that counts): one plain query (a crowd worker's page asks on every
    click)."""
    dims: dict[int, set[str]] = {}
    for unit, __, dimension, __, __ in live(_own(con, task.task_id, annotator)):   # in answer order
        dims.setdefault(int(unit), set()).add(dimension)
    return [unit for unit, given in dims.items() if len(given) >= len(task.dimensions)]


def order_for(task: Task, annotator: str, n_units: int) -> np.ndarray:
    """The annotator's own order of the task's units (1-based), seeded by the task and the name."""
    return np.random.default_rng(seed(task.seed, "order", annotator)).permutation(n_units) + 1


def swapped(task: Task, annotator: str, unit: int) -> bool:
    """Pairwise: whether this annotator sees model_b on the left for this unit (randomised, but stable)."""
    return bool(np.random.default_rng(seed(task.seed, "side", annotator, unit)).integers(2))



def progress(con: duckdb.DuckDBPyConnection, task: Task) -> pd.DataFrame:
    """Per annotator: units finished (every dimension answered, or skipped), skipped, flagged, median seconds
    per unit finished by answering: from the unit being shown to its last answer (a unit is finished by its last
    dimension's answer; the time to its first one left out the rest of the unit's dimensions)."""
    status = _status(con, task)
    answered = ~status["skipped"] & (status["dims"] >= len(task.dimensions))
    finished = status["skipped"] | answered
    frame = status.assign(done=finished, seconds=status["seconds"].where(answered)).groupby("annotator", sort=True).agg(
        done=("done", "sum"), skipped=("skipped", "sum"), flagged=("flagged", "sum"),
        median_seconds=("seconds", "median")).reset_index()
    return frame.astype({"done": int, "skipped": int, "flagged": int})


def _status(con, task: Task) -> pd.DataFrame:
    """Per unit and annotator (as written): dimensions answered that count, skipped (gave the unit up and
    answered nothing since), flagged, last claim, seconds from the unit being shown to the last answer that counts."""
    frame = con.execute(f"""
        WITH a AS ({LIVE})
        SELECT unit, annotator,
               count(DISTINCT dimension) FILTER (WHERE kind IN ('rating', 'vote') AND live) AS dims,
               bool_or(kind = 'skip') AS ever_skipped, bool_or(kind = 'flag') AS flagged,
               max(given_at) FILTER (WHERE kind = 'claim') AS claimed_at,
               arg_max(seconds, answer_id) FILTER (WHERE kind IN ('rating', 'vote') AND live) AS seconds
        FROM a GROUP BY ALL
    """, [task.task_id]).df()
    return frame.assign(skipped=frame["ever_skipped"].astype(bool) & (frame["dims"] == 0),
                        flagged=frame["flagged"].astype(bool))


def _elsewhere(con, task: Task, annotator: str) -> dict[int, str]:
    """{unit: where}: the task's units whose response (absolute) or pair (pairwise) this person already rated
    on one of the task's dimensions somewhere other than this task (they are not offered to them)."""
    params = [task.dataset, task.task_id, task.origin, [d.dimension for d in task.dimensions]]
    if task.mode == "absolute":
        rows = con.execute(f"""
            SELECT u.unit, h.annotator, h.origin FROM task_units u JOIN human_ratings h
              ON h.dataset = ? AND h.{RATED[task.target]} = u.item_id AND h.model = u.model_a AND h.target = '{task.target}'
            WHERE u.task_id = ? AND h.origin IS DISTINCT FROM ? AND list_contains(?, h.dimension)""", params).fetchall()
    else:
        rows = con.execute("""
            SELECT u.unit, j.judge, j.prompt FROM task_units u JOIN pairwise_judgments j
              ON j.dataset = ? AND j.item_id = u.item_id AND j.source = 'human'
             AND ((j.model_1 = u.model_a AND j.model_2 = u.model_b) OR (j.model_1 = u.model_b AND j.model_2 = u.model_a))
            WHERE u.task_id = ? AND j.prompt <> ? AND list_contains(?, j.dimension)""", params).fetchall()
    me = identity_key(annotator)
    return {int(u): origin or "an import" for u, who, origin in rows if identity_key(who) == me}


def next_unit(con: duckdb.DuckDBPyConnection, task: Task, annotator: str, *, now: datetime | None = None,
              among: set[int] | None = None) -> int | None:
    """The unit this annotator rates next, claimed for them (None: nothing left for them now; `waiting` says
    whether some unit may free up). One transaction: the check that fewer than K other people hold the unit
    and the claim cannot interleave with another's. `among`: only these units (a crowd worker's next real unit, or
    their next gold one)."""
    annotator = check_name(annotator)
    now = now or datetime.now()
    units = unit_numbers(con, task.task_id)
    with transaction(con):
        _writable(con, task.task_id)
        plan = _plan(con, task, annotator, now, units)
        order = [int(u) for u in order_for(task, annotator, len(units)) if among is None or int(u) in among]
        # theirs to resume first: started, or shown to them recently (and not filled by others meanwhile)
        choice = next((u for u in order if u in plan["started"]), None)
        if choice is None:
            choice = next((u for u in order if u in plan["open"]), None)
        if choice is not None:
            _insert(con, task.task_id, choice, annotator, None, None, "claim", None, None, now)
    return choice


def _plan(con, task: Task, annotator: str, now: datetime, units: list[int] | None = None) -> dict[str, set[int] | dict]:
    """Where this person stands on each unit: `started` (theirs to resume), `open` (free for them), `held`
    ({unit: when the first claim that keeps them out lapses}: units not full, kept by others' recent claims).
    Plain Python over the task's (unit, annotator) rows: the next-unit draw runs on every finished unit."""
    # LIVE as a join on each person's last skip of a unit, not its window: the same rows, in two thirds of the time
    rows = con.execute("""
        SELECT unit, annotator,
               count(DISTINCT dimension) FILTER (WHERE kind IN ('rating', 'vote')
                                                 AND answer_id > coalesce(s.last_skip, 0)) AS dims,
               s.last_skip IS NOT NULL AS ever_skipped, max(given_at) FILTER (WHERE kind = 'claim') AS claimed_at
        FROM task_answers a
        LEFT JOIN (SELECT unit, annotator, max(answer_id) AS last_skip FROM task_answers
                   WHERE task_id = ? AND kind = 'skip' GROUP BY ALL) s USING (unit, annotator)
        WHERE a.task_id = ? GROUP BY ALL""", [task.task_id, task.task_id]).fetchall()
    me, keys, full, since = identity_key(annotator), {}, len(task.dimensions), now - CLAIM_TTL
    gold, out, __ = _crowd(con, task)
    people: dict[tuple[int, str], list] = {}   # (unit, person) -> [dims, skipped, last claim]
    for unit, name, dims, ever_skipped, claimed in rows:
        if name in out:   # an excluded crowd worker holds no place: someone else rates the unit instead
            continue
        who = keys[name] if name in keys else keys.setdefault(name, identity_key(name))
        skipped = bool(ever_skipped) and dims == 0
        old = people.get((int(unit), who))
        if old is None:
            people[int(unit), who] = [dims, skipped, claimed]
        else:   # names that are one person: one row
            old[0], old[1] = max(old[0], dims), old[1] and skipped
            old[2] = max([c for c in (old[2], claimed) if c is not None], default=None)
    answered: dict[int, int] = {}   # unit -> others whose answers count
    held: dict[int, int] = {}       # unit -> others who answered it or look at it now
    lapse: dict[int, datetime] = {}
    over, mine = set(), {}
    for (unit, who), (dims, skipped, claimed) in people.items():
        fresh = claimed is not None and claimed > since
        if who == me:
            if skipped or dims >= full:
                over.add(unit)
            elif dims > 0 or fresh:
                mine[unit] = dims
        elif not skipped and (dims > 0 or fresh):
            held[unit] = held.get(unit, 0) + 1
            if dims > 0:
                answered[unit] = answered.get(unit, 0) + 1
            else:
                lapse[unit] = min(lapse.get(unit, claimed + CLAIM_TTL), claimed + CLAIM_TTL)
    away = over | set(_elsewhere(con, task, annotator))
    k = task.per_item
    started = {u for u, dims in mine.items() if u not in away and (dims > 0 or answered.get(u, 0) < k)}
    units = unit_numbers(con, task.task_id) if units is None else units
    free = {u for u in units if u not in away and (held.get(u, 0) < k or u in gold)}   # a gold unit: everyone's
    kept = {u: t for u, t in lapse.items() if u not in away and u not in free and answered.get(u, 0) < k}
    return {"started": started, "open": free, "held": kept}


GOLD_MODEL = "(gold)"   # a crowd study's gold unit's model_a (evalcore.store.crowd: its text is stored there)


def _share_refused(units: int | None, other_units: int) -> None:
    """A crowd worker answers on at most their study's units per worker (`units`; None: the task is no crowd study):
    an answer on one more unit is refused where it is written (the page only offers their share; a crafted request
    does not get past this)."""
    if units is not None and other_units >= units:
        raise UnitFull(_("You have rated the {n} units this study gives one worker: this answer was not stored.").format(
            n=units))


def _crowd(con, task: Task) -> tuple[set[int], set[str], int | None]:
    return _crowd_of(con, task.task_id)


def _crowd_of(con, task_id: int) -> tuple[set[int], set[str], int | None]:
    """(the task's gold units, its crowd workers excluded now, a crowd study's units per worker: None for a task that
    is no crowd study), in one query."""
    rows = con.execute("""
        SELECT 'gold', unit::VARCHAR FROM gold_units WHERE task_id = ?
        UNION ALL SELECT 'share', units::VARCHAR FROM crowd_studies WHERE kind = 'rating' AND task_id = ?
        UNION ALL SELECT 'out', annotator FROM crowd_decisions WHERE kind = 'rating' AND task_id = ?
        GROUP BY annotator HAVING arg_max(excluded, decision_id)""", [task_id, task_id, task_id]).fetchall()
    return ({int(v) for k, v in rows if k == "gold"}, {v for k, v in rows if k == "out"},
            next((int(v) for k, v in rows if k == "share"), None))


def waiting(con: duckdb.DuckDBPyConnection, task: Task, annotator: str, *,
            now: datetime | None = None) -> tuple[int, datetime | None]:
    """(units kept from this person only by others' recent claims, when the first of those claims lapses):
    what "nothing left for you" means while people are still looking at units (0, None: nothing will free)."""
    held = _plan(con, task, check_name(annotator), now or datetime.now())["held"]
    return len(held), (min(held.values()) if held else None)


def units_of(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> list[int]:
    """The units this annotator has answered or skipped, in the order they first answered them (for "back")."""
    return list(dict.fromkeys(int(unit) for unit, *__ in _own(con, task.task_id, annotator)))


@dataclass(frozen=True)
class Checks:
    """What an answer is checked against (_checks)."""
    holders: set[str]       # identity keys of the people whose answers on the unit count (who hold its places)
    where: str | None       # where else this person rated the unit's response or pair on the dimension
    share: int | None       # a crowd study's units per worker (None: the task is no crowd study)
    other_units: int        # units other than this one this person answered on
    shown: datetime | None  # when the unit was last shown to them (their last claim)


def _checks(con, task: Task, unit: int, annotator: str, dimension: str, item_id: str, model_a: str,
            model_b: str | None) -> Checks:
    """What an answer is checked against: who holds the unit's places, whether this person rated the unit's
    response or pair on `dimension` elsewhere, a crowd study's share and excluded workers, their other units, and
    when the unit was shown to them. Plain filters, the rest in Python: every click of a rater writes an answer, and
    a query's planning, not its rows, is what each costs (a window query three times a filter's)."""
    if task.mode == "absolute":
        elsewhere = (f"SELECT annotator, origin FROM human_ratings WHERE dataset = ? AND {RATED[task.target]} = ? "
                     f"AND model = ? AND target = '{task.target}' AND dimension = ? AND origin IS DISTINCT FROM ?")
        params = [task.dataset, item_id, model_a, dimension, task.origin]
    else:
        elsewhere = ("SELECT judge, prompt FROM pairwise_judgments WHERE dataset = ? AND item_id = ? AND source = 'human' "
                     "AND ((model_1 = ? AND model_2 = ?) OR (model_1 = ? AND model_2 = ?)) AND dimension = ? "
                     "AND prompt <> ?")
        params = [task.dataset, item_id, model_a, model_b, model_b, model_a, dimension, task.origin]
    me = identity_key(annotator)
    where = next((origin or AN_IMPORT for who, origin in con.execute(elsewhere, params).fetchall()
                  if identity_key(who) == me), None)
    rows = con.execute("SELECT annotator, answer_id, kind, given_at FROM task_answers WHERE task_id = ? AND unit = ? "
                       "AND kind IN ('rating', 'vote', 'skip', 'claim') ORDER BY answer_id", [task.task_id, unit]
                       ).fetchall()
    __, out, share = _crowd(con, task)
    last_skip = {who: answer_id for who, answer_id, kind, __ in rows if kind == "skip"}
    holders = {identity_key(who) for who, answer_id, kind, __ in rows
               if kind in ("rating", "vote") and answer_id > last_skip.get(who, 0) and who not in out}
    shown = max((at for who, __, kind, at in rows if kind == "claim" and who == annotator), default=None)
    other_units = 0
    if share is not None:
        other_units = len({u for u, __, __, __, kind in _own(con, task.task_id, annotator) if kind != "skip"} - {unit})
    return Checks(holders, where, share, other_units, shown)


def answer(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str, dimension: str, value: float,
           *, now: datetime | None = None) -> int:
    """One rating (absolute) or vote (pairwise: 1 = model_a, 0 = model_b, 0.5 = tie) in its own transaction,
    and the human rating or pairwise judgment it stands for (replacing this annotator's earlier one). Refused,
    with nothing stored, when K other people answered the unit first (UnitFull) or this person rated the
    response or pair on this dimension elsewhere (RatedElsewhere)."""
    annotator = check_name(annotator)
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
    gold = model_a == GOLD_MODEL   # a crowd study's gold unit: everyone answers it, and it is no human rating
    with transaction(con):
        _writable(con, task.task_id)
        checks = _checks(con, task, unit, annotator, dimension, item_id, model_a, model_b)
        holders, where = checks.holders, checks.where
        if CROWD_NAME.match(identity_key(annotator)):
            _share_refused(checks.share, checks.other_units)
        if gold:
            where = None
        elif identity_key(annotator) not in holders and len(holders) >= task.per_item:
            raise UnitFull(ngettext("Unit {unit} already has its {n} annotator, who answered it first: your answer "
                                    "was not stored.",
                                    "Unit {unit} already has its {n} annotators, who answered it first: your answer "
                                    "was not stored.", task.per_item).format(unit=unit, n=task.per_item))
        if where:
            said = (_("You rated this response on {dimension} already ({where}); a person rates it once, so this "
                      "answer was not stored.") if task.mode == "absolute" else
                    _("You rated this pair of responses on {dimension} already ({where}); a person rates it once, so "
                      "this answer was not stored."))
            raise RatedElsewhere(said.format(dimension=dimension, where=_(where) if where == AN_IMPORT else where))
        seconds = (now - checks.shown).total_seconds() if checks.shown else None
        kind = "rating" if task.mode == "absolute" else "vote"
        answer_id = _insert(con, task.task_id, unit, annotator, dimension, float(value), kind, None, seconds, now)
        bump_revision(con, task.dataset, catalog=False)   # an answer: the catalog is as it was
        if gold:
            pass
        elif task.mode == "absolute":
            column = RATED[task.target]
            con.execute(f"DELETE FROM human_ratings WHERE origin = ? AND {column} = ? AND model = ? AND annotator = ? "
                        "AND dimension = ?", [task.origin, item_id, model_a, annotator, dimension])
            con.execute(f"INSERT INTO human_ratings (dataset, track, target, {column}, model, annotator, dimension, "
                        "score, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [task.dataset, track, task.target, item_id, model_a, annotator, dimension, float(value),
                         task.origin])
        else:
            winner = {1.0: "model_1", 0.0: "model_2", 0.5: "tie"}[float(value)]
            con.execute("INSERT OR REPLACE INTO pairwise_judgments (dataset, track, item_id, model_1, model_2, judge, "
                        "prompt, g1_winner, g2_winner, origin, dimension, source) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'human')",
                        [task.dataset, track, item_id, model_a, model_b, annotator, task.origin, winner, winner,
                         f"{task.origin} unit {unit}", dimension])
    return answer_id


def skip(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str) -> int:
    """This annotator gives the unit up: another takes their place, and the answers they gave on it stop
    counting (they stay in the unit's history; Back to the unit and answering again takes a place again
    while one is free)."""
    annotator = check_name(annotator)
    row = con.execute("SELECT item_id, model_a, model_b FROM task_units WHERE task_id = ? AND unit = ?",
                      [task.task_id, unit]).fetchall()
    if not row:
        raise ValueError(f"task {task.task_id} has no unit {unit}")
    item_id, model_a, model_b = row[0]
    with transaction(con):
        _writable(con, task.task_id)
        given = mine(con, task.task_id, unit, annotator)
        answer_id = _insert(con, task.task_id, unit, annotator, None, None, "skip", None, None, datetime.now())
        if given:   # what they stood for elsewhere goes with them
            bump_revision(con, task.dataset, catalog=False)   # an answer: the catalog is as it was
            if task.mode == "absolute":
                con.execute(f"DELETE FROM human_ratings WHERE origin = ? AND {RATED[task.target]} = ? AND model = ? "
                            "AND annotator = ?", [task.origin, item_id, model_a, annotator])
            else:
                con.execute("DELETE FROM pairwise_judgments WHERE prompt = ? AND item_id = ? AND model_1 = ? "
                            "AND model_2 = ? AND judge = ? AND source = 'human'",
                            [task.origin, item_id, model_a, model_b, annotator])
    return answer_id


def flag(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str, comment: str) -> int:
    """A comment on the unit for whoever runs the task (stored as text, at most MAX_COMMENT characters)."""
    comment = (comment or "").strip()
    if not comment:
        raise ValueError(_("A flag needs a comment saying what is wrong."))
    if len(comment) > MAX_COMMENT:
        raise ValueError(_("A comment has at most {most} characters, this one {n}.").format(most=MAX_COMMENT,
                                                                                          n=len(comment)))
    bad = bad_character(comment)
    if bad:
        raise ValueError(_("A comment may not hold a {bad}.").format(bad=bad))
    annotator = check_name(annotator)
    with transaction(con):
        _writable(con, task.task_id)
        return _insert(con, task.task_id, unit, annotator, None, None, "flag", comment, None, datetime.now())


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
        raise TaskClosed((_("task {task} is {state}: it takes no more answers (reopen it with `evalcore task reopen`)")
                          if state[0][0] == "closed" else _("task {task} is {state}: it takes no more answers")).format(
            task=task_id, state=state_shown(state[0][0])))


def state_shown(state: str, spaced: bool = True) -> str:
    """A task's or conversation's state inside a refusal: as stored in English ('sent_back', or spaced: 'sent
    back'), in the words of the page's language elsewhere (a person's page: evalcore.core.i18n)."""
    if current() == EN:
        return state.replace("_", " ") if spaced else state
    return _(state.replace("_", " "))


STATES_SHOWN = (N_("closed"), N_("deleted"), N_("talking"), N_("ended"), N_("rated"), N_("accepted"),
                N_("sent back"))   # the states a refusal can name (state_shown), for the catalog


def _insert(con, task_id, unit, annotator, dimension, value, kind, comment, seconds, now) -> int:
    answer_id = next_id(con, "task_answers", "answer_id")
    con.execute("INSERT INTO task_answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [answer_id, task_id, unit, annotator, dimension, value, kind, comment, seconds, now])
    return int(answer_id)
