"""Encodings and formats a Chinese research group actually sends."""
import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.readers import read_table

TEXT = "item_id,response\nx1,你好，今天天气不错\nx2,喜欢《我是山姆》\n"


@pytest.mark.parametrize("encoding, expected", [
    ("utf-8", "utf-8"), ("utf-8-sig", "utf-8-sig"), ("gbk", "gb18030"), ("gb18030", "gb18030"), ("utf-16", "utf-16"),
])
def test_csv_encodings(tmp_path, encoding, expected):
    path = tmp_path / "r.csv"
    path.write_bytes(TEXT.encode(encoding))
    table = read_table(path)
    assert table.columns == ["item_id", "response"]  # a BOM never leaks into the first header
    assert [r["response"] for r in table.records] == ["你好，今天天气不错", "喜欢《我是山姆》"]
    assert table.places == ["row 2", "row 3"]
    assert table.encoding == expected


def test_undecodable_bytes_are_refused(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b"item_id,response\nx1,\xff\xff\xff\xfe\x80\n")
    with pytest.raises(ImportRefused, match=r"r\.csv.*expected text in UTF-8.*GB18030"):
        read_table(path)


def test_xlsx_rows_keep_excel_numbers(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["item_id", "response"])
    ws.append(["x1", "你好"])
    ws.append([None, None])
    ws.append(["x2", 0])
    wb.save(tmp_path / "r.xlsx")
    table = read_table(tmp_path / "r.xlsx")
    assert table.places == ["row 2", "row 4"]
    assert table.records[1] == {"item_id": "x2", "response": 0}


def test_jsonl_bad_line_is_named(tmp_path):
    path = tmp_path / "i.jsonl"
    path.write_text('{"a": 1}\n{"a": \n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ImportRefused) as err:
        read_table(path)
    text = str(err.value)
    assert "line 2" in text and "invalid JSON" in text
    assert "line 3" in text and "expected a JSON object" in text


def test_unknown_extension_is_refused(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(ImportRefused, match=r"expected a file ending in \.csv"):
        read_table(path)


def test_csv_row_with_too_many_cells(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("item_id,response\nx1,a,b\n", encoding="utf-8")
    with pytest.raises(ImportRefused, match=r"row 2: expected 2 columns as in the header, got 3 columns"):
        read_table(path)
