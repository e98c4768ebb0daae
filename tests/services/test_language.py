"""A dataset imported without a declared language gets one detected from its texts (evalcore.core.language):
the rule on hand-made strings (counts written out), the same rule in SQL (migration 10), real data
(USR TopicalChat is English, LCCC is Chinese), METEOR 1.5 in English mode equal to pycocoevalcap's on
the USR pairs, a store written before schema 10 detected on its next open, the score report and the
Overview's table."""
from __future__ import annotations

import csv
import json
import re
import shutil

import duckdb
import numpy as np
import pytest

from evalcore.core import language as L
from evalcore.metrics import meteor15
from support import shared, store_at_version, write_jsonl

needs_java = pytest.mark.skipif(shutil.which("java") is None or meteor15.jar() is None,
                                reason="METEOR 1.5 needs a Java runtime (apt-get install default-jre-headless) "
                                       "and pycocoevalcap's jar")

NOTE_EN = 'language en (detected from the texts; set "language" to override)'


# ---- the rule, by hand -------------------------------------------------------------------------------------


def _py_class(ranges) -> re.Pattern:
    return re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges) + "]")


PY = {"han": _py_class(L.HAN), "kana": _py_class(L.KANA), "hangul": _py_class(L.HANGUL), "latin": _py_class(L.LATIN)}


def count_slowly(texts) -> L.Counts:
    """The oracle for L.count: character by character with str.isalpha and regular expressions of the ranges."""
    total = L.Counts()
    for text in texts:
        total = total + L.Counts(sum(map(str.isalpha, text)), *(len(p.findall(text)) for p in PY.values()))
    return total

@pytest.mark.parametrize("texts, counts, expected", [
    # 19 letters, all Latin: CJK 0 < 3/10 of 19; Latin 19 >= 1/2 of 19 -> en
    (["Hello there, how are you?"], (19, 0, 0, 0, 19), "en"),
    # 9 Han characters (the punctuation ，《》？ are no letters): CJK 9 >= 3/10 of 9 -> zh
    (["你好，看过《我是山姆》吗？"], (9, 9, 0, 0, 0), "zh"),
    # 2 Han + 8 kana = 10 CJK of 10 letters; kana 8 >= 1/5 of 10 -> ja
    (["こんにちは、元気ですか"], (10, 2, 8, 0, 0), "ja"),
    # 10 hangul of 10 letters: hangul more than half of the CJK -> ko
    (["안녕하세요 반갑습니다"], (10, 0, 0, 10, 0), "ko"),
    # Cyrillic: 13 letters, no CJK, no Latin -> none
    (["Привет как дела"], (13, 0, 0, 0, 0), None),
    # no letters at all -> none
    (["", "123 !!", "？"], (0, 0, 0, 0, 0), None),
    # Chinese with an English name: 5 Han of 16 letters; 10 * 5 = 50 >= 3 * 16 = 48 -> zh
    (["我喜欢 Taylor Swift 的歌"], (16, 5, 0, 0, 11), "zh"),
    # English with a Chinese name: I 1 + met 3 + at 2 + the 3 + station 7 + yesterday 9 = 25 Latin, + 2 Han = 27
    # letters; 10 * 2 = 20 < 3 * 27 = 81 -> not CJK; Latin 25 >= 27 / 2 -> en
    (["I met 李明 at the station yesterday"], (27, 2, 0, 0, 25), "en"),
    # over several texts: 3 Han and 7 Latin letters; 10 * 3 = 30 >= 3 * 10 = 30 (the threshold itself) -> zh
    (["好的", "abcdefg", "嗯"], (10, 3, 0, 0, 7), "zh"),
    # 2 Han and 8 Latin: 20 < 30 -> not CJK; Latin 8 >= 5 -> en
    (["好的", "abcdefgh"], (10, 2, 0, 0, 8), "en"),
    # accented Latin counts as Latin: é, ü, ß are in U+00C0-U+024F
    (["Café über Straße"], (14, 0, 0, 0, 14), "en"),
])
def test_detector_on_hand_made_strings(texts, counts, expected):
    assert L.count(texts).astuple() == counts
    assert count_slowly(texts).astuple() == counts   # str.isalpha and regular expressions, char by char
    assert L.detect(texts) == expected


def test_sql_rule_equals_the_python_rule_on_the_same_strings():
    """Migration 10 runs the rule in SQL: same counts and same language as evalcore.core.language, string by string."""
    strings = ["Hello there, how are you?", "你好，看过《我是山姆》吗？", "こんにちは、元気ですか", "안녕하세요 반갑습니다",
               "Привет как дела", "123 !!", "我喜欢 Taylor Swift 的歌", "I met 李明 at the station yesterday",
               "Café über Straße", "𠀀𠀁 ab", "ｶﾀｶﾅ and 漢字"]
    con = duckdb.connect()
    for s in strings:
        row = con.execute(f"SELECT {L.sql_counts('t')} FROM (SELECT ? AS t)", [s]).fetchone()
        assert tuple(int(x) for x in row) == L.count([s]).astuple(), s
        lang = con.execute(f"SELECT {L.sql_decision()} FROM (SELECT {L.sql_counts('t')} FROM (SELECT ? AS t))",
                           [s]).fetchone()[0]
        assert lang == L.detect([s]), s


# ---- real data --------------------------------------------------------------------------------------------

def usr_tc_files(tmp_path, with_language: bool = False):
    """USR TopicalChat as a user would bring it: an items JSONL (context = the dialogue's turns, reference = the
    'Original Ground Truth' reply) without the optional `language`, and a responses CSV of the other 5 models."""
    data = json.loads(shared("usr", "tc_usr_data.json").read_text(encoding="utf-8"))
    items, rows = [], []
    for d, dialogue in enumerate(data):
        by_model = {r["model"]: r["response"] for r in dialogue["responses"]}
        item = {"item_id": f"tc{d}", "dataset": "usr-tc", "track": "usr/knowledge",
                "context": [t for t in dialogue["context"].split("\n") if t.strip()],
                "references": [by_model["Original Ground Truth"]]}
        if with_language:
            item["language"] = "en"
        items.append(item)
        rows += [(f"tc{d}", m, text) for m, text in by_model.items() if m != "Original Ground Truth"]
    items_path = write_jsonl(tmp_path / "usr_tc.jsonl", items)
    resp = tmp_path / "usr_tc_responses.csv"
    with resp.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "model", "response"])
        w.writerows(rows)
    return items_path, resp, items, rows


def test_usr_topicalchat_without_language_is_detected_as_english(con, tmp_path):
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    items_path, resp, items, rows = usr_tc_files(tmp_path)
    assert not any("language" in it for it in items) and len(items) == 60
    report = import_items(con, items_path)
    assert NOTE_EN in report.notes
    assert f"note: {NOTE_EN}" in report.render()
    assert con.execute("SELECT language, language_source FROM datasets WHERE dataset = 'usr-tc'").fetchone() == \
        ("en", "detected")
    import_responses(con, resp, dataset="usr-tc", track="usr/knowledge")
    out = score(con, dataset="usr-tc", metrics="BLEU4,ROUGE", progress=False)
    assert "usr-tc: scored as en (detected from the texts): tokens tok:en-1, METEOR -l en" in out.notes, out.notes
    sigs = {s for (s,) in con.execute("SELECT DISTINCT signature FROM system_scores WHERE dataset = 'usr-tc'").fetchall()}
    assert sigs and all("|tok:en-1|" in s for s in sigs), sigs


def test_a_declared_language_is_kept_and_not_noted(con, tmp_path):
    from evalcore.ingest.formats.items import import_items

    items_path, *_ = usr_tc_files(tmp_path, with_language=True)
    report = import_items(con, items_path)
    assert not any("detected" in n for n in report.notes)
    assert con.execute("SELECT language, language_source FROM datasets").fetchone() == ("en", "declared")


@needs_java
@pytest.mark.slow
def test_usr_topicalchat_meteor_equals_pycocoevalcap_per_response(con, tmp_path):
    """Imported without `language`, USR TopicalChat is scored with METEOR 1.5's English mode: every response's
    value equals pycocoevalcap's Meteor on the same pair (to 1e-12); per model the mean of those."""
    from pycocoevalcap.meteor.meteor import Meteor

    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    items_path, resp, items, rows = usr_tc_files(tmp_path)
    import_items(con, items_path)
    import_responses(con, resp, dataset="usr-tc", track="usr/knowledge")
    score(con, dataset="usr-tc", metrics="METEOR", progress=False)
    ref = {it["item_id"]: it["references"][0] for it in items}
    hyps = [meteor15.one_line(text) for _, _, text in rows]
    refs = [[meteor15.one_line(ref[i])] for i, _, _ in rows]
    _, theirs = Meteor().compute_score({k: refs[k] for k in range(len(rows))}, {k: [hyps[k]] for k in range(len(rows))})
    ours = per_response(con, "usr-tc", "METEOR")
    got = np.array([ours[(i, m)] for i, m, _ in rows])
    assert len(rows) == 300
    np.testing.assert_allclose(got, np.asarray(theirs, dtype=float), rtol=0, atol=1e-12)
    system = dict(con.execute("SELECT model, value FROM system_scores WHERE dataset = 'usr-tc' AND name = 'METEOR' "
                              "AND origin = 'computed'").fetchall())
    for model in ("Argmax Decoding", "New Human Generated"):
        mine = [t for (i, m, _), t in zip(rows, theirs) if m == model]
        assert system[model] == pytest.approx(sum(mine) / len(mine), abs=1e-12), model
    sig = con.execute("SELECT DISTINCT signature FROM system_scores WHERE name = 'METEOR'").fetchone()[0]
    assert "|l:en|norm|modules:exact+stem+synonym+paraphrase|" in sig


def per_response(con, dataset: str, name: str) -> dict[tuple[str, str], float]:
    """(item_id, model) -> the stored per-response value (scoring.response_scores, as the drill-down reads it)."""
    from evalcore.scoring import response_scores

    frame = response_scores(con, dataset, "usr/knowledge")
    frame = frame[frame["metric"] == name]
    return {(r.item_id, r.model): float(r.value) for r in frame.itertuples()}


def lccc_items(tmp_path, n: int = 200):
    data = json.loads(shared("lccc-toy", "toy_data.json").read_text(encoding="utf-8"))
    dialogues = [d for d in data["valid"] if len(d) >= 2][:n]
    items = [{"item_id": f"l{k}", "dataset": "lccc", "track": "lccc/chitchat", "context": d[:-1], "references": [d[-1]]}
             for k, d in enumerate(dialogues)]
    return write_jsonl(tmp_path / "lccc.jsonl", items)


def test_a_chinese_dataset_without_language_stays_zh(con, tmp_path):
    from evalcore.ingest.formats.items import import_items

    report = import_items(con, lccc_items(tmp_path))
    assert 'language zh (detected from the texts; set "language" to override)' in report.notes
    assert con.execute("SELECT language, language_source FROM datasets").fetchone() == ("zh", "detected")


# ---- migration 10 ------------------------------------------------------------------------------------------

def test_migration_detects_datasets_stored_without_a_language(tmp_path):
    """A store at schema 9 holding USR TopicalChat and LCCC imported without a language (both stored with none,
    as evalcore did then) and a declared one: opened by this version, the first two are detected."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.store import connect, schema_version
    from evalcore.store.migrations import all_migrations

    # the texts, imported into a current store, then copied into a schema-9 one as they were stored then
    src = connect(tmp_path / "src.duckdb")
    usr, *_ = usr_tc_files(tmp_path)
    import_items(src, usr)
    import_items(src, lccc_items(tmp_path))
    items = src.execute("SELECT dataset, item_id, track, context FROM items").fetchall()
    refs = src.execute("SELECT dataset, item_id, ref_index, text FROM item_references").fetchall()
    src.close()

    path = tmp_path / "old.duckdb"
    old = store_at_version(path, 9)
    old.executemany("INSERT INTO datasets (dataset, language) VALUES (?, ?)",
                    [["usr-tc", None], ["lccc", None], ["declared-zh", "zh"], ["published-only", None]])
    old.executemany("INSERT INTO items (dataset, item_id, track, context) VALUES (?, ?, ?, ?)", items)
    old.executemany("INSERT INTO item_references VALUES (?, ?, ?, ?)", refs)
    # a declared dataset whose texts look English keeps what was declared
    old.execute("INSERT INTO items (dataset, item_id, track, context) VALUES ('declared-zh', 'x', 't/chitchat', "
                "'[\"hello there\"]')")
    old.close()

    con = connect(path)
    assert schema_version(con) == len(all_migrations())   # migrated to this version (10 was the latest then)
    got = dict((d, (lang, src)) for d, lang, src in
               con.execute("SELECT dataset, language, language_source FROM datasets").fetchall())
    assert got == {"usr-tc": ("en", "detected"), "lccc": ("zh", "detected"), "declared-zh": ("zh", "declared"),
                   "published-only": (None, None)}
    from evalcore.store.queries import dataset_languages

    table = dataset_languages(con).set_index("dataset")
    assert table.loc["usr-tc", "language"] == "en" and table.loc["usr-tc", "language_from"] == "detected from the texts"
    assert table.loc["declared-zh", "language_from"] == "declared"
    assert table.loc["published-only", "language"] == ""   # blank, not None
    assert table.loc["published-only", "language_from"] == "none: scored as non-English (char tokens)"
    con.close()


def test_migration_agrees_with_the_importer_on_real_data(tmp_path):
    """The SQL rule over stored items gives what the importer's Python rule gave on the same records."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.store import connect

    con = connect(tmp_path / "s.duckdb")
    usr, *_ = usr_tc_files(tmp_path)
    import_items(con, usr)
    import_items(con, lccc_items(tmp_path))
    m10 = __import__("evalcore.store.migrations.m010_language", fromlist=["TEXTS"])
    rows = con.execute(f"SELECT dataset, {L.sql_counts('t')} FROM ({m10.TEXTS}) x GROUP BY dataset").fetchall()
    sql = {d: tuple(int(v) for v in counts) for d, *counts in rows}
    for dataset, path in (("usr-tc", usr), ("lccc", tmp_path / "lccc.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        texts = [t for r in records for t in (*r["context"], *r["references"])]
        python = L.count(texts).astuple()
        assert python == count_slowly(texts).astuple()
        # the SQL joins a context's turns with one space (no letter): the same letters
        assert sql[dataset] == python, dataset
    con.close()


def test_overview_page_shows_each_datasets_language(monkeypatch, tmp_path):
    """The Overview's Datasets table: USR TopicalChat imported without a language reads 'en', 'detected from the
    texts'; a dataset whose texts have no letters has a blank language and says how it is scored."""
    from streamlit.testing.v1 import AppTest

    from evalcore.ingest.formats.items import import_items
    from evalcore.store import connect
    from support import ROOT

    db = tmp_path / "o.duckdb"
    con = connect(db)
    usr, *_ = usr_tc_files(tmp_path)
    import_items(con, usr)
    import_items(con, write_jsonl(tmp_path / "n.jsonl", [{"item_id": "n1", "dataset": "digits", "track": "d/chitchat",
                                                          "context": ["123"], "references": ["456"]}]))
    con.close()
    monkeypatch.setenv("EVALCORE_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    tables = [t.value for t in at.dataframe if "language_from" in t.value.columns]
    assert len(tables) == 1
    table = tables[0].set_index("dataset")
    assert (table.loc["usr-tc", "language"], table.loc["usr-tc", "language_from"]) == ("en", "detected from the texts")
    assert table.loc["digits", "language"] == "" and table.loc["digits", "language_from"] == \
        "none: scored as non-English (char tokens)"


def test_dstc10_and_mtbench_without_language_are_detected(con, tmp_path):
    """The other importers that create a dataset: USR TopicalChat in the DSTC10 shape without --language, and an
    MT-Bench folder (English questions, tests/ingest/test_interchange.py's) without --language, are detected as en."""
    from evalcore.ingest.formats.dstc10 import import_dstc10
    from evalcore.ingest.formats.mtbench import import_mtbench
    from support.mtbench import mtbench_folder

    raw = json.loads(shared("usr", "tc_usr_data.json").read_text(encoding="utf-8"))
    entries = []
    for n, dialogue in enumerate(raw):
        truth = [r["response"] for r in dialogue["responses"] if r["model"] == "Original Ground Truth"]
        entries += [{"dialogue_id": f"tc-{n:03d}", "model": r["model"], "context": dialogue["context"],
                     "response": r["response"], "reference": truth, "annotations": {}} for r in dialogue["responses"]]
    path = tmp_path / "tc.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    report = import_dstc10(con, path, dataset="usr", track="usr-topicalchat/knowledge")
    assert NOTE_EN in report.notes
    report = import_mtbench(con, mtbench_folder(tmp_path / "mt_bench"), dataset="mtb")
    assert NOTE_EN in report.notes
    assert con.execute("SELECT dataset, language, language_source FROM datasets ORDER BY 1").fetchall() == [
        ("mtb", "en", "detected"), ("usr", "en", "detected")]
