"""The Annotate page's "Skip this unit" tooltip is a sentence that says what the button does (it started mid-sentence:
"someone else takes your place on it, ...")."""
from __future__ import annotations

from functools import partial

from support.apptest import demo_task_store, run

# These tests read the pages' English: the person picked English (a task on demo-zh is in Chinese otherwise)
run = partial(run, lang="en")


def test_the_skip_buttons_tooltip_is_a_whole_sentence(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    at = run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
    for box, value in zip(at.text_input, ("ann", task.access_code, "")):
        box.input(value)
    at.button[0].click().run()
    at.button(key="ann-kept").click().run()
    assert not at.exception, [e.value for e in at.exception]
    skip = next(b for b in at.button if b.label == "Skip this unit")
    assert skip.help.startswith("Give this unit up: someone else takes your place") and skip.help.endswith(".")
