"""Annotation at the protocol level (slow): a real page server, and annotators that are sessions of their own on
it speaking Streamlit's websocket protocol (tests/support/streamlit_session.py), clicking what a browser clicks.

- Sixteen annotators rate a task of 24 units (demo-zh, both tracks, Info and Coh, K = 2) at once, each in its
  own way (rate; answer one dimension and Skip; Skip; go Back and change or retake an earlier unit), while every
  claim is forced to lapse midway. Afterwards: every unit has exactly K people whose answers count, nobody holds
  two places, every answer a session was not told was refused is what counts, the store holds one rating per
  person, response and dimension, and no session ever drew a traceback.
- One person is one annotator: a seventeenth session typing 'ANN-03' is refused without ann-03's key and with a
  wrong one; with the key it is ann-03, and is shown the unit ann-03 holds (no second place).
- A lapsed claim (K = 1): the holder's click after another rated the unit is a sentence, not a second place.
- One rating per person and response across tasks: a second task over the same 24 responses offers each
  person only the responses they did not rate in the first.
"""
from __future__ import annotations

import asyncio
import os
import random
from datetime import timedelta

import pytest

from bench.annotate import serve
from evalcore.core.text import identity_key
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import ROOT, copy_default_store
from support.streamlit_session import Session

pytestmark = pytest.mark.slow
PEOPLE = [f"ann-{k:02d}" for k in range(1, 17)]
KEY_LABEL = "Personal key (leave empty the first time)"
LINGER = PEOPLE[::4]   # after the claims lapse, these four leave their unit on screen a while before clicking


async def _enter(base: str, task, name: str, key: str = "") -> tuple[Session, str]:
    """A session logged in to the task as `name` (with `key` when they have one): (session, their key)."""
    s = await Session(base, "annotate", f"task={task.task_id}").open()
    await s.fill("Your name", name)
    await s.fill("Access code", task.access_code)
    await s.fill(KEY_LABEL, key)
    await s.click(label="Start rating")
    if not key:
        shown = [t for t in s.texts("text") if "&key=" not in t and len(t) == 22]
        assert shown, s.drawn
        key = shown[0]
        await s.click(key="ann-kept")
    assert f"Rating as {name}" in s.texts("caption"), s.drawn
    return s, key


def _unit(s: Session) -> int | None:
    return next((int(t.split()[1]) for t in s.texts("caption") if t.startswith("Unit ")), None)


class Log:
    """What each person was told was stored (not refused), and what was refused."""

    def __init__(self):
        self.told: dict[tuple[str, int, str], float] = {}
        self.refused: list[tuple[str, int]] = []
        self.withdrawn = 0

    async def answer(self, s: Session, who: str, task, unit: int, dim: str, value: int) -> bool:
        await s.choose(f"ann-{task.task_id}-{unit}-{dim}", str(value))
        if s.said("already has its") or s.said("rated this response"):
            self.refused.append((who, unit))
            return False
        self.told[(who, unit, dim)] = float(value)
        return True

    async def skip(self, s: Session, who: str, unit: int) -> None:
        await s.click(key=f"ann-skip-{unit}")
        for dim in ("Info", "Coh"):   # what they answered on it stops counting
            self.withdrawn += self.told.pop((who, unit, dim), None) is not None


class Pause:
    """Every session stops before its next click (its unit still on screen) while the store is changed behind
    them: the server, busy with sixteen sessions, would not let another process in."""

    def __init__(self, sessions: int):
        self.go, self.active, self.stopped = asyncio.Event(), sessions, 0
        self.go.set()

    async def point(self, linger: float = 0.0) -> None:
        """Stop here while a change is made; then, for `linger` seconds more, leave the unit on screen (someone
        gone for coffee: the others fill their units meanwhile)."""
        if not self.go.is_set():
            self.stopped += 1
            await self.go.wait()
            self.stopped -= 1
            await asyncio.sleep(linger)

    async def during(self, change) -> object:
        self.go.clear()
        while self.stopped < self.active:
            await asyncio.sleep(0.05)
        try:
            return await asyncio.to_thread(change)
        finally:
            self.go.set()


async def _annotate(s: Session, who: str, task, log: Log, rng: random.Random, halfway: asyncio.Event,
                    pause: Pause) -> int:
    """Rate until nothing is left for this person; returns how many units they were shown."""
    try:
        return await _rate_all(s, who, task, log, rng, halfway, pause)
    finally:
        pause.active -= 1


async def _rate_all(s: Session, who: str, task, log: Log, rng: random.Random, halfway: asyncio.Event,
                    pause: Pause) -> int:
    shown = 0
    for _ in range(400):
        await pause.point(linger=8.0 if who in LINGER else 0.0)
        unit = _unit(s)
        if unit is None:
            if s.said("being looked at"):      # held by others for now: look again
                await asyncio.sleep(0.3)
                await s.click(key="ann-again")
                continue
            assert s.said("Nothing left for you in this task"), s.drawn
            return shown
        shown += 1
        if shown == 2:
            halfway.set()
        r = rng.random()
        if r < 0.15:                            # one dimension, then Skip
            if await log.answer(s, who, task, unit, "Info", rng.randrange(3)):
                await log.skip(s, who, unit)
        elif r < 0.25:
            await log.skip(s, who, unit)
        elif r < 0.35 and not s.widget(f"ann-back-{unit}").disabled:   # Back to an earlier unit, answer there
            await s.click(key=f"ann-back-{unit}")
            back = _unit(s)
            if await log.answer(s, who, task, back, "Info", rng.randrange(3)):
                if any(w.id.endswith(f"-ann-next-{back}") for w in s.widgets.values()):
                    await s.click(key=f"ann-next-{back}")    # an edit of a finished unit: on to the next
                else:
                    await log.answer(s, who, task, back, "Coh", rng.randrange(3))
        else:
            if await log.answer(s, who, task, unit, "Info", rng.randrange(3)):
                await log.answer(s, who, task, unit, "Coh", rng.randrange(3))
    raise AssertionError(f"{who} never finished")


def _expire_claims(db) -> int:
    """Every claim so far made older than CLAIM_TTL (the store is shared with the running server)."""
    con = connect(db, wait=60)
    try:
        n = con.execute("SELECT count(*) FROM task_answers WHERE kind = 'claim'").fetchall()[0][0]
        con.execute("UPDATE task_answers SET given_at = given_at - ? WHERE kind = 'claim'",
                    [stored.CLAIM_TTL + timedelta(minutes=1)])
        return n
    finally:
        con.close()


def test_sixteen_annotators_keep_k_one_place_each_and_one_rating_per_response(tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    con = connect(db)
    task = stored.get(con, service.create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"],
                                               items=24, per_item=2, seed=5, name="sixteen"))
    single = stored.get(con, service.create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"],
                                                 items=1, per_item=1, seed=9, tracks=["lccc/chitchat"], name="one"))
    con.close()
    server, base = serve(["app.py"], {**os.environ, "EVALCORE_DB": str(db)}, ROOT, tmp_path / "server.log")
    log = Log()
    try:
        keys, expired = asyncio.run(_crowd(base, db, task, log))
        asyncio.run(_lapsed_claim(base, db, single))
        later = asyncio.run(_second_task(base, db, task, keys))
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert expired >= 16
    con = connect(db, read_only=True)
    try:
        latest = stored.latest(con, task.task_id)
        people = latest.assign(who=latest["annotator"].map(identity_key))
        # exactly K people count on every unit, each once
        assert people.groupby("unit")["who"].nunique().to_dict() == {u: 2 for u in range(1, 25)}
        assert not people.duplicated(["unit", "who", "dimension"]).any()
        # every answer a session was told was stored is what counts (edits: the last one told)
        counted = {(r.annotator, int(r.unit), r.dimension): r.value for r in latest.itertuples()}
        assert {k: v for k, v in counted.items() if k in log.told} == log.told
        assert set(log.told) <= set(counted)
        # one rating per person, response and dimension in the whole store
        ratings = con.execute("SELECT item_id, model, annotator, dimension FROM human_ratings "
                              "WHERE dataset = 'demo-zh' AND target = 'response'").df()
        ratings["who"] = ratings["annotator"].map(identity_key)
        assert not ratings.duplicated(["item_id", "model", "who", "dimension"]).any()
        # the second task: nobody was given a response they rated in the first
        first = {(r.who, r.item_id, r.model_a) for r in people.itertuples()}
        assert later and not any((who, item, model) in first for who, item, model in later)
    finally:
        con.close()
    print(f"answers told stored {len(log.told)}, refused {len(log.refused)}, withdrawn by a skip {log.withdrawn}, "
          f"claims forced to lapse {expired}, second-task units rated {len(later)}")


async def _crowd(base: str, db, task, log: Log) -> tuple[dict[str, str], int]:
    entered = await asyncio.gather(*(_enter(base, task, who) for who in PEOPLE))
    sessions = {who: s for who, (s, _) in zip(PEOPLE, entered)}
    keys = {who: key for who, (_, key) in zip(PEOPLE, entered)}
    # one person is one annotator: a seventeenth tab typing ann-03's name
    twin = await Session(base, "annotate", f"task={task.task_id}").open()
    await twin.fill("Your name", "ANN-03")
    await twin.fill("Access code", task.access_code)
    await twin.click(label="Start rating")
    assert twin.said("The name 'ann-03' is taken"), twin.drawn
    await twin.fill(KEY_LABEL, keys["ann-05"])
    await twin.click(label="Start rating")
    assert twin.said("That is not ann-03's personal key"), twin.drawn
    await twin.fill(KEY_LABEL, keys["ann-03"])
    await twin.click(label="Start rating")
    assert "Rating as ann-03" in twin.texts("caption")
    assert _unit(twin) == _unit(sessions["ann-03"]) is not None   # the place ann-03 holds, not a second one
    await twin.close()
    halfway, pause = asyncio.Event(), Pause(len(sessions))

    async def expire_midway() -> int:
        await halfway.wait()
        return await pause.during(lambda: _expire_claims(db))

    rngs = {who: random.Random(k) for k, who in enumerate(PEOPLE)}
    results = await asyncio.gather(expire_midway(), *(_annotate(s, who, task, log, rngs[who], halfway, pause)
                                                      for who, s in sessions.items()))
    for who, s in sessions.items():
        assert s.exceptions == [], (who, s.exceptions)
        await s.close()
    assert sum(results[1:]) >= 48
    return keys, results[0]


async def _lapsed_claim(base: str, db, task) -> None:
    """K = 1, one unit: late-1 is shown it; the claim lapses; late-2 is given it and rates it; late-1's click
    on the screen they still have is refused with a sentence, and the next draw says nothing is left."""
    holder, _ = await _enter(base, task, "late-1")
    assert _unit(holder) == 1
    await asyncio.to_thread(_expire_claims, db)
    other, _ = await _enter(base, task, "late-2")
    assert _unit(other) == 1
    for dim in ("Info", "Coh"):
        await other.choose(f"ann-{task.task_id}-1-{dim}", "1")
    await holder.choose(f"ann-{task.task_id}-1-Info", "2")
    assert holder.said("Unit 1 already has its 1 annotator"), holder.drawn
    assert holder.said("Nothing left for you in this task") and holder.exceptions == []
    await holder.close()
    await other.close()
    con = connect(db, wait=60)
    try:
        assert set(stored.latest(con, task.task_id)["annotator"]) == {"late-2"}
    finally:
        con.close()


async def _second_task(base: str, db, first, keys: dict[str, str]) -> list[tuple[str, str, str]]:
    """A task over the same 24 responses; the sixteen enter it with their keys and rate what they are given:
    (person, item, model) of each unit they rated there."""
    con = connect(db, wait=60)
    try:
        units = stored.units(con, first.task_id)[["item_id", "track", "model_a", "model_b"]]
        again = stored.get(con, stored.create(con, name="again", dataset="demo-zh", mode="absolute",
                                              dimensions=list(first.dimensions), per_item=2, units=units))
    finally:
        con.close()
    rated: list[tuple[str, str, str]] = []
    by_unit = {int(r.unit): (r.item_id, r.model_a) for r in units.assign(unit=range(1, 25)).itertuples()}

    async def person(who: str) -> None:
        s, _ = await _enter(base, again, who, keys[who])
        for _ in range(200):
            unit = _unit(s)
            if unit is None and s.said("being looked at"):
                await asyncio.sleep(0.3)
                await s.click(key="ann-again")
                continue
            if unit is None:
                break
            for dim in ("Info", "Coh"):
                await s.choose(f"ann-{again.task_id}-{unit}-{dim}", "1")
            rated.append((identity_key(who), *by_unit[unit]))
        assert s.said("Nothing left for you in this task"), s.drawn
        assert s.exceptions == []
        await s.close()

    await asyncio.gather(*(person(who) for who in PEOPLE))
    return rated
