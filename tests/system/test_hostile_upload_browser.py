"""The hostile-input corpus through the Upload page (issue 29): the responses files of
tests/ingest/test_hostile_input.py that need no lowered limit, each picked in Chromium and imported with
"Validate and import". Every one is refused on the page ("... was refused ... Nothing was written.",
the problems listed), no exception is drawn, and after the server stops every table of the store is
exactly as before (support.fingerprint)."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.ingest.formats.items import import_items
from evalcore.store import connect
from support import TOY_ITEMS, fingerprint, write_jsonl
from support.browser import ARTIFACTS, CHROMIUM, chromium, expect, open_page, serve, settle
from support.hostile_input import CASES, RESP

pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install chromium)"),
              pytest.mark.slow]

PAGE_CASES = [name for name, c in CASES.items()
              if c.kind == "responses" and c.argv == RESP and not c.env and c.patch is None and c.code == 2]


def test_the_corpus_is_refused_on_the_upload_page(tmp_path):
    assert len(PAGE_CASES) >= 15
    store = tmp_path / "toy.duckdb"
    con = connect(store)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    before = fingerprint(con)
    con.close()
    refused = []
    with serve(store, "streamlit-hostile-upload.log") as base, chromium() as browser:
        context, page = open_page(browser, f"{base}/upload?dataset=toy&track=toy/chitchat")
        for k, name in enumerate(PAGE_CASES):
            folder = tmp_path / f"case{k}"
            folder.mkdir()
            made = CASES[name].make(folder)
            path = made.rename(made.with_name(f"case{k}-{made.name}"))  # its own banner, not the previous one's
            settle(page)
            page.locator('input[type="file"]').set_input_files(str(path))
            expect(page.locator('[data-testid="stFileUploader"]')).to_contain_text(path.name, timeout=20_000)
            box = page.get_by_label("Model name")
            box.fill("m")
            box.press("Enter")
            settle(page)
            button = page.get_by_role("button", name="Validate and import")
            banner = page.get_by_text(f"{path.name} was refused")
            # A click that lands while a rerun redraws the button can be lost (seen once on CI); a refused file
            # writes nothing, so clicking again is what a user would do and changes nothing in the store.
            for attempt in range(3):
                expect(button).to_be_enabled(timeout=60_000)
                button.click()
                try:
                    expect(banner).to_be_visible(timeout=40_000)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
                    settle(page)
            expect(page.get_by_text(f"{path.name} was refused").locator("..")).to_contain_text("Nothing was written.")
            assert page.locator('[data-testid="stTable"], [data-testid="stDataFrame"]').count() > 0, name
            assert page.locator('[data-testid="stException"]').count() == 0, name
            assert "Traceback" not in page.inner_text("body"), name
            refused.append(name)
            page.screenshot(path=str(ARTIFACTS / f"hostile-upload-{k}.png"), full_page=True)
        context.close()
    assert refused == PAGE_CASES
    con = connect(store)
    assert fingerprint(con) == before
    con.close()


# ------------------------------------------------------------------ issue 46: the files that must be refused
def _page_cases() -> list[str]:
    from support.hostile_files import CASES as FILES
    from support.hostile_files import RATINGS as FILE_RATINGS
    from support.hostile_files import RESP as FILE_RESP

    return [key for key, case in FILES.items()
            if (case.kind, case.argv) in (("responses", FILE_RESP), ("ratings", FILE_RATINGS))]


def _expected_problems(store: Path, kind: str, path: Path) -> list:
    """The problems the importer gives for this file, called as the Upload page calls it (on a copy of the store:
    a refusal writes nothing, but the page's store is left alone)."""
    import shutil

    from evalcore.core.errors import ImportRefused
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import PAGE, import_responses

    copy = path.parent / "copy.duckdb"
    shutil.copy2(store, copy)
    con = connect(copy)
    try:
        if kind == "responses":
            import_responses(con, path, dataset="toy", track="toy/chitchat", model="m3", shown=path.name,
                             track_column_first=True, words=PAGE)
        else:
            import_ratings(con, path, dataset="toy", track="toy/chitchat", scales={}, shown=path.name)
    except ImportRefused as exc:
        return exc.problems
    finally:
        con.close()
        copy.unlink()
    raise AssertionError(f"{path.name} was not refused")


def test_the_issue46_corpus_is_refused_on_the_upload_page_with_the_importers_sentences(tmp_path):
    """Items 13-19 of issue 46 through the Upload page: every responses and ratings file of
    tests/ingest/test_hostile_files.py's corpus (JSON numbers too large, mixed encodings, a key twice, a lone surrogate,
    a rating already stored by one person spelt twice, control characters, 1_0) is refused on the page, which
    shows each problem's place, field, expectation and what it got exactly as the importer (and so the CLI) words
    them; no exception is drawn; after the server stops the store's bytes are what they were."""
    from support.hostile_files import CASES as FILES
    from support.hostile_files import build, state

    keys = _page_cases()
    assert len(keys) >= 15 and {FILES[k].item for k in keys} == {13, 14, 15, 16, 17, 18, 19}
    (tmp_path / "store").mkdir()
    store = build(tmp_path / "store")
    before = state(store)[0]
    shown = []
    with serve(store, "streamlit-hostile46-upload.log") as base, chromium() as browser:
        for kind in ("responses", "ratings"):
            context, page = open_page(browser, f"{base}/upload?dataset=toy&track=toy/chitchat&kind={kind}")
            for k, key in enumerate(key for key in keys if FILES[key].kind == kind):
                folder = tmp_path / f"{kind}{k}"
                folder.mkdir()
                made = FILES[key].make(folder)
                path = made.rename(made.with_name(f"{kind}{k}-{made.name}"))   # its own banner
                problems = _expected_problems(store, kind, path)
                settle(page)
                page.locator('input[type="file"]').set_input_files(str(path))
                expect(page.locator('[data-testid="stFileUploader"]')).to_contain_text(path.name, timeout=20_000)
                if kind == "responses":
                    box = page.get_by_label("Model name")
                    box.fill("m3")
                    box.press("Enter")
                settle(page)   # the upload's own rerun first: a click during it can be lost
                button = page.get_by_role("button", name="Validate and import")
                expect(button).to_be_enabled(timeout=60_000)
                button.click()
                banner = page.get_by_text(f"{path.name} was refused")
                expect(banner).to_be_visible(timeout=60_000)
                expect(banner.locator("..")).to_contain_text("Nothing was written.")
                table = page.locator('[data-testid="stTable"]').last
                text = " ".join(table.inner_text().split())
                for p in problems:
                    for part in (p.where, p.field, p.expected, p.got):
                        assert " ".join(part.split()) in text, f"{key}: {part!r} not on the page:\n{text}"
                assert page.locator('[data-testid="stException"]').count() == 0, key
                assert "Traceback" not in page.inner_text("body"), key
                page.screenshot(path=str(ARTIFACTS / f"hostile46-upload-{kind}-{k}.png"), full_page=True)
                shown.append(key)
            context.close()
    assert sorted(shown) == sorted(keys)
    assert state(store)[0] == before, "the store's bytes changed"
    assert not store.with_name(store.name + ".wal").exists()
