"""The corpus of hostile files of issue 46 (CASES: each file, the importer it reaches, the exit code and the sentence
it must be refused with) and the toy store they are refused against (build, state). tests/ingest/test_hostile_files.py
runs every case through the CLI, tests/system/test_hostile_upload_browser.py the responses and ratings files through
the Upload page."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from evalcore.cli import main
from evalcore.store import connect
from support import ROOT, TOY_ITEMS, fingerprint, write_jsonl
from support.mtbench import mtbench_folder

NINES = "9" * 400
H_RATINGS = "item_id,model,annotator,dimension,score\n"
H_SCORES = "item_id,model,value\n"
H_VOTES = "item_id,model_a,model_b,winner,annotator,dimension\n"
H_SESSIONS = "system,test_case,completed,turns,reviewer,satisfaction,fluency,guidance\n"
H_PUB = "paper_table,competition,skill,model,metric,value\n"
AUTO = "automatic_system_scores.csv"
RESP = ["import", "responses", "{f}", "--dataset", "toy", "--track", "toy/chitchat", "--model", "m3"]
ITEMS = ["import", "items", "{f}"]
RATINGS = ["import", "ratings", "{f}", "--dataset", "toy", "--track", "toy/chitchat"]
RATINGS_ANY = ["import", "ratings", "{f}", "--dataset", "toy"]      # a task's export: each row's own track
SCORES = ["import", "scores", "{f}", "--dataset", "toy", "--metric", "Ext"]
VOTES = ["import", "votes", "{f}", "--dataset", "toy"]
SESSIONS = ["import", "sessions", "{f}", "--dataset", "tod", "--track", "tod/task-oriented"]
PUB = ["import", "published", "{f}", "--dataset", "pp"]
DSTC = ["import", "dstc10", "{f}", "--dataset", "dd", "--track", "dd/chitchat", "--scale", "Overall=1:5"]
MTB = ["import", "mtbench", "{f}", "--dataset", "mt"]
MSDE = ["import", "msde", "{f}"]
GOOD = {   # one good record per importer, against the store below
    "responses": {"item_id": "t1", "response": "好的"},
    "items": {"item_id": "n1", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"], "references": ["好"]},
    "ratings": {"item_id": "t2", "model": "m1", "annotator": "张三", "dimension": "Info", "score": 1},
    "scores": {"item_id": "t1", "model": "m1", "value": 0.5},
    "votes": {"item_id": "t2", "model_a": "m1", "model_b": "m2", "winner": "a", "annotator": "张三",
              "dimension": "Info"},
    "sessions": {"system": "bot", "test_case": "c1", "completed": 1, "turns": 5, "reviewer": "张三",
                 "satisfaction": 1, "fluency": 1, "guidance": 1},
}


DSTC_ENTRY = {"dialogue_id": "d1", "model": "sys", "context": "你好\n在吗", "response": "在的", "reference": ["在"],
              "annotations": {"Overall": [4, 5]}}


@dataclass
class Case:
    item: int                        # the item
    kind: str                        # the importer
    make: Callable[[Path], Path]     # writes the file(s) under the folder given, returns what to import
    argv: list[str]
    place: str                       # "line 3", "row 2", "line 3, item 2 (index 1)", "" (an option)
    field: str
    expected: str                    # a regular expression: what the message says was expected
    name: str = ""                   # the file's name as the message gives it (default: the made path's name)


# ------------------------------------------------------------------------------------------------ file makers
def raw(name: str, body: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
        return path
    return make


def lines(name: str, *texts: str) -> Callable[[Path], Path]:
    """A JSONL file of the given lines, as written (escapes and all)."""
    return raw(name, "".join(t + "\n" for t in texts))


def record(kind: str, **changed) -> str:
    """The good record of `kind` with fields changed, as one JSON line."""
    return json.dumps({**GOOD[kind], **changed}, ensure_ascii=False)


def poisoned(kind: str, field: str, literal: str) -> str:
    """The good record of `kind` with `field` set to a raw JSON literal (an escape, a number JSON allows)."""
    return json.dumps({**GOOD[kind], field: "@@"}, ensure_ascii=False).replace('"@@"', literal)


def twice(kind: str, field: str, value) -> str:
    """The good record of `kind` with `field` given a second time, last."""
    return json.dumps(GOOD[kind], ensure_ascii=False)[:-1] + f', "{field}": {json.dumps(value, ensure_ascii=False)}}}'


def mixed(name: str, header: str, first: str, second: str, third: str = "", gbk_first: bool = False
          ) -> Callable[[Path], Path]:
    """Lines 2 and 3 in UTF-8 and GBK (or GBK and UTF-8, then a third line in GBK: most lines GBK)."""
    if gbk_first:
        body = header.encode() + first.encode("gbk") + second.encode("gbk") + third.encode("utf-8")
    else:
        body = header.encode() + first.encode("utf-8") + second.encode("gbk")
    return raw(name, body)


def dstc(text: str) -> Callable[[Path], Path]:
    return raw("turns.json", text)


def dstc_entries(*entries: str) -> str:
    """A DSTC10 file: '[', one entry per line, ']' (entry k is on line k + 1)."""
    return "[\n" + ",\n".join(entries) + "\n]\n"


def published(body: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        root = tmp / "paper"
        root.mkdir()
        (root / AUTO).write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
        return root
    return make


def mtb(file: str, text: str | bytes) -> Callable[[Path], Path]:
    """FastChat's folder with one file replaced by `text`."""
    def make(tmp: Path) -> Path:
        root = mtbench_folder(tmp / "mt_bench")
        path = root / file
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return root
    return make


def xlsx(name: str, rows: list[list]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        import openpyxl

        wb = openpyxl.Workbook()
        for row in rows:
            wb.active.append(row)
        path = tmp / name
        wb.save(path)
        return path
    return make


def exported(which: str) -> Callable[[Path], Path]:
    """A rating task's export (`evalcore task export --format csv`), written when the store was built."""
    def make(tmp: Path) -> Path:
        path = tmp / f"{which}-export.csv"
        path.write_bytes(EXPORTS[which])
        return path
    return make


EXPORTS: dict[str, bytes] = {}   # filled by the `template` fixture: 'pairwise' and 'absolute' task exports
MAG = r"a number of magnitude at most 1e\+100"
ONE = r"text in one encoding throughout"
DUP = r"each key once in a JSON object"
SUR = r"text without lone surrogates"
CTRL = r"text without control characters"
PLAIN = r"a number in plain decimal"
MT_Q = [{"question_id": 81, "category": "writing", "turns": ["Write a travel blog post.", "Rewrite it with A."]},
        {"question_id": 101, "category": "reasoning", "turns": ["You overtake the second person.", "And the last?"],
         "reference": ["You are in second place.", "That cannot happen."]},
        {"question_id": 130, "category": "coding", "turns": ["Write a sort."], "reference": [""]}]


def mt_questions(second: str, encoding: str = "utf-8") -> bytes:
    """question.jsonl with its second line replaced by `second` (FastChat's three questions otherwise)."""
    first, third = (json.dumps(q, ensure_ascii=False) for q in (MT_Q[0], MT_Q[2]))
    return (first + "\n").encode() + (second + "\n").encode(encoding) + (third + "\n").encode()


CASES: dict[str, Case] = {
    # ------------------------------------------------------------------ 13: a number too large for a float
    "13 responses jsonl item_id of 400 nines": Case(13, "responses", lines("r.jsonl", record("responses"),
                                                                          poisoned("responses", "item_id", NINES)),
                                                    RESP, "line 2", "item_id", MAG),
    "13 items jsonl item_id of 400 nines": Case(13, "items", lines("i.jsonl", poisoned("items", "item_id", NINES)),
                                                ITEMS, "line 1", "item_id", MAG),
    "13 ratings jsonl score of 400 nines": Case(13, "ratings", lines("r.jsonl", poisoned("ratings", "score", NINES)),
                                                RATINGS, "line 1", "score", MAG),
    "13 ratings jsonl score 1e999": Case(13, "ratings", lines("r.jsonl", poisoned("ratings", "score", "1e999")),
                                         RATINGS, "line 1", "score", MAG),
    "13 ratings csv score of 400 nines": Case(13, "ratings", raw("r.csv", H_RATINGS + f"t2,m1,a,Info,{NINES}\n"),
                                              RATINGS, "row 2", "score", MAG),
    "13 scores jsonl value of 400 nines": Case(13, "scores", lines("s.jsonl", record("scores"),
                                                                   poisoned("scores", "value", NINES)),
                                               SCORES, "line 2", "value", MAG),
    "13 scores csv value of 400 nines": Case(13, "scores", raw("s.csv", H_SCORES + f"t1,m1,{NINES}\n"), SCORES,
                                             "row 2", "value", MAG),
    "13 votes jsonl item_id of 400 nines": Case(13, "votes", lines("v.jsonl", poisoned("votes", "item_id", NINES)),
                                                VOTES, "line 1", "item_id", MAG),
    "13 sessions jsonl turns of 400 nines": Case(13, "sessions", lines("s.jsonl", poisoned("sessions", "turns", NINES)),
                                                 SESSIONS, "line 1", "turns", MAG),
    "13 sessions csv turns of 400 nines": Case(13, "sessions", raw("s.csv", H_SESSIONS + f"bot,c1,1,{NINES},r,1,1,1\n"),
                                               SESSIONS, "row 2", "turns", MAG),
    "13 published csv value of 400 nines": Case(13, "published", published(H_PUB + f"3,lic2021,knowledge,m,BLEU,{NINES}\n"),
                                                PUB, "row 2", "value", MAG, name=AUTO),
    "13 dstc10 annotation of 400 nines": Case(
        13, "dstc10", dstc(dstc_entries(json.dumps(DSTC_ENTRY, ensure_ascii=False),
                                        json.dumps({**DSTC_ENTRY, "model": "sys2"}).replace("[4, 5]", f"[4, {NINES}]"))),
        DSTC, "line 3, item 2 (index 1)", "annotations.Overall[1]", MAG, name="turns.json"),
    "13 mtbench judgment score of 400 nines": Case(
        13, "mtbench", mtb("model_judgment/gpt-4_single.jsonl",
                           '{"question_id": 81, "model": "alpaca", "judge": ["gpt-4", "single-v1"], "score": '
                           + NINES + ', "turn": 1}\n'), MTB, "line 1", "score", MAG, name="gpt-4_single.jsonl"),
    # ------------------------------------------------------------------ 14: one encoding throughout
    "14 responses csv utf-8 then a gbk line": Case(
        14, "responses", mixed("r.csv", "item_id,response\n", "t1,李四好\n", "t2,张三好\n"), RESP, "line 3", "response", ONE),
    "14 responses csv gbk lines then a utf-8 line": Case(
        14, "responses", mixed("r.csv", "item_id,response\n", "t1,李四好\n", "t2,张三好\n", "k1,王五好\n", gbk_first=True),
        RESP, "line 4", "response", ONE),
    "14 items jsonl utf-8 then a gbk line": Case(
        14, "items", mixed("i.jsonl", "", record("items") + "\n", record("items", item_id="n2", context=["张三"]) + "\n"),
        ITEMS, "line 2", "context[0]", ONE),
    "14 ratings csv utf-8 then a gbk line": Case(
        14, "ratings", mixed("r.csv", H_RATINGS, "t1,m1,李四,Info,1\n", "t2,m1,张三,Info,1\n"), RATINGS, "line 3",
        "annotator", ONE),
    "14 ratings tsv gbk lines then a utf-8 line": Case(
        14, "ratings", mixed("r.tsv", H_RATINGS.replace(",", "\t"), "t1\tm1\t李四\tInfo\t1\n", "t2\tm1\t张三\tInfo\t1\n",
                             "t1\tm2\t王五\tInfo\t1\n", gbk_first=True), RATINGS, "line 4", "annotator", ONE),
    "14 scores csv utf-8 then a gbk line": Case(
        14, "scores", mixed("s.csv", H_SCORES, "t1,m1,0.5\nt2,m1,0.5\n# 注释,m1,1\n", "t1,模型,0.5\n"), SCORES,
        "line 5", "model", ONE),
    "14 votes csv utf-8 then a gbk line": Case(
        14, "votes", mixed("v.csv", H_VOTES, "t2,m1,m2,a,李四,Info\n", "k1,m1,m2,b,张三,Info\n"), VOTES, "line 3",
        "annotator", ONE),
    "14 sessions csv utf-8 then a gbk line": Case(
        14, "sessions", mixed("s.csv", H_SESSIONS, "bot,c1,1,5,李四,1,1,1\n", "bot,c2,1,5,张三,1,1,1\n"), SESSIONS,
        "line 3", "reviewer", ONE),
    "14 published csv utf-8 then a gbk line": Case(
        14, "published", published("paper_table,competition,skill,model,metric,value,corpus\n".encode()
                                   + "3,lic2021,knowledge,m,BLEU,0.1,知识\n".encode()
                                   + "3,lic2021,knowledge,m2,BLEU,0.2,张三\n".encode("gbk")),
        PUB, "line 3", "corpus", ONE, name=AUTO),
    "14 dstc10 utf-8 then a gbk line": Case(
        14, "dstc10", dstc(dstc_entries(json.dumps(DSTC_ENTRY, ensure_ascii=False)).encode()[:-3]
                           + (",\n" + json.dumps({**DSTC_ENTRY, "model": "sys2", "response": "张三"},
                                                 ensure_ascii=False) + "\n]\n").encode("gbk")),
        DSTC, "line 3, item 2 (index 1)", "context", ONE, name="turns.json"),
    "14 mtbench question file utf-8 then a gbk line": Case(
        14, "mtbench", mtb("question.jsonl", mt_questions(json.dumps({**MT_Q[1], "turns": ["你超过了第二名。", "张三"]},
                                                                    ensure_ascii=False), "gbk")
                           .replace(b"Write a sort.", "写一个排序。".encode())),
        MTB, "line 2", "turns[0]", ONE, name="question.jsonl"),
    # ------------------------------------------------------------------ 15: a key twice in one object
    "15 responses jsonl item_id twice": Case(15, "responses", lines("r.jsonl", twice("responses", "item_id", "t2")), RESP,
                                             "line 1", "item_id", DUP),
    "15 items jsonl dataset twice": Case(15, "items", lines("i.jsonl", record("items", item_id="n0"),
                                                             twice("items", "dataset", "other")),
                                         ITEMS, "line 2", "dataset", DUP),
    "15 ratings jsonl score twice": Case(15, "ratings", lines("r.jsonl", twice("ratings", "score", 2)), RATINGS,
                                         "line 1", "score", DUP),
    "15 scores jsonl model twice": Case(15, "scores", lines("s.jsonl", twice("scores", "model", "m2")), SCORES,
                                        "line 1", "model", DUP),
    "15 votes jsonl winner twice": Case(15, "votes", lines("v.jsonl", twice("votes", "winner", "b")), VOTES,
                                        "line 1", "winner", DUP),
    "15 sessions jsonl system twice": Case(15, "sessions", lines("s.jsonl", twice("sessions", "system", "bot2")),
                                           SESSIONS, "line 1", "system", DUP),
    "15 dstc10 a dimension twice": Case(
        15, "dstc10", dstc(dstc_entries(json.dumps(DSTC_ENTRY, ensure_ascii=False).replace(
            '"annotations": {"Overall": [4, 5]}', '"annotations": {"Overall": [4, 5],\n "Overall": [1, 1]}'))),
        DSTC, "line 3, item 1 (index 0)", "annotations.Overall", DUP, name="turns.json"),
    "15 mtbench answer with question_id twice": Case(
        15, "mtbench", mtb("model_answer/alpaca.jsonl",
                           '{"question_id": 81, "model_id": "alpaca", "choices": [{"index": 0, "turns": ["a", "b"]}], '
                           '"question_id": 101}\n'), MTB, "line 1", "question_id", DUP, name="alpaca.jsonl"),
    # ------------------------------------------------------------------ 16: a lone surrogate
    "16 responses jsonl response with \\ud800": Case(16, "responses", lines("r.jsonl", poisoned("responses", "response",
                                                                                              '"ok\\ud800"')),
                                                     RESP, "line 1", "response", SUR),
    "16 items jsonl context with \\udc00": Case(16, "items", lines("i.jsonl", poisoned("items", "context", '["\\udc00"]')),
                                                ITEMS, "line 1", "context[0]", SUR),
    "16 ratings jsonl annotator with \\ud800": Case(16, "ratings", lines("r.jsonl", poisoned("ratings", "annotator",
                                                                                            '"a\\ud800"')),
                                                    RATINGS, "line 1", "annotator", SUR),
    "16 scores jsonl model with \\udfff": Case(16, "scores", lines("s.jsonl", poisoned("scores", "model", '"\\udfffm1"')),
                                               SCORES, "line 1", "model", SUR),
    "16 votes jsonl annotator with \\ud800": Case(16, "votes", lines("v.jsonl", poisoned("votes", "annotator",
                                                                                        '"\\ud800"')),
                                                  VOTES, "line 1", "annotator", SUR),
    "16 sessions jsonl reviewer with \\ud800": Case(16, "sessions", lines("s.jsonl", poisoned("sessions", "reviewer",
                                                                                             '"r\\ud800"')),
                                                    SESSIONS, "line 1", "reviewer", SUR),
    "16 dstc10 response with \\ud800": Case(
        16, "dstc10", dstc(dstc_entries(json.dumps(DSTC_ENTRY), json.dumps({**DSTC_ENTRY, "model": "s2"}).replace(
            '"response": "\\u5728\\u7684"', '"response": "\\ud800"'))),
        DSTC, "line 3, item 2 (index 1)", "response", SUR, name="turns.json"),
    "16 mtbench answer turn with \\ud800": Case(
        16, "mtbench", mtb("model_answer/alpaca.jsonl",
                           '{"question_id": 81, "model_id": "alpaca", "choices": [{"index": 0, "turns": ["a", '
                           '"b\\ud800"]}]}\n'), MTB, "line 1", "choices[0].turns[1]", SUR, name="alpaca.jsonl"),
    "16 responses --model from an undecodable byte": Case(
        16, "responses", raw("r.csv", "item_id,response\nt1,ok\n"), RESP[:-1] + ["m\udcff"], "", "--model",
        r"a model name without control characters or lone surrogates"),
    # ------------------------------------------------------------------ 17: the same vote (or rating) twice
    "17 votes the pair swapped and the verdict turned, in one file": Case(
        17, "votes", raw("v.csv", H_VOTES + "t2,m1,m2,a,张三,Info\nt2,m2,m1,b,张三,Info\n"), VOTES, "row 3", "annotator",
        r"one vote per item, pair of models \(in either order\), annotator and dimension \(this one voted on it at "
        r"row 2\)"),
    "17 votes a stored vote again, swapped": Case(
        17, "votes", raw("v.csv", H_VOTES + "t1,m2,m1,b,Dave,Info\n"), VOTES, "row 2", "annotator",
        r"a vote not in the store yet .*stored already, from votes\.csv row 2\)"),
    "17 votes a stored vote again, one person spelt twice": Case(
        17, "votes", raw("v.csv", H_VOTES + "t1,m1,m2,tie,ＤＡＶＥ,Info\n"), VOTES, "row 2", "annotator",
        r"a vote not in the store yet"),
    "17 votes a pairwise task's export imported back": Case(
        17, "votes", exported("pairwise"), VOTES, "row 2", "annotator",
        r"a vote not in the store yet .*stored already, from task:\d+ unit \d+\)"),
    "17 ratings an absolute task's export imported back": Case(
        17, "ratings", exported("absolute"), RATINGS_ANY, "row 2", "score",
        r"a rating not yet in the store, got one already stored .*\(from task:\d+\)"),
    "17 ratings a stored rating again, one person spelt twice": Case(
        17, "ratings", raw("r.csv", H_RATINGS + "t1,m1, carol ,Info,2\n"), RATINGS, "row 2", "score",
        r"a rating not yet in the store, got one already stored .*\(from ratings\.csv row 2\)"),
    # ------------------------------------------------------------------ 18: control characters
    "18 responses csv response with ESC": Case(18, "responses", raw("r.csv", "item_id,response\nt1,a\x1b[31mb\n"), RESP,
                                               "row 2", "response", CTRL),
    "18 items jsonl reference with BEL": Case(18, "items", lines("i.jsonl", record("items", references=["ok\x07"])),
                                              ITEMS, "line 1", "references[0]", CTRL),
    "18 ratings csv annotator with NUL": Case(18, "ratings", raw("r.csv", H_RATINGS + "t2,m1,a\x00b,Info,1\n"), RATINGS,
                                              "row 2", "annotator", CTRL),
    "18 ratings csv annotator with U+009B": Case(18, "ratings", raw("r.csv", H_RATINGS + "t2,m1,a\x9b31m,Info,1\n"),
                                                 RATINGS, "row 2", "annotator", CTRL),
    "18 ratings xlsx annotator with U+009B": Case(
        18, "ratings", xlsx("r.xlsx", [H_RATINGS.strip().split(","), ["t2", "m1", "a\x9b2J", "Info", 1]]), RATINGS,
        "row 2", "annotator", CTRL),
    "18 scores csv model with BEL": Case(18, "scores", raw("s.csv", H_SCORES + "t1,m\x071,0.5\n"), SCORES, "row 2",
                                         "model", CTRL),
    "18 votes csv annotator with ESC": Case(18, "votes", raw("v.csv", H_VOTES + "t2,m1,m2,a,\x1b]0;x\x07,Info\n"), VOTES,
                                            "row 2", "annotator", CTRL),
    "18 votes csv dimension with U+009B": Case(18, "votes", raw("v.csv", H_VOTES + "t2,m1,m2,a,ann,In\x9bfo\n"), VOTES,
                                               "row 2", "dimension", CTRL),
    "18 sessions csv reviewer with NUL": Case(18, "sessions", raw("s.csv", H_SESSIONS + "bot,c1,1,5,r\x00,1,1,1\n"),
                                              SESSIONS, "row 2", "reviewer", CTRL),
    "18 published csv model with U+009B": Case(18, "published", published(H_PUB + "3,lic2021,knowledge,m\x9b,BLEU,0.1\n"),
                                               PUB, "row 2", "model", CTRL, name=AUTO),
    "18 dstc10 model with ESC": Case(18, "dstc10", dstc(dstc_entries(json.dumps({**DSTC_ENTRY, "model": "s\x1b"}))),
                                     DSTC, "line 2, item 1 (index 0)", "model", CTRL, name="turns.json"),
    "18 mtbench question turn with U+009B": Case(
        18, "mtbench", mtb("question.jsonl", mt_questions(json.dumps({**MT_Q[1], "turns": ["You\x9b", "And?"]}))),
        MTB, "line 2", "turns[0]", CTRL, name="question.jsonl"),
    "18 responses --model with ESC": Case(18, "responses", raw("r.csv", "item_id,response\nt1,ok\n"),
                                          RESP[:-1] + ["m\x1b[2J"], "", "--model",
                                          "a model name without control characters"),
    "18 scores --metric with U+009B": Case(18, "scores", raw("s.csv", H_SCORES + "t1,m1,0.5\n"),
                                           SCORES[:-1] + ["Ext\x9b"], "", "--metric",
                                           "a metric name without control characters"),
    "18 scores --signature with BEL": Case(18, "scores", raw("s.csv", H_SCORES + "t1,m1,0.5\n"),
                                           SCORES + ["--signature", "judge\x07"], "", "--signature",
                                           "a description without control characters"),
    "18 ratings --track with NUL": Case(18, "ratings", raw("r.csv", H_RATINGS + "t2,m1,a,Info,1\n"),
                                        RATINGS[:-1] + ["toy/chit\x00chat"], "", "--track",
                                        "a name without control characters"),
    "18 votes --dataset with ESC": Case(18, "votes", raw("v.csv", H_VOTES + "t2,m1,m2,a,ann,Info\n"),
                                        ["import", "votes", "{f}", "--dataset", "toy\x1b"], "", "--dataset",
                                        "a name without control characters"),
    "18 published --dataset with BEL": Case(18, "published", published(H_PUB + "3,lic2021,knowledge,m,BLEU,0.1\n"),
                                            ["import", "published", "{f}", "--dataset", "p\x07p"], "", "--dataset",
                                            "a name without control characters", name="paper"),
    "18 sessions --dataset with U+009B": Case(18, "sessions", raw("s.csv", H_SESSIONS + "bot,c1,1,5,r,1,1,1\n"),
                                              ["import", "sessions", "{f}", "--dataset", "t\x9bod", "--track", "tod/t"],
                                              "", "--dataset", "a name without control characters"),
    "18 dstc10 --dataset with ESC": Case(18, "dstc10", dstc(dstc_entries(json.dumps(DSTC_ENTRY))),
                                         ["import", "dstc10", "{f}", "--dataset", "d\x1bd", "--track", "dd/chitchat",
                                          "--scale", "Overall=1:5"], "", "--dataset", CTRL, name="turns.json"),
    "18 mtbench --dataset with NUL": Case(18, "mtbench", mtb("question.jsonl", mt_questions(json.dumps(MT_Q[1]))),
                                          ["import", "mtbench", "{f}", "--dataset", "m\x00t"], "", "--dataset", CTRL,
                                          name="mt_bench"),
    # ------------------------------------------------------------------ 19: numbers only Python reads
    "19 ratings csv score 1_0": Case(19, "ratings", raw("r.csv", H_RATINGS + "t2,m1,a,Info,1_0\n"), RATINGS, "row 2",
                                     "score", PLAIN),
    "19 ratings xlsx text score 1_0": Case(19, "ratings", xlsx("r.xlsx", [H_RATINGS.strip().split(","),
                                                                         ["t2", "m1", "a", "Info", "1_0"]]),
                                           RATINGS, "row 2", "score", PLAIN),
    "19 ratings csv score in Arabic-Indic digits": Case(19, "ratings", raw("r.csv", H_RATINGS + "t2,m1,a,Info,١\n"),
                                                        RATINGS, "row 2", "score", PLAIN),
    "19 scores csv value 0_5": Case(19, "scores", raw("s.csv", H_SCORES + "t1,m1,0_5\n"), SCORES, "row 2", "value",
                                    PLAIN),
    "19 scores tsv value 1_0e-1": Case(19, "scores", raw("s.tsv", H_SCORES.replace(",", "\t") + "t1\tm1\t1_0e-1\n"),
                                       SCORES, "row 2", "value", PLAIN),
    "19 sessions csv satisfaction 1_0": Case(19, "sessions", raw("s.csv", H_SESSIONS + "bot,c1,1,5,r,1_0,1,1\n"),
                                             SESSIONS, "row 2", "satisfaction", PLAIN),
    "19 published csv value 0_1": Case(19, "published", published(H_PUB + "3,lic2021,knowledge,m,BLEU,0_1\n"), PUB,
                                       "row 2", "value", PLAIN, name=AUTO),
    # ------------------------------------------------------------------ 20: full-width names
    "20 scores --metric ＢＬＥＵ４ is the built-in BLEU4": Case(
        20, "scores", raw("s.csv", H_SCORES + "t1,m1,0.5\n"), SCORES[:-1] + ["ＢＬＥＵ４"], "", "--metric",
        r"a name that is not a built-in metric"),
}


# ------------------------------------------------------------------------------------------------ the store
def build(folder: Path) -> Path:
    """Dataset toy (tests/conftest.py's three items) answered by m1 and m2 everywhere; Info on 0..2 with one
    rating of Carol's (ratings.csv row 2) and one vote of Dave's (votes.csv row 2); a pairwise and an absolute
    rating task with one answer each, their exports kept in EXPORTS. Closed: the CLI opens it itself."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.ingest.formats.votes import import_votes
    from evalcore.services import tasks as services
    from evalcore.store import tasks as stored

    db = folder / "s.duckdb"
    con = connect(db)
    try:
        import_items(con, write_jsonl(folder / "items.jsonl", TOY_ITEMS))
        (folder / "resp.csv").write_text("item_id,model,response\n" + "".join(
            f"{i},{m},{m} 说 {i}\n" for i in ("t1", "t2") for m in ("m1", "m2")), encoding="utf-8")
        import_responses(con, folder / "resp.csv", dataset="toy", track="toy/chitchat")
        (folder / "ratings.csv").write_text(H_RATINGS + "t1,m1,Carol,Info,1\n", encoding="utf-8")
        import_ratings(con, folder / "ratings.csv", dataset="toy", track="toy/chitchat", scales={"Info": (0, 2)})
        (folder / "votes.csv").write_text(H_VOTES + "t1,m1,m2,a,Dave,Info\n", encoding="utf-8")
        import_votes(con, folder / "votes.csv", dataset="toy")
        for mode, value in (("pairwise", 1.0), ("absolute", 2.0)):
            task = stored.get(con, services.create_task(con, dataset="toy", mode=mode, dimensions=["Info"], items=2,
                                                        per_item=1, seed=0))
            unit = stored.next_unit(con, task, f"Erin {mode}")
            stored.answer(con, task, unit, f"Erin {mode}", "Info", value)
            stored.flag(con, task, unit, f"Erin {mode}", "a flag: a row with a comment and no answer")
            EXPORTS[mode] = services.export(con, task.task_id).to_csv(index=False).encode("utf-8")
    finally:
        con.close()
    return db


def state(db: Path) -> tuple[str, list[str]]:
    """The store's bytes (sha256) and the files beside it."""
    return hashlib.sha256(db.read_bytes()).hexdigest(), sorted(p.name for p in db.parent.iterdir())


def tables(db: Path) -> dict:
    con = connect(db)
    try:
        return fingerprint(con)
    finally:
        con.close()


def message_pattern(case: Case, name: str) -> str:
    head = re.escape(name) + (re.escape(f", {case.place}") if case.place else "")
    return head + re.escape(f", field '{case.field}': expected ") + case.expected


def msde_copy(tmp_path: Path, *folders: str) -> Path:
    root = ROOT.parent / "shared" / "data" / "msde"
    if not root.is_dir():
        pytest.skip("../shared/data/msde is absent (the MSDE release: see ../shared/data/README.md)")
    for folder in folders:
        shutil.copytree(root / "data" / folder, tmp_path / "msde" / "data" / folder)
    return tmp_path / "msde" / "data"


def refused_msde(tmp_path: Path, capsys) -> str:
    db = tmp_path / "s.duckdb"
    connect(db).close()
    before, rows = state(db), tables(db)
    code = main(["import", "msde", str(tmp_path / "msde"), "--db", str(db)])
    message = capsys.readouterr().err
    assert code == 2 and "Traceback" not in message
    assert state(db) == before and tables(db) == rows
    return message
