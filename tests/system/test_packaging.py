"""The package as a user gets it: a clean clone, `pip install .` into a fresh virtual environment, then
`evalcore --help`, `evalcore init`, `evalcore summary` and `evalcore app` from a directory that is not the
repository, the dashboard checked in headless Chromium.

Slow (one install, about 40 s with pip's cache warm). Skipped, with the reason, where pip reaches no
package index, or where Chromium or Playwright is missing (the browser part only).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from support import ROOT, edit_record_value, shared
from support.browser import ARTIFACTS, CHROMIUM, DRAWN, chromium, expect, free_port, settle

pytestmark = pytest.mark.slow

# pip's words when it cannot reach an index at all (not when a pin or a build is wrong)
OFFLINE = ("Failed to establish a new connection", "Temporary failure in name resolution", "Network is unreachable",
           "NewConnectionError", "ProxyError", "Name or service not known", "Could not fetch URL")
EXCEPTION = '[data-testid="stException"]'


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:]


def _clean_env() -> dict:
    """The environment of a user's shell: nothing pointing at the repository or the project's venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "EVALCORE_DB", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin folder, an empty working directory, env): the clean clone installed with pip."""
    base = tmp_path_factory.mktemp("packaging")
    clone = base / "clone"
    if (ROOT / ".git").exists():
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, capture_output=True, timeout=120)
    else:
        shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".venv", "__pycache__", "*.duckdb", "artifacts"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    bin_ = venv / "bin"
    env = _clean_env()
    env["PATH"] = str(bin_) + os.pathsep + env["PATH"]
    env["VIRTUAL_ENV"] = str(venv)
    pip = subprocess.run([str(bin_ / "pip"), "install", "--quiet", str(clone), "-c", str(clone / "requirements.txt")],
                         capture_output=True, text=True, env=env, cwd=base, timeout=600)
    if pip.returncode != 0:
        err = pip.stderr + pip.stdout
        if any(s in err for s in OFFLINE):
            pytest.skip(f"pip reaches no package index: {_tail(err, 500)}")
        pytest.fail(f"pip install of the clean clone failed (exit {pip.returncode}):\n{_tail(err)}")
    work = base / "work"
    work.mkdir()
    return bin_, work, env


def _run(installed, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    bin_, work, env = installed
    done = subprocess.run([str(bin_ / args[0]), *args[1:]], cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{_tail(done.stderr + done.stdout)}"
    return done


def test_import_comes_from_the_venv(installed):
    bin_, work, _ = installed
    out = _run(installed, "python", "-c", "import evalcore, sysconfig; print(evalcore.__file__); "
                                          "print(sysconfig.get_paths()['purelib'])").stdout.split("\n")
    module, site = Path(out[0]).resolve(), Path(out[1]).resolve()
    assert module.is_relative_to(site), f"evalcore imported from {module}, not the venv's {site}"
    assert not module.is_relative_to(ROOT.resolve())
    package = module.parent
    for shipped in ("app.py", "pages/views/leaderboard.py", "data/demo-zh", ".streamlit/config.toml"):
        assert (package / "dashboard" / shipped).exists(), f"the wheel lacks evalcore/dashboard/{shipped}"
    assert not (work / "evalcore").exists() and not (work / "app.py").exists()


def test_help_version_init_summary(installed):
    bin_, work, _ = installed
    help_ = _run(installed, "evalcore", "--help").stdout
    for command in ("app", "init", "import", "summary", "leaderboard"):
        assert command in help_, f"`evalcore --help` does not list {command}"
    version = _run(installed, "evalcore", "--version").stdout.strip()
    expected = next(line.split('"')[1] for line in (work.parent / "clone" / "evalcore" / "__init__.py").read_text().splitlines()
                    if line.startswith("__version__"))
    assert version == f"evalcore {expected}"
    _run(installed, "evalcore", "init", "--db", "x.duckdb", timeout=300)
    assert (work / "x.duckdb").is_file()
    rows = json.loads(_run(installed, "evalcore", "summary", "--db", "x.duckdb", "--format", "json").stdout)
    demo = {r["track"]: r for r in rows if r["dataset"] == "demo-zh"}
    assert set(demo) == {"kdconv/knowledge", "lccc/chitchat"}
    assert all(r["items"] > 0 and r["responses"] > 0 and r["models"] == 2 for r in demo.values())


def _wait_healthy(proc, url: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"`evalcore app` exited {proc.returncode}:\n{_tail(log.read_text(errors='replace'))}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer 'ok' within {timeout} s:\n{_tail(log.read_text(errors='replace'))}")


def _check_page(browser, url: str, must_show: str, shot: str, log: Path) -> str:
    """Open `url`, wait until a chart, grid or metric is drawn and `must_show` is on the page; its text."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(url)
        page.wait_for_selector("h1", timeout=60_000)
        page.wait_for_selector(DRAWN, timeout=60_000)
        settle(page)
        page.wait_for_load_state("networkidle")
        expect(page.locator("body")).to_contain_text(must_show, timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
        text = page.inner_text("body")
        problems = []
        if page.get_by_text("Page not found").count():
            problems.append("a 'Page not found' dialog")
        if page.locator(EXCEPTION).count():
            problems.append(f"an exception: {page.locator(EXCEPTION).first.inner_text()[:2000]}")
        assert not problems, f"{url}: {problems}\n--- server log ---\n{_tail(log.read_text(errors='replace'))}"
        return text
    finally:
        context.close()


def test_app_serves_the_dashboard(installed):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    bin_, work, env = installed
    if not (work / "x.duckdb").exists():  # run alone (-k): build the store first
        _run(installed, "evalcore", "init", "--db", "x.duckdb", timeout=300)
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / "packaging-app.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(bin_ / "evalcore"), "app", "--db", "x.duckdb", "--port", str(port)], cwd=work,
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(proc, f"{base}/_stcore/health", log)
        with chromium() as browser:
            text = _check_page(browser, f"{base}/leaderboard?dataset=demo-zh", "bm25-retrieval", "packaging-leaderboard.png", log)
            assert "bm25-retrieval" in text, f"the leaderboard does not show bm25-retrieval:\n{text[:3000]}"
            assert "Leaderboard" in text
            home = _check_page(browser, f"{base}/", "Where to start", "packaging-overview.png", log)
            for shown in ("Multi-skill dialogue evaluation", "Store: x.duckdb"):  # the --db store, not a default one
                assert shown in home, f"the overview does not show {shown!r}:\n{home[:3000]}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_msde_release_record_verifies_on_a_fresh_install(installed):
    """The MSDE release with its ratings and lexical scores: its record exported, imported into an empty store and
    verified clean, all by the freshly installed `evalcore`."""
    msde = shared("msde")
    _run(installed, "evalcore", "import", "msde", str(msde), "--db", "msde.duckdb", timeout=600)
    _run(installed, "evalcore", "score", "--db", "msde.duckdb", "--dataset", "msde", "--metrics", "lexical",
         timeout=900)
    said = _run(installed, "evalcore", "record", "export", "--db", "msde.duckdb", "--dataset", "msde", "--out",
                "msde-record.zip", timeout=600).stdout
    assert "responses 96,760" in said and "human_ratings 2,190" in said
    said = _run(installed, "evalcore", "record", "import", "msde-record.zip", "--db", "empty.duckdb", timeout=600).stdout
    assert "96,760 responses" in said and "2,190 human ratings" in said
    done = _run(installed, "evalcore", "record", "verify", "msde-record.zip", timeout=900)
    assert "verified: every recomputed value and figure equals the record's" in done.stdout, done.stdout
    # one F1 value raised by 0.25 inside the record: verify names its item, model and metric, and both values
    bin_, work, env = installed
    item, model, truth = edit_record_value(work / "msde-record.zip", work / "edited.zip", "F1")
    done = subprocess.run([str(bin_ / "evalcore"), "record", "verify", "edited.zip", "--format", "csv"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, _tail(done.stderr + done.stdout)
    found = pd.read_csv(io.StringIO(done.stdout))
    value = found[(found["where"] == "tables/metric_values.parquet") & (found["metric"] == "F1")]
    assert value[["item_id", "model"]].values.tolist() == [[item, model]]
    assert float(value["recorded"].iloc[0]) == pytest.approx(truth + 0.25)
    assert float(value["recomputed"].iloc[0]) == pytest.approx(truth)
