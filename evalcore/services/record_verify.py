"""`record verify`: recompute what an evaluation record's figures depend on and report each difference.

1. Every table's checksum against the manifest (a table changed since export).
2. The record, without its metric values, into a scratch store; the metrics this machine can compute (lexical
   and DIST always; model-based ones where their model is present; a judge where the verifier names the record's
   server: record_redo) scored again from the texts, under the options their signatures name and the flavors the
   record's system scores name; each per-response value and system score set beside the record's. Values computed
   elsewhere, or by a model or judge not at hand, are reported as taken from the record, with the reason.
3. The record with its values into a second scratch store; its figures (leaderboards, correlations, agreement)
   computed again and set beside the record's.
A difference beyond TOLERANCE names its table, item, model, metric and both values; what could not be recomputed
is listed with the reason.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.metrics import registry
from evalcore.metrics.base import TRANSIENT, Signature
from evalcore.metrics.neural import NeuralOptions
from evalcore.scoring import score
from evalcore.services.record import FIGURE_KEYS, bounded, figures, unmatched, write_metric_values
from evalcore.services.record_check import check_tables, open_record
from evalcore.services.record_load import load
from evalcore.services.record_redo import RECORD, Redo, plan
from evalcore.store import connect

TOLERANCE = 1e-9   # relative, and absolute near 0: float sums in another order differ by ~1e-15


@dataclass
class Verification:
    """What `record verify` found: differences (one row each), what it could not recompute and why, counts."""

    differences: pd.DataFrame
    unverified: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return self.differences.empty

    def render(self) -> str:
        lines = [f"checked: {', '.join(f'{n:,} {what}' for what, n in self.checked.items())}"]
        lines += [f"not recomputed: {u}" for u in self.unverified]
        if self.clean:
            lines.append("verified: every recomputed value and figure equals the record's")
        else:
            lines.append(f"{len(self.differences):,} difference(s):")
            for r in self.differences.head(50).itertuples(index=False):
                lines.append("  " + "; ".join(f"{k} {v}" for k, v in r._asdict().items() if v is not None and v == v))
        return "\n".join(lines)


DIFF_COLUMNS = ["where", "track", "item_id", "model", "metric", "signature", "column", "recorded", "recomputed"]


def _diff(**row) -> dict:
    return {c: row.get(c) for c in DIFF_COLUMNS}


def _differs(a, b) -> bool:
    if pd.isna(a) and pd.isna(b):
        return False
    if pd.isna(a) or pd.isna(b):
        return True
    if isinstance(a, (int, float, np.number)) and isinstance(b, (int, float, np.number)):
        return abs(float(a) - float(b)) > TOLERANCE * max(1.0, abs(float(a)), abs(float(b)))
    return str(a) != str(b)


def _checksums(manifest: dict, folder: Path) -> list[dict]:
    out = []
    for where, recorded, found, kind in unmatched(manifest, folder):
        if kind == "changed":
            out.append(_diff(where=where, column="sha256", recorded=recorded[:16], recomputed=found[:16]))
        else:
            out.append(_diff(where=where, column="file", recorded="present",
                             recomputed="missing" if kind == "missing" else f"not Parquet: {found}"))
    return out


# a judge's request that failed now (no value, a transient reason) is unanswered, not a difference
COMPARED = """
    SELECT r.track, r.item_id, r.model, r.metric, r.signature, r.value, f.value AS value_new, f.signature IS NULL AS gone,
           f.value IS NULL AND coalesce(starts_with(f.reason, ?), false) AS unanswered
    FROM read_parquet(?) r LEFT JOIN read_parquet(?) f USING (item_id, model, signature)
    WHERE list_contains(?, r.signature) AND (f.signature IS NULL OR (r.value IS NULL) <> (f.value IS NULL)
          OR abs(r.value - f.value) > ? * greatest(1.0, abs(r.value), abs(f.value)))"""


def _values(manifest: dict, path: Path, scratch: Path, runs: list[Redo], folder: Path) -> tuple[list[dict], int, list[str]]:
    """Score the record's texts again; per-response and system differences (joined in DuckDB: only the
    differences come back to Python)."""
    con = connect(scratch / "texts.duckdb")
    fresh = scratch / "fresh_values.parquet"
    recorded = str(folder / "tables" / "metric_values.parquet")
    planned = [s for run in runs for s in run.signatures]
    try:
        load(con, path, values=False, checksums=False, contents=False)   # checked by verify() first
        scores = pd.read_parquet(folder / "tables" / "system_scores.parquet")
        computed = scores[scores["origin"] == "computed"]
        # each flavor the record's values were computed under (its tokenizer by the dataset's language, as the
        # record's were: a signature computed under another shows as not recomputed, never as a difference);
        # a metric without tokens is computed once, under the first
        flavors = {f for f in computed["flavor"] if f in registry.FLAVORS}   # 'any': a flavor-free metric
        for run in runs:
            for flavor in sorted(flavors) or ["default"]:
                score(con, metrics=list(run.metrics), dataset=manifest["dataset"], flavor=flavor, progress=False,
                      neural=run.options)
        write_metric_values(con, manifest["dataset"], manifest["tracks"], fresh)
        fresh_system = con.execute("SELECT track, model, name, signature, value FROM system_scores WHERE dataset = ? "
                                   "AND origin = 'computed'", [manifest["dataset"]]).df()
    finally:
        con.close()
    with bounded() as duck:
        rows = duck.execute(COMPARED, [TRANSIENT, recorded, str(fresh), planned, TOLERANCE]).df()
        n = duck.execute("SELECT count(*) FROM read_parquet(?) WHERE list_contains(?, signature)",
                         [recorded, planned]).fetchall()[0][0]
        produced = {s for (s,) in duck.execute("SELECT DISTINCT signature FROM read_parquet(?)", [str(fresh)]).fetchall()}
    missing = set(planned) - produced
    unanswered = rows[rows["unanswered"]]
    rows = rows[~rows["unanswered"]]
    out = [_diff(where="tables/metric_values.parquet", track=r.track, item_id=r.item_id, model=r.model,
                 metric=r.metric, signature=r.signature, column="value", recorded=r.value, recomputed=r.value_new)
           for r in rows.itertuples(index=False) if r.signature not in missing]
    # a system score is compared only where every one of its responses was answered again
    partial = set(unanswered["signature"]) | missing
    system = computed[computed["signature"].isin(planned) & ~computed["signature"].isin(partial)]
    both = system.merge(fresh_system, on=["track", "model", "name", "signature"], how="left", suffixes=("", "_new"))
    out += [_diff(where="tables/system_scores.parquet", track=r.track, model=r.model, metric=r.name,
                  signature=r.signature, column="value", recorded=r.value, recomputed=r.value_new)
            for r in both.itertuples(index=False) if _differs(r.value, r.value_new)]
    metric_of = dict(zip(computed["signature"], computed["name"])) | dict(zip(rows["signature"], rows["metric"]))
    why = [f"{metric_of.get(s, Signature.parse(s).name)}: this machine computes it under another signature than "
           f"the record's ({s}): {RECORD}" for s in sorted(missing)]
    why += [f"{metric}: {len(group):,} request(s) to the judge failed now (e.g. {group['item_id'].iloc[0]}, "
            f"{group['model'].iloc[0]}): those values and its system scores are the record's"
            for metric, group in unanswered.groupby("metric")]
    return out, n - len(unanswered), why


def _figures(manifest: dict, path: Path, scratch: Path, folder: Path) -> tuple[list[dict], int]:
    derived = {}
    for name in manifest["figure_tables"]:
        try:
            derived[name] = pd.read_parquet(folder / "figures" / f"{name}.parquet")
        except (OSError, ValueError, pa.ArrowException):   # absent or not Parquet: named by _checksums already
            continue
    con = connect(scratch / "values.duckdb")
    try:
        load(con, path, checksums=False, contents=False)
        again = figures(con, manifest["dataset"], manifest["tracks"])
    finally:
        con.close()
    out, n = [], 0
    for name, recorded in derived.items():
        fresh = again.get(name, pd.DataFrame())
        if len(recorded) != len(fresh):
            out.append(_diff(where=f"figures/{name}.parquet", column="rows", recorded=len(recorded),
                             recomputed=len(fresh)))
            continue
        if len(recorded) and set(recorded.columns) != set(fresh.columns):   # cell by cell only with the same columns
            out.append(_diff(where=f"figures/{name}.parquet", column="columns", recorded=", ".join(map(str, recorded)),
                             recomputed=", ".join(map(str, fresh))))
            continue
        numeric = [c for c in recorded.columns if pd.api.types.is_numeric_dtype(recorded[c])]
        keys = FIGURE_KEYS.get(name) or [c for c in recorded.columns if c not in numeric]
        compared = [c for c in recorded.columns if c not in keys]
        left = recorded.sort_values(keys, kind="stable").reset_index(drop=True) if keys else recorded
        right = fresh[recorded.columns].sort_values(keys, kind="stable").reset_index(drop=True) if keys else fresh
        for i in range(len(left)):
            for c in compared:
                n += 1
                if _differs(left.at[i, c], right.at[i, c]):
                    out.append(_diff(where=f"figures/{name}.parquet", track=left.at[i, "track"] if "track" in left
                                     else None, model=left.at[i, "model"] if "model" in left else None,
                                     metric=left.at[i, "metric"] if "metric" in left else None, column=c,
                                     recorded=left.at[i, c], recomputed=right.at[i, c]))
    return out, n


def verify(path: str | Path, options: NeuralOptions | None = None) -> Verification:
    """`options`: the verifier's models and judge server (record_redo.plan); default: what this machine has."""
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="evalcore-verify-") as tmp:
        scratch = Path(tmp)
        folder = scratch / "record"
        manifest = open_record(path, folder)   # bounded, its manifest checked (ImportRefused)
        differences = _checksums(manifest, folder)   # reported, not refused: verify names what changed
        con = connect(scratch / "texts.duckdb")
        try:   # what import refuses (another dataset's rows, values off their scale ...) is refused here too
            check_tables(con, str(path), manifest, folder)
        finally:
            con.close()
        runs, unverified = plan(pd.read_parquet(folder / "tables" / "metric_signatures.parquet"), options)
        found, n_values, why = _values(manifest, path, scratch, runs, folder) if runs else ([], 0, [])
        differences += found
        unverified += why
        found, n_figures = _figures(manifest, path, scratch, folder)
        differences += found
    checked = {"tables": len(manifest["tables"]) + len(manifest["figure_tables"]), "metric values": n_values,
               "figure cells": n_figures}
    return Verification(pd.DataFrame(differences, columns=DIFF_COLUMNS), unverified, checked)
