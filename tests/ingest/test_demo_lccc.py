"""demo-zh's lccc/chitchat is stored as Chinese is written (issue 61, item 18): LCCC's release splits every
character with a space ("1 0 个 聊 天 ..."), which reached models and annotators as is and made a perfect unspaced
reply score F1 0.98. Expected texts come from the source file with its spaces removed (every token of the toy set
is one character), written out here."""
import json

import duckdb
import pandas as pd
import pytest

from evalcore.analysis.leaderboard import leaderboard
from evalcore.ingest.builtin.demo import load_lccc, untokenized
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from evalcore.services.defaults import DATA_DIR
from evalcore.store import connect
from support import copy_default_store

SOURCE = DATA_DIR / "demo-zh" / "lccc" / "toy_data.json"


def source_turns() -> dict[str, list[list[str]]]:
    return json.loads(SOURCE.read_text(encoding="utf-8"))


def test_untokenized_joins_a_character_level_source_and_keeps_latin_words_of_a_word_level_one():
    assert untokenized("1 0 个 聊 天 时 ， 你 常 说 哪 个 ？", True) == "10个聊天时，你常说哪个？"
    assert untokenized("W h a t ?", True) == "What?"
    assert untokenized("还 要 学 R a p", True) == "还要学Rap"
    # a word-tokenised source: spaces beside CJK characters go, spaces between Latin words stay
    assert untokenized("我 喜欢 New York 的 天气 ！", False) == "我喜欢New York的天气！"
    assert untokenized("see you 明天 见", False) == "see you明天见"
    assert untokenized("", True) == untokenized("", False) == ""


def test_the_toy_set_is_character_level_and_every_turn_is_joined():
    data = source_turns()
    assert all(len(tok) == 1 for split in data.values() for d in split for t in d for tok in t.split(" "))
    dialogues = load_lccc(SOURCE)
    want = {f"lccc-{split}-{n:04d}": ["".join(t.split(" ")) for t in d]
            for split in ("train", "valid", "test") for n, d in enumerate(data[split])}
    assert {d.dialogue_id: d.turns for d in dialogues} == want
    first = next(d for d in dialogues if d.dialogue_id == "lccc-test-0000")
    assert first.turns[0] == "10个聊天时让人最不爽的词语，你常说哪个？"
    assert not any(" " in t for d in dialogues for t in d.turns)


@pytest.fixture(scope="module")
def demo(default_store_file, tmp_path_factory):
    return copy_default_store(default_store_file, tmp_path_factory.mktemp("lccc") / "store.duckdb")


def test_the_store_holds_contexts_references_and_baseline_replies_as_written(demo):
    data = source_turns()
    written = {"".join(t.split(" ")) for split in data.values() for d in split for t in d}
    train = {"".join(t.split(" ")) for d in data["train"] for t in d}
    con = duckdb.connect(str(demo), read_only=True)
    try:
        contexts = [json.loads(c) for (c,) in con.execute(
            "SELECT context FROM items WHERE dataset = 'demo-zh' AND track = 'lccc/chitchat'").fetchall()]
        references = [t for (t,) in con.execute(
            "SELECT r.text FROM item_references r JOIN items i USING (dataset, item_id) "
            "WHERE i.dataset = 'demo-zh' AND i.track = 'lccc/chitchat'").fetchall()]
        replies = [t for (t,) in con.execute(
            "SELECT r.text FROM responses r JOIN items i USING (dataset, item_id) "
            "WHERE i.dataset = 'demo-zh' AND i.track = 'lccc/chitchat'").fetchall()]
        turns = [t for (t,) in con.execute(
            "SELECT t.text FROM turns t JOIN dialogues d USING (dataset, dialogue_id) "
            "WHERE d.dataset = 'demo-zh' AND d.track = 'lccc/chitchat'").fetchall()]
    finally:
        con.close()
    assert len(contexts) == len(references) == sum(len(d) - 1 for d in data["test"]) == 200
    assert len(replies) == 400 and len(turns) == sum(len(d) for split in data.values() for d in split)
    assert all(t in written for c in contexts for t in c) and set(references) <= written and set(turns) <= written
    assert set(replies) <= train   # the retrieval baselines answer with train-split turns, as written
    assert ["10个聊天时让人最不爽的词语，你常说哪个？"] in contexts


def test_a_perfect_unspaced_reply_scores_f1_one(demo, tmp_path):
    """Each test turn as Chinese writes it (the source's turn without its spaces) replies to its item: F1 1, where
    the spaced store gave 0.98 ("10" is one char token, "1 0" two)."""
    replies = [(f"lccc-test-{n:04d}-t{t:02d}", "".join(d[t].split(" ")))
               for n, d in enumerate(source_turns()["test"]) for t in range(1, len(d))]
    pd.DataFrame(replies, columns=["item_id", "response"]).to_csv(tmp_path / "r.csv", index=False)
    con = connect(demo)
    try:
        import_responses(con, tmp_path / "r.csv", dataset="demo-zh", track="lccc/chitchat", model="perfect")
        score(con, dataset="demo-zh", track="lccc/chitchat", metrics=["F1"], progress=False, models=["perfect"])
        board = leaderboard(con, "demo-zh", "lccc/chitchat", resamples=0).set_index("model")
    finally:
        con.close()
    assert board.loc["perfect", "F1"] == 1.0   # every token of the reply is in the reference and vice versa
