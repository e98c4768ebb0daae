"""An evaluation record checked before anything of it is written, the same way wherever one is read (`record
import`, `record verify`, `report --record`):

1. open_record: the archive bounded as every importer's is (members and expanded bytes from the zip's directory,
   ingest.archives.check_archive), each member once, manifest.json bounded (EVALCORE_MAX_MANIFEST) before it is
   read and parsed strictly (ingest.jsonread: nesting, NaN, keys twice), its keys and types checked, and only the
   members it lists extracted.
2. checksum_problems: each table's and figure's checksum, and content_sha256 over them, equal to the manifest's.
3. check_tables: each table's columns those the store's table has, of its types; and its rows through the
   importers' own checks (ingest.checker.Checker: names, text, numbers), the dataset's scales, the store's keys,
   and the rule that every row belongs to the record's own dataset and tracks.

Every refusal is an ImportRefused naming the file, the member (and row) and the field. Rows are looked at in
DuckDB over the Parquet files (a record may hold millions of values); only the rows found wrong, and the distinct
names, come to Python, where the importers' checker words the problem.
"""
from __future__ import annotations

import math
import re
import zipfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd

from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.options import TASK_LEVELS, TASK_MODES, TASK_SAMPLINGS
from evalcore.core.text import CONTROL
from evalcore.ingest import limits
from evalcore.ingest.archives import check_archive
from evalcore.ingest.checker import Checker
from evalcore.ingest.jsonread import parse_json
from evalcore.ingest.limits import limit
from evalcore.metrics import registry
from evalcore.scoring.plan import keys_by_metric, load_track
from evalcore.services import record
from evalcore.store import registered

NOT_RECORD = "an evaluation record (`evalcore record export`)"
MANIFEST = "manifest.json"
REQUIRED = ("dataset", "tracks", "created_at", "evalcore", "tables", "figure_tables", "content_sha256")
PARTS = (("tables", "tables"), ("figures", "figure_tables"))   # (folder in the zip, the manifest's key)
TABLE_NAMES = (*record.TABLES, "metric_values", "metric_signatures", "external_metrics")
SHA = re.compile(r"[0-9a-f]{64}")
MEMBER_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")   # a table's or figure's name: tables/<name>.parquet
SHOWN = 5   # rows named per check and column: a mistake repeated a million times reads as its first few
LARGEST_ID = 1_000_000_000   # task, answer and generation numbers: shifted past a store's, they stay INTEGERs

# the store's table each record table goes to (its columns' nullability and keys are that table's)
STORED = {"metric_values": "metric_scores"}
# names, checked as every importer checks one (Checker.ident), and in their normal form
NAMES = ("dataset", "track", "model", "model_1", "model_2", "model_a", "model_b", "annotator", "dimension", "judge",
         "metric", "item_id", "dialogue_id", "dialogue_a", "dialogue_b")
# text columns that hold JSON (checked as JSON; their strings as every importer checks grounding)
JSON_COLUMNS = {("items", "context"), ("items", "grounding"), ("dialogues", "grounding"), ("turns", "grounding"),
                ("tasks", "dimensions"), ("generations", "tracks"), ("generations", "details"),
                ("metric_signatures", "details")}
# JSON text of a given shape (what pages and scoring read it as): a list, or a list of strings
JSON_LISTS = {("items", "context"): "strings", ("generations", "tracks"): "strings", ("tasks", "dimensions"): None}
# words a column takes one of (what the pages and the task code branch on)
WORDS = {("tasks", "mode"): TASK_MODES, ("tasks", "level"): TASK_LEVELS, ("tasks", "sampling"): TASK_SAMPLINGS,
         ("human_ratings", "target"): ("response", "dialogue", "system")}   # system: a published system-level rating
# a control character as JSON writes it escaped (tab, newline and carriage return are fine, as in CONTROL)
ESCAPED_CONTROL = r"\\u00(0[0-8bBcCeEfF]|1[0-9a-fA-F]|7[fF]|[89][0-9a-fA-F])"
# what a row names that the record itself must hold: (table, columns, the table and columns they name)
REFERENCES = (
    ("responses", ("item_id",), "items", ("item_id",)),
    ("responses", ("model",), "models", ("model",)),
    ("item_references", ("item_id",), "items", ("item_id",)),
    ("pairwise_judgments", ("item_id",), "items", ("item_id",)),
    ("turns", ("dialogue_id",), "dialogues", ("dialogue_id",)),
    ("metric_values", ("item_id", "model"), "responses", ("item_id", "model")),
    ("metric_values", ("signature", "metric"), "metric_signatures", ("signature", "metric")),
    ("human_ratings", ("item_id",), "items", ("item_id",)),
    ("task_units", ("task_id",), "tasks", ("task_id",)),
    ("task_answers", ("task_id", "unit"), "task_units", ("task_id", "unit")),
)
TASK_NAMED = (("human_ratings", "origin"), ("pairwise_judgments", "prompt"))   # 'task:<id>': renumbered on import
NUMBERED = (("tasks", "task_id"), ("task_units", "task_id"), ("task_answers", "task_id"),
            ("task_answers", "answer_id"), ("generations", "generation_id"))


def _refuse(file: str, where: str, field: str, expected: str, got: str = "") -> None:
    raise ImportRefused([Problem(file, where, field, expected, got)])


# ------------------------------------------------------------------------------------------------ the archive
def open_record(path: str | Path, folder: Path) -> dict:
    """The checked manifest of the record at `path`, the members it lists extracted under `folder` (tables/,
    figures/). Refused before anything is unpacked: not a zip, too many members or bytes, a member twice, no
    manifest, a manifest too large, not JSON or not one of a record; a member it lists that is absent or one it
    does not list."""
    file, path = str(path), Path(path)
    if not path.is_file():
        _refuse(file, "", "", "an existing file", "no such file")
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        _refuse(file, "", "", NOT_RECORD, f"not an evaluation record (expected a zip with manifest.json): {exc}")
    with zf:
        check_archive(path, file)   # member count and expanded bytes, from the directory
        infos = [i for i in zf.infolist() if not i.is_dir()]
        members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            if info.filename in members:   # zipfile reads the last copy, another tool the first
                _refuse(file, info.filename, "", "each member once", "a second member of the same name")
            members[info.filename] = info
        if MANIFEST not in members:
            _refuse(file, "", "", NOT_RECORD, "not an evaluation record: no manifest.json")
        manifest = read_manifest(zf, members[MANIFEST], file)
        listed = {f"{part}/{name}.parquet" for part, key in PARTS for name in manifest[key]}
        problems = [Problem(file, name, "", "the member its manifest lists", "no such member")
                    for name in sorted(listed - set(members))]
        problems += [Problem(file, name, "", "only the members its manifest lists (manifest.json, tables/, figures/)",
                             "a member it does not list") for name in sorted(set(members) - listed - {MANIFEST})]
        if problems:
            raise ImportRefused(problems)
        for name in sorted(listed):
            try:   # a name checked above (tables/<name>.parquet): nothing outside `folder`
                zf.extract(members[name], folder)
            except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, NotImplementedError) as exc:
                _refuse(file, name, "", "a readable member", f"unreadable ({exc})")
    return manifest


def read_manifest(zf: zipfile.ZipFile, info: zipfile.ZipInfo, file: str) -> dict:
    """manifest.json, its size bounded before it is read, parsed strictly, of a record's keys and types."""
    most = limit("MAX_MANIFEST")
    if info.file_size > most:
        _refuse(file, MANIFEST, "", f"a manifest of at most {most:,} bytes (EVALCORE_MAX_MANIFEST)",
                f"{info.file_size:,} bytes")
    try:
        data = zf.read(info)
    except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, NotImplementedError) as exc:
        _refuse(file, MANIFEST, "", "a readable member", f"unreadable ({exc})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _refuse(file, MANIFEST, "", "JSON text in UTF-8", f"a byte that is not UTF-8 at {exc.start:,}")
    shape = "a JSON object (an evaluation record's manifest)"
    try:
        manifest = parse_json(text, file, shape)
    except ImportRefused as exc:   # named by line: the member named before it
        raise ImportRefused([replace(p, where=MANIFEST + (f", {p.where}" if p.where else ""))
                             for p in exc.problems]) from None
    if not isinstance(manifest, dict):
        _refuse(file, MANIFEST, "", shape, f"a JSON {type(manifest).__name__}")
    form, version = manifest.get("format"), manifest.get("version")
    if form != record.FORMAT or type(version) is not int or version != record.VERSION:
        _refuse(file, "", "", NOT_RECORD, f"manifest.json: expected format {record.FORMAT!r} version "
                f"{record.VERSION}, got {short(form)} version {short(version)}")
    check = Checker(file)
    for key in REQUIRED:
        if key not in manifest:
            check.add(MANIFEST, key, "a key of an evaluation record's manifest", "none")
    check.refuse_if_any()
    name(check, MANIFEST, "dataset", manifest["dataset"])
    tracks = manifest["tracks"]
    if not isinstance(tracks, list):
        check.add(MANIFEST, "tracks", "a list of track names", f"{type(tracks).__name__} {short(tracks)}")
    else:
        for i, track in enumerate(tracks):
            name(check, MANIFEST, f"tracks[{i}]", track)
    made = manifest["created_at"]
    try:
        datetime.fromisoformat(made)
    except (TypeError, ValueError):
        check.add(MANIFEST, "created_at", "a time in ISO 8601 (2026-11-27T08:00:00+00:00)", short(made))
    if not isinstance(manifest["evalcore"], str):
        check.add(MANIFEST, "evalcore", "a version (a string)", short(manifest["evalcore"]))
    else:
        check.text(manifest, MANIFEST, "evalcore")
    if not isinstance(manifest["content_sha256"], str) or not SHA.fullmatch(manifest["content_sha256"]):
        check.add(MANIFEST, "content_sha256", "64 lowercase hex digits (a SHA-256)", short(manifest["content_sha256"]))
    for part, key in PARTS:
        listed = manifest[key]
        if not isinstance(listed, dict):
            check.add(MANIFEST, key, "an object of tables: name -> {sha256, rows}", short(listed))
            continue
        for table, entry in listed.items():
            field = f"{key}.{table}"
            if not MEMBER_NAME.fullmatch(table) or (part == "tables" and table not in TABLE_NAMES):
                check.add(MANIFEST, field, f"the name of a record's {'table' if part == 'tables' else 'figure'}"
                          + (f" ({', '.join(TABLE_NAMES)})" if part == "tables" else " (letters, digits, _)"),
                          short(table))
            elif not isinstance(entry, dict):
                check.add(MANIFEST, field, "an object {sha256, rows}", short(entry))
            else:
                if not isinstance(entry.get("sha256"), str) or not SHA.fullmatch(entry["sha256"]):
                    check.add(MANIFEST, f"{field}.sha256", "64 lowercase hex digits (a SHA-256)",
                              short(entry.get("sha256")))
                rows = entry.get("rows")
                if type(rows) is not int or rows < 0:
                    check.add(MANIFEST, f"{field}.rows", "a count of rows", short(rows))
        if part == "tables":
            for table in TABLE_NAMES:
                if table not in listed:
                    check.add(MANIFEST, f"tables.{table}", "every table of a record", "none")
    check.refuse_if_any()
    return manifest


def name(check: Checker, where: str, field: str, value) -> None:
    """A name as every importer takes one (Checker.ident: a string, no control characters, within the cell limit,
    not empty), and already in its normal form: a record is imported as it was exported, never renamed."""
    if not isinstance(value, str):
        check.add(where, field, "a name (a string)", f"{type(value).__name__} {short(value)}")
        return
    got = check.ident({field: value}, where, field)
    if got is not None and got != value:
        check.add(where, field, "a name in its normal form (Unicode NFKC, no surrounding whitespace)", short(value))


# ------------------------------------------------------------------------------------------------ checksums
def checksum_problems(file: str, manifest: dict, folder: Path) -> list[Problem]:
    """Each table and figure that does not match its manifest's checksum, and content_sha256 when they all do and
    it is not the checksum of theirs (record.unmatched and record.content_sha256: what export wrote)."""
    problems = []
    for where, recorded, found, kind in record.unmatched(manifest, folder):
        if kind == "missing":
            problems.append(Problem(file, where, "", "the table its manifest lists", "no such file"))
        elif kind == "unreadable":
            problems.append(Problem(file, where, "", "a Parquet table", found))
        else:
            problems.append(Problem(file, where, "sha256", f"{recorded} (the manifest's)",
                                    f"{found} (changed since export: `evalcore record verify` names the values)"))
    sums = {f"{part}/{table}": entry["sha256"] for part, key in PARTS for table, entry in manifest[key].items()}
    if not problems and record.content_sha256(sums) != manifest["content_sha256"]:
        problems.append(Problem(file, MANIFEST, "content_sha256", record.content_sha256(sums),
                                f"{manifest['content_sha256']} (not the checksum of its tables' checksums)"))
    return problems


def checked(path: str | Path, folder: Path) -> dict:
    """open_record, then every checksum and the content digest equal to the manifest's (what `record import` and
    `report --record` require, and `record verify` reports as differences)."""
    manifest = open_record(path, folder)
    problems = checksum_problems(str(path), manifest, folder)
    if problems:
        raise ImportRefused(problems)
    return manifest


# ------------------------------------------------------------------------------------------------ tables
def _kind(kind: str) -> str:
    """A column type's kind: integer, number, text, boolean, time, or a list of one ('number[]')."""
    kind = kind.upper()
    if kind.endswith("[]"):
        return _kind(kind[:-2]) + "[]"
    if kind in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                "UBIGINT", "UHUGEINT"):
        return "integer"
    if kind in ("FLOAT", "DOUBLE") or kind.startswith("DECIMAL"):
        return "number"
    if kind == "VARCHAR":
        return "text"
    if kind == "BOOLEAN":
        return "boolean"
    if kind.startswith("TIMESTAMP") or kind == "DATE":
        return "time"
    return kind


def _fits(expected: str, found: str) -> bool:
    want, got = _kind(expected), _kind(found)
    return got == want or (want, got) in (("number", "integer"), ("number[]", "integer[]"))


def expected_columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """Each record table's columns and types, as export writes them from a store of this schema."""
    out = {}
    for table in TABLE_NAMES:
        if table == "metric_values":
            sql, params = record.NO_VALUES, []
        elif table == "external_metrics":
            sql, params = f"{record.EXTERNAL} LIMIT 0", []
        elif table in record.TABLES:
            sql, params = f"SELECT * FROM ({record.TABLES[table]}) LIMIT 0", record.table_params(table, "", None)
        else:
            sql, params = f"SELECT * FROM {table} LIMIT 0", []
        out[table] = {c[0]: str(c[1]) for c in con.execute(sql, params).description}
    return out


def _store_facts(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, set[str]], dict[str, list[list[str]]]]:
    """(the columns each store table requires, its primary and unique keys)."""
    required: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns WHERE "
                                     "table_schema = 'main' AND is_nullable = 'NO'").fetchall():
        required.setdefault(table, set()).add(column)
    keys: dict[str, list[list[str]]] = {}
    for table, columns in con.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints() WHERE "
                                      "constraint_type IN ('PRIMARY KEY', 'UNIQUE')").fetchall():
        keys.setdefault(table, []).append(list(columns))
    return required, keys


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class Rows:
    """The checks of a record's rows, over views of its Parquet tables (each with file_row_number)."""

    def __init__(self, duck: duckdb.DuckDBPyConnection, file: str, manifest: dict, columns: dict[str, dict[str, str]]):
        self.duck, self.columns, self.dataset = duck, columns, manifest["dataset"]
        self.check = Checker(file)

    def where(self, table: str, row: int | None = None) -> str:
        return f"tables/{table}.parquet" + ("" if row is None else f", row {row + 1:,}")

    def found(self, sql: str, params: list | None = None) -> list[tuple]:
        return self.duck.execute(f"{sql} LIMIT {SHOWN}", params or []).fetchall()

    def add(self, table: str, row: int | None, field: str, expected: str, got: str = "") -> None:
        self.check.add(self.where(table, row), field, expected, got)

    def run(self, required: dict[str, set[str]], keys: dict[str, list[list[str]]], manifest: dict) -> None:
        for table, cols in self.columns.items():
            stored = STORED.get(table, table)
            needed = required.get(stored, set()) | ({"track", "item_id", "model", "metric"} if table == "metric_values"
                                                     else set())
            for col in cols:
                if col in needed:
                    for (row,) in self.found(f'SELECT file_row_number FROM "{table}" WHERE "{col}" IS NULL'):
                        self.add(table, row, col, "a value", "nothing")
            if "dataset" in cols:
                for row, value in self.found(f'SELECT file_row_number, dataset FROM "{table}" WHERE dataset <> ?',
                                             [self.dataset]):
                    self.add(table, row, "dataset", f"the record's own dataset {self.dataset!r} (manifest.json)",
                             short(value))
            if "track" in cols and table != "tracks":
                for row, value in self.found(f'SELECT file_row_number, track FROM "{table}" WHERE track NOT IN '
                                             '(SELECT track FROM tracks WHERE track IS NOT NULL)'):
                    self.add(table, row, "track", "a track of the record (tables/tracks.parquet)", short(value))
            for key in keys.get(stored, []) if table != "metric_values" else []:
                if not set(key) <= set(cols):
                    continue
                listed = ", ".join(f'"{k}"' for k in key)
                for row, *values in self.found(f'SELECT min(file_row_number), {listed} FROM "{table}" GROUP BY '
                                               f'{listed} HAVING count(*) > 1 ORDER BY 1'):
                    self.add(table, row, ", ".join(key), f"each ({', '.join(key)}) once",
                             f"{short(tuple(values), 120)} more than once")
            for col, kind in cols.items():
                self._column(table, col, kind)
        n = self.duck.execute("SELECT count(*) FROM datasets").fetchall()[0][0]
        if n != 1:
            self.add("datasets", None, "dataset", f"one row: the record's dataset {self.dataset!r}", f"{n:,} rows")
        held = {t for (t,) in self.duck.execute("SELECT track FROM tracks").fetchall()}
        for track in manifest["tracks"]:
            if track not in held:
                self.check.add(MANIFEST, "tracks", "tracks of the record (tables/tracks.parquet)", short(track))
        self._references()
        self._scales()
        if not self.check.problems:   # the texts the keys are made of are sound: their keys can be made
            self._value_keys()

    def _column(self, table: str, col: str, kind: str) -> None:
        expected = _kind(kind)
        source = f'"{table}"'
        if expected == "integer":
            for row, value in self.found(f'SELECT file_row_number, "{col}" FROM {source} WHERE "{col}" IS NOT NULL '
                                         f'AND TRY_CAST("{col}" AS {kind}) IS NULL'):
                self.add(table, row, col, f"a whole number that fits {kind}", short(value))
            if (table, col) in NUMBERED:
                for row, value in self.found(f'SELECT file_row_number, "{col}" FROM {source} WHERE "{col}" < 0 OR '
                                             f'"{col}" > {LARGEST_ID}'):
                    self.add(table, row, col, f"a number from 0 to {LARGEST_ID:,}", short(value))
        elif expected == "number":
            for row, value in self.found(f'SELECT file_row_number, "{col}" FROM {source} WHERE "{col}" IS NOT NULL '
                                         f'AND (NOT isfinite("{col}") OR abs("{col}") > ?)', [limits.MAX_MAGNITUDE]):
                self.check.number({col: value}, self.where(table, row), col)
        elif expected == "text" and col in NAMES:
            self._names(table, col)
        elif expected == "text":
            self._texts(table, col)

    def _names(self, table: str, col: str) -> None:
        before = len(self.check.problems)
        for value, row in self.duck.execute(f'SELECT "{col}", min(file_row_number) FROM "{table}" WHERE "{col}" IS '
                                            f'NOT NULL GROUP BY "{col}" ORDER BY 2').fetchall():
            if value and value.isascii() and value == value.strip() and value.isprintable() \
                    and len(value) <= limits.MAX_CELL:
                continue   # what nearly every name is: nothing for the checker to find
            name(self.check, self.where(table, row), col, value)
            if len(self.check.problems) - before >= SHOWN:
                return

    def _texts(self, table: str, col: str) -> None:
        control = CONTROL.pattern   # the importers' own class of control characters, in RE2's syntax too
        if (table, col) in JSON_COLUMNS:
            # what may be wrong, read again in Python by the importers' JSON reader: not JSON, a control character
            # raw or escaped, or more brackets than JSON may nest (parse_json finds whether they do, before
            # json.loads could meet a RecursionError); candidates until SHOWN of them are wrong
            cursor = self.duck.execute(
                f'SELECT file_row_number, "{col}" FROM "{table}" WHERE NOT json_valid("{col}") OR regexp_matches('
                f'"{col}", ?) OR regexp_matches("{col}", ?) OR length("{col}") - length(replace(replace("{col}", '
                f"'[', ''), '{{', '')) > ? ORDER BY 1", [control, ESCAPED_CONTROL, limit("MAX_DEPTH")])
            before = len(self.check.problems)
            while len(self.check.problems) - before < SHOWN and (rows := cursor.fetchmany(1000)):
                for row, value in rows:
                    where = self.where(table, row)
                    try:
                        parsed = parse_json(value, self.check.file, "JSON text", where)
                    except ImportRefused as exc:
                        self.check.add(where, col, exc.problems[0].expected, exc.problems[0].got)
                        continue
                    self.check.texts_within(parsed, where, col)
            if (table, col) in JSON_LISTS:
                strings = JSON_LISTS[table, col] == "strings"
                shape = "a JSON list" + (" of strings" if strings else "")
                elements = ("coalesce(list_bool_and(list_transform(json_type(\"{c}\", '$[*]'), lambda t: t = 'VARCHAR')), "
                            "true)").format(c=col)
                for row, value in self.found(f'SELECT file_row_number, "{col}" FROM "{table}" WHERE json_valid("{col}") '
                                             f'AND (json_type("{col}") <> \'ARRAY\'' + (f" OR NOT {elements}" if strings
                                                                                        else "") + ") ORDER BY 1"):
                    self.add(table, row, col, shape, short(value))
            return
        if (table, col) in WORDS:
            words = WORDS[table, col]
            for row, value in self.found(f'SELECT file_row_number, "{col}" FROM "{table}" WHERE "{col}" IS NOT NULL '
                                         f'AND NOT list_contains(?, "{col}") ORDER BY 1', [list(words)]):
                self.add(table, row, col, f"one of {', '.join(words)}", short(value))
        for row, value in self.found(f'SELECT file_row_number, "{col}" FROM "{table}" WHERE regexp_matches("{col}", ?) '
                                     f'OR length("{col}") > ?', [control, limits.MAX_CELL]):
            self.check.text({col: value}, self.where(table, row), col, required=False, allow_empty=True)

    def _references(self) -> None:
        for table, cols, other, theirs in REFERENCES:
            on = " AND ".join(f'o."{b}" = t."{a}"' for a, b in zip(cols, theirs))
            present = " AND ".join(f't."{a}" IS NOT NULL' for a in cols)
            for row, *values in self.found(f'SELECT t.file_row_number, {", ".join(f"t.{chr(34)}{a}{chr(34)}" for a in cols)} '
                                           f'FROM "{table}" t WHERE {present} AND NOT EXISTS (SELECT 1 FROM "{other}" o '
                                           f'WHERE {on}) ORDER BY 1'):
                self.add(table, row, ", ".join(cols), f"one of the record's {other.replace('_', ' ')} "
                         f"({', '.join(theirs)} in tables/{other}.parquet)",
                         short(values[0] if len(values) == 1 else tuple(values)))
        for table, col in TASK_NAMED:
            for row, value in self.found(f'SELECT file_row_number, "{col}" FROM "{table}" WHERE starts_with("{col}", '
                                         f"'task:') AND NOT coalesce(TRY_CAST(substr(\"{col}\", 6) AS INTEGER) IN "
                                         f'(SELECT task_id FROM tasks), false) ORDER BY 1'):
                self.add(table, row, col, "'task:<id>' of a task of the record (tables/tasks.parquet)", short(value))

    def _value_keys(self) -> None:
        """Each metric value's cache key the key of its own response's texts, made as export made it (load_track
        and keys_by_metric over the record's own tables). The value cache is the store's, shared by every dataset:
        a value filed under another text's key would be served to whatever dataset has that text."""
        names = [n for (n,) in self.duck.execute("SELECT DISTINCT metric FROM metric_values ORDER BY 1").fetchall()]
        if not names:
            return
        known = registry.of(self.duck)   # the built-in metrics and the record's external ones
        for (track,) in self.duck.execute("SELECT DISTINCT track FROM metric_values ORDER BY 1").fetchall():
            data = load_track(self.duck, self.dataset, track)
            keys = keys_by_metric(names, data, known)
            kinds: dict[int, list[str]] = {}
            for metric in names:
                kinds.setdefault(id(keys[metric]), []).append(metric)
            for group in kinds.values():
                lookup = pd.DataFrame({"item_id": data["item_id"], "model": data["model"],
                                       "text_key": keys[group[0]]})
                with registered(self.duck, "_evalcore_made_keys", lookup):
                    for row, metric, key in self.found(
                            "SELECT v.file_row_number, v.metric, v.text_key FROM metric_values v LEFT JOIN "
                            "_evalcore_made_keys k USING (item_id, model) WHERE v.track = ? AND list_contains(?, "
                            "v.metric) AND k.text_key IS DISTINCT FROM v.text_key ORDER BY 1", [track, group]):
                        self.add("metric_values", row, "text_key", f"the {metric} key of its own response's texts "
                                 "(item, model, references)", short(key))

    def _scales(self) -> None:
        for row, dim, lo, hi in self.found("SELECT file_row_number, dimension, scale_min, scale_max FROM dimensions "
                                           "WHERE NOT (scale_min < scale_max) ORDER BY 1"):
            self.add("dimensions", row, "scale_max", "a scale MIN < MAX", f"{lo}..{hi}")
        # as the ratings importer: a score on its dimension's scale, and no score of a dimension without one
        for row, dim, score, lo, hi in self.found(
                "SELECT r.file_row_number, r.dimension, r.score, d.scale_min, d.scale_max FROM human_ratings r LEFT "
                "JOIN dimensions d USING (dimension) WHERE isfinite(r.score) AND (d.scale_min IS NULL OR "
                "d.scale_max IS NULL OR NOT r.score BETWEEN d.scale_min AND d.scale_max) ORDER BY 1"):
            if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
                self.add("human_ratings", row, "dimension", "a dimension with a scale (tables/dimensions.parquet)",
                         short(dim))
            else:
                self.add("human_ratings", row, "score", f"a score on the {dim} scale {lo:g}..{hi:g}", f"{score:g}")


def check_tables(con: duckdb.DuckDBPyConnection, file: str, manifest: dict, folder: Path) -> None:
    """Refuse the record extracted under `folder` unless its tables are those a store of `con`'s schema exports
    (columns and types) and every row passes the importers' checks and belongs to the record's dataset and tracks.
    Reads the Parquet files only; writes nothing."""
    expected = expected_columns(con)
    required, keys = _store_facts(con)
    problems: list[Problem] = []
    with record.bounded() as duck:
        found_columns = {}
        for table in TABLE_NAMES:
            path = folder / "tables" / f"{table}.parquet"
            where = f"tables/{table}.parquet"
            try:
                described = duck.execute(f"SELECT * FROM read_parquet({_quote(path)}) LIMIT 0").description
            except duckdb.Error as exc:
                problems.append(Problem(file, where, "", "a Parquet table", str(exc).splitlines()[0]))
                continue
            found = {c[0]: str(c[1]) for c in described}
            want = expected[table]
            for col, kind in want.items():
                if col not in found:
                    problems.append(Problem(file, where, col, f"a column {col!r} ({kind})", "no such column"))
                elif not _fits(kind, found[col]):
                    problems.append(Problem(file, where, col, f"a column of {_kind(kind)} ({kind})",
                                            f"{found[col]}"))
            for col in found:
                if col not in want:
                    problems.append(Problem(file, where, col, f"only the columns of a record's {table} table "
                                            f"({', '.join(want)})", "a column it does not have"))
            found_columns[table] = found
            duck.execute(f'CREATE VIEW "{table}" AS SELECT * FROM read_parquet({_quote(path)}, '
                         'file_row_number = true)')
        if problems:   # rows are read only from tables of the right columns
            raise ImportRefused(problems)
        rows = Rows(duck, file, manifest, {t: expected[t] for t in TABLE_NAMES})
        try:
            rows.run(required, keys, manifest)
        except duckdb.Error as exc:   # a Parquet file whose pages do not read back (its footer did)
            rows.check.add("", "", "tables a record import reads", str(exc).splitlines()[0])
    rows.check.refuse_if_any()
