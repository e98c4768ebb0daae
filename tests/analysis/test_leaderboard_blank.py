"""Blank responses on the leaderboard (issue 61, B11): coverage counts the items a model answered with something,
by the importers' one test of a blank response (core.text.blank: empty or only whitespace of any kind, the
ideographic space U+3000 too), and the blanks are counted beside it. A model whose every response is blank
covers nothing and is not ranked, even with --partial; the good model beside it is ranked as alone."""
from __future__ import annotations

import pandas as pd
import pytest

from evalcore.analysis.leaderboard import coverage, leaderboard
from evalcore.core.text import BLANK_PATTERN, WHITESPACE, blank
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from support import write_jsonl

N = 8
ITEMS = [{"item_id": f"t{i}", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"], "references": ["天气很好"]}
         for i in range(N)]
CELLS = ["", " ", "\u3000", "\t \u3000", "\u00a0", "\u2003", "\u3000\u3000", "  "]   # each a blank response


def test_one_definition_of_blank(con):
    """Python's test (str.strip) and SQL's (BLANK_PATTERN) agree on every code point, alone and around a letter."""
    assert all(blank(c) for c in CELLS) and not blank("\u3000好\u3000") and not blank("\u200b")  # ZWSP is no space
    assert set(WHITESPACE) == {chr(c) for c in range(0x110000) if chr(c).isspace()}
    points = [*range(1, 0x3100), *range(0x3100, 0xD800, 7), *range(0xE000, 0x110000, 101)]   # every space is below 0x3001
    texts = [chr(c) * 2 for c in points] + ["", " 好 ", "\u3000x", "x\n"]
    sql = con.execute("SELECT list(regexp_full_match(t, ?) ORDER BY k) FROM (SELECT unnest(?) AS t, "
                      "generate_subscripts(?, 1) AS k)", [BLANK_PATTERN, texts, texts]).fetchone()[0]
    assert sql == [blank(t) for t in texts]
    assert sum(sql) == len(WHITESPACE) + 1


@pytest.fixture
def board(con, tmp_path):
    """good answers every item; empty answers every item with a blank; half answers half with blanks."""
    import_items(con, write_jsonl(tmp_path / "items.jsonl", ITEMS))
    rows = [(f"t{i}", "good", "天气很好") for i in range(N)] + [(f"t{i}", "empty", CELLS[i]) for i in range(N)] \
        + [(f"t{i}", "half", CELLS[i] if i % 2 else "天气") for i in range(N)]
    frame = pd.DataFrame(rows, columns=["item_id", "model", "response"])
    frame.to_csv(tmp_path / "r.csv", index=False)
    import_responses(con, tmp_path / "r.csv", dataset="toy", track="toy/chitchat")
    assert con.execute("SELECT count(*) FROM responses").fetchall() == [(3 * N,)]   # blanks are stored as given
    return con


@pytest.mark.parametrize("given_items", [False, True])   # both of coverage's ways: all in SQL, or the caller's items
def test_coverage_counts_only_responses_that_are_not_blank(board, given_items):
    from evalcore.store.queries import answerable_items
    items = answerable_items(board, "toy", "toy/chitchat") if given_items else None
    cov = coverage(board, "toy", "toy/chitchat", items).set_index("model")
    assert cov.loc["good", ["answered", "blank", "items", "coverage"]].tolist() == [N, 0, N, 1.0]
    assert cov.loc["empty", ["answered", "blank", "items", "coverage"]].tolist() == [0, N, N, 0.0]
    assert cov.loc["half", ["answered", "blank", "items", "coverage"]].tolist() == [N / 2, N / 2, N, 0.5]


def test_the_leaderboard_shows_the_coverage_of_what_was_said(board):
    score(board, dataset="toy", metrics=["F1"], progress=False)
    for partial in (False, True):
        rows = leaderboard(board, "toy", "toy/chitchat", rank_by="F1", partial=partial).set_index("model")
        assert rows.loc["good", "coverage"] == 1.0 and rows.loc["good", "rank"] == 1
        assert rows.loc["empty", "coverage"] == 0.0 and pd.isna(rows.loc["empty", "rank"])
        assert rows.loc["empty", "rank_ci"] == "no response that is not blank: not ranked"
        assert rows.loc["half", "coverage"] == 0.5
    assert leaderboard(board, "toy", "toy/chitchat", rank_by="F1").loc[lambda f: f["model"] == "half", "rank_ci"].item() \
        == "partial submission: not ranked (--partial ranks it)"
    assert leaderboard(board, "toy", "toy/chitchat", rank_by="F1", partial=True) \
        .set_index("model").loc["half", "rank"] == 2
