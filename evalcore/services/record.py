"""An evaluation record: one file holding what a dataset's figures depend on, for anyone to import and verify.

The file is a zip: `manifest.json` and one Parquet file per table under `tables/` (what the store holds:
items, references, grounding, dialogues, responses, every annotator's raw ratings and votes, rating-task
definitions and answers, per-response metric values with their full signatures and details, system scores,
generation signatures) and under `figures/` (the statistics computed from them at export: leaderboards,
correlations with people, agreement between annotators). The manifest names the format and version, the
dataset and tracks, the tool's and libraries' versions, the judge prompts' and generation templates' text and
SHA-256, and each table's rows and checksum; `content_sha256` covers every table and figure.

A table's checksum is the SHA-256 of its rows in a canonical form (each row as a JSON list, rows sorted, one per
line), so it does not depend on how Parquet encoded them: a record verifies the same whatever wrote it.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from evalcore import __version__
from evalcore.analysis import correlate
from evalcore.analysis import leaderboard as lb
from evalcore.analysis.agreement import agreement
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
             "created_at, level FROM tasks WHERE dataset = ?",
    "task_units": "SELECT * FROM task_units WHERE task_id IN (SELECT task_id FROM tasks WHERE dataset = ?)",
    "task_answers": "SELECT * FROM task_answers WHERE task_id IN (SELECT task_id FROM tasks WHERE dataset = ?)",
    "generations": "SELECT generation_id, dataset, model, endpoint, tracks, signature, details, state, total, stored, "
                   "failed, created_at FROM generations WHERE dataset = ?",
}


def _params(name: str, dataset: str, tracks: list[str] | None) -> list:
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


def table_sha256(frame: pd.DataFrame) -> str:
    """The canonical checksum of a table: its columns, then its rows as JSON lists, sorted."""
    rows = sorted(json.dumps([_cell(v) for v in row], ensure_ascii=False, sort_keys=True)
                  for row in frame.itertuples(index=False, name=None))
    digest = hashlib.sha256(json.dumps(list(frame.columns)).encode())
    for row in rows:
        digest.update(b"\n" + row.encode("utf-8"))
    return digest.hexdigest()


def metric_values(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str]) -> pd.DataFrame:
    """Every cached per-response value of the dataset's responses: track, item_id, model, metric, signature,
    text_key, value, stats, reason (a value that could not be computed keeps its reason)."""
    known = registry.of(con)
    names = [n for (n,) in con.execute("SELECT DISTINCT metric FROM metric_signatures ORDER BY 1").fetchall()]
    frames = []
    for track in tracks:
        data = load_track(con, dataset, track)
        if data.empty or not names:
            continue
        keys = keys_by_metric(names, data, known)
        lookup = pd.concat([pd.DataFrame({"item_id": data["item_id"], "model": data["model"], "metric": name,
                                          "text_key": keys[name]}) for name in names], ignore_index=True)
        with registered(con, "_evalcore_record_keys", lookup):
            frames.append(con.execute("""
                SELECT ? AS track, k.item_id, k.model, k.metric, m.signature, k.text_key, m.value, m.stats, m.reason
                FROM _evalcore_record_keys k JOIN metric_signatures s ON s.metric = k.metric
                JOIN metric_scores m ON m.signature = s.signature AND m.text_key = k.text_key
                ORDER BY k.item_id, k.model, m.signature""", [track]).df())
    columns = ["track", "item_id", "model", "metric", "signature", "text_key", "value", "stats", "reason"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def tables(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The record's tables for a dataset (and some of its tracks)."""
    chosen = chosen_tracks(con, dataset, tracks)
    out = {name: con.execute(sql, _params(name, dataset, tracks)).df() for name, sql in TABLES.items()}
    out["metric_values"] = metric_values(con, dataset, chosen)
    used = set(out["metric_values"]["signature"]) | set(out["system_scores"]["signature"].dropna())
    out["metric_signatures"] = con.execute(
        "SELECT * FROM metric_signatures WHERE list_contains(?, signature) ORDER BY signature", [sorted(used)]).df()
    out["external_metrics"] = con.execute(
        "SELECT metric, higher_is_better, description FROM external_metrics WHERE list_contains(?, metric)",
        [sorted(set(out["metric_signatures"]["metric"]))]).df()
    return out


def figures(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str]) -> dict[str, pd.DataFrame]:
    """The statistics a reader checks against the values: per track the leaderboard, the correlations of every
    metric with people at turn and system level, and agreement between annotators."""
    boards, corr, agree = [], [], []
    for track in tracks:
        boards.append(lb.leaderboard(con, dataset, track, resamples=0).assign(track=track))
        for level in ("turn", "system"):
            corr.append(correlate.correlations(con, dataset, track, level=level, methods=["spearman", "pearson"]))
        agree.append(agreement(con, dataset, track, bootstrap=FIGURE_RESAMPLES, seed=FIGURE_SEED))
    join = lambda parts: pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) \
        else pd.DataFrame()  # noqa: E731
    return {"leaderboard": join(boards), "correlations": join(corr), "agreement": join(agree)}


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


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def content_sha256(entries: dict[str, str]) -> str:
    """The record's checksum: over every table's and figure's own checksum, by name."""
    return hashlib.sha256(json.dumps(dict(sorted(entries.items()))).encode()).hexdigest()


def export(con: duckdb.DuckDBPyConnection, dataset: str, out: str | Path, tracks: list[str] | None = None) -> dict:
    """Write the record of `dataset` (its `tracks`, default all) to `out`; returns the manifest."""
    data = tables(con, dataset, tracks)
    chosen = sorted(data["tracks"]["track"])
    derived = figures(con, dataset, chosen)
    sums = {f"tables/{n}": table_sha256(f) for n, f in data.items()}
    sums.update({f"figures/{n}": table_sha256(f) for n, f in derived.items()})
    manifest = {
        "format": FORMAT, "version": VERSION, "dataset": dataset, "tracks": chosen,
        "created_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "evalcore": __version__, "libraries": _versions(),
        "figures": {"bootstrap_resamples": FIGURE_RESAMPLES, "seed": FIGURE_SEED,
                    "leaderboard": "analysis.leaderboard per track, no rank intervals",
                    "correlations": "spearman and pearson, turn and system level, per track",
                    "agreement": "kappas and alpha per track and dimension"},
        "tables": {n: {"rows": len(f), "sha256": sums[f"tables/{n}"]} for n, f in data.items()},
        "figure_tables": {n: {"rows": len(f), "sha256": sums[f"figures/{n}"]} for n, f in derived.items()},
        "templates": templates(),
        "content_sha256": content_sha256(sums),
    }
    out = Path(out)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, frame in data.items():
            zf.writestr(f"tables/{name}.parquet", _parquet(frame))
        for name, frame in derived.items():
            zf.writestr(f"figures/{name}.parquet", _parquet(frame))
        zf.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=1))
    partial.replace(out)   # a record is whole or absent: never half written under its own name
    return manifest


def read(path: str | Path) -> tuple[dict, dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """(manifest, tables, figures) of a record file; refuses a file that is not one, saying why."""
    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not an evaluation record (expected a zip with manifest.json): {e}") from None
    with zf:
        names = set(zf.namelist())
        if "manifest.json" not in names:
            raise ValueError(f"{path}: not an evaluation record: no manifest.json")
        manifest = json.loads(zf.read("manifest.json"))
        if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise ValueError(f"{path}: manifest.json: expected format {FORMAT!r} version {VERSION}, got "
                             f"{manifest.get('format')!r} version {manifest.get('version')!r}")
        load = lambda part, n: pd.read_parquet(io.BytesIO(zf.read(f"{part}/{n}.parquet")))  # noqa: E731
        data = {n: load("tables", n) for n in manifest["tables"] if f"tables/{n}.parquet" in names}
        derived = {n: load("figures", n) for n in manifest["figure_tables"] if f"figures/{n}.parquet" in names}
    return manifest, data, derived
