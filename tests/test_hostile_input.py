"""A hostile-input corpus (issue 29): files a careless lab member or an attacker sends, through every importer
of the CLI. Each case asserts the refusal (exit 2, or 1 for a bad option as every bad option exits), that the
message names the file, the row or line and the field, that no traceback is printed, and that every table of
the store is exactly as before (conftest.fingerprint). Expected numbers (byte offsets, lines, rows) are worked
out here from the bytes written, never read back from the code.

Bombs are kept small: the limits are lowered through their environment variables (EVALCORE_MAX_*), and the
real-size measurement is bench/zip_bomb.py.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from test_interchange import mtbench_folder

from conftest import TOY_ITEMS, fingerprint, write_jsonl
from evalcore.cli import main
from evalcore.ingest import archives, checker, limits, readers
from evalcore.store import connect

RESP = ["import", "responses", "{f}", "--dataset", "toy", "--track", "toy/chitchat", "--model", "m"]
RESP_ZIP = ["import", "responses", "{f}", "--dataset", "toy", "--model", "m"]
ITEMS = ["import", "items", "{f}"]
RATINGS = ["import", "ratings", "{f}", "--dataset", "toy", "--track", "toy/chitchat", "--scale", "Info=0:2"]
SCORES = ["import", "scores", "{f}", "--dataset", "toy", "--metric", "Ext"]
DSTC = ["import", "dstc10", "{f}", "--dataset", "dd", "--track", "dd/chitchat", "--scale", "Overall=1:5"]
MTB = ["import", "mtbench", "{f}", "--dataset", "mt"]
PUB = ["import", "published", "{f}", "--dataset", "pp", "--scale", "Info=0:2"]


@dataclass
class Case:
    kind: str
    make: Callable[[Path], Path]        # writes the file(s) under the folder given, returns what to import
    argv: list[str]
    expect: list[str]                   # every one must be in the message (regular expressions)
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2
    patch: Callable | None = None       # monkeypatch hook (limits set on the module)


def text(name: str, body: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
        return path
    return make


def jsonl(name: str, rows: list) -> Callable[[Path], Path]:
    return text(name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def raw_jsonl(name: str, lines: list[str]) -> Callable[[Path], Path]:
    return text(name, "".join(line + "\n" for line in lines))


def zipped(name: str, members: dict[str, bytes]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for member, data in members.items():
                z.writestr(member, data)
        return path
    return make


def xlsx(name: str, rows: list[list], formulas_cached: dict[str, str] | None = None) -> Callable[[Path], Path]:
    """A workbook written by openpyxl (which saves formulas without a value); `formulas_cached` puts a saved
    value into the given cells' XML, as Excel would."""
    def make(tmp: Path) -> Path:
        import openpyxl

        wb = openpyxl.Workbook()
        for row in rows:
            wb.active.append(row)
        path = tmp / name
        wb.save(path)
        if formulas_cached:
            _cache(path, formulas_cached)
        return path
    return make


def _cache(path: Path, values: dict[str, str]) -> None:
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    sheet = members["xl/worksheets/sheet1.xml"].decode()
    for ref, value in values.items():
        sheet, n = re.subn(rf'<c r="{ref}"([^>]*)><f>([^<]*)</f><v\s*/?>(</v>)?', rf'<c r="{ref}"\1><f>\2</f><v>{value}</v>',
                           sheet)
        assert n == 1, sheet
    members["xl/worksheets/sheet1.xml"] = sheet.encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


CUT = "item_id,response\nt1,你好世".encode("utf-8")[:-1]      # 世 is 3 bytes: the file ends after 2 of them
CUT_AT = len("item_id,response\nt1,你好".encode("utf-8"))     # where the cut character begins
BIG = "1.7e308"
DSTC_CUT_AT = len('[{"context": "你'.encode("utf-8"))   # 好 begins here; its last byte is cut
DEEP_ROW = '{"item_id": "t1", "response": "a", "x": ' + nested(100_000) + "}"


def dstc(entries) -> Callable[[Path], Path]:
    return text("turns.json", json.dumps(entries, ensure_ascii=False, indent=1))


ENTRY = {"dialogue_id": "d1", "model": "sys", "context": "hi\nhello", "response": "fine", "reference": ["ok"],
         "annotations": {"Overall": [4, 5]}}


def mtb(edit: Callable[[Path], None]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        root = mtbench_folder(tmp / "mt_bench")
        edit(root)
        return root
    return make


def published(files: dict[str, str]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        root = tmp / "paper"
        root.mkdir()
        for name, body in files.items():
            (root / name).write_text(body, encoding="utf-8")
        return root
    return make


AUTO = "automatic_system_scores.csv"
AUTO_HEAD = "paper_table,competition,skill,model,metric,value\n"


def _forged_size_zip(tmp: Path) -> Path:
    """A zip whose one member says (in both headers) it holds 100 bytes and holds 200,000: zipfile stops at
    the declared size and the CRC check fails, so the lie is refused, never unpacked further."""
    path = tmp / "liar.zip"
    data = b"item_id,response\n" + b"t1,aaaa\n" * 25_000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("toy_chitchat.csv", data)
    raw = bytearray(path.read_bytes())
    size = len(data).to_bytes(4, "little")
    for at in [m.start() for m in re.finditer(re.escape(size), bytes(raw))]:
        raw[at:at + 4] = (100).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    return path


CASES = {
    # ---------------------------------------------------------------- import responses: CSV/TSV parsing
    "csv unterminated quote": Case("responses", text("r.csv", 'item_id,response\nt1,"abc\nt2,def\nt3,ghi\n'), RESP,
                                   [r"r\.csv, line 2: expected a quoted cell that ends with a closing quote",
                                    "a quote opened on line 2 that is never closed"]),
    "csv quote opened on a later line of a row": Case(
        "responses", text("r.csv", 'item_id,response\nt1,"two\nlines"\nt2,"open\n' + "t3,x\n" * 5), RESP,
        [r"r\.csv, line 4: .*quote opened on line 4 that is never closed"]),
    "csv quote open past the cell limit": Case(
        "responses", text("r.csv", 'item_id,response\nt1,ok\nt2,"open\n' + "t3,xxxxxxxxxx\n" * 30_000), RESP,
        [r"r\.csv, line 3: .*quote opened on line 3 that is never closed \(the cell grew past 400,000 characters\)"]),
    "tsv unterminated quote": Case("responses", text("r.tsv", 'item_id\tresponse\nt1\tok\nt2\t"abc\nt3\tdef\n'), RESP,
                                   [r"r\.tsv, line 3: .*quote opened on line 3"]),
    "csv text after a closing quote": Case("responses", text("r.csv", 'item_id,response\nt1,"ab"c\n'), RESP,
                                           [r"r\.csv, line 2: expected well-formed CSV"]),
    "csv file cut inside a UTF-8 character": Case(
        "responses", text("r.csv", CUT), RESP,
        [rf"r\.csv: expected text in UTF-8 .*a file that ends inside a UTF-8 character at byte {CUT_AT:,}"]),
    "csv NUL in a cell": Case("responses", text("r.csv", "item_id,response\nt1,a\x00b\n"), RESP,
                              [r"r\.csv, row 2, field 'response': expected text without control characters"]),
    "csv ESC in the item id": Case("responses", text("r.csv", "item_id,response\nt\x1b1,a\n"), RESP,
                                   [r"r\.csv, row 2, field 'item_id': expected text without control characters"]),
    "csv cell over the limit": Case("responses", text("r.csv", "item_id,response\nt1," + "长" * 11 + "\n"), RESP,
                                    [r"r\.csv, row 2, field 'response': expected at most 10 characters"],
                                    patch=lambda mp: mp.setattr(limits, "MAX_CELL", 10)),
    "csv line over the limit (no newline bomb)": Case(
        "responses", text("r.csv", "item_id,response\n" + "a" * 5000), RESP,
        [r"r\.csv, line 2: expected lines of at most 100 characters \(EVALCORE_MAX_LINE\)"],
        env={"EVALCORE_MAX_LINE": "100"}),
    "csv rows over the limit": Case("responses", text("r.csv", "item_id,response\n" + "t1,a\n" * 10), RESP,
                                    [r"r\.csv, row 5: expected at most 3 rows \(EVALCORE_MAX_ROWS\)"],
                                    env={"EVALCORE_MAX_ROWS": "3"}),
    "csv model column with a control character": Case(
        "responses", text("r.csv", "item_id,model,response\nt1,m\x07,a\n"),
        ["import", "responses", "{f}", "--dataset", "toy", "--track", "toy/chitchat"],
        [r"r\.csv, row 2, field 'model': expected text without control characters"]),
    "blank --model": Case("responses", text("r.csv", "item_id,response\nt1,a\n"),
                          ["import", "responses", "{f}", "--dataset", "toy", "--track", "toy/chitchat", "--model", "\u3000 "],
                          [r"r\.csv, field '--model': expected a non-empty model name"]),
    # ---------------------------------------------------------------- import responses: JSONL
    "jsonl nested 100,000 deep": Case("responses", raw_jsonl("r.jsonl", ['{"item_id": "t2", "response": "a"}', DEEP_ROW]),
                                      RESP, [r"r\.jsonl, line 2: expected JSON nested at most 100 levels deep"]),
    "jsonl nested 101 deep": Case("responses", raw_jsonl("r.jsonl", ['{"item_id": "t1", "response": ' + nested(101) + "}"]),
                                  RESP, [r"r\.jsonl, line 1: expected JSON nested at most 100 levels"]),
    "jsonl integer of 5,000 digits": Case("responses", raw_jsonl("r.jsonl", ['{"item_id": ' + "9" * 5000 + ', "response": "a"}']),
                                          RESP, [r"r\.jsonl, line 1, field 'item_id': expected a number of magnitude at "
                                                 r"most 1e\+100 .*a number of 5,000 characters"]),
    "jsonl response a list": Case("responses", jsonl("r.jsonl", [{"item_id": "t1", "response": ["a"]}]), RESP,
                                  [r"r\.jsonl, line 1, field 'response': expected a string"]),
    "jsonl response NaN": Case("responses", raw_jsonl("r.jsonl", ['{"item_id": "t1", "response": NaN}']), RESP,
                               [r"r\.jsonl, line 1, field 'response': expected a JSON number \(NaN and Infinity are "
                                "not JSON"]),
    "jsonl rows over the limit": Case("responses", jsonl("r.jsonl", [{"item_id": "t1", "response": "a"}] * 6), RESP,
                                      [r"r\.jsonl, line 3: expected at most 2 rows"], env={"EVALCORE_MAX_ROWS": "2"}),
    # ---------------------------------------------------------------- import responses: xlsx
    "xlsx formula without a saved value": Case(
        "responses", xlsx("r.xlsx", [["item_id", "response"], ["t1", "=1+1"]]), RESP,
        [r"r\.xlsx, row 2, field 'response': expected a value .*got cell B2 holds the formula '=1\+1' with no saved value"]),
    "xlsx formula as a column name": Case("responses", xlsx("r.xlsx", [["item_id", "=A2"], ["t1", "x"]]), RESP,
                                          [r"r\.xlsx, row 1: expected column names, not formulas, got a formula in cell B1"]),
    "xlsx rows over the limit": Case("responses", xlsx("r.xlsx", [["item_id", "response"]] + [["t1", "a"]] * 5), RESP,
                                     [r"r\.xlsx, row 4: expected at most 2 rows"], env={"EVALCORE_MAX_ROWS": "2"}),
    "xlsx bomb (expanded size)": Case("responses", xlsx("r.xlsx", [["item_id", "response"]] + [["t1", "a" * 1000]] * 300),
                                      RESP, [r"r\.xlsx: expected an archive that expands to at most 100,000 bytes"],
                                      env={"EVALCORE_MAX_EXPANDED": "100000"}),
    "xlsx that is not a workbook": Case("responses", text("r.xlsx", b"PK\x03\x04 not really"), RESP,
                                        [r"r\.xlsx: expected an \.xlsx workbook, got unreadable"]),
    # ---------------------------------------------------------------- import responses: .zip
    "zip bomb (declared size)": Case("responses", zipped("b.zip", {"toy_chitchat.csv": b"a" * 5_000_000}), RESP_ZIP,
                                     [r"b\.zip: expected an archive that expands to at most 1,000,000 bytes "
                                      r"\(EVALCORE_MAX_EXPANDED\), got 5,000,000 bytes unpacked, 5,000,000 of them in "
                                      "'toy_chitchat.csv'"], env={"EVALCORE_MAX_EXPANDED": "1000000"}),
    "zip bomb (counted while unpacking)": Case(
        "responses", zipped("b.zip", {"toy_chitchat.csv": b"a" * 5_000_000}), RESP_ZIP,
        [r"b\.zip/toy_chitchat\.csv: expected an archive that expands to at most 1,000,000 bytes.*passed while unpacking"],
        env={"EVALCORE_MAX_EXPANDED": "1000000"},
        patch=lambda mp: mp.setattr(archives, "check_archive", lambda path, name: None)),
    "zip member lying about its size": Case("responses", _forged_size_zip, RESP_ZIP,
                                            [r"liar\.zip/toy_chitchat\.csv: expected a readable member, got unreadable"]),
    "zip of too many files": Case("responses", zipped("b.zip", {f"x{i}.csv": b"item_id,response\n" for i in range(5)}),
                                  RESP_ZIP, [r"b\.zip: expected at most 3 files in an archive \(EVALCORE_MAX_MEMBERS\), "
                                             "got 5 files"], env={"EVALCORE_MAX_MEMBERS": "3"}),
    "zip rows over the limit across members": Case(
        "responses", zipped("b.zip", {"toy_chitchat.csv": b"item_id,response\nt1,a\nt2,b\n",
                                      "toy_knowledge.csv": b"item_id,response\nk1,a\nk1,b\nk1,c\n"}), RESP_ZIP,
        [r"b\.zip/toy_knowledge\.csv, row 3: expected at most 3 rows in all the files of the archive or folder together"
         r" \(EVALCORE_MAX_ROWS\), got more: this is row 4 of them"], env={"EVALCORE_MAX_ROWS": "3"}),
    "zip member with a long line": Case("responses", zipped("b.zip", {"toy_chitchat.csv": b"item_id,response\n" + b"a" * 9000}),
                                        RESP_ZIP, [r"b\.zip/toy_chitchat\.csv, line 2: expected lines of at most 1,000"],
                                        env={"EVALCORE_MAX_LINE": "1000"}),
    "zip member cut inside a UTF-8 character": Case(
        "responses", zipped("b.zip", {"toy_chitchat.csv": CUT}), RESP_ZIP,
        [rf"b\.zip/toy_chitchat\.csv: expected text in UTF-8 .*ends inside a UTF-8 character at byte {CUT_AT:,}"]),
    # ---------------------------------------------------------------- import items
    "items context turn with NUL": Case("items", jsonl("i.jsonl", [{**TOY_ITEMS[0], "item_id": "n1",
                                                                     "context": ["ok", "a\x00b"]}]), ITEMS,
                                        [r"i\.jsonl, line 1, field 'context\[1\]': expected text without control"]),
    "items context turn over the limit": Case("items", jsonl("i.jsonl", [{**TOY_ITEMS[0], "item_id": "n1",
                                                                           "context": ["x" * 11]}]), ITEMS,
                                              [r"i\.jsonl, line 1, field 'context\[0\]': expected at most 10 characters"],
                                              patch=lambda mp: mp.setattr(limits, "MAX_CELL", 10)),
    "items reference with a control character": Case(
        "items", jsonl("i.jsonl", [{**TOY_ITEMS[0], "item_id": "n1", "references": ["fine", "bell\x07"]}]), ITEMS,
        [r"i\.jsonl, line 1, field 'references\[1\]': expected text without control characters"]),
    "items grounding triple with a control character": Case(
        "items", jsonl("i.jsonl", [{**TOY_ITEMS[2], "item_id": "n1", "grounding": {"knowledge": [["a", "b\x0b", "c"]]}}]),
        ITEMS, [r"i\.jsonl, line 1, field 'grounding\.knowledge\[0\]\[1\]': expected text without control"]),
    "items nested 100,000 deep": Case("items", raw_jsonl("i.jsonl", [json.dumps({**TOY_ITEMS[0], "item_id": "n0"}),
                                                                     '{"item_id": "n1", "context": ' + nested(100_000) + "}"]),
                                      ITEMS, [r"i\.jsonl, line 2: expected JSON nested at most 100 levels deep"]),
    "items integer of 5,000 digits": Case("items", raw_jsonl("i.jsonl", ['{"item_id": ' + "1" * 5000 + "}"]), ITEMS,
                                          [r"i\.jsonl, line 1, field 'item_id': expected a number of magnitude at most"]),
    "items file cut inside a UTF-8 character": Case(
        "items", text("i.jsonl", json.dumps({**TOY_ITEMS[0], "item_id": "n1"}, ensure_ascii=False).encode("utf-8")[:-5]
                      + "好".encode("utf-8")[:2]), ITEMS, [r"i\.jsonl: expected text in UTF-8 .*ends inside a UTF-8 character"]),
    # ---------------------------------------------------------------- import dstc10
    "dstc10 nested 100,000 deep": Case("dstc10", text("turns.json", '[\n{"dialogue_id": "d1",\n"x": ' + nested(100_000) + "}]"),
                                       DSTC, [r"turns\.json, line 3: expected JSON nested at most 100 levels deep"]),
    "dstc10 reference with NUL": Case("dstc10", dstc([{**ENTRY, "reference": ["ok", "o\x00k"]}]), DSTC,
                                      [r"turns\.json, line 2, item 1 \(index 0\), field 'reference\[1\]': expected text "
                                       "without"]),
    "dstc10 context over the limit": Case("dstc10", dstc([{**ENTRY, "context": "x" * 13}]), DSTC,
                                          [r"turns\.json, line 2, item 1 \(index 0\), field 'context': expected at most 12 char"],
                                          patch=lambda mp: mp.setattr(limits, "MAX_CELL", 12)),
    "dstc10 invalid JSON": Case("dstc10", text("turns.json", '[\n{"dialogue_id": "d1",,}\n]'), DSTC,
                                [r"turns\.json, line 2: expected a JSON list of objects"]),
    "dstc10 file cut inside a UTF-8 character": Case(
        "dstc10", text("turns.json", '[{"context": "你好'.encode("utf-8")[:-1]), DSTC,
        [rf"turns\.json: expected text in UTF-8 .*ends inside a UTF-8 character at byte {DSTC_CUT_AT:,}"]),
    "dstc10 entries over the limit": Case("dstc10", dstc([ENTRY] * 4), DSTC,
                                          [r"turns\.json, item 4 \(index 3\): expected at most 3 entries \(EVALCORE_MAX_ROWS\), "
                                           "got 4 entries"], env={"EVALCORE_MAX_ROWS": "3"}),
    "dstc10 non-finite --scale": Case("dstc10", dstc([ENTRY]), DSTC[:-1] + ["Overall=-inf:inf"],
                                      ["--scale expects finite bounds"], code=1),
    # ---------------------------------------------------------------- import mtbench
    "mtbench question turn with a control character": Case(
        "mtbench", mtb(lambda root: write_jsonl(root / "question.jsonl", [
            {"question_id": 81, "category": "writing", "turns": ["Write.", "Re\x1bwrite."]}])), MTB,
        [r"question\.jsonl, line 1, field 'turns\[1\]': expected text without control characters"]),
    "mtbench answer nested 100,000 deep": Case(
        "mtbench", mtb(lambda root: (root / "model_answer" / "alpaca.jsonl").write_text(
            '{"question_id": 81, "choices": ' + nested(100_000) + "}\n", encoding="utf-8")), MTB,
        [r"alpaca\.jsonl, line 1: expected JSON nested at most 100 levels deep"]),
    "mtbench judgment score 1.7e308": Case(
        "mtbench", mtb(lambda root: (root / "model_judgment" / "gpt-4_single.jsonl").write_text(
            json.dumps({"question_id": 81, "model": "alpaca", "judge": ["gpt-4", "single-v1"], "score": 1.7e308,
                        "turn": 1}) + "\n", encoding="utf-8")), MTB,
        [r"gpt-4_single\.jsonl, line 1, field 'score': expected a number of magnitude at most 1e\+100"]),
    # ---------------------------------------------------------------- import ratings
    "ratings --scale -inf:inf": Case("ratings", text("r.csv", "item_id,model,annotator,dimension,score\nt1,m1,a,Eng,1\n"),
                                     RATINGS[:-1] + ["Eng=-inf:inf"], ["--scale expects finite bounds"], code=1),
    "ratings --scale nan:1": Case("ratings", text("r.csv", "item_id,model,annotator,dimension,score\nt1,m1,a,Eng,1\n"),
                                  RATINGS[:-1] + ["Eng=nan:1"], ["--scale expects finite bounds"], code=1),
    "ratings --scale 0:1e308": Case("ratings", text("r.csv", "item_id,model,annotator,dimension,score\nt1,m1,a,Eng,1\n"),
                                    RATINGS[:-1] + ["Eng=0:1e308"], ["--scale expects finite bounds of magnitude at most"],
                                    code=1),
    "ratings score inf": Case("ratings", text("r.csv", "item_id,model,annotator,dimension,score\nt1,m1,a,Info,inf\n"),
                              RATINGS, [r"r\.csv, row 2, field 'score': expected a finite number"]),
    "ratings unterminated quote": Case("ratings", text("r.csv", 'item_id,model,annotator,dimension,score\nt1,m1,"a,Info,1\n'
                                                                "t2,m1,a,Info,1\n"), RATINGS,
                                       [r"r\.csv, line 2: .*quote opened on line 2 that is never closed"]),
    "ratings annotator with a control character": Case(
        "ratings", text("r.csv", "item_id,model,annotator,dimension,score\nt1,m1,a\x7f,Info,1\n"), RATINGS,
        [r"r\.csv, row 2, field 'annotator': expected text without control characters"]),
    # ---------------------------------------------------------------- import scores
    "scores ten values of 1.7e308": Case("scores", text("s.csv", "item_id,model,value\n" + f"t1,m1,{BIG}\n" * 10), SCORES,
                                         [r"s\.csv, row 2, field 'value': expected a number of magnitude at most 1e\+100",
                                          r"s\.csv, row 11, field 'value'"]),
    "scores value -inf": Case("scores", text("s.csv", "item_id,model,value\nt1,m1,-inf\n"), SCORES,
                              [r"s\.csv, row 2, field 'value': expected a finite number"]),
    "scores unterminated quote": Case("scores", text("s.csv", 'item_id,model,value\nt1,"m1,0.5\nt2,m1,0.5\n'), SCORES,
                                      [r"s\.csv, line 2: .*quote opened on line 2"]),
    "scores jsonl nested deep": Case("scores", raw_jsonl("s.jsonl", ['{"item_id": "t1", "model": "m1", "value": '
                                                                    + nested(500) + "}"]), SCORES,
                                     [r"s\.jsonl, line 1: expected JSON nested at most 100"]),
    # ---------------------------------------------------------------- import published
    "published ' m ' and 'm' are one model": Case(
        "published", published({AUTO: AUTO_HEAD + "3,lic2021,knowledge, m ,BLEU,0.1\n3,lic2021,knowledge,m,BLEU,0.2\n"}),
        PUB, [r"automatic_system_scores\.csv, row 3, field 'value': expected one value per "
              r"lic2021/knowledge/m/BLEU/published, got a second one \(first at row 2\)"]),
    "published value 1.7e308": Case("published", published({AUTO: AUTO_HEAD + f"3,lic2021,knowledge,m,BLEU,{BIG}\n"}), PUB,
                                    [r"automatic_system_scores\.csv, row 2, field 'value': expected a number of magnitude"]),
    "published model with NUL": Case("published", published({AUTO: AUTO_HEAD + "3,lic2021,knowledge,m\x00,BLEU,0.1\n"}),
                                     PUB, [r"automatic_system_scores\.csv, row 2, field 'model': expected text without"]),
    "published corpus with a control character": Case(
        "published", published({AUTO: "paper_table,competition,skill,model,metric,value,corpus\n"
                                      "3,lic2021,knowledge,m,BLEU,0.1,Du\x1bConv\n"}), PUB,
        [r"automatic_system_scores\.csv, row 2, field 'corpus': expected text without control characters"]),
    "published unterminated quote": Case("published", published({AUTO: AUTO_HEAD + '3,lic2021,"knowledge,m,BLEU,0.1\n'}),
                                         PUB, [r"automatic_system_scores\.csv, line 2: .*quote opened on line 2"]),
    "published non-finite --scale": Case("published", published({AUTO: AUTO_HEAD + "3,lic2021,knowledge,m,BLEU,0.1\n"}),
                                         PUB[:-1] + ["Info=-inf:2"], ["--scale expects finite bounds"], code=1),
}


@pytest.fixture
def store(tmp_path):
    """A toy store on disk (items t1, t2, k1; responses of m1 and m2), closed: the CLI opens it itself."""
    from evalcore.ingest.items import import_items
    from evalcore.ingest.responses import import_responses

    db = tmp_path / "s.duckdb"
    con = connect(db)
    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    (tmp_path / "resp.csv").write_text("item_id,model,response\nt1,m1,天气很好\nt2,m1,你好\nt1,m2,嗯\n", encoding="utf-8")
    import_responses(con, tmp_path / "resp.csv", dataset="toy", track="toy/chitchat")
    con.close()
    return db


def snapshot(db: Path) -> dict:
    con = connect(db)
    try:
        return fingerprint(con)
    finally:
        con.close()


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file_is_refused_whole(name, store, tmp_path, capsys, monkeypatch):
    case = CASES[name]
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    if case.patch:
        case.patch(monkeypatch)
    work = tmp_path / "in"
    work.mkdir()
    target = case.make(work)
    argv = [a.replace("{f}", str(target)) for a in case.argv] + ["--db", str(store)]
    before = snapshot(store)
    capsys.readouterr()
    started = time.perf_counter()
    code = main(argv)
    took = time.perf_counter() - started
    out, err = capsys.readouterr()
    message = out + err
    assert code == case.code, message
    assert "Traceback" not in message
    for pattern in case.expect:
        assert re.search(pattern, message), f"{pattern!r} not in:\n{message}"
    if case.code == 2:
        assert "nothing was written" in message
    assert snapshot(store) == before
    assert took < 20


def test_the_corpus_covers_every_importer_and_forty_kinds():
    kinds = {}
    for case in CASES.values():
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
    assert set(kinds) == {"responses", "items", "dstc10", "mtbench", "ratings", "scores", "published"}
    assert len(CASES) >= 40


def test_the_cli_refuses_a_bomb_with_exit_2_and_no_traceback(store, tmp_path):
    """The real process: a zip whose member declares 5 MB against a 1 MB limit is refused at once."""
    bomb = tmp_path / "b.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("toy_chitchat.csv", b"a" * 5_000_000)
    run = subprocess.run([sys.executable, "-m", "evalcore", "import", "responses", str(bomb), "--db", str(store),
                          "--dataset", "toy", "--model", "m"], capture_output=True, text=True,
                         env={**os.environ, "EVALCORE_MAX_EXPANDED": "1000000"}, timeout=120)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "expected an archive that expands to at most 1,000,000 bytes (EVALCORE_MAX_EXPANDED)" in run.stderr


# ---------------------------------------------------------------- what still reads (no false refusals)
def test_quoted_cells_over_several_lines_and_escaped_quotes_still_read(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('item_id,response\nt1,"one\ntwo, ""three"""\nt2,plain\n', encoding="utf-8")
    table = readers.read_table(path)
    assert [r["response"] for r in table.records] == ['one\ntwo, "three"', "plain"]
    assert list(table.places) == ["row 2", "row 3"]


def test_a_formula_with_a_saved_value_reads_as_that_value(tmp_path):
    path = xlsx("r.xlsx", [["item_id", "response"], ["t1", "=1+1"], ["t2", "plain"]], {"B2": "2"})(tmp_path)
    table = readers.read_table(path)
    assert [r["response"] for r in table.records] == [2, "plain"]


def test_a_limit_reached_exactly_is_not_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "3")
    monkeypatch.setenv("EVALCORE_MAX_LINE", "5")  # 'x1,a\n' is 5 characters
    path = tmp_path / "r.csv"
    path.write_text("i,r\nx1,a\nx2,b\nx3,c\n", encoding="utf-8")
    assert len(readers.read_table(path).records) == 3


def test_json_nested_exactly_at_the_limit_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_DEPTH", "5")
    path = tmp_path / "r.jsonl"
    # the object is level 1, so four more arrays make five; brackets inside strings do not count
    path.write_text('{"x": [[[[1]]]], "s": "[[[[[[[["}\n', encoding="utf-8")
    assert readers.read_table(path).records[0]["x"] == [[[[1]]]]
    path.write_text('{"x": [[[[[1]]]]]}\n', encoding="utf-8")
    with pytest.raises(readers.ImportRefused, match="nested at most 5 levels"):
        readers.read_table(path)


def test_published_names_are_normalised_like_everywhere(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    connect(db).close()
    root = published({AUTO: "paper_table,competition,skill,model,metric,value,corpus\n"
                            "3,lic2021,knowledge, m ,BLEU,0.1,DuConv\n3,lic2021,knowledge,ｍ２,BLEU,0.2,\n"})(tmp_path)
    assert main(["import", "published", str(root), "--db", str(db), "--dataset", "pp"]) == 0
    con = connect(db)
    try:
        rows = con.execute("SELECT model, value FROM system_scores WHERE dataset = 'pp' ORDER BY model").fetchall()
        corpus = con.execute("SELECT corpus FROM tracks WHERE dataset = 'pp'").fetchall()
    finally:
        con.close()
    assert rows == [("m", 0.1), ("m2", 0.2)]
    assert corpus == [("DuConv",)]
    assert checker.NORMALISED.format(n=2) in capsys.readouterr().out


# ---------------------------------------------------------------- temp folders left by a killed import
def test_sweep_removes_the_folders_of_dead_processes_and_old_ones_only(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmp_path / f"{archives.TEMP_PREFIX}{dead.pid}-abc"
    mine = tmp_path / f"{archives.TEMP_PREFIX}{os.getpid()}-abc"
    old = tmp_path / f"{archives.TEMP_PREFIX}xyz"
    new = tmp_path / f"{archives.TEMP_PREFIX}uvw"
    other = tmp_path / "somebody-else"
    for folder in (gone, mine, old, new, other):
        folder.mkdir()
        (folder / "upload.csv").write_bytes(b"x" * 100)
    hour_ago = time.time() - 3700
    os.utime(old, (hour_ago, hour_ago))
    os.utime(other, (hour_ago, hour_ago))
    removed = archives.sweep_temp(max_age_s=3600, root=tmp_path)
    assert sorted(removed) == sorted([gone, old])
    assert [p.exists() for p in (gone, mine, old, new, other)] == [False, True, False, True, True]


def test_a_killed_zip_import_leaves_a_folder_the_sweep_removes(store, tmp_path):
    """SIGKILL while an archive is being unpacked: its folder stays (no finally runs), named with the dead
    process's id; sweep_temp removes it."""
    bomb = tmp_path / "big.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_STORED) as z:
        z.writestr("toy_chitchat.csv", b"item_id,response\n" + b"t1,aaaaaaaaaaaaaaa\n" * 3_000_000)
    temp = tmp_path / "tmp"
    temp.mkdir()
    child = subprocess.Popen([sys.executable, "-m", "evalcore", "import", "responses", str(bomb), "--db", str(store),
                              "--dataset", "toy", "--model", "m"], env={**os.environ, "TMPDIR": str(temp)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not any(temp.glob(f"{archives.TEMP_PREFIX}*/*/*")):
        time.sleep(0.02)
    child.kill()
    child.wait()
    left = list(temp.glob(f"{archives.TEMP_PREFIX}{child.pid}-*"))
    assert left, "the import never started unpacking"
    assert archives.sweep_temp(root=temp) == left
    assert not any(temp.iterdir())


# ---------------------------------------------------------------- negative counts on the command line
@pytest.mark.parametrize("argv, option", [
    (["leaderboard", "--dataset", "toy", "--bootstrap", "-1"], "--bootstrap"),
    (["correlate", "--dataset", "toy", "--bootstrap", "-5", "--seed", "1"], "--bootstrap"),
    (["agreement", "--dataset", "toy", "--bootstrap", "-1"], "--bootstrap"),
    (["score", "--dataset", "toy", "--actors", "0"], "--actors"),
    (["score", "--dataset", "toy", "--judge-retries", "-2"], "--judge-retries"),
    (["leaderboard", "--dataset", "toy", "--bootstrap", "ten"], "--bootstrap"),
])
def test_negative_counts_are_refused_by_the_parser(argv, option, store, capsys):
    before = snapshot(store)
    with pytest.raises(SystemExit) as exit_:
        main(argv + ["--db", str(store)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: expected a whole number" in err and "Traceback" not in err
    assert snapshot(store) == before
