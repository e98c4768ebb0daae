"""Overview, Drill-down, Human evaluation, Ensembles and Compare in Chinese (issue 64): what their views make in words
follows the page's language and stays English elsewhere (the CLI, downloads made in English), the links a page hands
out are the same in both languages, and the words a page looks up in the catalog are the engine's own."""
from __future__ import annotations

import json

import pytest
from babel.messages.extract import extract_from_file

from evalcore.core import i18n
from evalcore.pagedata import catalog, head_to_head
from support import ROOT


@pytest.fixture
def english():
    yield
    i18n.use(i18n.EN)


def test_the_views_words_follow_the_language(toy, english):
    from evalcore.scoring import score

    score(toy, dataset="toy", metrics="F1", progress=False)
    deltas = head_to_head.compare(toy, "toy", "toy/chitchat", "m1", "m2", bootstrap=20, seed=0)[0]
    assert deltas["ci"].tolist() == ["paired bootstrap 95% B=20 seed=0"]   # as the CLI and an English page have it
    assert catalog.dataset_languages(toy)["language_from"].tolist() == ["detected from the texts"]
    assert catalog.describe("Info") == "human score (mean)"
    i18n.use(i18n.ZH)
    deltas = head_to_head.compare(toy, "toy", "toy/chitchat", "m1", "m2", bootstrap=20, seed=0)[0]
    assert deltas["ci"].tolist() == ["配对自助法 95% B=20 种子=0"]
    assert deltas.columns.tolist()[:2] == ["metric", "n"]   # the frame's names stay (downloads, sort=)
    assert catalog.dataset_languages(toy)["language_from"].tolist() == ["根据文本检测"]
    assert catalog.describe("Info") == "人工评分（均值）"


def test_the_human_page_shows_the_engines_definitions_through_the_catalog():
    """The caption translates agreement_corr's definition as it comes: the page marks those very sentences."""
    from evalcore.analysis.agreement_corr import DEFINITIONS

    marked = {found[1] for found in extract_from_file("python", ROOT / "pages/views/human.py")}
    assert set(DEFINITIONS.values()) <= marked


def _drilldown_links(at) -> list[str]:
    return at.dataframe[-1].value["drill-down"].tolist()


def test_compare_in_chinese_hands_out_the_same_links(toy, english, monkeypatch):
    from evalcore.scoring import score
    from support.apptest import run

    score(toy, dataset="toy", metrics="F1", progress=False)
    db = toy.execute("PRAGMA database_list").fetchall()[0][2]
    toy.close()
    query = dict(dataset="toy", track="toy/chitchat", a="m1", b="m2")
    en = run("compare", monkeypatch, {"EVALCORE_DB": db}, lang="en", **query)
    zh = run("compare", monkeypatch, {"EVALCORE_DB": db}, lang="zh-CN", **query)
    assert _drilldown_links(zh) == _drilldown_links(en) and _drilldown_links(en)
    shown = {lang: json.loads(at.dataframe[-1].proto.columns)["drill-down"] for lang, at in (("en", en), ("zh", zh))}
    assert shown["en"]["type_config"]["display_text"] == "open" and shown["zh"]["type_config"]["display_text"] == "打开"
    assert shown["zh"]["label"] == "逐条查看"
    labels = json.loads(zh.dataframe[0].proto.columns)
    assert labels["mean m1"]["label"] == "m1 均值"   # a model's name stays as it is inside the translated header
    assert [s.label for s in zh.selectbox][-3:] == ["模型 A", "模型 B", "差异最大的条目，依据"]
