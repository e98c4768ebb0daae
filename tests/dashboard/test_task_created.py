"""A rating task just created: the confirmation carries its own link and access code, and nothing on the page shows
the previous task's (the page said "the link and the access code shown below" while the browser still showed the
previous task's, drawn over only after the new task's results were computed: its heading, link and code now come
before them)."""
from __future__ import annotations

from evalcore.store import connect
from evalcore.store import tasks as stored
from support.apptest import demo_task_store, run


def test_the_new_tasks_link_and_code_and_never_the_previous_ones(monkeypatch, tmp_path, default_store_file):
    db, old = demo_task_store(tmp_path, default_store_file)
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, "EVALCORE_ACCESS": None}, task=str(old.task_id))
    assert any(old.access_code in t.value for t in at.text)          # the previous task, with its code, on screen
    at.text_input(key="tk-name-0").input("Second task")
    next(b for b in at.button if b.label == "Create task").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new = int(at.query_params["task"][0])
    con = connect(db)
    made = stored.get(con, new)
    con.close()
    assert new != old.task_id and made.access_code != old.access_code
    said = [s.value for s in at.success]
    assert len(said) == 1 and said[0].startswith(f"Task {new} created") and made.access_code in said[0]
    assert f"task={new}" in said[0].replace("\\", "")
    shown = [e.value for e in [*at.text, *at.success, *at.caption, *at.markdown, *at.info, *at.warning]]
    assert not [v for v in shown if old.access_code in v]
    # the heading, then the link and code, before the results
    texts = [t.value for t in at.text]
    url = [b for b in at.get("link_button")][0].proto.url
    code = texts.index(f"Annotators open {url} and give the access code {made.access_code}")
    summary = next(i for i, t in enumerate(texts) if t.startswith("Second task\n"))
    assert url.endswith(f"/annotate?task={new}") and code < summary
    assert at.subheader[0].value == f"Task {new}"
