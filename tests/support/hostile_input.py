"""The hostile-input corpus of issue 29 (CASES: each file, its importer, how it must be refused). tests/ingest/
test_hostile_input.py runs every case through the CLI, tests/system/test_hostile_upload_browser.py the responses
files through the Upload page."""
from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from evalcore.ingest import archives, limits
from evalcore.store import connect
from support import TOY_ITEMS, fingerprint, write_jsonl
from support.mtbench import mtbench_folder

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


def snapshot(db: Path) -> dict:
    con = connect(db)
    try:
        return fingerprint(con)
    finally:
        con.close()
