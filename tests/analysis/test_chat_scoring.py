"""Collected conversations are data like any other: accepted ones are dialogues of the task's dataset with their
grounding, each model turn an item (the conversation before it, the scenario's grounding) answered by the
endpoint; DIST and a judge score them at turn level, a dialogue's value is the mean of its turns' values (named),
and Metric trust gives verdicts at dialogue level against the people's whole-dialogue ratings."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
from scipy import stats

from evalcore.analysis.correlate import metric_scores
from evalcore.cli import main
from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.judge_server import JudgeServer

WORDS = "电影 导演 演员 故事 好看 喜欢 音乐 结局 剧情 角色 拍摄 票房 经典 感动".split()


@pytest.fixture(scope="module")
def collected(tmp_path_factory, default_store_file):
    """24 accepted conversations on 12 KdConv scenarios by 12 people with two echo endpoints, rated Info, Coh and
    Know from 0 to 2 (more varied messages are rated higher: a relation DIST can find)."""
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("chat") / "s.duckdb")
    con = connect(db)
    rng = random.Random(1)
    with JudgeServer(echo=True) as srv:
        for name in ("alpha", "beta"):
            registry.add(con, registry.Registered(name, srv.url, "m", api_key_env=None))
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["alpha", "beta"],
                                  n_scenarios=12, review=False)
        task = stored.get(con, tid)
        for p in range(12):
            for _ in range(2):
                cid = stored.assign(con, task, f"p{p}")
                n = rng.randint(1, 6)
                for r in range(rng.randint(1, 3)):
                    stored.say(con, cid, f"p{p}", "".join(rng.choice(WORDS) for _ in range(n + r)))
                    after, stream = service.ask(con, cid)
                    list(stream)
                    assert service.keep(con, cid, after, stream.reply) is None
                stored.end(con, cid, f"p{p}", goal=True)
                for d in task.dimensions:
                    stored.rate(con, cid, f"p{p}", d.dimension, min(2, max(0, round(n / 3 + rng.random() - .5))))
    con.close()
    return db, task


def test_accepted_conversations_are_dialogues_with_items_and_ratings(collected):
    db, task = collected
    con = connect(db)
    try:
        assert con.execute("SELECT count(*) FROM dialogues WHERE dataset = ?", [task.target]).fetchall() == [(24,)]
        conv = stored.conversations(con, task.task_id).iloc[0]
        texts = stored.messages(con, int(conv.conversation_id))["text"].tolist()
        items = con.execute("SELECT item_id, context, grounding, turn_index FROM items WHERE dataset = ? AND "
                            "dialogue_id = ? ORDER BY turn_index", [task.target, conv.dialogue_id]).fetchall()
        # one item per model turn (odd indexes), its context every message before it, the scenario's grounding
        assert [i[3] for i in items] == list(range(1, len(texts), 2))
        assert [json.loads(i[1]) for i in items] == [texts[:k] for k in range(1, len(texts), 2)]
        scene = stored.scenario(con, task.task_id, int(conv.scenario))
        assert all(json.loads(i[2]) == scene["grounding"] for i in items)
        replies = [r for (r,) in con.execute("SELECT text FROM responses WHERE dataset = ? AND model = ? AND item_id "
                                              "IN (SELECT item_id FROM items WHERE dialogue_id = ?) ORDER BY item_id",
                                              [task.target, conv.endpoint, conv.dialogue_id]).fetchall()]
        assert sorted(replies) == sorted(texts[1::2])
        rated = con.execute("SELECT dimension, score FROM human_ratings WHERE dataset = ? AND target = 'dialogue' AND "
                            "dialogue_id = ? ORDER BY dimension", [task.target, conv.dialogue_id]).fetchall()
        assert [d for d, _ in rated] == sorted(d.dimension for d in task.dimensions)
    finally:
        con.close()


@pytest.mark.slow   # 5 s or more on 2 cores: the fast set keeps tests under that
def test_dist_and_a_judge_at_turn_and_dialogue_level_and_trust(collected, capsys):
    db, task = collected
    with JudgeServer(rate="length") as judge:
        assert main(["score", "--db", str(db), "--dataset", task.target, "--metrics", "DIST1,DIST2,judge",
                     "--judge-base-url", judge.url, "--judge-model", "toy"]) == 0
    capsys.readouterr()
    con = connect(db)
    try:
        turns = metric_scores(con, task.target, task.track, "turn", "computed", "default", None)
        dialogues = metric_scores(con, task.target, task.track, "dialogue", "computed", "default", None)
        assert {"DIST1", "DIST2", "Judge-Info"} <= set(turns["metric"]) and len(set(dialogues["unit"])) == 24
        # a dialogue's value: the mean of its turns' values, written out for one dialogue and metric
        conv = stored.conversations(con, task.task_id).iloc[0]
        ids = [i for (i,) in con.execute("SELECT item_id FROM items WHERE dataset = ? AND dialogue_id = ?",
                                         [task.target, conv.dialogue_id]).fetchall()]
        mine = turns[(turns["metric"] == "Judge-Info") & turns["unit"].isin([f"{i}\x1f{conv.endpoint}" for i in ids])]
        dialogue_value = dialogues[(dialogues["metric"] == "Judge-Info")
                                   & (dialogues["unit"] == f"{conv.dialogue_id}\x1f{conv.endpoint}")]["value"]
        assert float(dialogue_value.iloc[0]) == pytest.approx(float(np.mean(mine["value"])))
    finally:
        con.close()
    assert main(["trust", "--db", str(db), "--dataset", task.target, "--level", "dialogue", "--dimension", "Info",
                 "--origin", "computed", "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert "mean of its model turns' values" in out.err and "dialogue:mean-of-turns" in out.err
    rows = [line.split(",") for line in out.out.strip().splitlines()]
    head = rows[0]
    dist1 = next(r for r in rows[1:] if r[head.index("metric")] == "DIST1" and r[head.index("track")] == task.track)
    # the same Spearman by scipy over the 24 (dialogue, endpoint) points
    con = connect(db)
    try:
        people = con.execute("SELECT dialogue_id || chr(31) || model AS unit, avg(score) AS v FROM human_ratings "
                             "WHERE dataset = ? AND dimension = 'Info' GROUP BY ALL", [task.target]).df()
        values = metric_scores(con, task.target, task.track, "dialogue", "computed", "default", None)
    finally:
        con.close()
    both = people.merge(values[values["metric"] == "DIST1"], on="unit")
    assert len(both) == int(dist1[head.index("n")]) == 24
    assert float(dist1[head.index("r")]) == pytest.approx(stats.spearmanr(both["value"], both["v"])[0], abs=5e-4)
