"""Every page in Chromium in Chinese and in English (issue 64): the browser's language (navigator.language) picks the
pages' language, at 1400 and 800 px (a crowd worker's phone-sized window included for Annotate and Chat). On a page
drawn for a zh-CN browser no line of its text is one of the catalog's English messages left untranslated (the same
check as the AppTest one, over what the browser shows); on a page drawn for an en-US browser, after the same pages
were drawn in Chinese on the same server, no line is a Chinese translation (a view cached in the other language
would show one). A share link made in Chinese opens the same view, in English, for an English reader. Screenshots in
tests/artifacts/lang-*.png."""
from __future__ import annotations

import pytest

from pages import PAGES
from support import copy_default_store
from support.browser import ARTIFACTS, DRAWN, chromium, serve, settle, whole_page
from support.i18n import english_left, translations

pytestmark = pytest.mark.browser
WIDTHS = (1400, 800)
# Streamlit's own words, which its browser code draws in English and no app can set (the file uploader's button and
# limit: streamlit/streamlit#13500): not the dashboard's, though "Upload" is also one of its page titles
STREAMLIT_OWN = {"Upload", "Browse files", "Drag and drop file here", "Drag and drop files here"}


@pytest.fixture(scope="module")
def server(tmp_path_factory, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("lang") / "s.duckdb")
    with serve(db, "streamlit-lang.log") as base:
        yield base


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def visit(browser, url: str, locale: str, width: int):
    """A fresh context with the browser's language `locale` at `width` px, the page drawn and its script finished."""
    from playwright.sync_api import TimeoutError as Timeout

    context = browser.new_context(viewport={"width": width, "height": 1000}, locale=locale)
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("h1", timeout=90_000)
    try:
        page.locator(DRAWN).first.wait_for(timeout=20_000)
    except Timeout:   # a page with no table (Annotate's entry, Chat with no task): its text is what counts
        pass
    settle(page)
    page.get_by_text("中文").first.wait_for(timeout=30_000)   # the switch: drawn last, once the page has run
    page.wait_for_timeout(500)
    return context, page


def lines(page) -> list[str]:
    main = page.locator('[data-testid="stMain"]').inner_text()
    nav = page.locator('header').first.inner_text() if page.locator("header").count() else ""
    lines = [line.strip() for line in (main + "\n" + nav).splitlines() if line.strip()]
    own = page.locator('[data-testid="stFileUploaderDropzone"]')
    own_text = {t.strip() for i in range(own.count()) for t in own.nth(i).inner_text().splitlines()}
    return [line for line in lines if line not in own_text | STREAMLIT_OWN or line in nav.splitlines()]


def test_every_page_in_chinese_at_both_widths_then_for_an_english_browser(server, browser):
    """Each page drawn for a zh-CN browser at 1400 px, then the same window narrowed to 800 px (the layout reflows; the
    page is not drawn again, so both widths cost one run), then drawn for an en-US browser right after: the views it
    cached in Chinese must not come back to an English reader. Annotate opens the store's one open task, the demo task
    on demo-zh, whose language is Chinese: the task's part of the page is Chinese for an English browser too (the
    task's language wins), which is checked instead."""
    chinese = {t for m, t in translations().items() if t != m and len(t) >= 4}
    left, leaked = {}, {}
    for p in PAGES:
        name = p.name or "overview"
        context, page = visit(browser, f"{server}/{p.url_path}", "zh-CN", WIDTHS[0])
        for width in WIDTHS:
            if width != WIDTHS[0]:
                page.set_viewport_size({"width": width, "height": 1000})
                page.wait_for_timeout(500)
            shown = lines(page)
            found = english_left(shown)
            if found:
                left[f"{name} at {width} px"] = found
            assert "English" in shown or "中文" in shown   # the switch, beside the title
            whole_page(page, ARTIFACTS / f"lang-zh-{name}-{width}px.png")
        context.close()
        context, page = visit(browser, f"{server}/{p.url_path}", "en-US", WIDTHS[0])
        if p.name == "annotate":
            # the task picker is the reader's (English); the open task's own part, its entry form, is Chinese
            page.get_by_role("button", name="开始评分").wait_for(timeout=30_000)
        else:
            found = [line for line in lines(page) if line in chinese]
            if found:
                leaked[name] = found
        whole_page(page, ARTIFACTS / f"lang-en-{name}-1400px.png")
        context.close()
    assert not left, left
    assert not leaked, leaked


def test_a_link_made_in_chinese_opens_the_same_view_in_english(server, browser):
    context, page = visit(browser, f"{server}/leaderboard", "zh-CN", 1400)
    page.get_by_role("button", name="本视图的链接").click()
    link = page.locator('[data-testid="stPopoverBody"] [data-testid="stText"]').inner_text().strip()
    context.close()
    context, page = visit(browser, link, "en-US", 1400)
    assert page.locator("h1").first.inner_text().strip() == "Leaderboard"
    page.get_by_role("button", name="Link to this view").click()
    again = page.locator('[data-testid="stPopoverBody"] [data-testid="stText"]').inner_text().strip()
    assert again == link
    context.close()
