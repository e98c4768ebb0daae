"""From the navigation, in Chromium at 1400 and 800 px, on a store with an accepted chat task whose dataset
(chat-1-demo-zh) sorts first: the Leaderboard and Compare draw a table, on demo-zh, not on the chat dataset (an empty
board, "0 items both answered"); after an upload on the Upload page, the Leaderboard from the navigation opens on the
uploaded model's track. Screenshots in tests/artifacts (openings-*.png)."""
from __future__ import annotations

import pytest

from support import copy_default_store
from support.browser import ARTIFACTS, DRAWN, chromium, expect, open_page, serve, settle, upload
from support.chat_store import CHAT, add_chat_dataset

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = add_chat_dataset(copy_default_store(default_store_file, tmp_path_factory.mktemp("openings") / "s.duckdb"))
    with serve(db, "streamlit-openings.log") as base:
        yield base


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def nav(page, title: str) -> None:
    """A click on the page's name along the top (under "N more" when the window is too narrow for it)."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.locator('[data-testid="stTopNavLink"]', has_text=title).first.click(timeout=5_000)
    except Timeout:
        page.locator('[data-testid="stTopNavSection"]').first.click()
        page.locator('[data-testid="stTopNavDropdownLink"]', has_text=title).first.click()
    settle(page)


def dataset_and_track(page) -> tuple[str, str]:
    boxes = page.locator('[data-testid="stSelectbox"] input')
    return boxes.nth(0).input_value(), boxes.nth(1).input_value()


@pytest.mark.parametrize("width", [1400, 800])
def test_pages_from_the_navigation_draw_a_table_not_the_chat_dataset(server, browser, width):
    context, page = open_page(browser, f"{server}/")
    page.set_viewport_size({"width": width, "height": 1000})
    for title in ("Leaderboard", "Compare"):
        nav(page, title)
        expect(page.locator('[data-testid="stDataFrame"] canvas').first).to_be_visible(timeout=60_000)
        assert dataset_and_track(page) == ("demo-zh", "kdconv/knowledge"), title
        assert CHAT not in page.url and "0 items both answered" not in page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / f"openings-{title.lower()}-{width}px.png"), full_page=True)
    context.close()


def test_the_leaderboard_after_an_upload_opens_on_its_track(server, browser, tmp_path):
    responses = tmp_path / "new.csv"
    responses.write_text("item_id,response\nlccc-test-0000-t01,好的\n", encoding="utf-8")
    context, page = open_page(browser, f"{server}/upload?dataset=demo-zh&track=lccc/chitchat")
    upload(page, responses, "opening-model")
    expect(page.get_by_text("See the leaderboard")).to_be_visible(timeout=60_000)
    nav(page, "Leaderboard")
    expect(page.locator(DRAWN).first).to_be_visible(timeout=60_000)
    assert dataset_and_track(page) == ("demo-zh", "lccc/chitchat")
    page.screenshot(path=str(ARTIFACTS / "openings-leaderboard-after-upload.png"), full_page=True)
    context.close()
