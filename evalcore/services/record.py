"""An evaluation record: one file holding what a dataset's figures depend on, for anyone to import and verify.

The file is a zip: `manifest.json` and one Parquet file per table under `tables/` (what the store holds:
items, references, grounding, dialogues, responses, every annotator's raw ratings and votes, rating-task
definitions and answers, per-response metric values with their full signatures and details, system scores,
generation signatures) and under `figures/` (the statistics computed from them at export: leaderboards,
correlations with people, agreement between annotators). The manifest names the format and version, the
dataset and tracks, the tool's and libraries' versions, the judge prompts' and generation templates' text and
SHA-256, and each table's rows and checksum; `content_sha256` covers every table and figure.

A table's checksum is the SHA-256 of its rows in a canonical form (its column names, then each row as a JSON list,
one per line, in the order of all its columns), read back from its Parquet file, so it does not depend on how
Parquet encoded them. Tables go to Parquet and are hashed as streams of record batches: a store of a million
responses (thirteen million metric values) is never held whole in memory.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import tempfile
import zipfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore import __version__
from evalcore.analysis import correlate, trust
from evalcore.analysis import leaderboard as lb
from evalcore.analysis.agreement import agreement
from evalcore.analysis.trust_opening import opening
from evalcore.generation.templates import HERE as TEMPLATES
from evalcore.metrics import registry
from evalcore.metrics.judge import prompts
from evalcore.scoring.plan import keys_by_metric, load_track
from evalcore.services.scope import chosen_tracks
from evalcore.store import registered

FORMAT, VERSION = "evalcore-record", 1
LIBRARIES = ("duckdb", "pandas", "numpy", "scipy", "pyarrow", "sacrebleu", "jieba", "bert-score", "torch",
             "transformers")
FIGURE_SEED, FIGURE_RESAMPLES = 0, 200   # the figures' bootstrap: seeded, stated in the manifest
# the rows of a figure compared one to one, by these columns (every other column, verdicts included, is compared);
# figures not named here are keyed by all their text columns and compared on their numbers
FIGURE_KEYS = {"trust": ["level", "origin", "metric", "skill", "track", "dimension"]}
BATCH = 100_000   # rows per record batch written or hashed
HASHED_ROWS = 20_000   # rows of a batch turned into text at once for its checksum
SORT_MEMORY = "512MB"   # what a checksum's sort may hold before it spills to disk

# what each table holds of dataset ? (and tracks ?: NULL for all), in the order an import writes them
TRACKED = "(?::VARCHAR[] IS NULL OR track IN (SELECT unnest(?::VARCHAR[])))"
ITEMS = f"SELECT item_id FROM items WHERE dataset = ? AND {TRACKED}"
TABLES = {
    "datasets": "SELECT * FROM datasets WHERE dataset = ?",
    "tracks": f"SELECT * FROM tracks WHERE dataset = ? AND {TRACKED}",
    "dimensions": "SELECT * FROM dimensions WHERE dataset = ?",
    "dialogues": f"SELECT * FROM dialogues WHERE dataset = ? AND {TRACKED}",
    "turns": f"SELECT * FROM turns WHERE dataset = ? AND dialogue_id IN (SELECT dialogue_id FROM dialogues "
             f"WHERE dataset = ? AND {TRACKED})",
    "items": f"SELECT * FROM items WHERE dataset = ? AND {TRACKED}",
    "item_references": f"SELECT * FROM item_references WHERE dataset = ? AND item_id IN ({ITEMS})",
    "responses": f"SELECT dataset, item_id, model, text, origin FROM responses WHERE dataset = ? AND item_id IN ({ITEMS})",
    "models": f"SELECT model, description FROM models WHERE model IN (SELECT model FROM responses WHERE dataset = ? "
              f"AND item_id IN ({ITEMS}))",
    "human_ratings": f"SELECT * FROM human_ratings WHERE dataset = ? AND {TRACKED}",
    "pairwise_judgments": f"SELECT * FROM pairwise_judgments WHERE dataset = ? AND {TRACKED}",
    "system_scores": f"SELECT * FROM system_scores WHERE dataset = ? AND {TRACKED}",
    "published_correlations": f"SELECT * FROM published_correlations WHERE dataset = ? AND {TRACKED}",
    "tasks": "SELECT task_id, name, dataset, mode, dimensions, per_item, ties, guidelines, seed, sampling, state, "
             "created_at, level, judge FROM tasks WHERE dataset = ?",
    # a task's units and answers of the record's tracks only: a unit names its item and track, which another
    # track's record does not hold
    "task_units": f"SELECT * FROM task_units WHERE task_id IN (SELECT task_id FROM tasks WHERE dataset = ?) AND {TRACKED}",
    "task_answers": "SELECT * FROM task_answers a WHERE task_id IN (SELECT task_id FROM tasks WHERE dataset = ?) AND "
                    f"EXISTS (SELECT 1 FROM task_units u WHERE u.task_id = a.task_id AND u.unit = a.unit AND {TRACKED})",
    "generations": "SELECT generation_id, dataset, model, endpoint, tracks, signature, details, state, total, stored, "
                   "failed, created_at FROM generations WHERE dataset = ?",
}


def table_params(name: str, dataset: str, tracks: list[str] | None) -> list:
    out, sql, i = [], TABLES[name], 0
    while i < len(sql):
        j = sql.find("?", i)
        if j < 0:
            break
        out.append(tracks if sql.startswith("::VARCHAR[]", j + 1) else dataset)
        i = j + 1
    return out


def _cell(v):
    """One cell as JSON can hold it, the same whatever read it (Parquet or the store)."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (np.ndarray, list, tuple)):
        return [_cell(x) for x in v]
    if isinstance(v, (pd.Timestamp, datetime)):
        return v.isoformat()
    return v if isinstance(v, (str, int, bool, dict)) else str(v)


def parquet_sha256(path: str | Path) -> tuple[str, int]:
    """A table's canonical checksum and rows, from its Parquet file: the column names as JSON, then each row as
    a JSON list on its own line, rows in the order of all their columns (DuckDB's ORDER BY ALL)."""
    with bounded() as duck:
        return _hashed(duck, path)


@contextlib.contextmanager
def bounded():
    """An in-memory DuckDB for the record's own sorts and joins over Parquet files: ten million values within a
    bounded memory, spilling to a scratch folder past SORT_MEMORY."""
    with tempfile.TemporaryDirectory(prefix="evalcore-spill-") as spill:
        # no progress bar: DuckDB draws one on standard output for a query past 2 s, inside a command's output
        duck = duckdb.connect(config={"memory_limit": SORT_MEMORY, "temp_directory": spill,
                                      "preserve_insertion_order": False})
        duck.execute("SET enable_progress_bar = false")
        try:
            yield duck
        finally:
            duck.close()


ROW_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)   # one encoder: json.dumps makes one per call
JSON_STRING = json.encoder.encode_basestring   # what ROW_JSON writes for a str (C where available)


def _column_json(column: pa.Array) -> list[str]:
    """Each cell of a column as ROW_JSON writes it inside a row's JSON list (cells as _cell gives them). Numbers
    are written a column at a time and split (a number's JSON holds no ", "); text one string at a time."""
    kind = column.type
    if pa.types.is_list(kind) and pa.types.is_floating(kind.value_type):   # a value's statistics
        flat, offsets = _column_json(column.flatten()), column.offsets.to_pylist()
        base = offsets[0]   # a batch's column may be a slice of a longer one
        return ["[" + ", ".join(flat[a - base:b - base]) + "]" if ok else "null"
                for a, b, ok in zip(offsets, offsets[1:], column.is_valid().to_pylist())]
    values = column.to_pylist()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return ["null" if v is None else JSON_STRING(v) for v in values]
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_floating(kind):
        if pa.types.is_floating(kind):
            values = [None if v is not None and v != v else v for v in values]   # NaN: no value
        return ROW_JSON.encode(values)[1:-1].split(", ") if values else []
    return [ROW_JSON.encode(_cell(v)) for v in values]


def _hashed(duck: duckdb.DuckDBPyConnection, path: str | Path) -> tuple[str, int]:
    rel = duck.sql("SELECT * FROM read_parquet(?) ORDER BY ALL", params=[str(path)])
    digest = hashlib.sha256(json.dumps(rel.columns).encode())
    n = 0
    for batch in rel.to_arrow_reader(BATCH):
        for start in range(0, batch.num_rows, HASHED_ROWS):   # a slice's text at a time: tens of MB, not hundreds
            part = batch.slice(start, HASHED_ROWS)
            lines = ["[" + ", ".join(cells) + "]" for cells in zip(*(_column_json(c) for c in part.columns))]
            # the same bytes as one update per row: "\n" + the row's JSON list
            digest.update(("\n" + "\n".join(lines)).encode())
            n += len(lines)
    return digest.hexdigest(), n


def unmatched(manifest: dict, folder: Path) -> list[tuple[str, str, str, str]]:
    """Each table and figure of a record extracted under `folder` that does not match its manifest:
    (where, the manifest's sha256, what was found, kind). kind: 'missing' (no such file, or a name that is not one),
    'unreadable' (found: why it is not a Parquet table) or 'changed' (found: its sha256)."""
    out = []
    for part, listed in (("tables", manifest["tables"]), ("figures", manifest["figure_tables"])):
        for name, entry in listed.items():
            where, file = f"{part}/{name}.parquet", folder / part / f"{name}.parquet"
            if "/" in name or "\\" in name or name.startswith(".") or not file.exists():
                out.append((where, entry.get("sha256"), "", "missing"))
                continue
            try:
                found, _ = parquet_sha256(file)
            except (duckdb.Error, pa.ArrowException, ValueError, TypeError, RecursionError) as exc:   # not Parquet, or
                # cells no table of a record holds
                out.append((where, entry.get("sha256"), str(exc).splitlines()[0], "unreadable"))
                continue
            if found != entry.get("sha256"):
                out.append((where, entry.get("sha256"), found, "changed"))
    return out


def write_frame(frame: pd.DataFrame, path: Path) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def write_query(con: duckdb.DuckDBPyConnection, sql: str, params: list, path: Path, writer=None, keep_open=False):
    """A query's rows into a Parquet file as record batches, or appended to an open `writer`; with `keep_open`
    the writer is returned open for more."""
    reader = con.sql(sql, params=params).to_arrow_reader(BATCH)   # streamed: never the whole result at once
    writer = writer or pq.ParquetWriter(path, reader.schema)
    try:
        for batch in reader:
            writer.write_batch(batch if batch.schema == writer.schema else batch.cast(writer.schema))
    finally:
        reader.close()   # the connection takes no other query while a result is open
    if not keep_open:
        writer.close()
    return writer


EXTERNAL = "SELECT metric, higher_is_better, description FROM external_metrics"   # what a record holds of them
# metric_values' columns, as VALUES_SQL gives them (what an import expects of the table: record_check)
NO_VALUES = ("SELECT NULL::VARCHAR AS track, NULL::VARCHAR AS item_id, NULL::VARCHAR AS model, NULL::VARCHAR AS metric, "
             "NULL::VARCHAR AS signature, NULL::VARCHAR AS text_key, NULL::DOUBLE AS value, NULL::DOUBLE[] AS stats, "
             "NULL::VARCHAR AS reason WHERE false")
VALUES_SQL = """
    SELECT ?::VARCHAR AS track, k.item_id, k.model, s.metric, m.signature, k.text_key, m.value, m.stats, m.reason
    FROM _evalcore_record_keys k JOIN metric_signatures s ON list_contains(?, s.metric)
    JOIN metric_scores m ON m.signature = s.signature AND m.text_key = k.text_key"""


def write_metric_values(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str], path: Path) -> None:
    """Every cached per-response value of the dataset's responses into `path`: track, item_id, model, metric,
    signature, text_key, value, stats, reason (a value that could not be computed keeps its reason). Per track
    and kind of cache key (metrics keyed the same way share one lookup), joined in DuckDB and streamed out."""
    known = registry.of(con)
    names = [n for (n,) in con.execute("SELECT DISTINCT metric FROM metric_signatures ORDER BY 1").fetchall()]
    writer = None
    for track in tracks:
        data = load_track(con, dataset, track)
        if data.empty or not names:
            continue
        keys = keys_by_metric(names, data, known)
        kinds: dict[int, list[str]] = {}
        for name in names:
            kinds.setdefault(id(keys[name]), []).append(name)
        for group in kinds.values():
            lookup = pd.DataFrame({"item_id": data["item_id"], "model": data["model"], "text_key": keys[group[0]]})
            with registered(con, "_evalcore_record_keys", lookup):
                writer = write_query(con, VALUES_SQL, [track, group], path, writer, keep_open=True)
    if writer is None:   # nothing scored: an empty table of the same columns
        write_query(con, NO_VALUES, [], path)
    else:
        writer.close()


def write_tables(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None, folder: Path) -> list[str]:
    """The record's tables for a dataset (and some of its tracks) as Parquet files in `folder`; the tracks."""
    chosen = chosen_tracks(con, dataset, tracks)
    for name, sql in TABLES.items():
        write_query(con, sql, table_params(name, dataset, tracks), folder / f"{name}.parquet")
    write_metric_values(con, dataset, chosen, folder / "metric_values.parquet")
    with bounded() as duck:
        used = sorted({s for (s,) in duck.execute(
            "SELECT DISTINCT signature FROM read_parquet(?) UNION SELECT DISTINCT signature FROM read_parquet(?) "
            "WHERE signature IS NOT NULL", [str(folder / "metric_values.parquet"),
                                            str(folder / "system_scores.parquet")]).fetchall()})
    write_query(con, "SELECT * FROM metric_signatures WHERE list_contains(?, signature) ORDER BY signature", [used],
                folder / "metric_signatures.parquet")
    metrics = sorted(set(pd.read_parquet(folder / "metric_signatures.parquet")["metric"]))
    write_query(con, f"{EXTERNAL} WHERE list_contains(?, metric)", [metrics], folder / "external_metrics.parquet")
    return chosen


def tables(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The record's tables for a dataset as DataFrames (small stores and tests; export streams them)."""
    with tempfile.TemporaryDirectory() as tmp:
        write_tables(con, dataset, tracks, Path(tmp))
        return {p.stem: pd.read_parquet(p) for p in sorted(Path(tmp).glob("*.parquet"))}


def figures(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str]) -> dict[str, pd.DataFrame]:
    """The statistics a reader checks against the values: per track the leaderboard, the correlations of every
    metric with people at turn and system level, and agreement between annotators; and the Metric trust verdicts
    where the page opens (they pool every track of the dataset, so a record of some tracks carries none)."""
    boards, corr, agree = [], [], []
    for track in tracks:
        boards.append(lb.leaderboard(con, dataset, track, resamples=0).assign(track=track))
        for level in ("turn", "system"):
            corr.append(correlate.correlations(con, dataset, track, level=level, methods=["spearman", "pearson"]))
        agree.append(agreement(con, dataset, track, bootstrap=FIGURE_RESAMPLES, seed=FIGURE_SEED))
    join = lambda parts: pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) \
        else pd.DataFrame()  # noqa: E731
    out = {"leaderboard": join(boards), "correlations": join(corr), "agreement": join(agree)}
    every = {t for (t,) in con.execute("SELECT track FROM tracks WHERE dataset = ?", [dataset]).fetchall()}
    if set(tracks) == every:
        out["trust"] = _trust(con, dataset)
    return out


def _trust(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """The trust table Metric trust opens on (its first level and origin with a verdict; Spearman with people's
    mean), or none. One level, not each: at a million responses a turn-level table reads every value again
    (minutes), and the turn-level correlations behind it are in the `correlations` figure."""
    found = opening(con, dataset)
    if found.level is None:
        return pd.DataFrame()
    frame = trust.trust(con, dataset, level=found.level, origin=found.origin)
    return frame.assign(level=found.level, origin=found.origin,
                        tied_with_best=frame["tied_with_best"].astype("boolean"))


def _versions() -> dict[str, str]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def templates() -> dict[str, dict]:
    """The text and SHA-256 of what judges and generation were asked with: the judge prompts' source and every
    shipped generation template."""
    files = {"judge-prompts (evalcore/metrics/judge/prompts.py)": Path(prompts.__file__)}
    files.update({f"generation/{p.name}": p for p in sorted(TEMPLATES.glob("*.toml"))})
    return {name: {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "text": p.read_text(encoding="utf-8")}
            for name, p in files.items()}


def content_sha256(entries: dict[str, str]) -> str:
    """The record's checksum: over every table's and figure's own checksum, by name."""
    return hashlib.sha256(json.dumps(dict(sorted(entries.items()))).encode()).hexdigest()


def export(con: duckdb.DuckDBPyConnection, dataset: str, out: str | Path, tracks: list[str] | None = None) -> dict:
    """Write the record of `dataset` (its `tracks`, default all) to `out`; returns the manifest."""
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="evalcore-record-") as tmp:
        folder = Path(tmp)
        (folder / "tables").mkdir()
        (folder / "figures").mkdir()
        chosen = write_tables(con, dataset, tracks, folder / "tables")
        for name, frame in figures(con, dataset, chosen).items():
            if len(frame.columns):   # a statistic with nothing to compute (one annotator: no agreement) is absent
                write_frame(frame, folder / "figures" / f"{name}.parquet")
        listed = {part: {p.stem: dict(zip(("sha256", "rows"), parquet_sha256(p)))
                         for p in sorted((folder / part).glob("*.parquet"))} for part in ("tables", "figures")}
        manifest = {
            "format": FORMAT, "version": VERSION, "dataset": dataset, "tracks": chosen,
            "created_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
            "evalcore": __version__, "libraries": _versions(),
            "figures": {"bootstrap_resamples": FIGURE_RESAMPLES, "seed": FIGURE_SEED,
                        "leaderboard": "analysis.leaderboard per track, no rank intervals",
                        "correlations": "spearman and pearson, turn and system level, per track",
                        "agreement": "kappas and alpha per track and dimension",
                        "trust": "Metric trust verdicts (spearman with people's mean) at the level the page opens on, "
                                 "over every track (a record of some tracks has none)"},
            "tables": listed["tables"], "figure_tables": listed["figures"], "templates": templates(),
            "content_sha256": content_sha256({f"{part}/{n}": e["sha256"] for part in listed
                                              for n, e in listed[part].items()}),
        }
        partial = out.with_name(out.name + ".partial")
        # Parquet is compressed already: stored as it is, the zip is written at the speed of the disk
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_STORED) as zf:
            for part in ("tables", "figures"):
                for p in sorted((folder / part).glob("*.parquet")):
                    zf.write(p, f"{part}/{p.name}")
            zf.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=1))
        partial.replace(out)   # a record is whole or absent: never half written under its own name
    return manifest
