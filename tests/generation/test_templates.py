"""Generation templates: the shipped files, how real grounding (KdConv triples, a DuConv goal path, a CPC persona)
is written into the system message, roles turn by turn, and a user's own file."""
from __future__ import annotations

import hashlib
import json

import pytest

from evalcore.generation import templates
from evalcore.generation.templates import load, named, pick, resolve, shipped
from support import ROOT, shared


def test_eight_shipped_templates_with_distinct_hashes():
    found = shipped()
    assert [t.name for t in found] == sorted(f"{s}-{lang}" for s in templates.SKILLS for lang in ("zh", "en"))
    assert len({t.sha256 for t in found}) == 8
    for t in found:
        path = ROOT / "evalcore" / "generation" / "templates" / f"{t.name}.toml"
        assert t.sha256 == hashlib.sha256(path.read_text(encoding="utf-8").encode("utf-8")).hexdigest()
        assert t.short_hash == t.sha256[:12] and t.source == "shipped"
    assert pick("knowledge", "zh").name == "knowledge-zh" and pick("recommendation", "en-US").name == "recommendation-en"
    assert pick(None, None).name == "chitchat-zh" and pick("task-oriented", "en").name == "chitchat-en"


def test_a_kdconv_item_has_every_triple_in_the_system_message():
    folder = shared("kdconv", "data", "film")
    dialogue = json.loads((folder / "test.json").read_text(encoding="utf-8"))[0]
    triples = [t for turn in dialogue["messages"] for t in turn.get("attrs", [])]
    triples = [[t["name"], t["attrname"], t["attrvalue"]] for t in triples]
    assert triples
    context = [m["message"] for m in dialogue["messages"][:3]]
    messages = named("knowledge-zh").render(context, {"knowledge": triples})
    system = messages[0]["content"]
    for subject, relation, value in triples:
        assert f"{subject} | {relation} | {value}" in system
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in messages[1:]] == context


def test_a_duconv_goal_path_and_knowledge():
    line = shared("duconv-dev", "dev.txt").read_text(encoding="utf-8").splitlines()[0]
    record = json.loads(line)
    system = named("knowledge-zh").render(record["conversation"][:1], {"goal": record["goal"],
                                                                       "knowledge": record["knowledge"]})[0]["content"]
    for i, step in enumerate(record["goal"], 1):
        assert f"{i}. {' | '.join(step)}" in system
    assert system.index("对话目标") < system.index("相关知识")
    assert all(" | ".join(t) in system for t in record["knowledge"])


def test_a_cpc_persona():
    path = shared("msde", "data", "Lic 2021_CPC", "Lic 2021_CPC.txt")
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    persona = list(record["profile"].values())
    messages = named("persona-zh").render(record["history"], {"persona": persona})
    assert all(f"- {p}" in messages[0]["content"] for p in persona)
    assert "相关知识" not in messages[0]["content"] and "对话目标" not in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": record["history"][-1]}


def test_absent_grounding_leaves_no_header_and_no_blank_line():
    system = named("knowledge-en").system(None)
    assert "Knowledge" not in system and "goal" not in system.lower().split("along")[0] and "\n\n" not in system
    assert named("chitchat-zh").system({"knowledge": []}) == named("chitchat-zh").system(None)


def test_roles_from_speakers_and_merging():
    t = named("chitchat-en")
    assert [m["role"] for m in t.render(["a", "b", "c", "d"], None)[1:]] == ["assistant", "user", "assistant", "user"]
    # the same speaker twice in a row: one message, joined by a newline
    merged = t.render(["a", "b", "c"], None, speakers=["A", "B", "B"])[1:]
    assert merged == [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b\nc"}]
    assert t.render([], None)[-1] == {"role": "user", "content": "Hello"}
    # a speaker not known (None) cannot be told from the others: the roles alternate instead of merging everything
    assert [m["role"] for m in t.render(["a", "b", "c"], None, speakers=[None, None, None])[1:]] == [
        "user", "assistant", "user"]
    assert [m["role"] for m in t.render(["a", "b", "c"], None, speakers=["A", None, "A"])[1:]] == [
        "user", "assistant", "user"]


def test_other_keys_and_text_are_written_as_given():
    t = named("persona-en")
    system = t.system({"persona": ["I like ${cats} and {0.__class__}"], "situation": "$HOME at night"})
    assert "- I like ${cats} and {0.__class__}" in system
    assert "situation:\n$HOME at night" in system


def test_a_users_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(named("knowledge-zh").text.replace("只输出你的下一句回复", "只说一句话"), encoding="utf-8")
    mine = resolve(str(path), "knowledge", "zh")
    assert mine.source == str(path) and mine.sha256 != named("knowledge-zh").sha256
    assert "只说一句话" in mine.render(["你好"], None)[0]["content"]
    for bad, said in ((named("knowledge-zh").text.replace("$goal", "${__import__}"), "placeholder $__import__"),
                      ('name = "x"\n', "field 'skill'"),
                      (named("knowledge-zh").text.replace('line = "$n. $entry"', 'line = "$n. $entry.__class__ $x"'),
                       "placeholder $x"),
                      ("not toml [", "not TOML")):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(ValueError, match=None) as exc:
            load(path)
        assert said in str(exc.value) and str(path) in str(exc.value)
    with pytest.raises(ValueError, match="neither a shipped template"):
        resolve("no-such-template", None, None)


def test_template_text_is_never_formatted_or_evaluated(tmp_path):
    """str.format fields and '$$' in a user's system message come out as written; a lone '$' is refused at load,
    naming the file, not at the first render; a placeholder's line left empty (braced too) leaves no blank line."""
    path = tmp_path / "mine.toml"
    text = named("knowledge-en").text
    path.write_text(text.replace("\n$goal\n", "\n{0.__class__} {__import__} costs $$5\n${goal}\n"), encoding="utf-8")
    system = load(path).render(["hi"], {"knowledge": [["a", "b", "c"]]})[0]["content"]
    assert "{0.__class__} {__import__} costs $5\nKnowledge (subject | relation | object):\na | b | c" in system
    assert "\n\n" not in system
    for bad, said in ((text.replace("\n$goal\n", "\ncosts $5\n"), "field 'system' has a '$'"),
                      (text.replace('line = "$n. $entry"', 'line = "$n. $entry $"'), "[parts.goal] line has a '$'"),
                      (text + "\n# " + "x" * templates.MAX_BYTES, "more than 64 KB")):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(ValueError) as exc:
            load(path)
        assert said in str(exc.value) and str(path) in str(exc.value)
