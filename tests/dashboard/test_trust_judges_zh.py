"""Metric trust, Correlations and Judge audit in Chinese (issue 64): the verdicts' sentences are the CLI's English
and Chinese on a Chinese page, with the same metrics and numbers; the charts title their axes, legends and hovers in
the viewer's language over fields that keep their English names; and the Judge audit page with a judge on it leaves
no English message, says its verdicts in Chinese (on Metric trust's hover too) and hands out the same link."""
from __future__ import annotations

import json
import re

import pytest

from evalcore.analysis.trust import trust
from evalcore.analysis.trust_verdicts import verdicts
from evalcore.core import i18n
from evalcore.ingest.formats.published import import_published
from evalcore.services.defaults import MSDE_SCALES
from evalcore.store import connect
from support import ROOT, write_jsonl

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def english():
    yield
    i18n.use(i18n.EN)


def test_a_verdict_is_the_clis_english_and_chinese_on_a_chinese_page(tmp_path, english):
    con = connect(tmp_path / "paper.duckdb")
    import_published(con, ROOT / "data" / "msde-paper", dataset="msde-paper", scales=MSDE_SCALES)
    frame = trust(con, "msde-paper", origin="published", level="system", method="spearman")
    en = verdicts(frame).set_index("skill")
    i18n.use(i18n.ZH)
    zh = verdicts(frame).set_index("skill")   # the same cells, said on a Chinese page
    con.close()
    assert en.index.tolist() == zh.index.tolist() and len(en)
    for skill in en.index:
        said, shown = en.at[skill, "text"], zh.at[skill, "text"]
        assert not CJK.search(said) and said.startswith(f"{skill}: ")
        assert CJK.search(shown) and shown.startswith(f"{skill}：")
        # the numbers and the metrics named are the same in both
        assert re.findall(r"-?\d+\.\d+", said) == re.findall(r"-?\d+\.\d+", shown)
        assert zh.at[skill, "verdict"] == en.at[skill, "verdict"]   # the verdict's id is not translated


def test_a_charts_titles_follow_the_language_and_its_fields_do_not(monkeypatch, english):
    import pandas as pd

    from pages.kit import charts

    drawn = []
    monkeypatch.setattr(charts.st, "vega_lite_chart", lambda spec, **kwargs: drawn.append(spec))
    frame = pd.DataFrame({"track": ["t/a"], "dimension": ["Info"], "r": [0.5], "n": [10], "p": [0.01],
                          "note": [""]})
    for lang in (i18n.EN, i18n.ZH):
        i18n.use(lang)
        charts.bar(frame, x="track", y="r", color="dimension", key="k", tooltip=["track", "dimension", "r", "n", "note"])
    en, zh = drawn
    assert [t["field"] for t in en["encoding"]["tooltip"]] == [t["field"] for t in zh["encoding"]["tooltip"]] \
        == ["track", "dimension", "r", "n", "note"]
    assert [t["title"] for t in en["encoding"]["tooltip"]] == ["track", "dimension", "r", "n", "note"]
    assert [t["title"] for t in zh["encoding"]["tooltip"]] == ["赛道", "维度", "r", "n", "备注"]
    assert (en["encoding"]["x"]["title"], zh["encoding"]["x"]["title"]) == ("track", "赛道")
    assert (en["encoding"]["color"]["title"], zh["encoding"]["color"]["title"]) == ("dimension", "维度")
    assert "Noto Sans CJK SC" in zh["config"]["font"]


N = 12
ITEMS = [{"item_id": f"i{k}", "dataset": "ja", "track": "ja/chitchat", "context": ["你好", f"问题{k}"],
          "references": [f"回答{k}"]} for k in range(N)]
SCORES = {"ann": [2, 1, 0, 2, 1, 0, 2, 2, 0, 1, 1, 0], "bo": [2, 2, 0, 1, 1, 0, 2, 1, 1, 1, 2, 0],
          "cy": [2, 0, 0, 0, 1, 0, 2, 0, 2, 1, 0, 0]}   # integer means: a judge that answers the mean copies people


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A store whose judge (G-Eval Coh) answers each response's mean rating of three annotators."""
    from evalcore.cli import main
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from support.judge_server import JudgeServer

    tmp = tmp_path_factory.mktemp("judged")
    db = str(tmp / "ja.duckdb")
    mean = [sum(s[k] for s in SCORES.values()) // 3 for k in range(N)]
    con = connect(db)
    import_items(con, write_jsonl(tmp / "items.jsonl", ITEMS))
    rows = [f"i{k},test,SCORE={mean[k]} 回答{k}" for k in range(N)]
    (tmp / "r.csv").write_text("item_id,model,response\n" + "\n".join(rows) + "\n", encoding="utf-8")
    import_responses(con, tmp / "r.csv", dataset="ja", track="ja/chitchat")
    rated = [f"i{k},test,{who},Coh,{s[k]}" for who, s in SCORES.items() for k in range(N)]
    (tmp / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + "\n".join(rated) + "\n")
    import_ratings(con, tmp / "h.csv", dataset="ja", track="ja/chitchat", scales={"Coh": (0.0, 2.0)})
    con.close()
    with JudgeServer() as srv:
        assert main(["score", "--db", db, "--metrics", "Judge-Coh", "--judge-base-url", srv.url, "--judge-model",
                     "tiny-judge", "--judge-retries", "1"]) == 0
    return db


@pytest.mark.slow   # a judge scored and three page runs: 12 s on the 2-core machine
def test_the_judge_audit_in_chinese(judged, monkeypatch, english):
    from support.apptest import run
    from support.i18n import english_left, page_texts

    env = {"EVALCORE_DB": judged}
    en = run("judges", monkeypatch, env, lang="en", dataset="ja")
    zh = run("judges", monkeypatch, env, lang="zh-CN", dataset="ja")
    assert english_left(page_texts(zh)) == []
    assert dict(zh.query_params) == dict(en.query_params)   # the link is the view's, not the language's
    verdicts_shown = zh.dataframe[0].value["verdict"].tolist()
    assert verdicts_shown == ["与人的一致性不亚于人与人之间"]
    assert en.dataframe[0].value["verdict"].tolist() == ["agrees with people as well as people agree with each other"]
    assert CJK.search(zh.dataframe[0].value["gap_note"].iloc[0]) and not CJK.search(en.dataframe[0].value["gap_note"].iloc[0])
    # the ceiling chart: its legend (who) in Chinese, its fields as they are
    spec = json.loads(zh.get("vega_lite_chart")[0].proto.spec)
    assert spec["spec"]["encoding"]["color"]["title"] == "对象"
    assert spec["spec"]["encoding"]["y"]["title"] == "与其他人均值的斯皮尔曼相关"

    trust_zh = run("trust", monkeypatch, env, lang="zh-CN", dataset="ja", level="turn", dimension="Coh")
    assert english_left(page_texts(trust_zh)) == []
    import pyarrow as pa

    cells = pa.ipc.open_stream(trust_zh.get("vega_lite_chart")[0].proto.data.data).read_all().to_pandas()
    hover = dict(zip(cells["metric"], cells["judge audit"]))["Judge-Coh"]
    assert hover.startswith("Coh 上的审计（tiny-judge@127.0.0.1:") and "与人的一致性不亚于人与人之间" in hover


def test_a_page_that_stops_early_still_has_the_switch_and_says_why_in_chinese(tmp_path, monkeypatch, english):
    """Metric trust (nothing rated) and Judge audit (no judge) stop early: the language switch is drawn all the
    same, and what they say is Chinese."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses
    from support.apptest import run
    from support.i18n import english_left, page_texts

    db = tmp_path / "bare.duckdb"
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "\n".join(f"i{k},m,回答{k}" for k in range(N)) + "\n",
                                    encoding="utf-8")
    import_responses(con, tmp_path / "r.csv", dataset="ja", track="ja/chitchat")
    con.close()
    for page in ("trust", "judges"):
        at = run(page, monkeypatch, {"EVALCORE_DB": db}, lang="zh-CN")
        assert [b.options for b in at.get("button_group")] == [["English", "中文"]], page
        assert english_left(page_texts(at)) == [] and any(CJK.search(i.value) for i in at.info), page


def test_the_dialogue_levels_definition_is_marked_word_for_word():
    """Metric trust and the judge audit show evalcore.analysis.options.DIALOGUE_VALUE through _(): the page marks that
    very sentence, so a change to it cannot leave it untranslated unnoticed."""
    from babel.messages.extract import extract_from_file

    from evalcore.analysis.options import DIALOGUE_VALUE

    assert DIALOGUE_VALUE in {found[1] for found in extract_from_file("python", ROOT / "pages/views/trust.py")}
