"""Files that must be refused, not guessed (issue 46, items 13-20): a hostile-file corpus through every importer
each item reaches, from the command line. Each case asserts exit 2, no traceback, a message naming the file, the
line or row and the field, "nothing was written", and a store that is byte-for-byte the file it was (its sha256,
and no other file beside it: no .wal), its tables equal too (support.fingerprint, for a readable diff).

The items, as the corpus names them:
13 a JSON number too large (400 nines; 1e999): every JSON importer; the same in a CSV cell.
14 a file whose lines mix UTF-8 and GBK: every importer that reads text files, both ways round.
15 a key twice in one JSON object: every JSON importer.
16 a lone surrogate (a JSON escape \\ud800; a command line's undecodable byte).
17 the same vote twice (the pair swapped, the verdict turned), a vote or rating already stored from a votes file,
   a ratings file or a rating task (a task's export imported back into its own store), one person spelt twice.
18 control characters (NUL, ESC, BEL, C1 U+009B) in names and texts of a file, and in --model, --metric,
   --dataset, --track, --signature.
19 numbers only Python reads (1_0, Arabic-Indic digits) in cells, xlsx text cells and the MSDE release's sheets.
20 a full-width name (--metric ＢＬＥＵ４ is the built-in BLEU4; the accepting side is tested below).
(21, `task create --seed 2147483648`, reaches no importer: tests/store/test_tasks.py.)

Expected places are worked out here from the bytes written (which line, which column), never read back from the
code. tests/system/test_hostile_upload_browser.py sends the responses and ratings files of this corpus through the
Upload page in Chromium.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.store import connect
from support import ROOT, TOY_ITEMS, write_jsonl
from support.hostile_files import (
    CASES,
    EXPORTS,
    H_RATINGS,
    H_SCORES,
    build,
    message_pattern,
    msde_copy,
    refused_msde,
    state,
    tables,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("hostile46"))


@pytest.fixture
def store(template, tmp_path) -> Path:
    folder = tmp_path / "store"
    folder.mkdir()
    for path in template.parent.glob(template.name + "*"):   # the store and what DuckDB keeps beside it
        shutil.copy2(path, folder / path.name)
    return folder / template.name


# ------------------------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("key", list(CASES))
def test_hostile_file_is_refused_whole(key, store, tmp_path, capsys):
    case = CASES[key]
    work = tmp_path / "in"
    work.mkdir()
    target = case.make(work)
    argv = [a.replace("{f}", str(target)) for a in case.argv] + ["--db", str(store)]
    before, rows = state(store), tables(store)
    assert state(store) == before   # opening and reading it changes no byte
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    message = out + err
    assert code == 2, message
    assert "Traceback" not in message and "nothing was written" in message
    pattern = message_pattern(case, case.name or target.name)
    assert re.search(pattern, message), f"{pattern!r} not in:\n{message}"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]", message), "raw control characters in the message"
    assert state(store) == before, "the store's bytes changed"
    assert tables(store) == rows


def test_the_corpus_covers_every_item_in_every_importer_it_reaches():
    """The matrix of the issue: each item against each importer it reaches (17: votes and ratings; 20: the option
    of a name that makes a column)."""
    reaches = {
        13: {"responses", "items", "ratings", "scores", "votes", "sessions", "published", "dstc10", "mtbench"},
        14: {"responses", "items", "ratings", "scores", "votes", "sessions", "published", "dstc10", "mtbench"},
        15: {"responses", "items", "ratings", "scores", "votes", "sessions", "dstc10", "mtbench"},
        16: {"responses", "items", "ratings", "scores", "votes", "sessions", "dstc10", "mtbench"},
        17: {"votes", "ratings"},
        18: {"responses", "items", "ratings", "scores", "votes", "sessions", "published", "dstc10", "mtbench"},
        19: {"ratings", "scores", "sessions", "published"},
        20: {"scores"},
    }
    covered: dict[int, set[str]] = {}
    for case in CASES.values():
        covered.setdefault(case.item, set()).add(case.kind)
    assert covered == reaches
    named = " ".join(key for key, case in CASES.items() if case.item == 18)
    assert all(c in named for c in ("NUL", "ESC", "BEL", "U+009B"))   # each of the control characters
    assert sum(case.field.startswith("--") for case in CASES.values() if case.item == 18) >= 8


def test_msde_release_scores_are_plain_decimal(tmp_path, capsys):
    """The MSDE importer (a real release folder): a human score written as the text '1_0' is named, not read as 10
    (it was out of the 0-2 scale only by luck: '1_0' of a 0-20 scale would have been stored)."""
    import openpyxl

    bad = msde_copy(tmp_path, "CCF LUGE_LCCC") / "CCF LUGE_LCCC" / "qianwen.xlsx"
    wb = openpyxl.load_workbook(bad)
    wb.worksheets[1]["C5"] = "0_1"   # float('0_1') is 1.0, in the scale
    wb.save(bad)
    message = refused_msde(tmp_path, capsys)
    assert re.search(r"qianwen\.xlsx, sheet \S+ row 5, field 'Info': expected a score from 0 to 2 or an empty cell, "
                     r"got '0_1'", message), message


def test_msde_corpus_file_is_read_strictly(tmp_path, capsys):
    """The CPC corpus JSONL released beside the workbooks: a key twice on line 3 is named."""
    corpus = msde_copy(tmp_path, "Lic 2021_CPC") / "Lic 2021_CPC" / "Lic 2021_CPC.txt"
    text = corpus.read_text(encoding="utf-8-sig").splitlines(keepends=True)
    text[2] = text[2].rstrip("\n").rstrip()[:-1] + ', "response": "again"}\n'   # line 3: 'response' twice
    corpus.write_text("".join(text), encoding="utf-8")
    message = refused_msde(tmp_path, capsys)
    assert re.search(r"Lic 2021_CPC\.txt, line 3, field 'response': expected each key once", message), message


def test_a_lone_surrogate_on_the_command_line_is_refused_by_the_real_process(store, tmp_path):
    """An undecodable byte in an argument reaches Python as a lone surrogate (surrogateescape): exit 2 naming the
    option, nothing else printed, not the UnicodeEncodeError of issue 46 (exit 1)."""
    path = tmp_path / "r.csv"
    path.write_text("item_id,response\nt1,ok\n", encoding="utf-8")
    before = state(store)
    run = subprocess.run([sys.executable.encode(), b"-m", b"evalcore", b"import", b"responses", str(path).encode(),
                          b"--dataset", b"toy", b"--track", b"toy/chitchat", b"--model", b"m\xff", b"--db",
                          str(store).encode()], capture_output=True, timeout=120, cwd=ROOT)
    err = run.stderr.decode("utf-8")
    assert run.returncode == 2, err
    assert "Traceback" not in err
    assert "field '--model': expected a model name without control characters or lone surrogates, got lone " \
           "surrogate U+DCFF at position 2" in err
    assert state(store) == before


# ------------------------------------------------------------------------------------------------ what still reads
def test_a_real_gbk_file_still_reads(tmp_path, template):
    """All GBK (the lab's Windows export): read as GB18030, as before; so is GB18030's own four-byte form."""
    from evalcore.ingest.readers import read_table

    rows = "t1,m1,张三,Info,1\nt2,m1,李四,Info,2\nt1,m2,王五,Info,0\n"
    for encoding in ("gbk", "gb18030"):
        path = tmp_path / f"{encoding}.csv"
        path.write_bytes((H_RATINGS + rows + ("t2,m2,𠀀,Info,1\n" if encoding == "gb18030" else "")).encode(encoding))
        table = read_table(path)
        assert table.encoding == "gb18030"
        assert [r["annotator"] for r in table.records][:3] == ["张三", "李四", "王五"]


def test_real_chinese_lines_in_gbk_never_read_as_utf8(tmp_path):
    """The measurement encodings.py quotes: every KdConv and LCCC line written in GBK, one file, reads as GB18030
    (no line is taken for UTF-8, which would refuse the file)."""
    data = ROOT.parent / "shared" / "data"
    if not (data / "kdconv").is_dir() or not (data / "lccc-toy").is_dir():
        pytest.skip("../shared/data/kdconv or lccc-toy is absent (see ../shared/data/README.md)")
    from evalcore.ingest.readers import read_table

    texts = [m["message"] for f in sorted((data / "kdconv" / "data").glob("*/test.json"))
             for d in json.loads(f.read_text(encoding="utf-8")) for m in d["messages"]]
    lccc = json.loads((data / "lccc-toy" / "toy_data.json").read_text(encoding="utf-8"))
    texts += ["".join(t.split()) for split in lccc.values() for d in split for t in d]
    kept = []
    for t in texts:
        try:
            t.encode("gbk")
        except UnicodeEncodeError:
            continue
        if not t.isascii() and "\n" not in t and "\r" not in t:
            kept.append(t)
    assert len(kept) == 14_810
    path = tmp_path / "all.jsonl"
    path.write_bytes("".join(json.dumps({"item_id": f"x{i}", "response": t}, ensure_ascii=False) + "\n"
                             for i, t in enumerate(kept)).encode("gbk"))
    table = read_table(path)
    assert table.encoding == "gb18030" and len(table.records) == len(kept)


@pytest.mark.parametrize("cell, value", [("1", 1.0), (" 1 ", 1.0), ("-.5", -0.5), ("1.", 1.0), ("+2", 2.0),
                                         ("2e-1", 0.2), ("１.５", 1.5), ("1E2", 100.0)])
def test_plain_decimal_cells_still_read(cell, value):
    from evalcore.ingest.checker import Checker

    check = Checker("f.csv")
    assert check.number({"v": cell}, "row 2", "v") == value and not check.problems


@pytest.mark.parametrize("cell, expected", [
    ("1_0", "a number in plain decimal"), ("١", "a number in plain decimal"), ("0x10", "a number"),
    ("inf", "a finite number"), ("nan", "a finite number"), ("-Infinity", "a finite number"), ("1 0", "a number"),
    ("1e400", "a number of magnitude at most 1e+100"), ("−1", "a number"),
])
def test_what_only_python_reads_is_refused(cell, expected):
    from evalcore.ingest.checker import Checker

    check = Checker("f.csv")
    assert check.number({"v": cell}, "row 2", "v") is None
    assert check.problems[0].expected.startswith(expected)


def test_json_that_only_looks_hostile_still_reads(tmp_path):
    """A surrogate pair (an emoji written as two escapes), an escaped backslash before 'ud800', the same key in two
    objects, and numbers at the limit are all fine."""
    from evalcore.ingest.readers import read_table

    path = tmp_path / "r.jsonl"
    path.write_text('{"a": "\\ud83d\\ude00", "b": "\\\\ud800", "c": {"k": 1}, "d": {"k": 2}, "e": 1e100, '
                    '"f": -1e100, "g": ' + "1" + "0" * 100 + ', "h": -1' + "0" * 100 + "}\n", encoding="utf-8")
    record = read_table(path).records[0]
    assert record["a"] == "😀" and record["b"] == "\\ud800" and record["c"] == {"k": 1} and record["e"] == 1e100
    assert record["g"] == 10 ** 100 and record["h"] == -10 ** 100


def test_full_width_names_are_one_name(store, tmp_path, capsys):
    """Item 20, the accepting side: '--metric Ｅｘｔ' and '--metric Ext' are one external metric (the second import
    is refused as the same metric's values again, not stored as a second column); '--model ｍ３' is m3 and
    '--dataset ｔｏｙ' is toy."""
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text(H_SCORES + "t1,m1,0.5\n", encoding="utf-8")
    second.write_text(H_SCORES + "t1,m1,0.5\n", encoding="utf-8")
    assert main(["import", "scores", str(first), "--dataset", "ｔｏｙ", "--metric", "Ｅｘｔ", "--db", str(store)]) == 0
    code = main(["import", "scores", str(second), "--dataset", "toy", "--metric", "Ext", "--db", str(store)])
    assert code == 2 and "a model without 'Ext' values on track 'toy/chitchat'" in capsys.readouterr().err
    (tmp_path / "r.csv").write_text("item_id,response\nt1,好\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--dataset", "toy", "--track", "ｔｏｙ/ｃｈｉｔｃｈａｔ",
                 "--model", "ｍ３", "--db", str(store)]) == 0
    con = connect(store)
    try:
        metrics = [m for (m,) in con.execute("SELECT metric FROM external_metrics").fetchall()]
        models = [m for (m,) in con.execute("SELECT DISTINCT model FROM responses ORDER BY 1").fetchall()]
    finally:
        con.close()
    assert metrics == ["Ext"] and models == ["m1", "m2", "m3"]


def test_a_tasks_export_imports_into_another_store(tmp_path, template):
    """Item 17/18's other side: a task's export (its flag rows left out) imports into a store that does not hold
    those answers, as votes and as ratings."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.ingest.formats.votes import import_votes

    con = connect(tmp_path / "other.duckdb")
    try:
        import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
        (tmp_path / "resp.csv").write_text("item_id,model,response\n" + "".join(
            f"{i},{m},{m} 说 {i}\n" for i in ("t1", "t2") for m in ("m1", "m2")), encoding="utf-8")
        import_responses(con, tmp_path / "resp.csv", dataset="toy", track="toy/chitchat")
        (tmp_path / "votes.csv").write_bytes(EXPORTS["pairwise"])
        report = import_votes(con, tmp_path / "votes.csv", dataset="toy")
        assert report.counts["pairwise_judgments"] == 1
        assert any("1 row(s) without a winner but with a comment" in n for n in report.notes)
        (tmp_path / "ratings.csv").write_bytes(EXPORTS["absolute"])
        report = import_ratings(con, tmp_path / "ratings.csv", dataset="toy", track=None, scales={"Info": (0, 2)})
        assert report.counts["human_ratings"] == 1
        assert con.execute("SELECT judge, g1_winner FROM pairwise_judgments").fetchall() == [("Erin pairwise", "model_1")]
        assert con.execute("SELECT annotator, score FROM human_ratings").fetchall() == [("Erin absolute", 2.0)]
    finally:
        con.close()


def test_the_corpus_files_are_small():
    """Keep the corpus cheap: no case writes more than 64 KiB (the MT-Bench folders are FastChat's small sample)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for k, case in enumerate(CASES.values()):
            if case.make.__qualname__.startswith("exported"):
                continue
            folder = Path(tmp) / str(k)
            folder.mkdir()
            made = case.make(folder)
            size = sum(p.stat().st_size for p in (made.rglob("*") if made.is_dir() else [made]) if p.is_file())
            assert size < 65536, case


def test_zip_members_are_named_in_refusals(store, tmp_path, capsys):
    """A .zip of per-track files: a mixed-encoding member is named by its path inside the archive."""
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("toy_chitchat.csv", "item_id,response\nt1,李四\n".encode() + "t2,张三\n".encode("gbk"))
    before = state(store)
    code = main(["import", "responses", str(path), "--dataset", "toy", "--model", "m3", "--db", str(store)])
    err = capsys.readouterr().err
    assert code == 2
    assert "b.zip/toy_chitchat.csv, line 3, field 'response': expected text in one encoding throughout" in err
    assert state(store) == before
