"""The Leaderboard in Chinese (issue 64): its calibrated column's controls, caption and notes in Chinese with the same
numbers and the same link as in English (the choices are ids: a link made in Chinese is the English one), a refusal
naming the page's box in Chinese, and the ranking's notes (English, as the CLI prints them) shown in the viewer's
language with their values kept."""
from __future__ import annotations

import pytest

from evalcore.core import i18n
from evalcore.pagedata import boards
from support.apptest import run
from support.calibration_store import build
from support.i18n import english_left, page_texts

CAL = {"cal_dim": "Q", "cal_by": "F1", "cal_random": "yes"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build(tmp_path_factory.mktemp("leaderboard-zh"))


def calibrated(at):
    return next(d.value for d in at.dataframe if "calibrated 95%" in d.value.columns)


def test_the_calibrated_column_in_chinese_has_the_english_numbers_and_link(monkeypatch, store):
    db, _db = store
    en = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, **CAL)
    zh = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, lang="zh-CN", **CAL)
    assert english_left(page_texts(zh)) == []
    captions = " ".join(c.value for c in zh.caption)
    assert "经人工评分校准" in captions and "PPI++" in captions
    # the frame keeps its English column names (grid shows them translated); the numbers are the same
    shown = ["model", "calibrated 95%", "rated / valued", "people only 95%"]
    assert calibrated(zh)[shown].equals(calibrated(en)[shown])
    assert dict(zh.query_params) == dict(en.query_params)
    assert {k: zh.query_params[k] for k in CAL} == CAL


def test_a_refusal_names_the_page_s_box_in_chinese(monkeypatch, store):
    db, _db = store
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, lang="zh-CN", cal_dim="Q", cal_by="F1")
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert said.startswith("无校准列：") and "复选框“导入的评分是随机样本”" in said and "--assume-random" not in said


def test_the_ranking_s_notes_in_the_viewer_s_language():
    notes = ["partial submission: not ranked ('Show partial submissions' ranks it)", "no F1 value for this row",
             "paired bootstrap over items, B=1000, seed=0, 95% percentile", "a reason this page does not know", ""]
    assert [boards.shown_note(n) for n in notes] == notes   # English: as the CLI prints them
    try:
        i18n.use("zh-CN")
        assert [boards.shown_note(n) for n in notes] == [
            "部分提交：不排名（“显示部分提交”会为其排名）", "此行没有 F1 值",
            "对条目做配对自助法，B=1000，seed=0，95% 百分位区间", "a reason this page does not know", ""]
        assert boards.shown_choice(boards.OFFICIAL) == "官方规则" and boards.shown_choice("F1") == "F1"
    finally:
        i18n.use("en")
