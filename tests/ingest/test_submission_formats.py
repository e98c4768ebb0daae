"""Two more layouts for `import responses`: the MSDE release's own workbook (History, response; rows found by
History) and a folder or .zip of per-track files named after their tracks; both in one transaction."""
from __future__ import annotations

import shutil
import zipfile
from collections import Counter

import openpyxl
import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import import_responses
from support import fingerprint, shared, write_jsonl


def _workbook(path, rows, *, title="大模型生成结果", header=("History", "response"), human=True):
    """A workbook like the release's: the generation sheet first, then a human-score sheet."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    ws.append(list(header))
    for row in rows:
        ws.append(list(row))
    if human:
        wb.create_sheet("人工评估结果").append(["History", "response", "丰富度"])
    wb.save(path)
    return path


def _zip(path, members: dict[str, bytes | str]):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _responses(con, model):
    return con.execute("SELECT item_id, text FROM responses WHERE model = ? ORDER BY item_id", [model]).fetchall()


@pytest.fixture
def rel(toy, tmp_path):
    """Dataset 'rel', track rel/a: r1 and r2 share History '你好', r3 has none, r4 is two turns; plus an item made
    for a human-rated row (as the MSDE importer names it) that a generation sheet never answers."""
    items = [{"item_id": "r1", "context": ["你好"]}, {"item_id": "r2", "context": ["你好"]},
             {"item_id": "r3", "context": []}, {"item_id": "r4", "context": ["甲", "乙"]},
             {"item_id": "r-m-rated-05", "context": ["你好"]}]
    import_items(toy, write_jsonl(tmp_path / "rel.jsonl", [
        {**it, "dataset": "rel", "track": "rel/a", "references": []} for it in items]))
    return toy


# ------------------------------------------------------------------ the release's workbook layout
def test_release_rows_map_by_order_and_repeated_history(rel, tmp_path):
    # one row per generation item (4 of the 5 items: the rated one is not one), Histories as stored:
    # the CPC-style item r4 stores two turns whose join with a space is the sheet's History
    path = _workbook(tmp_path / "qianwen.xlsx", [("你好", "一"), ("你好", "二"), (None, None), ("甲 乙", "四")])
    report = import_responses(rel, path, dataset="rel", track="rel/a", model="rel-m")
    assert _responses(rel, "rel-m") == [("r1", "一"), ("r2", "二"), ("r3", ""), ("r4", "四")]
    assert any("4 rows of sheet 大模型生成结果 matched to items of rel/a: 4 by row order, 0 by History" in n
               for n in report.notes)
    # 4 of the track's 5 items, one of them with an empty cell: the rated item stays unanswered
    assert report.notes[-1] == ("warning: partial submission: coverage of rel/a: 3 of 5 items (60.00%) have a response "
                                "that is not blank; 1 more has only an empty or whitespace one; the other items have "
                                "no response")


def test_release_rows_out_of_order_match_by_history(toy, tmp_path):
    # toy/chitchat in item-id order: t1 (你好 你好呀), t2 (你好); the sheet lists them the other way round
    path = _workbook(tmp_path / "x.xlsx", [("你好", "乙"), ("你好 你好呀", "甲")], title="Sheet1", human=False)
    report = import_responses(toy, path, dataset="toy", track="toy/chitchat", model="rel")
    assert _responses(toy, "rel") == [("t1", "甲"), ("t2", "乙")]
    assert any("0 by row order, 2 by History" in n for n in report.notes)


def test_release_rows_without_one_item_refused(rel, tmp_path):
    # 3 rows for 4 items: no row order, so each History must name one item; '你好' names two, '乙' none
    path = _workbook(tmp_path / "q.xlsx", [("甲 乙", "四"), ("你好", "一"), ("乙", "?")])
    before = fingerprint(rel)
    with pytest.raises(ImportRefused) as err:
        import_responses(rel, path, dataset="rel", track="rel/a", model="rel-m")
    text = str(err.value)
    assert "2 problem(s)" in text
    assert ("q.xlsx, sheet 大模型生成结果 row 3, field 'History': expected a History only one item of track 'rel/a' has "
            "(or the sheet's rows in item order, one per item: 4 rows), got '你好', shared by 2 items") in text
    assert ("q.xlsx, sheet 大模型生成结果 row 4, field 'History': expected the History of an item of track 'rel/a', "
            "got '乙'") in text
    assert fingerprint(rel) == before


def test_release_layout_needs_track_and_model(toy, tmp_path):
    path = _workbook(tmp_path / "q.xlsx", [("你好", "一")])
    with pytest.raises(ImportRefused) as err:
        import_responses(toy, path, dataset="toy")
    text = str(err.value)
    assert "2 problem(s)" in text
    assert ("q.xlsx, field '--track': expected the track its rows answer, named with --track: a workbook in the MSDE "
            "release layout (History, response) is matched to that track's items by History, got none") in text
    assert ("q.xlsx, field '--model': expected a model name given with --model: a workbook in the MSDE release layout "
            "(History, response) has no model column, got none") in text
    with pytest.raises(ImportRefused, match="field '--model'"):
        import_responses(toy, path, dataset="toy", track="toy/chitchat")


def test_release_layout_goes_through_the_same_checks(toy, tmp_path):
    path = _workbook(tmp_path / "q.xlsx", [("你好 你好呀", "一"), ("你好", "二")])
    import_responses(toy, path, dataset="toy", track="toy/chitchat", model="m1x")
    with pytest.raises(ImportRefused, match=r"q.xlsx, sheet 大模型生成结果 row 2, field 'item_id': expected an item model "
                                            r"'m1x' has not answered yet .*got 't1', already answered"):
        import_responses(toy, path, dataset="toy", track="toy/chitchat", model="m1x")
    again = _workbook(tmp_path / "q2.xlsx", [("你好 你好呀", "三"), ("你好", "四")])
    import_responses(toy, again, dataset="toy", track="toy/chitchat", model="m1x", replace=True)
    assert _responses(toy, "m1x") == [("t1", "三"), ("t2", "四")]


def test_workbook_with_item_id_is_read_as_before(toy, tmp_path):
    # a first sheet with item_id is the ordinary layout even when it also has a History column
    path = _workbook(tmp_path / "w.xlsx", [("t2", "无关", "好")], header=("item_id", "History", "response"), human=False)
    import_responses(toy, path, dataset="toy", track="toy/chitchat", model="plain")
    assert _responses(toy, "plain") == [("t2", "好")]


# ------------------------------------------------------------------ a folder or .zip of per-track files
def _knowledge_xlsx(path, rows):
    wb = openpyxl.Workbook()
    wb.active.append(["item_id", "response"])
    for row in rows:
        wb.active.append(list(row))
    wb.save(path)
    return path.read_bytes()


def test_zip_with_two_tracks(toy, tmp_path):
    path = _zip(tmp_path / "submission.zip", {
        "submission/toy_chitchat.csv": "item_id,response\nt1,好的\nt2,嗯\n",
        "submission/TOY-knowledge.xlsx": _knowledge_xlsx(tmp_path / "k.xlsx", [("k1", "看过")]),
        "__MACOSX/submission/._toy_chitchat.csv": b"\x00\x05",  # macOS resource fork: ignored
        "submission/.DS_Store": b"\x00",                        # hidden: ignored
    })
    report = import_responses(toy, path, dataset="toy", model="zipped")
    assert report.tracks == ["toy/chitchat", "toy/knowledge"]
    assert report.counts["responses"] == 2 + 1
    assert _responses(toy, "zipped") == [("k1", "看过"), ("t1", "好的"), ("t2", "嗯")]
    origins = {r[0] for r in toy.execute("SELECT origin FROM responses WHERE model = 'zipped'").fetchall()}
    assert "submission.zip/submission/toy_chitchat.csv row 2" in origins


def test_folder_with_a_release_workbook_and_a_csv(toy, tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    _workbook(folder / "toy__chitchat.xlsx", [("你好 你好呀", "一"), ("你好", "二")])
    (folder / "toy_knowledge.csv").write_text("item_id,response\nk1,三\n", encoding="utf-8")
    report = import_responses(toy, folder, dataset="toy", model="folder")
    assert report.tracks == ["toy/chitchat", "toy/knowledge"]
    assert _responses(toy, "folder") == [("k1", "三"), ("t1", "一"), ("t2", "二")]


def test_bad_row_in_the_last_member_refuses_the_whole_zip(toy, tmp_path):
    path = _zip(tmp_path / "submission.zip", {
        "toy_chitchat.csv": "item_id,response\nt1,好的\nt2,嗯\n",
        "toy_knowledge.csv": "item_id,response\nk1,看过\nt1,错\n",   # row 3: an item of the other track
    })
    before = fingerprint(toy)
    with pytest.raises(ImportRefused) as err:
        import_responses(toy, path, dataset="toy", model="zipped")
    assert ("submission.zip/toy_knowledge.csv, row 3, field 'item_id': expected an item of track 'toy/knowledge' "
            "in dataset 'toy', got 't1', an item of track 'toy/chitchat'") in str(err.value)
    assert "1 problem(s)" in str(err.value)
    assert fingerprint(toy) == before


def test_track_column_inside_a_member_must_agree_with_its_name(toy, tmp_path):
    path = _zip(tmp_path / "s.zip", {"toy_knowledge.csv": "track,item_id,response\ntoy/chitchat,t1,好\n"})
    with pytest.raises(ImportRefused, match=r"s.zip/toy_knowledge.csv, row 2, field 'track': expected 'toy/knowledge' "
                                            r"\(the track the file's name gives\), got 'toy/chitchat'"):
        import_responses(toy, path, dataset="toy", model="z")


def test_same_item_in_two_members_is_one_response_too_many(toy, tmp_path):
    path = _zip(tmp_path / "s.zip", {"toy_chitchat.csv": "item_id,response\nt1,好\n",
                                     "toy__chitchat.csv": "item_id,response\nt1,又\n"})
    with pytest.raises(ImportRefused, match=r"s.zip/toy_chitchat.csv, row 2, field 'item_id': expected one response "
                       r"per item for model 'z', got 't1' again \(first at .*s.zip/toy__chitchat.csv row 2\)"):
        import_responses(toy, path, dataset="toy", model="z")


def test_member_named_after_no_track_and_other_refusals(toy, tmp_path):
    before = fingerprint(toy)
    path = _zip(tmp_path / "s.zip", {"toy_chitchat.csv": "item_id,response\nt1,好\n",
                                     "persona.csv": "item_id,response\nt1,好\n", "notes.txt": "hi"})
    with pytest.raises(ImportRefused) as err:
        import_responses(toy, path, dataset="toy", model="z")
    text = str(err.value)
    assert ("s.zip/persona.csv: expected a file named after a track of dataset 'toy', '/' written as '_', '__' or '-': "
            "toy_chitchat, toy_knowledge, got 'persona.csv'") in text
    assert "s.zip/notes.txt: expected a .csv, .tsv, .jsonl or .xlsx file named after a track, got 'notes.txt'" in text
    with pytest.raises(ImportRefused, match=r"field '--track': expected no --track with a folder or .zip"):
        import_responses(toy, _zip(tmp_path / "t.zip", {"toy_chitchat.csv": "item_id,response\nt1,好\n"}),
                         dataset="toy", track="toy/chitchat", model="z")
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    with pytest.raises(ImportRefused, match=r"broken.zip: expected a .zip archive, got unreadable"):
        import_responses(toy, tmp_path / "broken.zip", dataset="toy", model="z")
    with pytest.raises(ImportRefused, match=r"empty.zip: expected one file per track, named after it \(e.g. "
                                            r"toy_chitchat.csv\), got no files"):
        import_responses(toy, _zip(tmp_path / "empty.zip", {"__MACOSX/._x": b""}), dataset="toy", model="z")
    assert fingerprint(toy) == before


# ------------------------------------------------------------------ the real release (../shared/data/msde)
GENERATION_ROWS = {"Lic 2021_CPC": 4000, "Lic 2021_DuConv": 4002, "Lic 2021_DuRecDial": 3609,
                   "CCF LUGE_LCCC": 20000, "CCF LUGE_DuConv": 4002, "CCF LUGE_DuRecDial": 3577}


@pytest.fixture(scope="module")
def msde_store(tmp_path_factory):
    from evalcore.ingest.formats.msde import import_msde
    from evalcore.store import connect

    root = shared("msde")
    con = connect(tmp_path_factory.mktemp("msde") / "s.duckdb")
    import_msde(con, root, progress=False)
    yield con, root
    con.close()


def _same_as_release_qianwen(con, model) -> tuple[int, int]:
    return con.execute("""SELECT count(*), count(*) FILTER (WHERE a.text = b.text) FROM responses a
                          JOIN responses b USING (dataset, item_id) WHERE a.model = 'qianwen' AND b.model = ?""",
                       [model]).fetchall()[0]


@pytest.mark.slow
def test_real_release_workbook_lands_on_every_generation_item(msde_store):
    con, root = msde_store
    report = import_responses(con, root / "data" / "Lic 2021_CPC" / "qianwen.xlsx", dataset="msde",
                              track="lic2021/persona", model="qianwen-upload")
    assert any("4,000 rows of sheet 大模型生成结果 matched to items of lic2021/persona: 4,000 by row order, 0 by History" in n
               for n in report.notes)
    assert "coverage of lic2021/persona: 4,000 of 4,000 items (100.00%)" in report.notes
    assert _same_as_release_qianwen(con, "qianwen-upload") == (4000, 4000)


@pytest.mark.slow
def test_real_release_rows_reversed_match_by_history(msde_store, tmp_path):
    con, root = msde_store
    wb = openpyxl.load_workbook(root / "data" / "Lic 2021_CPC" / "qianwen.xlsx", read_only=True)
    rows = list(wb.worksheets[0].iter_rows(values_only=True))[1:]
    wb.close()
    count = Counter(h for h, _ in rows)
    unique = [r for r in rows if count[r[0]] == 1]
    assert len(rows) == 4000 and len(unique) == 3928  # 72 rows share their History with another row
    # all rows reversed: not in item order, so the 72 rows with a shared History cannot be placed
    with pytest.raises(ImportRefused) as err:
        import_responses(con, _workbook(tmp_path / "rev.xlsx", rows[::-1]), dataset="msde", track="lic2021/persona",
                         model="qianwen-rev")
    assert "72 problem(s)" in str(err.value)
    # only the rows with a History of their own, reversed: every one found by History
    report = import_responses(con, _workbook(tmp_path / "uniq.xlsx", unique[::-1]), dataset="msde",
                              track="lic2021/persona", model="qianwen-uniq")
    assert any("3,928 rows of sheet 大模型生成结果 matched to items of lic2021/persona: 0 by row order, 3,928 by History"
               in n for n in report.notes)
    assert _same_as_release_qianwen(con, "qianwen-uniq") == (3928, 3928)


@pytest.mark.slow
def test_real_release_folders_zipped_import_all_six_tracks(msde_store, tmp_path):
    con, root = msde_store
    path = tmp_path / "qianwen.zip"
    with zipfile.ZipFile(path, "w") as z:
        for folder in GENERATION_ROWS:
            z.write(root / "data" / folder / "qianwen.xlsx", f"data/{folder}/qianwen.xlsx")
    before = fingerprint(con)
    bad = tmp_path / "bad.zip"
    shutil.copy(path, bad)
    with zipfile.ZipFile(bad, "a") as z:  # one more file, named after no track: nothing lands
        z.writestr("data/readme.csv", "item_id,response\n")
    with pytest.raises(ImportRefused, match=r"bad.zip/data/readme.csv: expected a file named after a track"):
        import_responses(con, bad, dataset="msde", model="qianwen-zip")
    assert fingerprint(con) == before
    report = import_responses(con, path, dataset="msde", model="qianwen-zip")
    assert len(report.tracks) == 6
    assert report.counts["responses"] == 4000 + 4002 + 3609 + 20000 + 4002 + 3577 == 39190
    assert _same_as_release_qianwen(con, "qianwen-zip") == (39190, 39190)
