"""Whole dialogues as rating units (MSDE's own unit) and ACUTE-Eval (Li et al. 2019): rating tasks at dialogue level
over conversations held in chat tasks. K different raters per dialogue, blind to the model, written as dialogue-level
human ratings; a person who rated a dialogue already (in the chat, say) is not offered it and cannot rate it again;
pairwise units are two conversations of different models on one scenario, asked ACUTE's questions, and their votes
give the Bradley-Terry ratings FastChat's compute_mle_elo fits."""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis.bradley_terry import fit, votes
from evalcore.services import tasks as service
from evalcore.store import chats as chat_store
from evalcore.store import connect
from evalcore.store import tasks as stored
from evalcore.store.tasks import Dimension, RatedElsewhere, UnitFull
from support import fastchat_mle
from support.apptest import run

# These tests read the pages' English: the person picked English (a task on demo-zh is in Chinese otherwise)
run = partial(run, lang="en")

MODELS = ("m-alpha", "m-beta", "m-gamma")


def held(con, scenarios: int = 4) -> chat_store.ChatTask:
    """A chat task (no review) where each of 3 models held one conversation per scenario, each with a different
    person, two rounds each, rated by that person; accepted, so they are dialogues of 'chat-toy'."""
    con.execute("INSERT INTO datasets (dataset, language) VALUES ('toy', 'zh')")
    con.execute("INSERT INTO tracks VALUES ('toy', 'toy/knowledge', NULL, 'knowledge', NULL)")
    frame = pd.DataFrame({"dialogue_id": [f"d{i}" for i in range(scenarios)],
                          "grounding": [{"knowledge": [["film", "director", f"p{i}"]]} for i in range(scenarios)],
                          "opening": [None] * scenarios})
    tid = chat_store.create(con, name="t", dataset="toy", track="toy/knowledge", target="chat-toy",
                            endpoints=list(MODELS), settings={m: {} for m in MODELS}, per_scenario=1, max_rounds=3,
                            dimensions=[Dimension("Info", 0, 2), Dimension("Coh", 0, 2)], flags=[], scenarios=frame,
                            review=False)
    task = chat_store.get(con, tid)
    for p in range(scenarios * len(MODELS)):
        cid = chat_store.assign(con, task, f"chatter{p}")
        assert cid is not None
        for r in range(2):
            chat_store.say(con, cid, f"chatter{p}", f"question {r} from chatter{p}")
            chat_store.reply(con, cid, chat_store.pending(con, cid), f"answer {r} for chatter{p}")
        chat_store.end(con, cid, f"chatter{p}")
        for d in ("Info", "Coh"):
            chat_store.rate(con, cid, f"chatter{p}", d, 1)
    return task


def test_dialogue_units_k_raters_blind_and_once_per_person(con):
    chat = held(con)
    task = stored.get(con, service.create_task(con, dataset="chat-toy", mode="absolute", dimensions=["Info"], items=12,
                                               per_item=2, level="dialogue"))
    assert task.level == "dialogue" and task.target == "dialogue"
    units = stored.units(con, task.task_id)
    assert len(units) == 12 and (units["item_id"] == units["dialogue_a"]).all()
    assert set(units["model_a"]) == set(MODELS)
    # the chatter of a dialogue rated it in the chat: it is not offered to them, and their answer is refused
    conv = chat_store.conversations(con, chat.task_id).iloc[0]
    unit = int(units.loc[units["item_id"] == conv.dialogue_id, "unit"].iloc[0])
    with pytest.raises(RatedElsewhere):
        stored.answer(con, task, unit, conv.annotator, "Info", 2)
    stored.answer(con, task, unit, "rater1", "Info", 2)
    stored.answer(con, task, unit, "rater2", "Info", 0)
    with pytest.raises(UnitFull):
        stored.answer(con, task, unit, "rater3", "Info", 1)
    rows = con.execute("SELECT target, item_id, dialogue_id, model, annotator, score FROM human_ratings WHERE origin = ? "
                       "ORDER BY annotator", [task.origin]).fetchall()
    assert rows == [("dialogue", None, conv.dialogue_id, conv.endpoint, "rater1", 2.0),
                    ("dialogue", None, conv.dialogue_id, conv.endpoint, "rater2", 0.0)]
    stored.skip(con, task, unit, "rater2")           # a skip withdraws the rating it stood for
    assert con.execute("SELECT count(*) FROM human_ratings WHERE origin = ?", [task.origin]).fetchall() == [(1,)]


def test_acute_eval_pairs_and_bradley_terry_equals_fastchat(con):
    held(con)
    task = stored.get(con, service.create_task(con, dataset="chat-toy", mode="pairwise", level="dialogue",
                                               dimensions=["Engagingness", "Know"], items=12, per_item=1, seed=2,
                                               lang="en"))   # the dataset is Chinese: asked in English here
    units = stored.units(con, task.task_id)
    assert len(units) == 12   # 4 scenarios x 3 pairs of models
    assert (units["model_a"] != units["model_b"]).all()
    assert (units["item_id"] == units["dialogue_a"] + "|" + units["dialogue_b"]).all()
    grounding = dict(con.execute("SELECT dialogue_id, grounding FROM dialogues WHERE dataset = 'chat-toy'").fetchall())
    assert all(grounding[a] == grounding[b] for a, b in zip(units["dialogue_a"], units["dialogue_b"]))   # one scenario
    questions = {d.dimension: d.question for d in task.dimensions}
    assert questions["Engagingness"] == "Who would you prefer to talk to for a long conversation?"
    assert questions["Know"].startswith("If you had to say that one speaker is more knowledgeable")
    strength = {"m-alpha": 1.0, "m-beta": 0.2, "m-gamma": -0.8}
    rng = np.random.default_rng(4)
    for person in ("judge-1", "judge-2", "judge-3"):   # K = 1: three people share the twelve units
        while (unit := stored.next_unit(con, task, person)) is not None:
            row = units.set_index("unit").loc[unit]
            p = 1 / (1 + math.exp(strength[row.model_b] - strength[row.model_a]))
            for dim in ("Engagingness", "Know"):
                u = rng.random()
                stored.answer(con, task, unit, person, dim, 0.5 if abs(u - p) < 0.1 else (1.0 if u < p else 0.0))
            if len(stored.latest(con, task.task_id)) >= 24:
                break
    mine = votes(con, "chat-toy", dimension="Engagingness")
    assert len(mine) == 12
    ours = fit(mine)
    assert ours.ratings is not None, ours.reason
    reference = fastchat_mle(mine)
    for model, rating in zip(ours.models, ours.ratings):
        assert rating == pytest.approx(reference[model], abs=0.01)


def test_the_annotate_page_shows_whole_conversations_blind(monkeypatch, tmp_path):
    db = tmp_path / "s.duckdb"
    con = connect(db)
    held(con, scenarios=2)
    absolute = service.create_task(con, dataset="chat-toy", mode="absolute", dimensions=["Info"], items=6, per_item=1,
                                   level="dialogue", lang="en")   # English tasks on a Chinese dataset: an English page
    pair = service.create_task(con, dataset="chat-toy", mode="pairwise", dimensions=["Humanness"], items=6, per_item=1,
                               level="dialogue", lang="en")
    codes = {t: stored.get(con, t).access_code for t in (absolute, pair)}
    con.close()
    for task_id, captions in ((absolute, ["The conversation"]), (pair, ["Speaker A's conversation",
                                                                       "Speaker B's conversation"])):
        at = run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task_id))
        at.text_input[0].input(f"reader{task_id}")
        at.text_input[1].input(codes[task_id])
        at.button[0].click().run()
        at.button(key="ann-kept").click().run()
        assert not at.exception, [e.value for e in at.exception]
        shown = [c.value for c in at.caption]
        assert all(c in shown for c in captions), shown
        texts = [t.value for t in at.text]
        assert sum(t.startswith("question 0 from chatter") for t in texts) == len(captions)
        everything = " ".join(texts + shown + [m.value for m in at.markdown])
        assert not any(m in everything for m in MODELS)   # blind
        if task_id == pair:
            assert "Which speaker sounds more human?" in texts


def test_a_dialogue_tasks_export_is_read_back_as_dialogue_ratings(con, tmp_path):
    from evalcore.ingest.formats.ratings import import_ratings
    held(con)
    task = stored.get(con, service.create_task(con, dataset="chat-toy", mode="absolute", dimensions=["Info"], items=3,
                                               per_item=1, level="dialogue"))
    for unit in stored.units(con, task.task_id)["unit"]:
        stored.answer(con, task, int(unit), "rater", "Info", 2)
    exported = service.export(con, task.task_id)
    assert exported["item_id"].isna().all() and exported["dialogue_id"].notna().all()
    exported.drop(columns=["task_id"]).to_csv(tmp_path / "r.csv", index=False)
    stored.delete(con, task.task_id)                        # its ratings set aside; the file brings them back
    import_ratings(con, tmp_path / "r.csv", dataset="chat-toy", track="toy/knowledge")
    back = con.execute("SELECT target, dialogue_id, score FROM human_ratings WHERE annotator = 'rater' "
                       "ORDER BY dialogue_id").fetchall()
    assert back == sorted((("dialogue", d, 2.0) for d in exported["dialogue_id"]), key=lambda r: r[1])
