"""The hostile-input corpus through the Upload page (issue 29): the responses files of
tests/test_hostile_input.py that need no lowered limit, each picked in Chromium and imported with
"Validate and import". Every one is refused on the page ("... was refused ... Nothing was written.",
the problems listed), no exception is drawn, and after the server stops every table of the store is
exactly as before (conftest.fingerprint)."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_browser import ARTIFACTS, CHROMIUM, _open, _settle, chromium, expect, serve
from test_hostile_input import CASES, RESP

from conftest import TOY_ITEMS, fingerprint, write_jsonl
from evalcore.ingest.items import import_items
from evalcore.store import connect

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
        context, page = _open(browser, f"{base}/upload?dataset=toy&track=toy/chitchat")
        for k, name in enumerate(PAGE_CASES):
            folder = tmp_path / f"case{k}"
            folder.mkdir()
            made = CASES[name].make(folder)
            path = made.rename(made.with_name(f"case{k}-{made.name}"))  # its own banner, not the previous one's
            _settle(page)
            page.locator('input[type="file"]').set_input_files(str(path))
            expect(page.locator('[data-testid="stFileUploader"]')).to_contain_text(path.name, timeout=20_000)
            box = page.get_by_label("Model name")
            box.fill("m")
            box.press("Enter")
            button = page.get_by_role("button", name="Validate and import")
            expect(button).to_be_enabled(timeout=60_000)
            button.click()
            banner = page.get_by_text(f"{path.name} was refused")
            expect(banner).to_be_visible(timeout=60_000)
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
