"""The dashboard in a real browser, for every browser test: a page server on a store (serve; tests/system/conftest.py
makes it the module-scoped `server` and `browser` fixtures), Debian's Chromium through Playwright (chromium; never
a downloaded browser), and what a user does there (open_page, settle, upload). Screenshots and server logs go to
tests/artifacts/."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

import pytest

from pages import PAGES as ALL_PAGES
from support import ROOT, free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "tests" / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# What counts as "drawn": a chart with its marks, or a data grid, or the overview's figures.
CHART = '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg, .js-plotly-plot .main-svg'
DRAWN = CHART + ', [data-testid="stDataFrame"] canvas, [data-testid="stTable"] table, [data-testid="stMetric"]'
PAGES = [p.url_path for p in ALL_PAGES]
# A page's segmented controls and pills, the language switch beside its title left out (it is a segmented control too)
GROUPS = '[data-testid="stElementContainer"]:not([class*="st-key-lang-switch-"]) > [data-testid="stButtonGroup"]'
STORE: dict = {}  # the server's store file, for CLI commands run beside it


@contextmanager
def serve(db, log_name: str = "streamlit.log"):
    """`python app.py` on the store `db` on a free port, until the block ends; its log in ARTIFACTS."""
    port = free_port()
    env = {**os.environ, "EVALCORE_DB": str(db)}
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / log_name, "w")  # the server's own errors, for a failed run
    proc = subprocess.Popen([sys.executable, "app.py", "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://localhost:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start")
    try:
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


@contextmanager
def chromium():
    """Debian's Chromium through Playwright (never a downloaded browser), until the block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def open_page(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("h1", timeout=60_000)
    page.wait_for_load_state("networkidle")
    # `python app.py` tells Streamlit that pages/ is not its old multipage mode: no visitor, not even
    # the first deep link after the server started, gets a "Page not found" dialog.
    assert not page.get_by_text("Page not found").count(), f"'Page not found' dialog on {url}"
    return context, page


def expect(locator):
    from playwright.sync_api import expect as _expect

    return _expect(locator)


def settle(page, timeout: float = 60_000) -> None:
    """Wait until the script run a click started has finished (the running indicator is gone)."""
    page.wait_for_timeout(300)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=timeout)


def whole_page(page, path, *, most: int = 12_000) -> None:
    """A screenshot of the whole page: Streamlit scrolls inside its own pane, so the window is grown to that pane's
    height first (at most `most` px), then put back."""
    size = page.viewport_size
    height = page.evaluate("""() => Math.max(...['stMain', 'stAppViewContainer', 'stSidebarContent'].map(
        id => document.querySelector(`[data-testid="${id}"]`)?.scrollHeight || 0))""")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height) + 40, most))})
    page.wait_for_timeout(500)
    settle(page)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    page.wait_for_timeout(300)  # the layout put back before the next click lands on it


def upload(page, path, model: str) -> None:
    """As a user does it: pick the file, see it listed, name the model, then import."""
    settle(page)
    listed = page.locator('[data-testid="stFileUploader"]')
    # A rerun that starts while the file is being sent can remount the uploader and drop the
    # file (seen once on CI); pick it again then, as a user would.
    for attempt in range(3):
        page.locator('input[type="file"]').set_input_files(str(path))
        try:
            expect(listed).to_contain_text(path.name, timeout=20_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
            settle(page)
    name = page.get_by_label("Model name")
    name.fill(model)
    name.press("Enter")
    button = page.get_by_role("button", name="Validate and import")
    try:
        expect(button).to_be_enabled(timeout=60_000)
    except AssertionError as exc:
        page.screenshot(path=str(ARTIFACTS / f"upload-{model}-no-button.png"), full_page=True)
        log = (ARTIFACTS / "streamlit.log").read_text(errors="replace")[-3000:]
        raise AssertionError(f"{exc}\n--- page ---\n{page.inner_text('body')[:3000]}\n--- server log ---\n{log}") from None
    button.click()
