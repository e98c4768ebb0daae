"""A refusal in the viewer's language (issue 64, item 4): the CLI prints the same English it always printed; the
same import run for a Chinese page says its sentences in Chinese, with the file, row, field and value as they are."""
from __future__ import annotations

import contextvars

import pytest

from evalcore.cli import main
from evalcore.core import i18n
from evalcore.core.errors import ImportRefused
from evalcore.ingest.places import place
from evalcore.services.upload import upload_ratings
from support import TOY_ITEMS, write_jsonl
from support.i18n import translations

# a text score in row 3 (the header is row 1)
RATINGS = "item_id,model,annotator,dimension,score\nt1,m1,ann,Info,2\nt2,m1,ann,Info,N/A (x)\n"
ENGLISH = "expected a number (or give --missing PATTERN for answers that are not numbers), got 'N/A (x)'"


def in_language(lang: str, fn, *args, **kwargs):
    """fn(...) in a run whose language is `lang` (a context of its own: this test's thread stays English)."""
    def run():
        i18n.use(lang)
        return fn(*args, **kwargs)
    return contextvars.copy_context().run(run)


def refusal(con, path) -> ImportRefused:
    with pytest.raises(ImportRefused) as err:
        upload_ratings(con, path, dataset="toy", track="toy/chitchat", scales={"Info": (0.0, 2.0)})
    return err.value


def test_the_cli_says_the_refusal_in_english_as_before(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db]) == 0
    (tmp_path / "resp.csv").write_text("item_id,model,response\nt1,m1,a\nt2,m1,b\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "resp.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat"]) == 0
    path = tmp_path / "r.csv"
    path.write_text(RATINGS, encoding="utf-8")
    capsys.readouterr()
    assert main(["import", "ratings", str(path), "--db", db, "--dataset", "toy", "--track", "toy/chitchat",
                 "--scale", "Info=0:2"]) != 0
    err = capsys.readouterr().err
    assert f"refused {path}: 1 problem(s); nothing was written" in err
    assert f"  - {path}, row 3, field 'score': {ENGLISH}" in err


def test_the_same_refusal_on_a_chinese_page_keeps_file_row_field_and_value(toy, tmp_path):
    assert "a number (or give --missing PATTERN for answers that are not numbers)" in translations()
    path = tmp_path / "r.csv"
    path.write_text(RATINGS, encoding="utf-8")
    english = refusal(toy, path).problems
    chinese = in_language(i18n.ZH, refusal, toy, path).problems
    assert len(english) == len(chinese) == 1
    en, zh = english[0], chinese[0]
    assert str(en) == f"{path}, row 3, field 'score': {ENGLISH}"   # the service, outside a page: English as before
    # the file, the row, the field and the value are the same; the expectation is said in Chinese
    assert (zh.file, zh.where, zh.field, zh.got) == (en.file, en.where, en.field, en.got) == (
        str(path), "row 3", "score", "'N/A (x)'")
    assert zh.expected == "数字（非数字的回答可用 --missing PATTERN 指定）"
    assert "--missing PATTERN" in zh.expected
    # the page shows the place in the viewer's language, its number as it is
    assert in_language(i18n.ZH, place, zh.where) == "第 3 行"
    assert place(en.where) == "row 3"


def test_a_refused_option_on_a_chinese_page(toy, tmp_path):
    """A ValueError the page shows (a scale it cannot read) is Chinese there and English elsewhere."""
    from evalcore.services.upload import parse_scales

    with pytest.raises(ValueError) as err:
        parse_scales("Info=0-2")
    assert str(err.value) == "--scale expects DIM=MIN:MAX (for example Info=0:2), got 'Info=0-2'"

    def chinese():
        with pytest.raises(ValueError) as zh:
            parse_scales("Info=0-2")
        return str(zh.value)
    assert in_language(i18n.ZH, chinese) == "--scale 的格式应为 DIM=MIN:MAX（例如 Info=0:2），实际为 'Info=0-2'"
