"""Blank responses (issue 61, B11): a model whose responses are all empty or whitespace no longer stops a track's
lexical scoring ("zero-size array to reduction operation maximum"): it is scored as the empty answers it gave
(no match with any reference: 0) and its pooled DIST, which has no n-gram to count, is unavailable and said so;
every other model of the track gets exactly the values it gets when scored alone."""
from __future__ import annotations

import shutil

import pytest

from evalcore.cli import main
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring.run import score
from evalcore.store import connect
from support import write_jsonl

ITEMS = [{"item_id": f"t{i}", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"],
          "references": ["今天天气很好", "天气不错"], "skill": "chitchat"} for i in range(6)]
GOOD = ["天气很好", "今天不错", "你好呀", "天气", "很好很好", "不知道"]
BLANKS = ["", "   ", "\t", "\u3000", " \n ", ""]   # the ideographic space too


def store(tmp_path, empty_store_file, name: str, models: dict[str, list[str]]):
    path = tmp_path / f"{name}.duckdb"
    shutil.copyfile(empty_store_file, path)
    con = connect(path)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    for model, texts in models.items():
        csv = tmp_path / f"{name}-{model}.csv"
        csv.write_text("item_id,response\n" + "".join(f't{i},"{t}"\n' for i, t in enumerate(texts)), encoding="utf-8")
        import_responses(con, csv, dataset="toy", track="toy/chitchat", model=model)
    return con


def system(con, model: str) -> dict[str, float]:
    return dict(con.execute("SELECT name, value FROM system_scores WHERE model = ? AND origin = 'computed'",
                            [model]).fetchall())


def test_an_all_blank_model_does_not_stop_the_track(tmp_path, empty_store_file):
    both = store(tmp_path, empty_store_file, "both", {"good": GOOD, "blank": BLANKS})
    alone = store(tmp_path, empty_store_file, "alone", {"good": GOOD})
    try:
        report = score(both, metrics="lexical", progress=False)
        score(alone, metrics="lexical", progress=False)
        assert system(both, "good") == system(alone, "good") and len(system(alone, "good")) == 10
        blank = system(both, "blank")
        # an empty answer shares no word with a reference: every reference metric is 0, by arithmetic
        assert blank == {k: 0.0 for k in ("F1", "BLEU1", "BLEU2", "BLEU3", "BLEU4",
                                                                     "METEOR-exact", "ROUGE", "CIDEr")}
        # DIST pools its n-grams: none to count, so no value (not 0), and the run says so
        said = " | ".join(report.notes)
        assert "blank: 6 of 6 responses are empty or whitespace" in said
        assert "DIST1, DIST2 unavailable for it" in said
        assert "good:" not in said
    finally:
        both.close()
        alone.close()


def test_some_blank_responses_are_scored_with_the_rest(tmp_path, empty_store_file):
    con = store(tmp_path, empty_store_file, "half", {"half": GOOD[:3] + BLANKS[:3]})
    try:
        report = score(con, metrics="lexical", progress=False)
        values = system(con, "half")
        assert len(values) == 10 and 0 < values["DIST1"] <= 1
        assert any("half: 3 of 6 responses are empty or whitespace" in n for n in report.notes)
        assert not any("unavailable" in n for n in report.notes)
    finally:
        con.close()


def test_score_command_exits_0_with_a_blank_model(tmp_path, empty_store_file, capsys):
    store(tmp_path, empty_store_file, "cli", {"good": GOOD, "blank": BLANKS}).close()
    assert main(["score", "--db", str(tmp_path / "cli.duckdb"), "--metrics", "lexical"]) == 0
    out = capsys.readouterr()
    assert "zero-size array" not in out.err + out.out and "blank: 6 of 6 responses" in out.out + out.err


@pytest.mark.parametrize("texts", [BLANKS, [" "] * 6])
def test_the_scoring_job_of_an_endpoint_that_answered_blanks_ends_done(tmp_path, empty_store_file, texts):
    from evalcore.services import jobs
    from evalcore.services.upload import queue_scoring
    from evalcore.store import transaction

    con = store(tmp_path, empty_store_file, "job", {"good": GOOD})
    try:
        score(con, metrics="lexical", progress=False)
        csv = tmp_path / "gen.csv"   # the replies as a generation stores them: text as the endpoint sent it
        csv.write_text("item_id,response\n" + "".join(f't{i},"{t}"\n' for i, t in enumerate(texts)), encoding="utf-8")
        import_responses(con, csv, dataset="toy", track="toy/chitchat", model="endpoint-bot")
        with transaction(con):
            job, _ = queue_scoring(con, "toy", ["toy/chitchat"], model="endpoint-bot")
        jobs.run(con, job)
        [(state, detail)] = con.execute("SELECT state, detail FROM jobs WHERE job_id = ?", [job]).fetchall()
        assert state == "done", detail
        assert system(con, "endpoint-bot")["F1"] == 0.0 and "DIST1" not in system(con, "endpoint-bot")
    finally:
        con.close()
