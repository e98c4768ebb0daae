"""The offline report follows the language it was made in (issue 64): made with lang="zh-CN" it is an <html
lang="zh-CN"> document whose headings, captions and notes are Chinese, drawn with a CJK font stack, and whose data
(names, numbers, every table's cells, the data text and its checksum) is the English report's; made without a
language it is English whatever language the calling thread is in (the CLI's default), and it leaves the caller's
language as it was. `evalcore report --lang zh-CN` writes the Chinese one."""
from __future__ import annotations

import html
import re
from datetime import datetime, timezone

import pytest

from evalcore.cli import main
from evalcore.core import i18n
from evalcore.services.report import build
from evalcore.store import connect
from support import copy_default_store

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
DATASET = "engagement-en"   # every view has rows: a trust verdict, correlations, agreement
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def reports(default_store_file, tmp_path_factory):
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("report-lang") / "store.duckdb")
    con = connect(db)
    try:
        return build(con, DATASET, now=NOW), build(con, DATASET, now=NOW, lang="zh-CN"), db
    finally:
        con.close()


def data_of(text: str) -> dict:
    """What a report holds that is data: the cells of its tables, the data text and the checksum."""
    facts = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", text))
    checksum = [v for v in facts.values() if re.fullmatch(r"[0-9a-f]{64}", v)]
    return {"cells": re.findall(r"<td(?: class=\"\w+\")?>(.*?)</td>", text.split('<table class="facts">')[1]
                                .split("</table>", 1)[1]),
            "data text": re.search(r"<pre>(.*?)</pre>", text, re.S).group(1), "checksum": checksum}


def test_a_report_made_in_chinese_has_chinese_words_and_the_english_report_s_data(reports):
    english, chinese, _db = reports
    assert '<html lang="zh-CN">' in chinese and '<html lang="en">' in english
    assert '"Noto Sans CJK SC"' in chinese.split("</style>")[0] and "PingFang SC" in chinese.split("</style>")[0]
    headings = [html.unescape(h) for h in re.findall(r"<h[123][^>]*>(.*?)</h[123]>", chinese)]
    for heading in ("排行榜", "该信任哪个指标", "指标与人工评分的相关性", "人工评分", "标注者间一致性", "校验和所依据的数据"):
        assert heading in headings, headings
    assert all(CJK.search(h) for h in headings), headings   # every heading in Chinese
    assert "<th>数据校验和</th>" in chinese and "<th>data checksum</th>" in english
    assert not CJK.search(re.sub(r"<pre>.*?</pre>|<td.*?</td>|<title>.*?</title>|<h1>.*?</h1>", "",
                                 english.split("<body>")[1], flags=re.S).split("<script")[0])
    # names, numbers, cells (a trust verdict's note too, which a page words in Chinese), data text and checksum
    assert data_of(chinese) == data_of(english)
    assert len(data_of(english)["checksum"]) == 1 and data_of(english)["cells"]


def test_a_report_made_without_a_language_is_english_and_leaves_the_caller_s_language(reports):
    english, _chinese, db = reports
    con = connect(db)
    try:
        i18n.use("zh-CN")   # a page's thread in Chinese calling build() without a language
        assert build(con, "demo-zh", ["lccc/chitchat"], ("leaderboard",), now=NOW).startswith(
            '<!DOCTYPE html>\n<html lang="en">')
        assert i18n.current() == "zh-CN"
        build(con, "demo-zh", ["lccc/chitchat"], ("leaderboard",), now=NOW, lang="en")
        assert i18n.current() == "zh-CN"
    finally:
        i18n.use("en")
        con.close()


def test_the_cli_writes_the_report_in_the_language_asked_for(reports, tmp_path, capsys):
    _english, _chinese, db = reports
    out = tmp_path / "zh.html"
    assert main(["report", "--db", str(db), "--dataset", "demo-zh", "--tracks", "lccc/chitchat", "--view",
                 "leaderboard", "--lang", "zh-CN", "--out", str(out)]) in (0, None)
    text = out.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in text and '<h2 id="leaderboard">排行榜</h2>' in text
    assert i18n.current() == "en"
