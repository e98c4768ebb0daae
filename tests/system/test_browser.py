"""The dashboard in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

Screenshots go to tests/artifacts/ (git-ignored). Skipped, with the reason, where Chromium or
Playwright is missing; .ci/run installs both.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from support import ROOT
from support.browser import (
    ARTIFACTS,
    CHART,
    CHROMIUM,
    DRAWN,
    PAGES,
    STORE,
    expect,
    open_page,
    settle,
    upload,
)

pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install chromium)"),
              pytest.mark.slow]   # a real browser: `python -m pytest -m slow` (CI's second step)


def _models_box(page):
    return page.locator('[data-testid="stMultiSelect"]').filter(has_text="Models").first


def _models_shown(page) -> str:
    return _models_box(page).inner_text()


def test_leaderboard_link_round_trip(server, browser):
    context, page = open_page(browser, f"{server}/leaderboard?dataset=msde-paper&track=luge/chitchat")
    expect(_models_box(page)).to_contain_text("Qwen-7B-chat", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "leaderboard.png"), full_page=True)
    # change the track in the UI
    page.locator('[data-testid="stSelectbox"]').nth(1).click()
    page.get_by_role("option", name="luge/knowledge").click()
    page.wait_for_function("() => window.location.search.includes('luge%2Fknowledge') "
                           "|| window.location.search.includes('luge/knowledge')", timeout=30_000)
    page.wait_for_load_state("networkidle")
    link = page.url
    context.close()
    fresh, again = open_page(browser, link)
    track = again.get_by_role("combobox", name="Track (or all tracks of a skill)")
    expect(track).to_have_value("luge/knowledge", timeout=60_000)
    expect(_models_box(again)).to_contain_text("RoBERTa+UniLM", timeout=60_000)  # a luge/knowledge model
    again.screenshot(path=str(ARTIFACTS / "leaderboard-from-link.png"), full_page=True)
    fresh.close()


def test_upload_then_leaderboard(server, browser, tmp_path):
    responses = tmp_path / "my-model.csv"
    responses.write_bytes("item_id,response\nlccc-test-0000-t01,我 常 说 随 便\nlccc-test-0001-t01,好 的 呀\n".encode("gbk"))
    context, page = open_page(browser, f"{server}/upload?dataset=demo-zh&track=lccc/chitchat")
    upload(page, responses, "browser-model")
    expect(page.get_by_text("Scored.")).to_be_visible(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "upload.png"), full_page=True)
    context.close()
    # two items answered: a partial submission, listed when partial ones are shown
    context, page = open_page(browser, f"{server}/leaderboard?dataset=demo-zh&track=lccc/chitchat&partial=yes")
    expect(_models_box(page)).to_contain_text("browser-model", timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "leaderboard-after-upload.png"), full_page=True)
    context.close()


def test_bad_upload_is_refused_with_rows_named(server, browser, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,response\nlccc-test-0000-t01,好\nno-such-item,嗯\n", encoding="utf-8")
    context, page = open_page(browser, f"{server}/upload?dataset=demo-zh&track=lccc/chitchat")
    upload(page, bad, "refused-model")
    expect(page.get_by_text("bad.csv was refused: 1 problem. Nothing was written.")).to_be_visible(timeout=60_000)
    report = page.locator('[data-testid="stTable"]')
    expect(report).to_contain_text("row 3", timeout=30_000)
    expect(report).to_contain_text("an item of track 'lccc/chitchat' in dataset 'demo-zh'")
    page.screenshot(path=str(ARTIFACTS / "upload-refused.png"), full_page=True)
    context.close()
    context, page = open_page(browser, f"{server}/leaderboard?dataset=demo-zh&track=lccc/chitchat")
    expect(_models_box(page)).to_contain_text("tfidf-retrieval", timeout=60_000)
    assert "refused-model" not in _models_shown(page)
    context.close()


def test_drilldown_item(server, browser):
    context, page = open_page(browser, f"{server}/drilldown?dataset=demo-zh&track=lccc/chitchat&item=lccc-test-0000-t01")
    expect(page.get_by_text("Item lccc-test-0000-t01")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("tfidf-retrieval").first).to_be_visible(timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "drilldown.png"), full_page=True)
    context.close()


def test_correlations_page(server, browser):
    context, page = open_page(browser, f"{server}/correlations?dataset=msde-paper&track=lic2021/knowledge&method=spearman")
    page.wait_for_selector(CHART, timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "correlations.png"), full_page=True)
    context.close()


def test_ensemble_page(server, browser):
    context, page = open_page(browser, f"{server}/ensemble?dataset=msde-paper&holdout=competition")
    expect(page.get_by_text("Weights learned without").first).to_be_visible(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "ensemble.png"), full_page=True)
    context.close()


def test_human_page_opens_on_multi_annotator_ratings(server, browser):
    """No parameters: the page opens on the embedded engagement-en (three workers per reply) and shows
    the krippendorff package's alpha, computed here from the shipped AMT file."""
    import csv

    krippendorff = pytest.importorskip("krippendorff")
    import numpy as np

    with open(ROOT / "data" / "engagement-en" / "DailyDialog_groungtruth_annotated.csv", encoding="utf-8", newline="") as f:
        scores: dict = {}
        for row in csv.DictReader(f):
            for k in range(1, 11):
                scores.setdefault((row[f"Input.query{k}"].strip(), row[f"Input.response{k}"].strip()), {})[
                    row["WorkerId"]] = float(row[f"Answer.pair{k}"])
    workers = sorted({w for s in scores.values() for w in s})
    alpha = krippendorff.alpha(reliability_data=[[s.get(w, np.nan) for s in scores.values()] for w in workers],
                               level_of_measurement="interval")
    context, page = open_page(browser, f"{server}/human")
    expect(page.get_by_role("combobox", name="Dataset")).to_have_value("engagement-en", timeout=60_000)
    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_contain_text("krippendorff_alpha_interval", timeout=60_000)
    expect(grid).to_contain_text(f"{alpha:.3f}")
    page.wait_for_selector(CHART, timeout=60_000)
    page.screenshot(path=str(ARTIFACTS / "human.png"), full_page=True)
    context.close()


@pytest.mark.parametrize("path", PAGES)
def test_every_page_draws_with_no_parameters(server, browser, path):
    context, page = open_page(browser, f"{server}/{path}")
    if path == "chat":   # a person's page, opened from a chat task's link; no task ships (it needs an endpoint)
        expect(page.get_by_text("No chat task is open")).to_be_visible(timeout=60_000)
        context.close()
        return
    page.wait_for_selector(DRAWN, timeout=60_000)
    alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
    assert not [a for a in alerts if "Nothing" in a or "No correlations" in a or "has no" in a], alerts
    page.screenshot(path=str(ARTIFACTS / f"open-{path or 'overview'}.png"), full_page=True)
    context.close()


def test_trust_opens_on_the_paper_and_its_link_reopens_identically(server, browser):
    context, page = open_page(browser, f"{server}/trust")
    page.wait_for_selector(CHART, timeout=60_000)
    expect(page.get_by_role("combobox", name="Dataset")).to_have_value("msde-paper")
    expect(page.locator('[data-testid="stDataFrame"]').first).to_contain_text("chitchat", timeout=60_000)
    # a non-default view: Pearson, the Coh dimension, each track shown
    for label, option in (("Method", "pearson"), ("Human dimension", "Coh")):
        page.get_by_role("combobox", name=label).click()
        page.get_by_role("option", name=option, exact=True).click()
        page.wait_for_function(f"() => window.location.search.includes('{option}')", timeout=30_000)
    page.get_by_text("Each track", exact=True).click()
    page.wait_for_function("() => window.location.search.includes('tracks=1')", timeout=30_000)
    page.wait_for_load_state("networkidle")
    link = page.url
    page.get_by_role("button", name="Link to this view").click()   # beside the title (no sidebar)
    expect(page.locator('[data-testid="stPopoverBody"] [data-testid="stText"]')).to_have_text(link, timeout=30_000)
    context.close()
    fresh, again = open_page(browser, link)
    again.wait_for_selector(CHART, timeout=60_000)
    expect(again.get_by_role("combobox", name="Method")).to_have_value("pearson")
    expect(again.get_by_role("combobox", name="Human dimension")).to_have_value("Coh")
    again.get_by_role("button", name="Link to this view").click()
    expect(again.locator('[data-testid="stPopoverBody"] [data-testid="stText"]')).to_have_text(link, timeout=30_000)
    assert again.url == link
    again.screenshot(path=str(ARTIFACTS / "trust-from-link.png"), full_page=True)
    fresh.close()


def test_drilldown_range_handle_writes_only_its_bound(server, browser):
    context, page = open_page(browser, f"{server}/drilldown?dataset=demo-zh&track=kdconv/knowledge&metric=BLEU4")
    page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
    before = page.get_by_text(re.compile(r"^[0-9,]+ responses")).inner_text()
    thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
    thumb.focus()
    for _ in range(10):
        thumb.press("ArrowRight")
    page.wait_for_function("() => window.location.search.includes('min=0.10')", timeout=30_000)
    assert "max=" not in page.url
    expect(page.get_by_text(re.compile(r"^[0-9,]+ responses"))).not_to_have_text(before, timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "drilldown-range.png"), full_page=True)
    context.close()


def test_upload_every_track_in_one_file(server, browser, tmp_path):
    """One file with a track column lands in both demo-zh tracks; answering part of a track says so."""
    both = tmp_path / "all-tracks.csv"
    both.write_text("track,item_id,response\nlccc/chitchat,lccc-test-0000-t01,好 的\n"
                    "kdconv/knowledge,kdconv-film-000-t01,看 过\n", encoding="utf-8")
    context, page = open_page(browser, f"{server}/upload?dataset=demo-zh&track=lccc/chitchat")
    expect(page.get_by_role("button", name="Template for every track")).to_be_visible(timeout=60_000)
    upload(page, both, "every-track-model")  # no switch to flip: the track column is found in the file
    expect(page.get_by_text("Scoring runs as job")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("partial submission").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "upload-every-track.png"), full_page=True)
    # leave the page while the job scores, then come back: the job is done
    page.goto(f"{server}/overview")
    page.wait_for_selector("h1", timeout=60_000)
    page.goto(f"{server}/upload?dataset=demo-zh&track=lccc/chitchat")
    expect(page.get_by_text("every-track-model, done. Scored.")).to_be_visible(timeout=180_000)
    page.screenshot(path=str(ARTIFACTS / "upload-job-done.png"), full_page=True)
    context.close()
    for track in ("kdconv/knowledge", "lccc/chitchat"):
        # a partial submission: listed and ranked (marked) only when asked
        context, page = open_page(browser, f"{server}/leaderboard?dataset=demo-zh&track={track}&partial=yes"
                                       "&model=every-track-model")
        expect(_models_box(page)).to_contain_text("every-track-model", timeout=60_000)
        context.close()


def test_cli_beside_the_running_dashboard(server, browser, tmp_path):
    """The dashboard holds the store only while a page runs: CLI commands on the same store succeed while
    a viewer reloads pages, and the viewer sees the new model on the next load, without a restart."""
    db = str(STORE["db"])
    cli = [sys.executable, "-m", "evalcore"]
    context, page = open_page(browser, f"{server}/leaderboard?dataset=demo-zh&track=lccc/chitchat")
    expect(_models_box(page)).to_contain_text("tfidf-retrieval", timeout=60_000)
    filled = tmp_path / "filled.csv"
    made = subprocess.run([*cli, "template", "--db", db, "--dataset", "demo-zh", "--track", "lccc/chitchat",
                           "--format", "csv", "--out", str(filled)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    frame = pd.read_csv(filled)
    frame["response"] = "好 的 呀"
    frame.to_csv(filled, index=False)
    work = subprocess.Popen(f"{cli[0]} -m evalcore import responses {filled} --db {db} --dataset demo-zh "
                            f"--track lccc/chitchat --model cli-model && {cli[0]} -m evalcore score --db {db} "
                            f"--dataset demo-zh --track lccc/chitchat", shell=True, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    loads = 0
    while work.poll() is None:   # a viewer keeps loading pages meanwhile
        page.reload()
        page.wait_for_selector("h1", timeout=60_000)
        loads += 1
    out = work.stdout.read()
    assert work.returncode == 0, out
    assert "imported" in out and "took" in out
    page.reload()
    expect(_models_box(page)).to_contain_text("cli-model", timeout=60_000)
    assert not page.get_by_text("The store cannot be used right now").count()
    page.screenshot(path=str(ARTIFACTS / "cli-beside-dashboard.png"), full_page=True)
    context.close()


def test_links_keep_sort_and_open_expanders(server, browser):
    url = f"{server}/leaderboard?dataset=demo-zh&track=lccc/chitchat&sort=BLEU4&order=descending&open=signatures"
    context, page = open_page(browser, url)
    signatures = page.locator('[data-testid="stExpander"]').filter(has_text="Signatures")
    expect(signatures.locator("details")).to_have_attribute("open", "", timeout=60_000)
    expect(page.get_by_role("combobox", name="Sort by")).to_have_value("BLEU4", timeout=60_000)  # widgets draw after expanders
    settle(page)
    assert "sort=BLEU4" in page.url and "order=descending" in page.url and "open=signatures" in page.url
    # close it and open another: the link follows
    signatures.locator("summary").click()
    page.wait_for_function("() => !window.location.search.includes('open=')", timeout=30_000)
    settle(page)  # the rerun the close started has redrawn the expanders before the next click lands on one
    page.locator('[data-testid="stExpander"]').filter(has_text="Metrics without a column").locator("summary").click()
    page.wait_for_function("() => window.location.search.includes('open=missing')", timeout=60_000)
    settle(page)
    link = page.url
    context.close()
    fresh, again = open_page(browser, link)
    missing = again.locator('[data-testid="stExpander"]').filter(has_text="Metrics without a column")
    expect(missing.locator("details")).to_have_attribute("open", "", timeout=60_000)
    signatures = again.locator('[data-testid="stExpander"]').filter(has_text="Signatures").locator("details")
    expect(signatures).not_to_have_attribute("open", "")
    expect(again.get_by_role("combobox", name="Sort by")).to_have_value("BLEU4", timeout=60_000)
    again.locator('[data-testid="stDataFrame"] canvas').first.wait_for(timeout=60_000)
    again.screenshot(path=str(ARTIFACTS / "leaderboard-sorted-from-link.png"), full_page=True)
    fresh.close()
