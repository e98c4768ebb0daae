"""Write access in a real browser (headless Debian Chromium, as in test_browser): a read-only dashboard and a
password-protected one refuse writes, also to a visitor who opens /upload directly by its URL.

Each test serves its own copy of one default store (`python -m evalcore init`, plus one replaced
submission so that the history has something to undo), with EVALCORE_READ_ONLY or EVALCORE_UPLOAD_PASSWORD
set for that server only (monkeypatch). The store is compared whole, after the server has stopped.
Screenshots go to tests/artifacts/access-*.png.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support import copy_default_store, fingerprint
from support.browser import ARTIFACTS, CHROMIUM, DRAWN, chromium, expect, open_page, serve, settle, upload

pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install chromium)"),
              pytest.mark.slow]   # a real browser: `python -m pytest -m slow` (CI's second step)

DATASET, TRACK = "demo-zh", "lccc/chitchat"
ON_TRACK = f"/upload?dataset={DATASET}&track={TRACK}"
PASSWORD = "correct horse 7"
# Every button on the Upload page that writes to the store (the file picker is checked on its own).
WRITE_BUTTONS = ("Validate and import", "Score what is missing on this track", "Restore what it set aside")
# Tables outside conftest's DATA_TABLES that an import, a job or an undo also writes.
SIDE_TABLES = ("submissions", "jobs", "archived_responses", "archived_ratings", "archived_scores", "revision")


def snapshot(db: Path) -> dict:
    """Every row of every table of the store at `db` (opened read-only; the server must have stopped)."""
    from evalcore.store import connect

    con = connect(db, read_only=True)
    try:
        out = fingerprint(con)
        for table in SIDE_TABLES:
            out[table] = sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory, default_store_file):
    """The default store with one restorable submission (model access-old, imported then replaced), and
    three item ids of demo-zh lccc/chitchat. Each test serves a copy."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.store import connect, history

    folder = tmp_path_factory.mktemp("access")
    db = copy_default_store(default_store_file, folder / "template.duckdb")
    con = connect(db)
    try:
        items = [r[0] for r in con.execute("SELECT item_id FROM items WHERE dataset = ? AND track = ? "
                                           "ORDER BY item_id LIMIT 3", [DATASET, TRACK]).fetchall()]
        old = folder / "access-old.csv"
        for text, replace in (("好 的", False), ("嗯 嗯", True)):
            old.write_text("item_id,response\n" + "".join(f"{i},{text}\n" for i in items), encoding="utf-8")
            import_responses(con, old, dataset=DATASET, track=TRACK, model="access-old", replace=replace)
        # the page offers an undo button (to a visitor who may write) for this one
        assert history.listing(con, DATASET)["state"].str.startswith("restorable").sum() == 1
    finally:
        con.close()
    return db, items


@pytest.fixture
def store(template, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copy(template[0], db)
    return db


def _history(page) -> None:
    """Open the page's history expander (its buttons are not on screen, nor in the accessibility tree,
    while it is closed) and wait for its table."""
    settle(page)
    expander = page.locator('[data-testid="stExpander"]').filter(has_text="History of this dataset")
    table = expander.locator('[data-testid="stDataFrame"]')
    if not table.is_visible():   # a click on an open one would close it
        expander.get_by_text("History of this dataset").click()
        settle(page)
    expect(table).to_be_visible(timeout=30_000)


def _no_way_to_write(page) -> None:
    """The Upload page offers nothing that writes: no file picker, no import, scoring or undo button."""
    _history(page)
    expect(page.locator('input[type="file"]')).to_have_count(0)
    expect(page.locator('[data-testid="stFileUploader"]')).to_have_count(0)
    for name in WRITE_BUTTONS:
        expect(page.get_by_role("button", name=name)).to_have_count(0)
    # what is left are the template downloads (reading) and the page's own navigation
    shown = [b.strip() for b in page.locator('[data-testid="stMain"] button:enabled').all_inner_texts()]
    assert not [b for b in shown if any(w in b.lower() for w in ("import", "score", "restore", "upload", "delete"))], shown


def test_read_only_dashboard_refuses_writes(store, monkeypatch):
    before = snapshot(store)
    monkeypatch.setenv("EVALCORE_READ_ONLY", "1")
    monkeypatch.delenv("EVALCORE_UPLOAD_PASSWORD", raising=False)
    with serve(store, "streamlit-access-read-only.log") as base, chromium() as browser:
        for url, shot in ((base + ON_TRACK, "access-read-only.png"), (f"{base}/upload", "access-read-only-bare.png"),
                          (base + ON_TRACK + "&kind=ratings", "access-read-only-ratings.png")):
            context, page = open_page(browser, url)
            expect(page.get_by_text("This dashboard is read-only")).to_be_visible(timeout=60_000)
            expect(page.get_by_label("Upload password", exact=True)).to_have_count(0)
            # reading stays open: what the track already holds is listed
            expect(page.get_by_role("heading", name="Already in")).to_be_visible(timeout=60_000)
            _no_way_to_write(page)
            page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
            context.close()
        context, page = open_page(browser, f"{base}/leaderboard?dataset={DATASET}&track={TRACK}")
        page.wait_for_selector(DRAWN, timeout=60_000)
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "access-read-only-leaderboard.png"), full_page=True)
        context.close()
    assert snapshot(store) == before


def test_upload_password_gate(store, template, monkeypatch, tmp_path):
    before = snapshot(store)
    monkeypatch.delenv("EVALCORE_READ_ONLY", raising=False)
    monkeypatch.setenv("EVALCORE_UPLOAD_PASSWORD", PASSWORD)
    # First server: visitors who do not know the password. Nothing may reach the store.
    with serve(store, "streamlit-access-password-wrong.log") as base, chromium() as browser:
        context, page = open_page(browser, base + ON_TRACK)
        box = page.get_by_label("Upload password", exact=True)
        expect(box).to_be_visible(timeout=60_000)
        _no_way_to_write(page)
        for guess in ("guess", PASSWORD.upper(), PASSWORD + " "):
            box.fill(guess)
            box.press("Enter")
            settle(page)
            expect(page.get_by_text("Wrong password: nothing can be uploaded.")).to_be_visible(timeout=30_000)
            _no_way_to_write(page)
        page.screenshot(path=str(ARTIFACTS / "access-password-wrong.png"), full_page=True)
        context.close()
    assert snapshot(store) == before

    # Second server: the right password opens the uploader, for this visitor only.
    responses = tmp_path / "access-new.csv"
    responses.write_text("item_id,response\n" + "".join(f"{i},好 的 呀\n" for i in template[1][:2]), encoding="utf-8")
    with serve(store, "streamlit-access-password.log") as base, chromium() as browser:
        context, page = open_page(browser, base + ON_TRACK)
        box = page.get_by_label("Upload password", exact=True)
        expect(box).to_be_visible(timeout=60_000)
        expect(page.locator('input[type="file"]')).to_have_count(0)
        box.fill(PASSWORD)
        box.press("Enter")
        settle(page)
        expect(page.locator('[data-testid="stFileUploader"]')).to_be_visible(timeout=30_000)
        expect(page.get_by_text("Wrong password")).to_have_count(0)
        expect(page.get_by_role("button", name="Score what is missing on this track")).to_be_enabled()
        _history(page)
        expect(page.get_by_role("button", name="Restore what it set aside")).to_be_enabled()
        page.screenshot(path=str(ARTIFACTS / "access-password.png"), full_page=True)
        upload(page, responses, "access-new")
        expect(page.get_by_text("Scored.")).to_be_visible(timeout=120_000)
        page.screenshot(path=str(ARTIFACTS / "access-password-uploaded.png"), full_page=True)
        # a new visitor (a fresh browser context: another session), straight to /upload, is asked again
        other, fresh = open_page(browser, f"{base}/upload")
        expect(fresh.get_by_label("Upload password", exact=True)).to_be_visible(timeout=60_000)
        _no_way_to_write(fresh)
        fresh.screenshot(path=str(ARTIFACTS / "access-password-new-visitor.png"), full_page=True)
        other.close()
        context.close()
    after = snapshot(store)
    new = [r for r in after["submissions"] if r not in before["submissions"]]
    assert len(new) == 1, new
    from evalcore.store import connect

    con = connect(store, read_only=True)
    try:
        rows = con.execute("SELECT item_id, text FROM responses WHERE dataset = ? AND model = 'access-new' "
                           "ORDER BY item_id", [DATASET]).fetchall()
        uploader, file = con.execute("SELECT uploader, file FROM submissions ORDER BY submission_id DESC LIMIT 1").fetchone()
        jobs = con.execute("SELECT state FROM jobs WHERE model = 'access-new'").fetchall()
        scored = con.execute("SELECT count(*) FROM system_scores WHERE dataset = ? AND track = ? AND model = 'access-new'",
                             [DATASET, TRACK]).fetchone()[0]
    finally:
        con.close()
    assert rows == [(i, "好 的 呀") for i in template[1][:2]]
    assert uploader == "password"
    assert file == responses.name  # the name its uploader gave, not the server's temporary copy
    assert jobs == [("done",)] and scored > 0


def _rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _put(base: str, session: str, xsrf: str, size: int) -> int:
    """PUT one file of `size` bytes to Streamlit's upload endpoint as the frontend does; the HTTP status."""
    import urllib.error
    import urllib.request

    body = (b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\nContent-Type: text/csv\r\n\r\n'
            + b"x" * size + b"\r\n--b--\r\n")
    request = urllib.request.Request(f"{base}/_stcore/upload_file/{session}/f{size}", data=body, method="PUT",
                                     headers={"Content-Type": "multipart/form-data; boundary=b", "X-Xsrftoken": xsrf,
                                              "Cookie": f"_streamlit_xsrf={xsrf}"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except urllib.error.URLError:
        return 0  # the server answered and closed the connection before reading the whole body


def _session_id(frames: list[bytes]) -> str:
    """The session id the server gave this tab: its first NewSession message (Streamlit's own protocol)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    for frame in frames:
        msg = ForwardMsg()
        try:
            msg.ParseFromString(frame)
        except Exception:
            continue
        if msg.WhichOneof("type") == "new_session" and msg.new_session.initialize.session_id:
            return msg.new_session.initialize.session_id
    raise AssertionError("no NewSession message among the server's first messages")


def test_visitors_cannot_park_files_in_the_upload_endpoint(store, monkeypatch, capsys):
    """A visitor without the password PUTs two 100 MB files straight to Streamlit's upload endpoint with
    its own session id and XSRF cookie: refused, nothing kept, the server's memory back where it was.
    The same session, once it gives the password, may upload (the endpoint itself still works)."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    from support import ROOT, free_port

    monkeypatch.delenv("EVALCORE_READ_ONLY", raising=False)
    port = free_port()
    log = open(ARTIFACTS / "streamlit-upload-endpoint.log", "w")
    proc = subprocess.Popen([sys.executable, "app.py", "--server.port", str(port), "--server.headless", "true"],
                            cwd=ROOT, env={**os.environ, "EVALCORE_DB": str(store), "EVALCORE_UPLOAD_PASSWORD": PASSWORD},
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://localhost:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        with chromium() as browser:
            context = browser.new_context()
            page = context.new_page()
            frames: list[bytes] = []
            page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(
                data if isinstance(data, bytes) else data.encode())))
            page.goto(base + ON_TRACK)
            box = page.get_by_label("Upload password", exact=True)
            expect(box).to_be_visible(timeout=60_000)
            session = _session_id(frames)
            xsrf = next(c["value"] for c in context.cookies() if c["name"] == "_streamlit_xsrf")
            time.sleep(2)
            before = _rss_mb(proc.pid)
            codes = [_put(base, session, xsrf, 100 * 1024 * 1024) for _ in range(2)]
            time.sleep(2)
            after = _rss_mb(proc.pid)
            with capsys.disabled():
                print(f"\nvisitor PUTs of 2 x 100 MB: {codes}; server RSS {before:.0f} -> {after:.0f} MB")
            assert all(code == 0 or code >= 400 for code in codes), codes
            assert after - before < 50, (before, after)
            # the same session with the password: the endpoint takes its file
            box.fill(PASSWORD)
            box.press("Enter")
            expect(page.locator('[data-testid="stFileUploader"]')).to_be_visible(timeout=30_000)
            assert _put(base, session, xsrf, 1000) == 204
            context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
