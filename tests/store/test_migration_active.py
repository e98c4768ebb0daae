"""Migration 21: tasks gain `judge` and task units `probability`. A store made before it opens, its tasks and units
as they were, with no judge and no probability (unknown, never 0 or a guess); migrating again changes nothing."""
from __future__ import annotations

from evalcore.store import connect, schema_version
from evalcore.store import tasks as stored
from evalcore.store.migrations import LATEST, all_migrations
from support import store_at_version


def test_a_store_from_before_active_tasks_opens_with_its_tasks_unchanged(tmp_path):
    path = tmp_path / "old.duckdb"
    old = store_at_version(path, 20)
    old.execute("INSERT INTO tasks (task_id, name, dataset, mode, dimensions, per_item, ties, guidelines, seed, "
                "sampling, access_code, state, created_by, created_at, deleted_by, level) VALUES (1, 'pilot', 'lab', "
                "'absolute', '[{\"dimension\": \"Info\", \"min\": 0.0, \"max\": 2.0}]', 2, true, '', 7, 'stratified', "
                "'abc123', 'open', NULL, TIMESTAMP '2026-11-01 10:00:00', NULL, 'response')")
    old.execute("INSERT INTO task_units (task_id, unit, item_id, track, model_a) VALUES (1, 1, 'i1', 'lab/chat', 'm1'),"
                " (1, 2, 'i2', 'lab/chat', 'm2')")
    old.close()
    con = connect(path)
    try:
        assert schema_version(con) == LATEST >= 21
        task = stored.get(con, 1)
        assert (task.name, task.sampling, task.seed, task.judge) == ("pilot", "stratified", 7, None)
        units = stored.units(con, 1)
        assert units[["unit", "item_id", "model_a"]].values.tolist() == [[1, "i1", "m1"], [2, "i2", "m2"]]
        assert units["probability"].isna().all()
        assert con.execute("SELECT count(*) FROM task_units WHERE probability IS NOT NULL").fetchall() == [(0,)]
        m21 = next(m for m in all_migrations() if m.version == 21)
        con.execute(m21.sql)   # idempotent: a store migrated again meets it a second time
        assert stored.units(con, 1).equals(units)
    finally:
        con.close()
