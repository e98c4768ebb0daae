"""`import inspect`: an inspect_ai log through read_eval_log. inspect-ai is not in this machine's package index, so
these tests give the importer a stand-in `inspect_ai` whose read_eval_log returns the EvalLog shape its reference
documents (log.eval.task, log.eval.model; log.samples: id, epoch, input as text or chat messages, target,
output.completion, scores {scorer: Score(value)}) and whose value_to_float is inspect's documented rule (C 1, I 0,
P 0.5, N 0, a number as it is). What is tested is the mapping into the store, all or nothing."""
from __future__ import annotations

import sys
import types
from types import SimpleNamespace as NS

import pytest

from evalcore.cli import main
from evalcore.store import connect
from support import write_jsonl

ITEMS = [{"item_id": f"q{k}", "dataset": "ins", "track": "ins/chitchat", "context": [f"问题{k}"], "references": []}
         for k in range(3)]


def value_to_float():
    letters = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}

    def to_float(value):
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str) and value in letters:
            return letters[value]
        raise ValueError(f"cannot make {value!r} a number")
    return to_float


def sample(sid, completion, match, f1, epoch=1, input_="", target="答案"):
    return NS(id=sid, epoch=epoch, input=input_, target=target, output=NS(completion=completion),
              scores={"match": NS(value=match), "f1": NS(value=f1)})


@pytest.fixture
def inspect_ai(monkeypatch):
    """A stand-in inspect_ai: read_eval_log returns LOGS[path]."""
    logs = {}
    package, log, scorer = (types.ModuleType(n) for n in ("inspect_ai", "inspect_ai.log", "inspect_ai.scorer"))
    log.read_eval_log = lambda path: logs[path] if path in logs else (_ for _ in ()).throw(ValueError("not a log"))
    scorer.value_to_float = value_to_float
    for name, module in (("inspect_ai", package), ("inspect_ai.log", log), ("inspect_ai.scorer", scorer)):
        monkeypatch.setitem(sys.modules, name, module)
    return logs


def store(tmp_path) -> str:
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "items.jsonl", ITEMS)), "--db", db]) == 0
    return db


def test_samples_become_responses_and_scorers_external_metrics(inspect_ai, tmp_path, capsys):
    db = store(tmp_path)
    path = str(tmp_path / "run.eval")
    inspect_ai[path] = NS(eval=NS(task="qa", model="openai/qwen"), samples=[
        sample("q0", "答案", "C", 0.9), sample("q1", "不知道", "I", 0.1), sample("q2", "大概", "P", 0.5),
        sample("q0", "另一个", "I", 0.2, epoch=2)])
    assert main(["import", "inspect", path, "--db", db, "--dataset", "ins", "--track", "ins/chitchat"]) == 0
    said = capsys.readouterr().out
    assert "1 sample(s) of later epochs left out" in said
    con = connect(db, read_only=True)
    responses = dict(con.execute("SELECT item_id, text FROM responses WHERE model = 'openai/qwen'").fetchall())
    scores = con.execute("SELECT DISTINCT name, model, value FROM system_scores WHERE name LIKE 'inspect:%' "
                         "ORDER BY name").fetchall()
    con.close()
    assert responses == {"q0": "答案", "q1": "不知道", "q2": "大概"}
    # each model's system value of an external metric is the mean of its per-response values
    assert scores == [("inspect:f1", "openai/qwen", pytest.approx((0.9 + 0.1 + 0.5) / 3)),
                      ("inspect:match", "openai/qwen", pytest.approx((1 + 0 + 0.5) / 3))]


def test_context_creates_items_from_the_inputs(inspect_ai, tmp_path):
    db = store(tmp_path)
    path = str(tmp_path / "chat.json")
    messages = [NS(text="你好"), NS(text="你喜欢什么电影？")]
    inspect_ai[path] = NS(eval=NS(task="chat", model="m"), samples=[sample("new1", "喜欢科幻片。", 1.0, 1.0,
                                                                           input_=messages, target=["科幻片"])])
    assert main(["import", "inspect", path, "--db", db, "--dataset", "ins", "--track", "ins/chitchat", "--context"]) == 0
    con = connect(db, read_only=True)
    context, ref = con.execute("SELECT i.context, r.text FROM items i JOIN item_references r USING (dataset, item_id) "
                               "WHERE item_id = 'new1'").fetchall()[0]
    con.close()
    assert context == '["你好", "你喜欢什么电影？"]' and ref == "科幻片"


def test_a_bad_sample_is_refused_naming_it_and_nothing_is_written(inspect_ai, tmp_path, capsys):
    db = store(tmp_path)
    bad_score, unknown = str(tmp_path / "bad.eval"), str(tmp_path / "unknown.eval")
    inspect_ai[bad_score] = NS(eval=NS(task="qa", model="m"), samples=[sample("q0", "好", "C", 1.0),
                                                                         sample("q1", "坏", "maybe", 0.0)])
    inspect_ai[unknown] = NS(eval=NS(task="qa", model="m"), samples=[sample("q0", "好", "C", 1.0),
                                                                       sample("nope", "x", "C", 1.0)])
    for path, where, field in ((bad_score, "sample 2 (id 'q1', epoch 1)", "match"),
                               (unknown, "sample 2 (id 'nope', epoch 1)", "id")):
        capsys.readouterr()
        assert main(["import", "inspect", path, "--db", db, "--dataset", "ins", "--track", "ins/chitchat"]) == 2
        err = capsys.readouterr().err
        assert f"{path}, {where}, field '{field}'" in err, err
    assert "(or give --context to create it)" in err
    con = connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM responses").fetchall()[0][0] == 0
    con.close()


def test_without_inspect_ai_the_import_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    db = store(tmp_path)
    capsys.readouterr()
    assert main(["import", "inspect", str(tmp_path / "x.eval"), "--db", db, "--dataset", "ins", "--track",
                 "ins/chitchat"]) == 2
    assert "expected the inspect-ai package, which reads its logs (pip install inspect-ai), got not installed" in \
        capsys.readouterr().err
