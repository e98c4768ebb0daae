"""Every page in Chinese (issue 64): opened on the default store with the language switch at zh-CN, a page raises
nothing, its title is Chinese, and no text it shows is one of the catalog's English messages left untranslated
(support.i18n.english_left: a sentence with its placeholders filled counts). Data (names, texts) is not checked:
it is never translated."""
import re

import pytest
from streamlit.testing.v1 import AppTest

from pages import PAGES
from support import ROOT, copy_default_store
from support.i18n import english_left, page_texts

CJK = re.compile(r"[\u4e00-\u9fff]")


def open_in(page, lang: str, monkeypatch, db) -> AppTest:
    monkeypatch.setenv("EVALCORE_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    if page.url_path:
        at.switch_page(page.script)
    at.session_state["evalcore-lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_page_in_chinese(page, monkeypatch, tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    at = open_in(page, "zh-CN", monkeypatch, db)
    texts = page_texts(at)
    titles = [t.value for t in at.title]
    assert all(CJK.search(t) for t in titles), titles
    assert english_left(texts) == []
