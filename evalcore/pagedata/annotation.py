"""What the Annotate and Rating tasks pages show and do: who an annotator is (the task's access code, then
their name and personal key, or their sign-in), a unit as they see it (context turn by turn, grounding, the
responses with the models' names hidden, in their own order), their answers so far, and the task's live
results. Writes go through evalcore.store.tasks, one short transaction per answer."""
from __future__ import annotations

import hmac
import json

import duckdb
import pandas as pd

from evalcore.analysis import bradley_terry
from evalcore.core.i18n import N_, _, ngettext
from evalcore.pagedata.share import link
from evalcore.pagedata.crowd import (  # noqa: F401  (the worker's pages read them here)
    crowd_check, crowd_checked, crowd_enter, crowd_outcome, crowd_questions)
from evalcore.services import crowd
from evalcore.services import tasks as service
from evalcore.store import annotators as people
from evalcore.store import crowd as crowd_store
from evalcore.store import tasks as stored
from evalcore.store.tasks import GOLD_MODEL, Task

NotThem = people.NotThem   # a name entered without its person's key (the page counts a wrong key as a guess)

SPEAKERS = ("User", "Bot")   # the context alternates, ending with the user's turn the response answers
MODES = {"absolute": N_("absolute"), "pairwise": N_("pairwise")}   # a task's mode as its people are shown it
# the kinds of grounding a unit can carry, as a page names them (any other kind is shown as the data names it)
GROUNDING = {"knowledge": N_("knowledge"), "persona": N_("persona"), "goal": N_("goal"),
             "user_profile": N_("user_profile"), "situation": N_("situation")}


def open_tasks(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The open tasks: id, name, mode, units (one light query: every click of an annotator reruns the page)."""
    return con.execute("""
        SELECT t.task_id, t.name, t.mode, (SELECT count(*) FROM task_units u WHERE u.task_id = t.task_id) AS units
        FROM tasks t WHERE t.state = 'open' ORDER BY t.task_id""").df()


def blind_label(task_id: int, mode: str, units: int | None = None) -> str:
    """What a rater is shown for a task: its number, mode and size, never its name. A name is free text the lab
    wrote ("GPT-4 vs Llama, pilot") and can name a model in ways no check would catch; a label made of the id
    and the mode cannot (the chat tasks' people see theirs the same way: services.chats.blind_label)."""
    shown = _(MODES.get(mode, mode))
    if units is None:
        return _("Rating task {task} ({mode})").format(task=task_id, mode=shown)
    return _("Rating task {task} ({mode}, {units} units)").format(task=task_id, mode=shown, units=units)


def all_tasks(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return stored.listing(con)


def task(con: duckdb.DuckDBPyConnection, task_id: int) -> Task | None:
    """The task, or None for an id the store does not have (a store that cannot be read raises StoreError)."""
    try:
        return stored.get(con, task_id)
    except ValueError:   # an unknown id in a link (names.UnknownName): the page says so
        return None


def personal_link(base: str, task_id: int, name: str, key: str) -> str:
    """The link an annotator keeps: the Annotate page of the task with their name and personal key filled in
    (the page takes both out of the address bar at once, and never puts them in the link it shares)."""
    return link(base, "annotate", {"task": str(task_id), "name": name, "key": key})


def code_ok(task: Task, code: str) -> bool:
    """The access code an annotator gives with their name (compared in constant time)."""
    return hmac.compare_digest((code or "").strip().lower(), task.access_code.lower())


def enter(con: duckdb.DuckDBPyConnection, name: str, key: str | None) -> tuple[str, str | None]:
    """Who is entering: (their name as stored, their new personal key to show once, or None). A new name is
    registered and gets its key; a taken one needs its key (ValueError saying why not). The one place a
    personal key is checked (a throttle on guesses wraps this call)."""
    return people.enter(con, name, key)


def signed_in(con: duckdb.DuckDBPyConnection, address: str) -> str:
    """The annotator a signed-in address is (the deployment's sign-in vouches for them)."""
    return people.signed_in(con, address)


def reset_key(con: duckdb.DuckDBPyConnection, name: str) -> tuple[str, str]:
    """(name, new personal key) for an annotator who lost theirs; the old key stops working."""
    return people.reset(con, name)


def annotators(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return people.listing(con)


def next_unit(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> int | None:
    return stored.next_unit(con, task, annotator)


def nothing_left(con: duckdb.DuckDBPyConnection, task: Task, annotator: str) -> str:
    """Why no unit is drawn for this annotator: every unit has its annotators (or was theirs), or some are
    held by others who are looking at them, and when the first of those frees if left unanswered."""
    held, until = stored.waiting(con, task, annotator)
    if not held:
        return _("Nothing left for you in this task: every unit has its annotators, or you rated it. Thank you!")
    return ngettext("Nothing to rate for you right now: {n} unit is being looked at by other annotators. If it is "
                    "left unanswered, it frees at {time} (server time); look again then.",
                    "Nothing to rate for you right now: {n} units are being looked at by other annotators. If they "
                    "leave one unanswered, it frees at {time} (server time); look again then.",
                    held).format(n=held, time=f"{until:%H:%M}")


def unit_view(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str) -> dict:
    """The unit as this annotator sees it: turns [(speaker, text)], grounding, and responses [(label, text)]
    in their order; `sides` maps each shown response to the stored model side ('a' or 'b'). A dialogue unit: no
    context, and `dialogues` (one transcript [(speaker, text)] per shown side) in place of the responses."""
    if task.level == "dialogue":
        return dialogue_view(con, task, unit, annotator)
    row = con.execute("""
        SELECT u.item_id, u.track, u.model_a, u.model_b, i.context, i.grounding
        FROM task_units u JOIN items i ON i.dataset = ? AND i.item_id = u.item_id
        WHERE u.task_id = ? AND u.unit = ?""", [task.dataset, task.task_id, unit]).fetchall()
    item_id, track, model_a, model_b, context, grounding = row[0]
    turns = json.loads(context)
    speakers = [SPEAKERS[(len(turns) - 1 - i) % 2] for i in range(len(turns))]
    texts = dict(con.execute("SELECT model, text FROM responses WHERE dataset = ? AND item_id = ? AND model IN (?, ?)",
                             [task.dataset, item_id, model_a, model_b or model_a]).fetchall())
    if model_a == GOLD_MODEL:   # a crowd study's gold unit: its response is stored with it, shown as any other
        texts[GOLD_MODEL] = crowd_store.gold_response(con, task.task_id, unit) or ""
    sides = ["a"] if model_b is None else (["b", "a"] if stored.swapped(task, annotator, unit) else ["a", "b"])
    shown = [texts.get(model_a if s == "a" else model_b, "") for s in sides]
    return {"item_id": item_id, "track": track, "turns": list(zip(speakers, turns)),
            "grounding": json.loads(grounding) if grounding else {}, "responses": shown, "sides": sides}


def dialogue_view(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str) -> dict:
    """A whole-dialogue unit as this annotator sees it: the scenario's grounding and each side's transcript, the
    model's turns named only 'Model' (pairwise: sides in their own order, as response pairs are)."""
    item_id, track, dialogue_a, dialogue_b = con.execute(
        "SELECT item_id, track, dialogue_a, dialogue_b FROM task_units WHERE task_id = ? AND unit = ?",
        [task.task_id, unit]).fetchall()[0]
    sides = ["a"] if dialogue_b is None else (["b", "a"] if stored.swapped(task, annotator, unit) else ["a", "b"])
    dialogues, grounding = [], {}
    for side in sides:
        dialogue = dialogue_a if side == "a" else dialogue_b
        # a turn the model answered is an item's turn (its response); every other turn is the person's
        turns = con.execute("""
            SELECT t.text, EXISTS (SELECT 1 FROM items i WHERE i.dataset = t.dataset AND i.dialogue_id = t.dialogue_id
                                   AND i.turn_index = t.turn_index) AS answered
            FROM turns t WHERE t.dataset = ? AND t.dialogue_id = ? ORDER BY t.turn_index""",
                            [task.dataset, dialogue]).fetchall()
        dialogues.append([("Model" if answered else "User", text) for text, answered in turns])
        found = con.execute("SELECT grounding FROM dialogues WHERE dataset = ? AND dialogue_id = ?",
                            [task.dataset, dialogue]).fetchall()
        grounding = grounding or (json.loads(found[0][0]) if found and found[0][0] else {})
    return {"item_id": item_id, "track": track, "turns": [], "grounding": grounding, "responses": [],
            "dialogues": dialogues, "sides": sides}


def grounding_heading(key: str) -> str:
    """A kind of grounding as a page names it, in this run's language ('knowledge'; an unknown kind as it is)."""
    return _(GROUNDING[key]) if key in GROUNDING else key


def grounding_lines(grounding: dict) -> list[tuple[str, list[str]]]:
    """(heading, lines) per kind of grounding: knowledge triples 'subject | relation | object', persona, goal."""
    out = []
    for key, value in grounding.items():
        items = value if isinstance(value, list) else [value]
        lines = [" | ".join(map(str, v)) if isinstance(v, (list, tuple)) else
                 (json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else str(v)) for v in items]
        out.append((str(key), lines))
    return out


def my_answers(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str) -> dict[str, float]:
    """The latest value this annotator gave per dimension on the unit."""
    return stored.mine(con, task.task_id, unit, annotator)


def answer(con: duckdb.DuckDBPyConnection, task: Task, unit: int, annotator: str, dimension: str, value: float) -> None:
    """Store one answer (ValueError saying why when it is refused: the unit has its K annotators, the
    response was rated by them elsewhere, the task is closed)."""
    stored.answer(con, task, unit, annotator, dimension, value)


def moves_on(exc: Exception) -> bool:
    """Whether a refused answer means the annotator's unit is no longer theirs to rate (draw another)."""
    return isinstance(exc, (stored.UnitFull, stored.RatedElsewhere))


def vote_value(sides: list[str], choice: str) -> float:
    """A side-by-side choice ('left', 'right', 'tie') as the stored vote: 1 model_a, 0 model_b, 0.5 tie."""
    if choice == "tie":
        return 0.5
    side = sides[0] if choice == "left" else sides[1]
    return 1.0 if side == "a" else 0.0


def choice_of(sides: list[str], value: float | None) -> str | None:
    """The inverse of vote_value, for showing an earlier vote."""
    if value is None:
        return None
    if value == 0.5:
        return "tie"
    side = "a" if value == 1.0 else "b"
    return "left" if sides[0] == side else "right"


def skip(con, task: Task, unit: int, annotator: str) -> None:
    stored.skip(con, task, unit, annotator)


def flag(con, task: Task, unit: int, annotator: str, comment: str) -> None:
    stored.flag(con, task, unit, annotator, comment)


def standing(con, task: Task, unit: int, annotator: str) -> tuple[dict[str, float], list[int]]:
    """(their latest answers on the unit, the units they answered or skipped in order): one query a draw."""
    return stored.standing(con, task, unit, annotator)


def my_progress(con, task: Task, annotator: str) -> tuple[int, int]:
    """(units this annotator finished or skipped, units in the task)."""
    return stored.done_by(con, task, annotator)


def results(con: duckdb.DuckDBPyConnection, task_id: int) -> dict:
    return service.results(con, task_id)


def ranking(con: duckdb.DuckDBPyConnection, task: Task) -> pd.DataFrame:
    """Pairwise tasks: Bradley-Terry ratings of this task's votes, per dimension (empty when none yet)."""
    latest = stored.latest(con, task.task_id)
    if latest.empty:
        return pd.DataFrame(columns=bradley_terry.COLUMNS)
    votes = latest.rename(columns={"value": "score"})
    parts = [bradley_terry.ratings(group, resamples=200, seed=task.seed).assign(dimension=dim, source="human")
             for dim, group in votes.groupby("dimension", sort=True)]
    return pd.concat(parts, ignore_index=True)[bradley_terry.COLUMNS]


def export(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    return service.export(con, task_id)


def create(con, **spec) -> int:
    return service.create_task(con, **spec)


def coverage(con: duckdb.DuckDBPyConnection, task_id: int) -> list[str]:
    """What the new task's units cannot give (a skill without units, too few units or models for a
    correlation)."""
    return service.coverage(con, task_id)


def dimensions_of(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The dimensions a new task on the dataset can rate: the store's, and MSDE's four."""
    known = [d for (d,) in con.execute("SELECT DISTINCT dimension FROM dimensions WHERE dataset = ? ORDER BY 1",
                                       [dataset]).fetchall()]
    return list(dict.fromkeys([*[d for d in ("Info", "Coh", "Know", "Rec")], *known]))


def set_state(con, task_id: int, state: str) -> None:
    stored.set_state(con, task_id, state)


def dimensions_table(task: Task) -> pd.DataFrame:
    """What a task asks, one row per dimension: its scale (or its question, side by side) and description (the
    task's own, in its language); the scale in this run's language."""
    return pd.DataFrame([{"dimension": d.dimension,
                          "scale": _("{lo} to {hi}").format(lo=f"{d.min:g}", hi=f"{d.max:g}")
                          if task.mode == "absolute" else (_("left, tie or right") if task.ties else _("left or right")),
                          "question": d.question if task.mode == "pairwise" else "", "description": d.description}
                         for d in task.dimensions])


def win_rates(con: duckdb.DuckDBPyConnection, task: Task) -> pd.DataFrame:
    """Pairwise tasks: each model's win rate against each other (a tie counts half), per dimension (first column):
    a task that asks two questions has two matrices, never one over both questions' votes."""
    latest = stored.latest(con, task.task_id)
    if latest.empty:
        return pd.DataFrame()
    votes = latest.rename(columns={"value": "score"})
    parts = [bradley_terry.win_matrix(group).reset_index().assign(dimension=dim)
             for dim, group in votes.groupby("dimension", sort=True)]
    table = pd.concat(parts, ignore_index=True)
    return table[["dimension", *[c for c in table.columns if c != "dimension"]]]


def notes_apart(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A ranking's table without its `note` column, and the notes as sentences ('Coh: 3 of 200 resamples ...'):
    a note explains blank ratings, and in a table cell it was cut at 1400 px."""
    if "note" not in table.columns:
        return table, []
    notes = [f"{row.dimension}{' (' + row.source + ')' if row.source != 'human' else ''}: {row.note}"
             for row in table.drop_duplicates(["dimension", "source", "note"]).itertuples()
             if isinstance(row.note, str) and row.note]
    return table.drop(columns="note"), notes


def sources_side_by_side(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """Bradley-Terry ratings of the dataset's people's votes beside each LLM judge's, where both exist."""
    found = bradley_terry.sources(con, dataset)
    if "human" not in found or len(found) < 2:
        return pd.DataFrame()
    return pd.concat([bradley_terry.table(con, dataset, source=s, resamples=200) for s in found], ignore_index=True)


# ---------------------------------------------------------------- a crowd study's worker (evalcore.services.crowd)
Refused = crowd.Refused
Study = crowd.Study


def study_of(con: duckdb.DuckDBPyConnection, task_id: int) -> crowd.Study | None:
    """The crowd study a task is opened as (None: the lab's own annotators rate it)."""
    return crowd.study_of(con, task_id)


def crowd_params(study: crowd.Study) -> tuple[str, str, str]:
    """The names the platform gives the worker's, study's and session's identifiers in the study's link."""
    params = crowd.PARAMS[study.platform]
    return params.worker, params.study, params.session


def crowd_ids(study: crowd.Study, query: dict[str, str]) -> crowd.Ids | None:
    """The worker's identifiers from the page's URL (None: it carries none; Refused: edited)."""
    return crowd.ids_from(study, query)







def crowd_next_unit(con: duckdb.DuckDBPyConnection, study: crowd.Study, task: Task, annotator: str) -> int | None:
    return crowd.next_unit(con, study, task, annotator)


def place_among(study: crowd.Study, history: list[int], unit: int) -> tuple[int, int]:
    """(the unit's place among the worker's, 1-based; units they rate in all), from the units they answered in order
    (standing): "Unit 3 of 6", never the task's number of the unit (a gold unit's number would tell it apart)."""
    place = history.index(unit) + 1 if unit in history else len(history) + 1
    return min(place, study.units), study.units


def crowd_finish(con: duckdb.DuckDBPyConnection, study: crowd.Study, worker: str) -> crowd.Ending:
    """The worker's end: the pass rule applied once, their code and the way back (the same when asked again)."""
    return crowd.finish(con, study, worker)
