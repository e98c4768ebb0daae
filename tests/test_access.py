"""Gates that hold under pressure: wrong passwords slowed and locked out per session and per address,
and Streamlit's upload endpoint closed to sessions the write gate has not admitted."""
from __future__ import annotations

import pytest
from test_app import run

from conftest import copy_default_store
from evalcore.ui.access import THROTTLE, WRITERS, Policy, Throttle, guess


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_five_free_guesses_then_doubling_waits():
    clock = Clock()
    t = Throttle(clock)
    rule = Policy("password", "s3cret")
    keys = ("session:a", "address:10.0.0.1")
    for _ in range(5):  # five wrong guesses are answered at once
        assert guess(rule, "nope", keys, t) == (False, 0.0)
    # then each wrong guess locks the key for 1, 2, 4, ... seconds
    assert guess(rule, "nope", keys, t) == (False, 1.0)
    clock.now += 0.5
    assert guess(rule, "s3cret", keys, t) == (False, 0.5)  # while locked, even the right one is not checked
    clock.now += 0.5
    assert guess(rule, "nope", keys, t) == (False, 2.0)
    clock.now += 2
    assert guess(rule, "nope", keys, t) == (False, 4.0)
    clock.now += 4
    assert guess(rule, "s3cret", keys, t) == (True, 0.0)
    assert t.wait(*keys) == 0.0
    assert guess(rule, "nope", keys, t) == (False, 0.0)  # a right guess clears the key


def test_guesses_checked_per_minute_and_hour_after_five_wrong():
    """A guesser that tries again the moment it may: 6 checked guesses in the first minute after the five
    free ones (at 0, 1, 3, 7, 15, 31 s), the waits doubling to the 300 s cap."""
    clock = Clock()
    t = Throttle(clock)
    rule = Policy("password", "s3cret")
    keys = ("session:x",)
    for _ in range(5):
        guess(rule, "wrong", keys, t)
    start, checked = clock.now, []
    while clock.now - start < 3600:
        wait = t.wait(*keys)
        clock.now += wait
        if clock.now - start >= 3600:
            break
        guess(rule, "wrong", keys, t)
        checked.append(clock.now - start)
    assert checked[:7] == [0, 1, 3, 7, 15, 31, 63]
    assert sum(1 for s in checked if s < 60) == 6
    # waits 1 .. 256 s take 511 s, then one guess per 300 s: 9 + ceil((3600 - 511) / 300) = 20 in the hour
    assert len(checked) == 9 + -(-(3600 - 511) // 300)


def test_a_new_session_from_the_same_address_waits_too():
    clock = Clock()
    t = Throttle(clock)
    rule = Policy("password", "s3cret")
    for _ in range(6):
        guess(rule, "wrong", ("session:1", "address:a"), t)
    assert guess(rule, "s3cret", ("session:2", "address:a"), t) == (False, 1.0)
    assert guess(rule, "s3cret", ("session:3", "address:b"), t) == (True, 0.0)


def test_the_page_locks_out_after_five_wrong_guesses(monkeypatch, tmp_path, default_store_file):
    copy_default_store(default_store_file, tmp_path / "evalcore" / "evalcore.duckdb")
    env = {"EVALCORE_DB": None, "XDG_DATA_HOME": tmp_path, "EVALCORE_READ_ONLY": None,
           "EVALCORE_UPLOAD_PASSWORD": "s3cret"}
    monkeypatch.setattr(THROTTLE, "wrong", {})
    monkeypatch.setattr(THROTTLE, "until", {})
    at = run("upload", monkeypatch, env, dataset="demo-zh", track="lccc/chitchat")
    for k in range(5):
        at.text_input(key="access-password").input(f"guess{k}").run()
        assert any("Wrong password" in e.value for e in at.error), k
    at.text_input(key="access-password").input("guess5").run()
    assert any("Too many wrong passwords: the next guess is checked in 1 s" in e.value for e in at.error)
    assert at.text_input(key="access-password").disabled
    assert not at.get("file_uploader")
    assert at.text_input(key="access-password").value == ""  # a guess is never kept in the session


def test_the_endpoint_guard_refuses_sessions_not_admitted():
    """The guard on Streamlit's uploaded-file manager: a session the gate admitted keeps its file, any
    other is refused and nothing is kept."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    import pages.views.common  # noqa: F401  (installs the guard)

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    record = UploadedFileRec(file_id="f", name="x.csv", type="text/csv", data=b"x" * 1000)
    with pytest.raises(PermissionError):
        manager.add_file("visitor", record)
    assert manager.get_files("visitor", ["f"]) == []
    WRITERS.grant("writer")
    manager.add_file("writer", record)
    assert [f.file_id for f in manager.get_files("writer", ["f"])] == ["f"]
