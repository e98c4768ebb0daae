"""Hostile evaluation records (issue 61, A1-A6): each is refused whole by `record import` with exit 2, naming the
file, the member and the field, and the store it was imported into stays byte-identical; `record verify` and
`report --record` refuse them the same way, without a traceback. Each is made from one real record, exported once
per module from a small scored store, with its checksums and content digest recomputed (except where the case is
that they were not): what is refused is what the rows say, not a stale checksum."""
from __future__ import annotations

import io
import json
import math
import shutil
import warnings
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main
from evalcore.services import record
from evalcore.services import tasks as task_service
from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support import write_jsonl

ITEMS = [{"item_id": f"d{k}-t1", "dataset": "rec", "track": "rec/knowledge", "dialogue_id": f"d{k}",
          "context": ["你好", f"你看过电影{k}吗？"], "references": [f"看过电影{k}，很好看。"]}
         for k in range(4)]
RESPONSES = {"m1": [f"看过电影{k}，很好看。" for k in range(4)], "m2": ["没看过。"] * 4}
ESC_OSC = "m1\x1b]0;owned\x07\x1b[2J"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(the record of dataset 'rec', scored with F1, rated on Info 0..2; a store that already holds 'rec',
    imported from it)."""
    tmp = tmp_path_factory.mktemp("hostile-records")
    db = str(tmp / "src.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp / "items.jsonl", ITEMS)), "--db", db]) == 0
    rows = "\n".join(f"d{k}-t1,{m},{texts[k]}" for m, texts in RESPONSES.items() for k in range(4))
    (tmp / "r.csv").write_text("item_id,model,response\n" + rows + "\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp / "r.csv"), "--db", db, "--dataset", "rec", "--track",
                 "rec/knowledge"]) == 0
    ratings = "\n".join(f"d{k}-t1,{m},{a},Info,{(k + len(a)) % 3}" for m in RESPONSES for k in range(4)
                        for a in ("ann", "bo"))
    (tmp / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + ratings + "\n", encoding="utf-8")
    assert main(["import", "ratings", str(tmp / "h.csv"), "--db", db, "--dataset", "rec", "--track",
                 "rec/knowledge", "--scale", "Info=0:2"]) == 0
    assert main(["score", "--db", db, "--dataset", "rec", "--metrics", "F1"]) == 0
    out = tmp / "rec.zip"
    assert main(["record", "export", "--db", db, "--dataset", "rec", "--out", str(out)]) == 0
    holder = tmp / "holder.duckdb"
    assert main(["record", "import", str(out), "--db", str(holder)]) == 0
    return out, holder


# ------------------------------------------------------------------------------------------------ record makers
def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def parquet(frame: pd.DataFrame, like: bytes | None = None) -> bytes:
    """`frame` as Parquet, in the column types of the table `like` where they still hold."""
    table = None
    if like is not None:
        schema = pq.read_schema(io.BytesIO(like))
        if list(frame.columns) == schema.names and frame.dtypes.equals(frame_of(like).dtypes):
            try:
                table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
            except (pa.ArrowException, TypeError, ValueError):
                table = None
    table = table or pa.Table.from_pandas(frame, preserve_index=False)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def nan_score(files: dict) -> tuple[dict, list]:
    """human_ratings with a NaN score in its first row (pandas would write NaN as NULL: written with Arrow)."""
    table = pq.read_table(io.BytesIO(files["tables/human_ratings.parquet"]))
    scores = table.column("score").to_pylist()
    table = table.set_column(table.schema.get_field_index("score"), "score",
                             pa.array([math.nan] + scores[1:], type=pa.float64()))
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return {**files, "tables/human_ratings.parquet": buffer.getvalue()}, []


def frame_of(data: bytes) -> pd.DataFrame:
    return pq.read_table(io.BytesIO(data)).to_pandas(types_mapper=pd.ArrowDtype)   # Arrow's types kept


def write(dest: Path, files: dict[str, bytes], extra: list[tuple[str, bytes]] = ()) -> Path:
    with warnings.catch_warnings(), zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")   # a member twice is the point of one case
        for name, data in files.items():
            zf.writestr(name, data)
        for name, data in extra:
            zf.writestr(name, data)
    return dest


def resealed(files: dict[str, bytes], tmp: Path, changed: set[str] | None = None) -> dict[str, bytes]:
    """`files` with the manifest's checksums (of the `changed` members, default all) and content digest recomputed
    from the tables as they are now."""
    manifest = json.loads(files["manifest.json"])
    for part, key in (("tables", "tables"), ("figures", "figure_tables")):
        for name in manifest[key]:
            member = f"{part}/{name}.parquet"
            if member in files and (changed is None or member in changed):
                (tmp / "t.parquet").write_bytes(files[member])
                manifest[key][name]["sha256"], manifest[key][name]["rows"] = record.parquet_sha256(tmp / "t.parquet")
    manifest["content_sha256"] = record.content_sha256({f"{part}/{n}": e["sha256"] for part, key in
                                                        (("tables", "tables"), ("figures", "figure_tables"))
                                                        for n, e in manifest[key].items()})
    return {**files, "manifest.json": json.dumps(manifest, ensure_ascii=False).encode()}


def tables(**changes):
    """A maker: each named table put through its change (a function of the DataFrame), checksums recomputed."""
    def make(src: Path, tmp: Path) -> Path:
        files = members(src)
        for name, change in changes.items():
            member = f"tables/{name}.parquet"
            files[member] = parquet(change(frame_of(files[member])), like=files[member])
        return write(tmp / "hostile.zip", resealed(files, tmp, {f"tables/{n}.parquet" for n in changes}))
    return make


def manifest_edit(change, reseal: bool = False):
    """A maker: the manifest (a dict) put through `change`, which may return anything JSON writes."""
    def make(src: Path, tmp: Path) -> Path:
        files = members(src)
        if reseal:
            files = resealed(files, tmp, set())
        files["manifest.json"] = json.dumps(change(json.loads(files["manifest.json"]))).encode()
        return write(tmp / "hostile.zip", files)
    return make


def manifest_bytes(data: bytes):
    def make(src: Path, tmp: Path) -> Path:
        return write(tmp / "hostile.zip", {**members(src), "manifest.json": data})
    return make


def files_edit(change, reseal: tuple[str, ...] = ()):
    """A maker: the record's members (name -> bytes) put through `change`, which returns (members, extra members
    written after them, duplicates allowed); the checksums of the members named in `reseal` recomputed."""
    def make(src: Path, tmp: Path) -> Path:
        files, extra = change(members(src))
        if reseal:
            files = resealed(files, tmp, set(reseal))
        return write(tmp / "hostile.zip", files, extra)
    return make


def cell(column: str, value, row: int = 0):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.copy()
        if isinstance(value, str) and frame[column].dtype != object:
            frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
        return frame
    return change


def column(name: str, values):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(**{name: values(frame) if callable(values) else values})
    return change


def other_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(dataset="fake-ds") if "dataset" in frame else frame


def without(key: str):
    def change(m: dict) -> dict:
        m.pop(key)
        return m
    return change


def no_responses(files: dict) -> tuple[dict, list]:
    manifest = json.loads(files["manifest.json"])
    manifest["tables"].pop("responses")
    files.pop("tables/responses.parquet")
    return {**files, "manifest.json": json.dumps(manifest).encode()}, []


def renamed_model(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(model=frame["model"].replace({"m1": ESC_OSC}))


FAKE = {t: other_dataset for t in ("datasets", "tracks", "dimensions", "dialogues", "turns", "items", "item_references",
                                   "system_scores")}
# (id, issue item, maker, what the refusal says: member and field, and what was expected)
CASES = [
    ("rows-of-another-dataset", "A1", tables(**FAKE), "tables/responses.parquet, row 1, field 'dataset': expected the "
     "record's own dataset 'fake-ds' (manifest.json), got 'rec'",
     lambda m: {**m, "dataset": "fake-ds"}),
    ("no-content-sha256", "A2", manifest_edit(without("content_sha256")),
     "manifest.json, field 'content_sha256': expected a key of an evaluation record's manifest, got none", None),
    ("no-created-at", "A2", manifest_edit(without("created_at")),
     "manifest.json, field 'created_at': expected a key of an evaluation record's manifest, got none", None),
    ("created-at-not-a-time", "A2", manifest_edit(lambda m: {**m, "created_at": "yesterday"}, reseal=True),
     "manifest.json, field 'created_at': expected a time in ISO 8601", None),
    ("tampered-not-resealed", "A3", files_edit(lambda f: ({**f, "tables/human_ratings.parquet": parquet(
        cell("score", 0.5, 1)(frame_of(f["tables/human_ratings.parquet"])), f["tables/human_ratings.parquet"])}, [])),
     "tables/human_ratings.parquet, field 'sha256': expected ", None),
    ("content-digest-not-the-tables", "A3", manifest_edit(lambda m: {**m, "content_sha256": "0" * 64}),
     "manifest.json, field 'content_sha256': expected ", None),
    ("duplicated-member", "A3", files_edit(lambda f: (f, [("tables/responses.parquet",
                                                           f["tables/responses.parquet"])])),
     "tables/responses.parquet: expected each member once, got a second member of the same name", None),
    ("score-999", "A4", tables(human_ratings=cell("score", 999.0)),
     "tables/human_ratings.parquet, row 1, field 'score': expected a score on the Info scale 0..2, got 999", None),
    ("score-inf", "A4", tables(human_ratings=cell("score", math.inf)),
     "tables/human_ratings.parquet, row 1, field 'score': expected a finite number, got inf", None),
    ("score-minus-1e308", "A4", tables(human_ratings=cell("score", -1e308)),
     "tables/human_ratings.parquet, row 1, field 'score': expected a number of magnitude at most 1e+100", None),
    ("score-1e300", "A4", tables(human_ratings=cell("score", 1e300)),
     "tables/human_ratings.parquet, row 1, field 'score': expected a number of magnitude at most 1e+100", None),
    ("score-nan", "A5", files_edit(nan_score, reseal=("tables/human_ratings.parquet",)),
     "tables/human_ratings.parquet, row 1, field 'score': expected a finite number, got nan", None),
    ("model-name-esc-osc", "A4", tables(responses=renamed_model, models=renamed_model),
     "tables/models.parquet, row 1, field 'model': expected text without control characters (tab and newline are "
     "fine), got U+001B at character 3", None),
    ("annotator-c1-csi", "A4", tables(human_ratings=cell("annotator", "ann\x9b31m")),
     "tables/human_ratings.parquet, row 1, field 'annotator': expected text without control characters", None),
    ("response-text-esc", "A4", tables(responses=cell("text", "fine\x1b[2J")),
     "tables/responses.parquet, row 1, field 'text': expected text without control characters", None),
    ("context-escaped-esc", "A4", tables(items=cell("context", json.dumps(["hi\x1b]0;x\x07"]))),
     "tables/items.parquet, row 1, field 'context[0]': expected text without control characters", None),
    ("context-not-a-list", "A5", tables(items=cell("context", json.dumps({"turn": "hi"}))),
     "tables/items.parquet, row 1, field 'context': expected a JSON list of strings, got", None),
    ("context-of-numbers", "A5", tables(items=cell("context", "[1, 2]")),
     "tables/items.parquet, row 1, field 'context': expected a JSON list of strings, got '[1, 2]'", None),
    ("context-not-json", "A5", tables(items=cell("context", "[\"unclosed")),
     "tables/items.parquet, row 1, field 'context': expected JSON text, got", None),
    ("grounding-deeply-nested", "A5", tables(items=cell("grounding", "[" * 5000 + "]" * 5000)),
     "tables/items.parquet, row 1, field 'grounding': expected JSON nested at most 100 levels deep", None),
    ("rating-of-an-unknown-target", "A5", tables(human_ratings=cell("target", "everything")),
     "tables/human_ratings.parquet, row 1, field 'target': expected one of response, dialogue, system, got 'everything'", None),
    ("manifest-a-list", "A5", manifest_bytes(b"[1, 2]"),
     "manifest.json: expected a JSON object (an evaluation record's manifest), got a JSON list", None),
    ("manifest-deeply-nested", "A5", manifest_bytes(b"[" * 100_000 + b"]" * 100_000),
     "manifest.json, line 1: expected JSON nested at most 100 levels deep (EVALCORE_MAX_DEPTH)", None),
    ("manifest-minimal", "A5", manifest_bytes(b'{"format": "evalcore-record", "version": 1}'),
     "manifest.json, field 'dataset': expected a key of an evaluation record's manifest, got none", None),
    ("manifest-wrong-types", "A5", manifest_edit(lambda m: {**m, "tracks": 5, "tables": "all", "dataset": ["x"]}),
     "manifest.json, field 'tracks': expected a list of track names, got int 5", None),
    ("manifest-invalid-json", "A5", manifest_bytes(b'{"format": "evalcore-record",'),
     "manifest.json, line 1: expected a JSON object (an evaluation record's manifest), got invalid JSON", None),
    ("manifest-not-utf8", "A5", manifest_bytes('{"dataset": "数据"}'.encode("gbk")),
     "manifest.json: expected JSON text in UTF-8, got a byte that is not UTF-8", None),
    ("version-true", "A5", manifest_edit(lambda m: {**m, "version": True}),
     "expected an evaluation record (`evalcore record export`), got manifest.json: expected format 'evalcore-record' "
     "version 1, got 'evalcore-record' version True", None),
    ("extra-column", "A5", tables(responses=column("evil", "x")),
     "tables/responses.parquet, field 'evil': expected only the columns of a record's responses table", None),
    ("missing-column", "A5", tables(human_ratings=lambda f: f.drop(columns=["annotator"])),
     "tables/human_ratings.parquet, field 'annotator': expected a column 'annotator' (VARCHAR), got no such column",
     None),
    ("text-score", "A5", tables(human_ratings=column("score", lambda f: f["score"].astype(str))),
     "tables/human_ratings.parquet, field 'score': expected a column of number (DOUBLE), got VARCHAR", None),
    ("missing-table", "A5", files_edit(no_responses),
     "manifest.json, field 'tables.responses': expected every table of a record, got none", None),
    ("missing-member", "A5", files_edit(lambda f: ({k: v for k, v in f.items() if k != "tables/items.parquet"}, [])),
     "tables/items.parquet: expected the member its manifest lists, got no such member", None),
    ("duplicate-rows", "A5", tables(responses=lambda f: pd.concat([f, f.iloc[:1]], ignore_index=True)),
     "tables/responses.parquet, row 1, field 'dataset, item_id, model': expected each (dataset, item_id, model) once",
     None),
    ("member-not-parquet", "A5", files_edit(lambda f: ({**f, "tables/datasets.parquet": b"not parquet"}, [])),
     "tables/datasets.parquet: expected a Parquet table, got ", None),
    ("unlisted-member", "A5", files_edit(lambda f: (f, [("tables/evil.parquet", f["tables/models.parquet"])])),
     "tables/evil.parquet: expected only the members its manifest lists", None),
    ("table-name-a-path", "A5", manifest_edit(lambda m: {**m, "figure_tables": {"../../x": {"sha256": "0" * 64,
                                                                                           "rows": 1}}}),
     "manifest.json, field 'figure_tables.../../x': expected the name of a record's figure", None),
    ("ratings-of-an-unknown-task", "A5", tables(human_ratings=cell("origin", "task:abc")),
     "tables/human_ratings.parquet, row 1, field 'origin': expected 'task:<id>' of a task of the record", None),
    ("response-to-no-item", "A1", tables(responses=cell("item_id", "elsewhere")),
     "tables/responses.parquet, row 1, field 'item_id': expected one of the record's items (item_id in "
     "tables/items.parquet), got 'elsewhere'", None),
    ("value-of-another-metric", "A1", tables(metric_values=cell("metric", "BLEU4")),
     "tables/metric_values.parquet, row 1, field 'signature, metric': expected one of the record's metric signatures "
     "(signature, metric in tables/metric_signatures.parquet)", None),
    ("rating-of-no-item", "A1", tables(human_ratings=cell("item_id", "elsewhere")),
     "tables/human_ratings.parquet, row 1, field 'item_id': expected one of the record's items", None),
    ("value-under-another-text-s-key", "A1", tables(metric_values=cell("text_key", "0" * 32)),
     "tables/metric_values.parquet, row 1, field 'text_key': expected the F1 key of its own response's texts", None),
    ("track-of-no-record", "A1", tables(human_ratings=cell("track", "engagement-en/chitchat")),
     "tables/human_ratings.parquet, row 1, field 'track': expected a track of the record", None),
]


def _with_manifest(make, change):
    """`make`, then the manifest put through `change` and everything resealed."""
    if change is None:
        return make

    def both(src: Path, tmp: Path) -> Path:
        made_ = make(src, tmp)
        files = members(made_)
        files["manifest.json"] = json.dumps(change(json.loads(files["manifest.json"]))).encode()
        return write(tmp / "hostile2.zip", resealed(files, tmp, set()))
    return both


@pytest.mark.parametrize("case, item, make, said, manifest", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_record_is_refused_whole_and_the_store_unchanged(made, tmp_path, capsys, case, item, make, said,
                                                                     manifest):
    source, holder = made
    hostile = _with_manifest(make, manifest)(source, tmp_path)
    db = tmp_path / "store.duckdb"
    shutil.copyfile(holder, db)
    before = db.read_bytes()
    capsys.readouterr()
    assert main(["record", "import", str(hostile), "--db", str(db)]) == 2, case
    err = capsys.readouterr().err
    assert err.startswith(f"refused {hostile}: ") and "nothing was written" in err, err
    assert f"{hostile}, {said}" in err or f"{hostile}: {said}" in err, err
    assert "Traceback" not in err and "already in the store" not in err
    assert db.read_bytes() == before and not Path(f"{db}.wal").exists()
    if item != "A2":
        return
    # a second run says the same: nothing of the first stayed behind
    assert main(["record", "import", str(hostile), "--db", str(db)]) == 2
    assert said in capsys.readouterr().err and db.read_bytes() == before


VERIFIED = ["rows-of-another-dataset", "score-1e300", "model-name-esc-osc", "manifest-deeply-nested", "text-score",
            "duplicate-rows", "member-not-parquet", "missing-table", "duplicated-member"]


@pytest.mark.parametrize("command", ["verify", "report"])
@pytest.mark.parametrize("case", VERIFIED)
def test_verify_and_report_refuse_what_import_refuses(made, tmp_path, capsys, command, case):
    """`record verify` and `report --record` read a record the same way: exit 2, the member and field named."""
    _, item, make, said, manifest = next(c for c in CASES if c[0] == case)
    hostile = _with_manifest(make, manifest)(made[0], tmp_path)
    argv = ["record", "verify", str(hostile)] if command == "verify" else \
        ["report", "--record", str(hostile), "--out", str(tmp_path / "r.html")]
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    # a table changed since export is a difference verify names (exit 1), where import and report refuse it
    assert code == 2, err
    assert "Traceback" not in err and said in err, err
    assert not (tmp_path / "r.html").exists()


def test_archive_bounds_are_checked_from_the_directory_before_anything_is_unpacked(made, tmp_path, capsys,
                                                                                   monkeypatch):
    """Too many members, too many bytes unpacked (a deflated member of zeros), a manifest larger than its bound:
    refused from the zip's directory, before a byte is extracted or the manifest read."""
    source, holder = made
    db = tmp_path / "store.duckdb"
    shutil.copyfile(holder, db)
    before = db.read_bytes()
    files = members(source)
    bomb = write(tmp_path / "bomb.zip", files, [("tables/zeros.parquet", bytes(8 << 20))])   # 8 MiB of zeros: ~8 KB
    assert bomb.stat().st_size < 2 << 20
    big = write(tmp_path / "big-manifest.zip", {**files, "manifest.json": b" " * (17 << 20) + files["manifest.json"]})
    extracted = []
    monkeypatch.setattr(zipfile.ZipFile, "extract", lambda self, *a, **k: extracted.append(a))
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda self, *a, **k: extracted.append(a))
    for path, env, said in (
            (bomb, {"EVALCORE_MAX_EXPANDED": str(4 << 20)}, "expected an archive that expands to at most 4,194,304 "
             "bytes (EVALCORE_MAX_EXPANDED), got "),
            (source, {"EVALCORE_MAX_MEMBERS": "5"}, "expected at most 5 files in an archive (EVALCORE_MAX_MEMBERS)"),
            (big, {}, "manifest.json: expected a manifest of at most 16,777,216 bytes (EVALCORE_MAX_MANIFEST), got "
             "17,")):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            capsys.readouterr()
            assert main(["record", "import", str(path), "--db", str(db)]) == 2
            err = capsys.readouterr().err
            assert said in err and "Traceback" not in err, err
            assert main(["record", "verify", str(path)]) == 2
            assert said in capsys.readouterr().err
    assert extracted == [] and db.read_bytes() == before


def claiming(path: Path, member: str, size: int) -> Path:
    """`path` with the zip's central directory saying that `member` unpacks to `size` bytes (what a bomb's
    directory says; its data is unchanged)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + length].decode() == member:
            data[at + 24:at + 28] = size.to_bytes(4, "little")
            path.write_bytes(bytes(data))
            return path
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"no {member} in {path}")


def test_a_member_declaring_3_gib_is_refused_by_the_default_limit(made, tmp_path, capsys):
    """The issue's record: one small member that declares 3 GiB, refused from the directory with the default
    limit (1 GiB), by import, verify and report alike."""
    source, holder = made
    bomb = claiming(write(tmp_path / "bomb.zip", members(source)), "tables/metric_values.parquet", 3 << 30)
    said = "expected an archive that expands to at most 1,073,741,824 bytes (EVALCORE_MAX_EXPANDED), got 3,2"
    db = tmp_path / "store.duckdb"
    shutil.copyfile(holder, db)
    before = db.read_bytes()
    for argv in (["record", "import", str(bomb), "--db", str(db)], ["record", "verify", str(bomb)],
                 ["report", "--record", str(bomb), "--out", str(tmp_path / "r.html")]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and "'tables/metric_values.parquet'" in err and "Traceback" not in err, err
    assert db.read_bytes() == before and not (tmp_path / "r.html").exists()


def test_a_good_record_passes_every_check(made, tmp_path, capsys):
    """The checks refuse what is wrong, not what export writes: the record made as the hostile ones are, with its
    dataset renamed in every table, imports beside the dataset it came from."""
    source, _ = made
    renamed = _with_manifest(tables(**FAKE, responses=other_dataset, human_ratings=other_dataset),
                             lambda m: {**m, "dataset": "fake-ds"})(source, tmp_path)
    shutil.copyfile(made[1], tmp_path / "holder.duckdb")
    capsys.readouterr()
    assert main(["record", "import", str(renamed), "--db", str(tmp_path / "holder.duckdb")]) == 0, \
        capsys.readouterr().err
    con = connect(tmp_path / "holder.duckdb", read_only=True)
    assert con.execute("SELECT dataset, count(*) FROM responses GROUP BY 1 ORDER BY 1").fetchall() == [
        ("fake-ds", 8), ("rec", 8)]
    con.close()


def test_an_export_of_some_tracks_carries_only_their_task_units(toy, tmp_path, capsys):
    """Item 19: a task over two tracks, exported with --tracks of one: the record's units and answers are that
    track's, and it imports (every unit names an item and track of the record)."""
    (tmp_path / "k.csv").write_text("item_id,model,response\nk1,m1,看过\nk1,m2,没有\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "k.csv"), "--db", toy.execute("PRAGMA database_list")
                 .fetchall()[0][2], "--dataset", "toy", "--track", "toy/knowledge"]) == 0
    task = stored_tasks.get(toy, task_service.create_task(toy, dataset="toy", mode="absolute", dimensions=["Info"],
                                                          items=3, per_item=1, seed=1))
    while (unit := stored_tasks.next_unit(toy, task, "cy")) is not None:
        stored_tasks.answer(toy, task, unit, "cy", "Info", 1.0)
    tracks = sorted(t for (t,) in toy.execute("SELECT DISTINCT track FROM task_units").fetchall())
    assert tracks == ["toy/chitchat", "toy/knowledge"]
    db = toy.execute("PRAGMA database_list").fetchall()[0][2]
    toy.close()
    out = tmp_path / "chitchat.zip"
    assert main(["record", "export", "--db", db, "--dataset", "toy", "--tracks", "toy/chitchat", "--out", str(out)]) == 0
    files = members(out)
    units, answers = (frame_of(files[f"tables/{t}.parquet"]) for t in ("task_units", "task_answers"))
    assert set(units["track"]) == {"toy/chitchat"} and len(units) == 2
    assert set(zip(answers["task_id"], answers["unit"])) == set(zip(units["task_id"], units["unit"]))
    capsys.readouterr()
    assert main(["record", "import", str(out), "--db", str(tmp_path / "fresh.duckdb")]) == 0, capsys.readouterr().err


def test_verify_names_a_figure_of_other_columns(made, tmp_path, capsys):
    """A figure resealed with other columns: a difference verify names (exit 1), not a traceback."""
    source, _ = made
    files = members(source)
    board = frame_of(files["figures/leaderboard.parquet"])
    files["figures/leaderboard.parquet"] = parquet(board.rename(columns={board.columns[0]: "other"}))
    other = write(tmp_path / "other.zip", resealed(files, tmp_path, {"figures/leaderboard.parquet"}))
    capsys.readouterr()
    assert main(["record", "verify", str(other), "--format", "csv"]) == 1
    found = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert ("figures/leaderboard.parquet", "columns") in set(zip(found["where"], found["column"]))


def test_a_figure_that_is_not_parquet_is_a_difference_to_verify_and_refused_by_import(made, tmp_path, capsys):
    source, _ = made
    broken = write(tmp_path / "broken.zip", {**members(source), "figures/leaderboard.parquet": b"not parquet"})
    capsys.readouterr()
    assert main(["record", "verify", str(broken), "--format", "csv"]) == 1
    found = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert found[found["where"] == "figures/leaderboard.parquet"]["recomputed"].str.startswith("not Parquet").all()
    db = tmp_path / "store.duckdb"
    assert main(["record", "import", str(broken), "--db", str(db)]) == 2
    assert f"{broken}, figures/leaderboard.parquet: expected a Parquet table, got " in capsys.readouterr().err
