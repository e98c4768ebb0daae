"""`task create --lang`, `chat create --lang` and `evalcore dimension describe` (issue 64 item 2): a task is made in its
dataset's language unless --lang says another, `task show` and `chat show` print it, a lab's own definition per
language reaches the next task in that language, and a bad language, dataset or dimension is refused with the store
file byte-identical."""
from __future__ import annotations

import json

import pytest

from evalcore.cli import main
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store

TASK = ["task", "create", "--dataset", "demo-zh", "--dimensions", "Info", "--items", "4", "--per-item", "1"]


@pytest.fixture(scope="module")
def db(tmp_path_factory, default_store_file):
    path = copy_default_store(default_store_file, tmp_path_factory.mktemp("lang-cli") / "s.duckdb")
    con = connect(path)
    registry.add(con, registry.Registered("alpha", "http://127.0.0.1:9/v1", "served", api_key_env=None))
    con.close()
    return path


def _shown(capsys) -> dict:
    out = capsys.readouterr().out
    return json.loads(out[: out.index("\n}") + 2])


def test_a_task_in_its_datasets_language_or_the_one_asked(db, capsys):
    assert main([*TASK, "--db", str(db)]) == 0
    first = int(capsys.readouterr().out.strip())
    assert main(["task", "show", str(first), "--db", str(db)]) == 0
    shown = _shown(capsys)
    assert shown["lang"] == "zh-CN" and shown["dimensions"][0]["description"].startswith("丰富度")
    assert main(["dimension", "describe", "--db", str(db), "--dataset", "demo-zh", "--dimension", "Info", "--lang",
                 "en", "How many facts the response brings up."]) == 0
    assert capsys.readouterr().err.strip() == ("dimension Info of demo-zh: its en definition set; new tasks in en show "
                                               "it (tasks made before keep theirs)")
    assert main([*TASK, "--db", str(db), "--lang", "en"]) == 0
    second = int(capsys.readouterr().out.strip())
    assert main(["task", "show", str(second), "--db", str(db)]) == 0
    shown = _shown(capsys)
    assert shown["lang"] == "en" and shown["dimensions"][0]["description"] == "How many facts the response brings up."


def test_a_chat_task_in_the_language_asked(db, capsys):
    assert main(["chat", "create", "--db", str(db), "--dataset", "demo-zh", "--track", "kdconv/knowledge",
                 "--endpoints", "alpha", "--scenarios", "1", "--lang", "en"]) == 0
    task_id = int(capsys.readouterr().out.strip())
    assert main(["chat", "show", str(task_id), "--db", str(db)]) == 0
    assert _shown(capsys)["lang"] == "en"


@pytest.mark.parametrize("args, code, said", [
    ([*TASK, "--lang", "fr"], 2, "invalid choice: 'fr'"),
    (["chat", "create", "--dataset", "demo-zh", "--track", "kdconv/knowledge", "--endpoints", "alpha", "--lang", "zh"],
     2, "invalid choice: 'zh'"),
    (["dimension", "describe", "--dataset", "demo-zh", "--dimension", "Info", "--lang", "de", "x"], 2,
     "invalid choice: 'de'"),
    (["dimension", "describe", "--dataset", "demo-zh", "--dimension", "Infoo", "--lang", "en", "x"], 2,
     "unknown dimension 'Infoo' in dataset 'demo-zh'"),
    (["dimension", "describe", "--dataset", "nope", "--dimension", "Info", "--lang", "en", "x"], 2,
     "unknown dataset 'nope'"),
    (["dimension", "describe", "--dataset", "demo-zh", "--dimension", "Info", "--lang", "en", " "], 1,
     "a definition needs its text"),
])
def test_refusals_leave_the_store_byte_identical(db, capsys, args, code, said):
    before = db.read_bytes()
    try:
        got = main([*args, "--db", str(db)])
    except SystemExit as exc:   # the parser's own usage error
        got = exc.code
    assert got == code
    assert said in capsys.readouterr().err
    assert db.read_bytes() == before
