"""`import published`: a paper's system-level tables in long CSV form (as in msde-paper/).

automatic_system_scores.csv  -> system scores, origin 'published'
human_system_scores.csv      -> human ratings of whole systems (annotator 'published')
published_correlations.csv   -> published metric-human correlations; an optional `level` column says at
                                which level (system, dialogue or turn; system when absent or empty)
Tracks are '<competition>/<skill>'.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.analysis.options import LEVELS, METHODS
from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.formats.ratings import resolve_scales, scales
from evalcore.ingest.readers import read_table

FILES = {
    "automatic_system_scores.csv": ["paper_table", "competition", "skill", "model", "metric", "value"],
    "human_system_scores.csv": ["paper_table", "competition", "skill", "model", "dimension", "value"],
    "published_correlations.csv": ["paper_table", "competition", "skill", "dimension", "metric", "method", "value"],
}


def import_published(con: duckdb.DuckDBPyConnection, folder: str | Path, *, dataset: str,
                     scales: dict[str, tuple[float, float]] | None = None,
                     meta: dict | None = None) -> ImportReport:
    folder = Path(folder)
    present = [name for name in FILES if (folder / name).is_file()]
    if not present:
        raise ImportRefused([Problem(str(folder), "", "", "a folder with " + " or ".join(FILES), "none of them")])
    dataset = Checker(str(folder)).option("--dataset", dataset)
    known_scales, new_dims = resolve_scales(con, dataset, scales or {}, str(folder))
    stored_scores = lookup.system_score_keys(con, dataset)
    stored_corr = {tuple(r) for r in con.execute(
        "SELECT track, dimension, metric, method, level FROM published_correlations WHERE dataset = ?", [dataset]).fetchall()}
    stored_ratings = set(con.execute(
        "SELECT track, model, dimension FROM human_ratings "
        "WHERE dataset = ? AND target = 'system' AND annotator = 'published'", [dataset]).fetchall())
    batch = Batch()
    batch.dataset(dataset, **(meta or {}))
    problems: list[Problem] = []
    notes: list[str] = []
    for name in present:
        table = read_table(folder / name, kinds=("csv",))
        check = Checker(table.file)
        if not check.require_columns(table.columns, FILES[name]):
            problems += check.problems
            continue
        seen: dict[tuple, str] = {}
        for rec, where in zip(table.records, table.places):
            comp = check.ident(rec, where, "competition")
            skill = check.ident(rec, where, "skill")
            value = check.number(rec, where, "value")
            paper_table = check.text(rec, where, "paper_table")
            # optional columns are text like any other (length, control characters)
            extra = {k: check.text(rec, where, k, required=False, allow_empty=True) for k in ("corpus", "model_no")}
            if None in (comp, skill, value, paper_table) or any(
                    rec.get(k) is not None and v is None for k, v in extra.items()):
                continue
            rec = {**rec, **{k: (v or "").strip() or None for k, v in extra.items()}}
            track = f"{comp}/{skill}"
            source = f"Table {paper_table}"
            if name == "automatic_system_scores.csv":
                model, metric = check.ident(rec, where, "model"), check.ident(rec, where, "metric")
                if None in (model, metric):
                    continue
                key = (track, model, metric, "published")
                if _dup(check, where, key, seen, stored_scores):
                    continue
                batch.track(dataset, track, corpus=rec.get("corpus") or None)
                batch.model(model, _model_note(rec, dataset))
                batch.add("system_scores", dataset=dataset, track=track, model=model, name=metric, value=value,
                          origin="published", signature="", source=source)
            elif name == "human_system_scores.csv":
                model, dim = check.ident(rec, where, "model"), check.ident(rec, where, "dimension")
                if None in (model, dim):
                    continue
                lo, hi = known_scales.get(dim, (None, None))
                if lo is not None and not lo <= value <= hi:
                    check.add(where, "value", f"a mean on the {dim} scale {lo:g}..{hi:g}", f"{value:g}")
                    continue
                if _dup(check, where, (track, model, dim), seen, stored_ratings):
                    continue
                batch.track(dataset, track)
                batch.model(model, _model_note(rec, dataset))
                batch.add("human_ratings", dataset=dataset, track=track, target="system", item_id=None,
                          dialogue_id=None, model=model, annotator="published", dimension=dim, score=value,
                          origin=source)
                if dim not in known_scales:
                    known_scales[dim] = (None, None)
                    new_dims.append(dim)
            else:
                dim, metric = check.ident(rec, where, "dimension"), check.ident(rec, where, "metric")
                method = (check.ident(rec, where, "method") or "").lower()
                if None in (dim, metric) or not method:
                    continue
                if method not in METHODS:
                    check.add(where, "method", "one of " + ", ".join(METHODS), repr(method))
                    continue
                level = str(rec.get("level") or "").strip().lower() or "system"
                if level not in LEVELS:
                    check.add(where, "level", "one of " + ", ".join(LEVELS) + " (or empty: system)", repr(rec.get("level")))
                    continue
                if not -1 <= value <= 1:
                    check.add(where, "value", "a correlation from -1 to 1", f"{value:g}")
                    continue
                if _dup(check, where, (track, dim, metric, method, level), seen, stored_corr):
                    continue
                batch.track(dataset, track)
                batch.add("published_correlations", dataset=dataset, track=track, dimension=dim, metric=metric,
                          method=method, level=level, value=value, source=source)
        problems += check.problems
        notes += check.notes()
    if problems:
        raise ImportRefused(problems)
    for dim in new_dims:
        lo, hi = known_scales[dim]
        batch.add("dimensions", dataset=dataset, dimension=dim, scale_min=lo, scale_max=hi)
    report = ImportReport(str(folder), batch.write(con, source=str(folder)))
    report.notes += notes
    return report


def _dup(check: Checker, where: str, key: tuple, seen: dict, stored: set) -> bool:
    if key in seen:
        check.add(where, "value", "one value per " + "/".join(map(str, key)), f"a second one (first at {seen[key]})")
        return True
    seen[key] = where
    if key in stored:
        check.add(where, "value", "a value not yet in the store", "one already stored for " + "/".join(map(str, key)))
        return True
    return False


def _model_note(rec: dict, dataset: str) -> str:
    no = rec.get("model_no")
    return f"model {no} in {dataset}" if no else f"from {dataset}"


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_published(con, args.dir, dataset=args.dataset, scales=scales(args.scale))
