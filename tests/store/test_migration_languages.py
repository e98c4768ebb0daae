"""Migration 22: a rating task and a chat task have a language (issue 64). A store made before it opens with each task
in its dataset's language (zh... -> zh-CN, en... -> en, any other or none -> en), its stored dimensions as they were,
and an empty table of a lab's own definitions per language; migrating again changes nothing."""
from __future__ import annotations

from evalcore.store import chats as chat_store
from evalcore.store import connect, schema_version
from evalcore.store import tasks as stored
from evalcore.store.migrations import LATEST, all_migrations
from support import store_at_version

DIMS = '[{"dimension": "Info", "min": 0.0, "max": 2.0, "description": "丰富度", "question": ""}]'


def test_a_store_from_before_languages_gives_each_task_its_datasets_language(tmp_path):
    path = tmp_path / "old.duckdb"
    old = store_at_version(path, 21)
    old.execute("INSERT INTO datasets (dataset, language) VALUES ('zh-lab', 'zh'), ('en-lab', 'en-US'), "
                "('ja-lab', 'ja'), ('bare', NULL)")
    for task_id, dataset in enumerate(["zh-lab", "en-lab", "ja-lab", "bare", "gone"], 1):
        old.execute("INSERT INTO tasks (task_id, name, dataset, mode, dimensions, per_item, ties, guidelines, seed, "
                    "sampling, access_code, state, created_by, created_at, deleted_by, level, judge) VALUES (?, ?, ?, "
                    "'absolute', ?, 2, true, '', 7, 'stratified', 'abc123', 'open', NULL, "
                    "TIMESTAMP '2026-11-01 10:00:00', NULL, 'response', NULL)", [task_id, f"t{task_id}", dataset, DIMS])
    old.execute("INSERT INTO chat_tasks (task_id, name, dataset, track, target, endpoints, settings, per_scenario, "
                "max_rounds, dimensions, flags, guidelines, seed, review, access_code, state, created_by, created_at) "
                "VALUES (1, 'c', 'zh-lab', 'kd', 'chat-1-zh-lab', '[\"e\"]', '{}', 1, 10, ?, '[\"repetition\"]', '', 0, "
                "true, 'abc123', 'open', NULL, TIMESTAMP '2026-11-01 10:00:00'), (2, 'c2', 'en-lab', 'kd', "
                "'chat-2-en-lab', '[\"e\"]', '{}', 1, 10, ?, '[]', '', 0, true, 'abc124', 'open', NULL, "
                "TIMESTAMP '2026-11-01 10:00:00')", [DIMS, DIMS])
    old.close()
    con = connect(path)
    try:
        assert schema_version(con) == LATEST >= 22
        assert [stored.get(con, t).lang for t in range(1, 6)] == ["zh-CN", "en", "en", "en", "en"]
        task = stored.get(con, 1)
        assert (task.name, task.seed, task.dimensions[0].description) == ("t1", 7, "丰富度")   # as it was made
        assert [chat_store.get(con, t).lang for t in (1, 2)] == ["zh-CN", "en"]
        assert con.execute("SELECT count(*) FROM dimension_texts").fetchall() == [(0,)]
        before = con.execute("SELECT task_id, lang FROM tasks ORDER BY 1").fetchall()
        m22 = next(m for m in all_migrations() if m.version == 22)
        con.execute(m22.sql)   # idempotent: a store migrated again meets it a second time
        assert con.execute("SELECT task_id, lang FROM tasks ORDER BY 1").fetchall() == before
        con.execute("INSERT INTO dimension_texts VALUES ('zh-lab', 'Info', 'en', 'How much knowledge')")
        con.execute(m22.sql)
        assert con.execute("SELECT * FROM dimension_texts").fetchall() == [("zh-lab", "Info", "en", "How much knowledge")]
    finally:
        con.close()
