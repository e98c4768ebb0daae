"""Look-alike names in imported files (issue 61, C15): 'Carol' and 'Car\\u200bol' in one ratings file are one
annotator; 'Carol' and 'Cаrol' (a Cyrillic 'а') are refused, naming the row, the field and the letter, the store
unchanged; the same for the model column of a responses file."""
from __future__ import annotations

import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from support import fingerprint

SCALES = {"Info": (0.0, 2.0)}


def ratings(tmp_path, *rows: str):
    path = tmp_path / "ratings.csv"
    path.write_text("item_id,model,annotator,dimension,score\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("char", ["\u200b", "\u00ad", "\ufeff", "\u202e", "\u2060"], ids=lambda c: f"U+{ord(c):04X}")
def test_an_invisible_character_does_not_make_a_second_annotator(toy, tmp_path, char):
    path = ratings(tmp_path, "t1,m1,Carol,Info,1", f"t2,m1,Car{char}ol,Info,2", f"t1,m2,{char}Carol,Info,0")
    report = import_ratings(toy, path, dataset="toy", track="toy/chitchat", scales=SCALES)
    assert toy.execute("SELECT DISTINCT annotator FROM human_ratings").fetchall() == [("Carol",)]
    assert any("invisible characters" in n for n in report.notes)


def test_the_same_rating_twice_through_an_invisible_character_is_a_duplicate(toy, tmp_path):
    before = fingerprint(toy)
    with pytest.raises(ImportRefused, match="row 3.*a second one"):
        import_ratings(toy, ratings(tmp_path, "t1,m1,Carol,Info,1", "t1,m1,Car\u200bol,Info,2"), dataset="toy",
                       track="toy/chitchat", scales=SCALES)
    assert fingerprint(toy) == before


@pytest.mark.parametrize("other", ["C\u0430rol", "Car\u03bfl", "\u0421arol"], ids=ascii)
def test_a_lookalike_annotator_is_refused(toy, tmp_path, other):
    before = fingerprint(toy)
    with pytest.raises(ImportRefused) as refused:
        import_ratings(toy, ratings(tmp_path, "t1,m1,Carol,Info,1", f"t2,m1,{other},Info,2"), dataset="toy",
                       track="toy/chitchat", scales=SCALES)
    said = str(refused.value)
    assert "row 3, field 'annotator'" in said and "'Carol' (row 2) is taken and looks the same" in said
    assert "CYRILLIC" in said or "GREEK" in said
    assert fingerprint(toy) == before


def test_carol_and_carol_in_other_case_stay_one_person(toy, tmp_path):
    import_ratings(toy, ratings(tmp_path, "t1,m1,Carol,Info,1", "t2,m1,carol,Info,2"), dataset="toy",
                   track="toy/chitchat", scales=SCALES)
    assert toy.execute("SELECT count(*) FROM human_ratings").fetchall() == [(2,)]


def test_a_lookalike_model_in_a_responses_file_is_refused(toy, tmp_path):
    before = fingerprint(toy)
    path = tmp_path / "resp.csv"
    path.write_text("item_id,model,response\nt1,gpt4,好\nt2,g\u0440t4,嗯\n", encoding="utf-8")
    with pytest.raises(ImportRefused, match="row 3, field 'model'.*'gpt4' \\(row 2\\) is taken"):
        import_responses(toy, path, dataset="toy", track="toy/chitchat")
    assert fingerprint(toy) == before


def test_a_lookalike_of_an_annotator_already_stored_is_taken(toy, tmp_path):
    import_ratings(toy, ratings(tmp_path, "t1,m1,Carol,Info,1"), dataset="toy", track="toy/chitchat", scales=SCALES)
    before = fingerprint(toy)
    with pytest.raises(ImportRefused, match="row 2, field 'annotator'.*'Carol' \\(already in the store\\) is taken"):
        import_ratings(toy, ratings(tmp_path, "t2,m1,C\u0430rol,Info,2"), dataset="toy", track="toy/chitchat",
                       scales=SCALES)
    assert fingerprint(toy) == before
    import_ratings(toy, ratings(tmp_path, "t2,m1,carol,Info,2"), dataset="toy", track="toy/chitchat", scales=SCALES)
