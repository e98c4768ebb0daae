"""Issue 46's section A in Chromium, at 1400 and 800 px: Metric trust opens on an answer after a few responses are
rated, a track change keeps every dimension nobody deselected, a select change gives no stale-link notice, and
at 800 px the pages have the window's width (the navigation is along the top, no sidebar). Screenshots go to
tests/artifacts/ (git-ignored)."""
from __future__ import annotations

import pytest

from support.browser import ARTIFACTS, CHART, chromium, expect, open_page, serve
from support.trust_store import FIVE, toy_store

pytestmark = pytest.mark.slow   # test_browser's skip (no Chromium) comes with its fixtures

WIDTHS = (1400, 800)


def _at(browser, url: str, width: int):
    context, page = open_page(browser, url)
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState "
                           "=== 'notRunning'", timeout=60_000)
    return context, page


def _settled(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState "
                           "=== 'notRunning'", timeout=60_000)


@pytest.fixture(scope="module")
def rated_server(tmp_path_factory):
    """A dashboard on the toy store of test_trust_opening: three models, five knowledge responses and one
    chit-chat response rated (system level n = 3 models per track, turn level n = 5)."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    con, db = toy_store(tmp_path_factory.mktemp("rated-browser"), FIVE)
    con.close()
    with serve(db, "streamlit-rated.log") as base:
        yield base


@pytest.mark.parametrize("width", WIDTHS)
def test_trust_opens_on_the_level_with_a_verdict(rated_server, width):
    with chromium() as b:
        context, page = _at(b, f"{rated_server}/trust?dataset=toy", width)
        page.wait_for_selector(CHART, timeout=60_000)
        expect(page.get_by_role("combobox", name="Level")).to_have_value("turn")
        expect(page.get_by_text("Level: turn, the first with a verdict; system level has at most 3 models")).to_be_visible()
        expect(page.get_by_text("only 1 response has both ratings and metric values")).to_be_visible()
        assert "nothing to correlate" not in page.inner_text("body")
        assert "level=" not in page.url   # where it opened is no choice of the user's
        # no sidebar: the page has the window's width
        assert page.locator('[data-testid="stSidebar"]').count() == 0
        main = page.locator('[data-testid="stMain"]').bounding_box()
        assert main["width"] >= width - 20
        page.screenshot(path=str(ARTIFACTS / f"trust-opens-at-turn-{width}.png"), full_page=True)
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_correlations_track_change_keeps_every_dimension(server, browser, width):
    context, page = _at(browser, f"{server}/correlations?dataset=msde-paper&track=lic2021/knowledge", width)
    page.wait_for_selector(CHART, timeout=60_000)
    dims = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Dimensions").first
    expect(dims).to_contain_text("Know")
    page.get_by_role("combobox", name="Track (or all tracks of a skill)").click()
    page.get_by_role("option", name="luge/recommendation").click()
    page.wait_for_function("() => window.location.search.includes('recommendation')", timeout=30_000)
    _settled(page)
    expect(dims).to_contain_text("Rec", timeout=30_000)
    assert "dims=" not in page.url and "metrics=" not in page.url
    assert not page.locator('[data-testid="stAlert"]').count()
    page.screenshot(path=str(ARTIFACTS / f"correlations-track-change-{width}.png"), full_page=True)
    context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_drilldown_select_change_gives_no_stale_notice(server, browser, width):
    context, page = _at(browser, f"{server}/drilldown?dataset=engagement-en", width)
    page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
    page.get_by_role("combobox", name="Dataset").click()
    page.get_by_role("option", name="demo-zh").click()
    page.wait_for_function("() => window.location.search.includes('demo-zh')", timeout=30_000)
    _settled(page)
    alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
    assert not [a for a in alerts if "not a known" in a], alerts
    page.screenshot(path=str(ARTIFACTS / f"drilldown-dataset-change-{width}.png"), full_page=True)
    context.close()


def test_the_link_beside_the_title_is_the_address(server, browser):
    context, page = _at(browser, f"{server}/leaderboard?dataset=demo-zh&track=lccc/chitchat", 800)
    page.get_by_role("button", name="Link to this view").click()
    shown = page.locator('[data-testid="stPopoverBody"] [data-testid="stText"]')
    expect(shown).to_have_text(page.url, timeout=30_000)
    # at 800 px the leaderboard's grid has the page's width (a sidebar took 300 px and cut it after BLEU4)
    grid = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
    assert grid["width"] >= 700
    page.screenshot(path=str(ARTIFACTS / "leaderboard-800.png"), full_page=True)
    context.close()


def test_a_metric_cell_hover_has_no_empty_judge_row(server, browser):
    """Metric trust's hover lists a judge's audit only on a judge's row (Vega-Lite's tooltip lists the same fields on
    every cell: a layer per combination of the optional fields present)."""
    context, page = _at(browser, f"{server}/trust", 1400)
    chart = page.locator('[data-testid="stVegaLiteChart"]').first
    chart.wait_for(timeout=60_000)
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(1500)
    box = chart.bounding_box()
    tip = page.locator("#vg-tooltip-element")
    text = ""
    for dy in range(40, int(box["height"]) - 80, 14):   # down the first skill's column until a cell's hover shows
        page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + dy)
        page.wait_for_timeout(150)
        if tip.count() and tip.is_visible() and "metric" in tip.inner_text():
            text = tip.inner_text()
            break
    assert "metric" in text and "r (exact)" in text, text
    assert "judge audit" not in text
    page.screenshot(path=str(ARTIFACTS / "trust-hover.png"))
    context.close()
