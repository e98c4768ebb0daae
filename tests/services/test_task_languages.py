"""A task's language (issue 64 item 2): a rating or chat task is made in its dataset's language unless told another;
its dimension definitions (MSDE's in the paper's Chinese or in English, a lab's own per language), its questions
(ACUTE-Eval's included) and its chat flags' labels follow it; a bad language, dimension or definition is refused
with the store unchanged."""
from __future__ import annotations

import pytest

from evalcore.core.names import UnknownName
from evalcore.metrics.judge.prompts import RUBRICS
from evalcore.services import chats
from evalcore.services import tasks as service
from evalcore.store import chats as chat_store
from evalcore.store import connect
from evalcore.store import endpoints as registry
from evalcore.store import tasks as stored
from support import copy_default_store

NOWHERE = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, default_store_file):
    """A copy of the default store (demo-zh is Chinese, engagement-en English) with an endpoint (never asked)."""
    con = connect(copy_default_store(default_store_file, tmp_path_factory.mktemp("langs") / "s.duckdb"))
    registry.add(con, registry.Registered("alpha", NOWHERE, "served", api_key_env=None))
    yield con
    con.close()


def _task(con, dataset="demo-zh", dimensions=("Info", "Coh"), **kw) -> stored.Task:
    return stored.get(con, service.create_task(con, dataset=dataset, mode=kw.pop("mode", "pairwise"),
                                               dimensions=list(dimensions), items=4, per_item=1, **kw))


def _state(con) -> list:
    return [con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
            for t in ("tasks", "chat_tasks", "dimension_texts", "dimensions")]


def test_a_task_takes_its_datasets_language_and_lang_overrides_it(demo):
    zh = _task(demo)
    assert zh.lang == "zh-CN"
    assert [d.description for d in zh.dimensions] == [service.rubric_text(RUBRICS["zh"][d]) for d in ("Info", "Coh")]
    assert [d.question for d in zh.dimensions] == ["哪条回复的信息更丰富？", "哪条回复更连贯？"]
    en = _task(demo, lang="en")
    assert en.lang == "en" and service.describe(en)["lang"] == "en"
    assert [d.description for d in en.dimensions] == [service.rubric_text(RUBRICS["en"][d]) for d in ("Info", "Coh")]
    assert [d.question for d in en.dimensions] == [service.QUESTIONS["Info"], service.QUESTIONS["Coh"]]
    english = _task(demo, dataset="engagement-en", dimensions=["Engagement"], mode="absolute")
    assert english.lang == "en" and english.dimensions[0].question == "Which response is better on Engagement?"
    chinese = _task(demo, dataset="engagement-en", dimensions=["Engagement"], mode="absolute", lang="zh-CN")
    assert chinese.lang == "zh-CN" and chinese.dimensions[0].question == "哪条回复在 Engagement 上更好？"


def test_acute_evals_questions_in_the_tasks_language():
    assert set(service.ACUTE_ZH) == set(service.ACUTE) and set(service.QUESTIONS_ZH) == set(service.QUESTIONS)
    assert service.ASKED["dialogue"]["zh-CN"]["Engagingness"] == "如果要进行一场很长的对话，你更愿意和谁聊？"
    assert service.ASKED["dialogue"]["en"]["Engagingness"] == "Who would you prefer to talk to for a long conversation?"


def test_dimension_specs_at_dialogue_level_ask_acute_in_chinese(demo):
    specs = {d.dimension: d for d in service.dimension_specs(demo, "demo-zh", ["Engagingness", "Know"],
                                                             level="dialogue")}
    assert specs["Engagingness"].question == service.ACUTE_ZH["Engagingness"]
    assert specs["Know"].question == service.ACUTE_ZH["Know"]
    assert specs["Know"].description == service.rubric_text(RUBRICS["zh"]["Know"])
    english = service.dimension_specs(demo, "demo-zh", ["Humanness"], lang="en", level="dialogue")
    assert english[0].question == "Which speaker sounds more human?"


def test_a_labs_own_definition_per_language_is_used(demo):
    assert service.describe_dimension(demo, dataset="engagement-en", dimension="Engagement", lang="zh-CN",
                                      text="参与度：你是否愿意继续和它聊下去。") is False
    assert _task(demo, dataset="engagement-en", dimensions=["Engagement"], mode="absolute",
                 lang="zh-CN").dimensions[0].description \
        == "参与度：你是否愿意继续和它聊下去。"
    english = _task(demo, dataset="engagement-en", dimensions=["Engagement"], mode="absolute")
    assert english.dimensions[0].description == ""   # no English one given: the stored description (none)
    assert service.describe_dimension(demo, dataset="engagement-en", dimension="Engagement", lang="zh-CN",
                                      text="参与度") is True   # replaced
    assert service.dimension_texts(demo, "engagement-en", "zh-CN") == {"Engagement": "参与度"}
    # MSDE's own wording replaced for one language only
    service.describe_dimension(demo, dataset="demo-zh", dimension="Rec", lang="en", text="Did the user take it?")
    specs = service.dimension_specs(demo, "demo-zh", ["Rec"], lang="en")
    assert specs[0].description == "Did the user take it?"
    assert service.dimension_specs(demo, "demo-zh", ["Rec"])[0].description == service.rubric_text(RUBRICS["zh"]["Rec"])


@pytest.mark.parametrize("call, error, said", [
    (lambda c: _task(c, lang="fr"), ValueError, "unknown language 'fr'; known: en, zh-CN"),
    (lambda c: _task(c, lang="zh"), ValueError, "unknown language 'zh'"),
    (lambda c: _task(c, dimensions=["Infoo"], lang="en"), UnknownName, "Info"),
    (lambda c: service.describe_dimension(c, dataset="demo-zh", dimension="Infoo", lang="en", text="x"), UnknownName,
     "unknown dimension 'Infoo'"),
    (lambda c: service.describe_dimension(c, dataset="demo-zhh", dimension="Info", lang="en", text="x"), UnknownName,
     "unknown dataset 'demo-zhh'"),
    (lambda c: service.describe_dimension(c, dataset="demo-zh", dimension="Info", lang="zh_CN", text="x"), ValueError,
     "unknown language 'zh_CN'"),
    (lambda c: service.describe_dimension(c, dataset="demo-zh", dimension="Info", lang="en", text="  "), ValueError,
     "needs its text"),
    (lambda c: service.describe_dimension(c, dataset="demo-zh", dimension="Info", lang="en", text="a\x1b[2Jb"),
     ValueError, "may not hold"),
    (lambda c: chats.create_chat(c, dataset="demo-zh", track="kdconv/knowledge", endpoints=["alpha"], n_scenarios=1,
                                 lang="de"), ValueError, "unknown language 'de'"),
])
def test_refusals_leave_the_store_unchanged(demo, call, error, said):
    before = _state(demo)
    with pytest.raises(error, match=said):
        call(demo)
    assert _state(demo) == before


def test_a_chat_task_takes_its_language_with_its_flags_labels(demo):
    zh = chat_store.get(demo, chats.create_chat(demo, dataset="demo-zh", track="kdconv/knowledge", endpoints=["alpha"],
                                                n_scenarios=1, flags=["contradiction", "off topic", "太长"]))
    assert zh.lang == "zh-CN" and chats.describe(zh)["lang"] == "zh-CN"
    assert zh.flags == ("contradiction", "off topic", "太长")   # stored as their ids
    assert [chats.flag_label(zh, f) for f in zh.flags] == ["前后矛盾", "偏离话题", "太长"]
    assert [d.description for d in zh.dimensions] == [service.rubric_text(RUBRICS["zh"][d])
                                                      for d in ("Info", "Coh", "Know")]
    en = chat_store.get(demo, chats.create_chat(demo, dataset="demo-zh", track="kdconv/knowledge", endpoints=["alpha"],
                                                n_scenarios=1, lang="en"))
    assert en.lang == "en" and [chats.flag_label(en, f) for f in en.flags] == chats.DEFAULT_FLAGS
    assert en.dimensions[0].description == service.rubric_text(RUBRICS["en"]["Info"])
    assert set(chats.FLAG_LABELS["zh-CN"]) == set(chats.DEFAULT_FLAGS)
