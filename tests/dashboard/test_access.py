"""Gates that hold under pressure: wrong passwords slowed and locked out per session and per address,
and Streamlit's upload endpoint closed to sessions the write gate has not admitted."""
from __future__ import annotations

import pytest

from evalcore.pagedata.access import BUDGET, THROTTLE, WRITERS, Budget, Policy, Throttle, attempt, forwarded_allow_ips, guess
from support import copy_default_store
from support.apptest import run


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


def test_the_server_checks_at_most_its_budget_of_wrong_guesses_a_minute_whoever_makes_them():
    """Forty sessions at forty addresses, one wrong guess each, in one second: 30 are checked (Budget.LIMIT),
    the other ten are not; once the first wrong guess is 60 s old, one more is checked. A right guess costs
    nothing, and a guess held back by the server's budget is not checked even when it is right."""
    clock = Clock()
    t, b = Throttle(clock), Budget(clock)
    checked = []
    for k in range(40):
        outcome = attempt(lambda: False, (f"s{k}", f"a{k}"), "task-code", t, b)
        checked.append(outcome.checked)
        clock.now = 1000 + (k + 1) / 40
    assert checked == [True] * 30 + [False] * 10
    assert b.wait("task-code") == pytest.approx(60 - 1)   # the first wrong guess was made at 0 s, now is 1 s
    assert b.wait("password") == 0.0                        # each gate has its own budget
    assert attempt(lambda: True, ("s", "a"), "task-code", t, b) == (False, pytest.approx(59), False)
    clock.now = 1060.0
    assert attempt(lambda: True, ("s", "a"), "task-code", t, b) == (True, 0.0, True)
    assert attempt(lambda: False, ("s", "a"), "task-code", t, b).checked
    assert not attempt(lambda: False, ("s", "a"), "task-code", t, b).checked


def test_only_the_named_proxies_may_say_who_a_client_is():
    """uvicorn reads X-Forwarded-For from the addresses in FORWARDED_ALLOW_IPS (app.py sets it from this):
    nobody's when no proxy is named (uvicorn's own default would trust any local process)."""
    assert forwarded_allow_ips({}, {}) == ""
    assert forwarded_allow_ips({}, {"EVALCORE_TRUSTED_PROXIES": " 127.0.0.1, 10.0.0.0/8 "}) == "127.0.0.1,10.0.0.0/8"
    assert forwarded_allow_ips({"evalcore": {"trusted_proxies": ["::1"]}}, {}) == "::1"
    with pytest.raises(ValueError, match="'proxy.lab' is not an address or a network"):
        forwarded_allow_ips({}, {"EVALCORE_TRUSTED_PROXIES": "proxy.lab"})


def test_the_page_locks_out_after_five_wrong_guesses(monkeypatch, tmp_path, default_store_file):
    copy_default_store(default_store_file, tmp_path / "evalcore" / "evalcore.duckdb")
    env = {"EVALCORE_DB": None, "XDG_DATA_HOME": tmp_path, "EVALCORE_READ_ONLY": None,
           "EVALCORE_UPLOAD_PASSWORD": "s3cret"}
    monkeypatch.setattr(THROTTLE, "wrong", {})
    monkeypatch.setattr(THROTTLE, "until", {})
    monkeypatch.setattr(BUDGET, "wrong", {})
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

    from pages.kit.access import guard_uploads

    guard_uploads()   # as app.py does on every run

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    record = UploadedFileRec(file_id="f", name="x.csv", type="text/csv", data=b"x" * 1000)
    with pytest.raises(PermissionError):
        manager.add_file("visitor", record)
    assert manager.get_files("visitor", ["f"]) == []
    WRITERS.grant("writer")
    manager.add_file("writer", record)
    assert [f.file_id for f in manager.get_files("writer", ["f"])] == ["f"]
