"""The README's notebook example runs as written, and evalcore.score agrees with sacrebleu and with
a store scored by the CLI."""
import re

import pytest
import sacrebleu

from evalcore.cli import main
from support import ROOT, copy_default_store


def readme_example(name: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"README has no example marked {name!r}"
    return match.group(1)


def test_readme_api_example_runs(tmp_path, monkeypatch, capsys, default_store_file):
    monkeypatch.chdir(tmp_path)
    copy_default_store(default_store_file, tmp_path / "evalcore.duckdb")   # as `init` builds it, once per session
    assert main(["init", "--db", "evalcore.duckdb"]) == 0
    capsys.readouterr()
    scope: dict = {}
    exec(compile(readme_example("api"), "README.md example", "exec"), scope)
    result, board, trust, turns = scope["result"], scope["board"], scope["trust"], scope["turns"]
    assert set(result.sentence.columns) == {"BLEU4", "F1", "ROUGE", "DIST2"} and len(result.sentence) == 2
    assert result.signatures["BLEU4"].startswith("BLEU4|tok:char-1|")
    assert "BLEU4 = " in capsys.readouterr().out
    assert set(board["model"]) == {"bm25-retrieval", "tfidf-retrieval"}
    assert {"knowledge", "recommendation"} <= set(trust["skill"])
    assert (turns["level"] == "turn").all() and len(turns) > 0


def test_corpus_bleu_equals_sacrebleu():
    import evalcore

    hyps = ["the cat sat on the mat", "a dog barks at night", "it is raining today again"]
    refs = ["the cat is on the mat", "the dog barks at night", "it rains today"]
    ours = evalcore.score(hyps, refs, metrics=["BLEU4"], language="en", tokenizer="space")
    theirs = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", smooth_method="none")
    assert ours.corpus["BLEU4"] * 100 == pytest.approx(theirs.score, abs=1e-9)


def test_references_must_line_up_and_no_reference_gives_no_value():
    import evalcore

    with pytest.raises(ValueError, match="2 hypotheses but 1 reference entries"):
        evalcore.score(["a", "b"], [["a"]])
    result = evalcore.score(["你好", "再见"], [["你好"], []], metrics=["F1", "DIST1"])
    assert result.sentence["F1"].isna().tolist() == [False, True]      # no reference: no value, not 0
    assert result.sentence["DIST1"].notna().all()                      # reference-free
    assert result.corpus["F1"] == 1.0


def test_distinct_by_arithmetic():
    import evalcore

    hyps = ["a b a", "b c", "c c c d"]
    result = evalcore.score(hyps, None, metrics=["DIST1", "DIST2"], tokenizer="space")
    # pooled: unigrams a b a b c c c c d -> 4 distinct of 9; bigrams ab ba bc cc cc cd -> 5 distinct of 6
    assert result.corpus["DIST1"] == pytest.approx(4 / 9)
    assert result.corpus["DIST2"] == pytest.approx(5 / 6)
    assert result.sentence["DIST1"].tolist() == pytest.approx([2 / 3, 1.0, 2 / 4])
