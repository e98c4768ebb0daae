"""Input limits and hygiene: too many columns, too long a cell, control characters are refused
naming row, field and limit (the store untouched); identifiers are normalised one way and reported."""
from __future__ import annotations

import pytest

from evalcore.core.errors import ImportRefused
from evalcore.core.text import normalise_id
from evalcore.ingest import checker, limits
from evalcore.ingest.formats.responses import import_responses
from support import fingerprint


def test_a_million_columns_are_refused_at_the_header(toy, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\nx\n", encoding="utf-8")
    before = fingerprint(toy)
    with pytest.raises(ImportRefused, match=r"wide.csv, row 1: expected at most 1,000 columns \(EVALCORE_MAX_COLUMNS\), "
                                            r"got 1,000,000 columns"):
        import_responses(toy, path, dataset="toy", track="toy/chitchat", model="m")
    assert fingerprint(toy) == before


def test_a_cell_over_the_limit_is_refused_with_its_row(toy, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_CELL", 10)
    path = tmp_path / "long.csv"
    path.write_text("item_id,response\nt1,short\nt2," + "长" * 11 + "\n", encoding="utf-8")
    before = fingerprint(toy)
    with pytest.raises(ImportRefused, match=r"long.csv, row 3, field 'response': expected at most 10 characters "
                                            r"\(EVALCORE_MAX_CELL\), got 11 characters"):
        import_responses(toy, path, dataset="toy", track="toy/chitchat", model="m")
    assert fingerprint(toy) == before


def test_control_characters_are_refused_tab_and_newline_are_text(toy, tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes("item_id,response\nt1,\"好\t的\n呀\"\nt2,a\x00b\n".encode("utf-8"))
    with pytest.raises(ImportRefused) as err:
        import_responses(toy, path, dataset="toy", track="toy/chitchat", model="m")
    assert len(err.value.problems) == 1
    assert ("row 3, field 'response': expected text without control characters (tab and newline are fine), "
            "got U+0000 at character 2") in str(err.value)


def test_identifiers_are_normalised_one_way_and_reported(toy, tmp_path):
    path = tmp_path / "ids.csv"
    # ' t1 ' (spaces) and 'ｔ２' (full-width letters and digits) are t1 and t2 under NFKC
    path.write_text("item_id,response\n t1 ,好\nｔ２,嗯\n", encoding="utf-8")
    report = import_responses(toy, path, dataset="toy", track="toy/chitchat", model="ｍ３")
    assert checker.NORMALISED.format(n=2) in report.notes
    # the model named outside the file is read the same one way (issue 29): 'ｍ３' is m3
    rows = toy.execute("SELECT item_id FROM responses WHERE model = 'm3' ORDER BY 1").fetchall()
    assert rows == [("t1",), ("t2",)]
    assert toy.execute("SELECT count(*) FROM models WHERE model = 'ｍ３'").fetchone() == (0,)
    assert normalise_id(" ｍ３\u3000") == "m3"
