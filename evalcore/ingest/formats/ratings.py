"""`import ratings`: long format, one score per (target, model, annotator, dimension)."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

import duckdb

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.i18n import N_, _
from evalcore.core.text import bad_character, identity_key, normalise_id
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker, decimal
from evalcore.ingest.formats.responses import require_track
from evalcore.ingest.limits import MAX_CELL, MAX_MAGNITUDE
from evalcore.ingest.places import place
from evalcore.ingest.readers import read_table

NOT_A_NUMBER = N_("a number (or give --missing PATTERN for answers that are not numbers)")


def text_answer(value: object) -> bool:
    """Whether a cell is text that no reader takes for a number ('N/A (No errors)'; not '2', ' 0.5 ', 'nan',
    'inf' or '1_0', which have their own problems): the only cells a --missing pattern may match."""
    if not isinstance(value, str) or not value.strip() or decimal(value) is not None:
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


@dataclass
class Missing:
    """The --missing patterns: answers that are not numbers, stored as no rating and counted per dimension."""

    patterns: list[str]
    counts: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, file: str, patterns: list[str] | None) -> Missing:
        """The patterns given (fnmatch-style, case-sensitive); a blank one, or one with a control character,
        is refused at once."""
        out = []
        for pattern in patterns or []:
            bad = bad_character(pattern)
            if bad or not pattern.strip():
                raise ImportRefused([Problem(file, "", "--missing", _("a non-empty pattern without control "
                                                                      "characters (for example 'N/A*')"),
                                             bad or short(pattern))])
            out.append(pattern.strip())
        return cls(out)

    def matches(self, value: object) -> bool:
        """Whether a cell is an answer given as no rating: text that is not a number, whose whole text
        (surrounding whitespace removed) matches a pattern."""
        return text_answer(value) and any(fnmatchcase(value.strip(), p) for p in self.patterns)

    def number(self, check: Checker, rec: dict, where: str, key: str) -> float | None:
        """check.number, except that a text answer's problem suggests --missing."""
        if text_answer(rec.get(key)):
            check.add(where, key, _(NOT_A_NUMBER), short(rec.get(key)))
            return None
        return check.number(rec, where, key)

    def note(self) -> str | None:
        """What the patterns did, for the import's notes (None: no pattern was given)."""
        if not self.patterns:
            return None
        given = _(" or ").join(repr(p) for p in self.patterns)
        if not self.counts:
            return _("no answer matched --missing {patterns}").format(patterns=given)
        per = ", ".join(f"{dim} {i18n.number(n)}" for dim, n in sorted(self.counts.items(), key=lambda x: (-x[1], x[0])))
        return _("{n} answer(s) matching --missing {patterns} stored as no rating: {counts}").format(
            n=i18n.number(sum(self.counts.values())), patterns=given, counts=per)


def parse_scale(text: str) -> tuple[str, float, float]:
    """'Info=0:2' -> ('Info', 0.0, 2.0)."""
    try:
        name, bounds = text.split("=", 1)
        lo, hi = bounds.split(":", 1)
    except ValueError:
        raise ValueError(_("--scale expects DIM=MIN:MAX (for example Info=0:2), got {text}").format(text=repr(text))) from None
    bounds = [decimal(b) for b in (lo, hi)]   # plain decimal, as in a file: not 1_0
    if any(b is None and b_text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity")
           for b, b_text in zip(bounds, (lo, hi))):
        bounds = [math.inf, math.inf]   # refused as not finite, below
    lo, hi = bounds
    if lo is None or hi is None:
        raise ValueError(_("--scale expects DIM=MIN:MAX with decimal bounds (for example Info=0:2), got {text}").format(
            text=repr(text)))
    if not (math.isfinite(lo) and math.isfinite(hi)) or max(abs(lo), abs(hi)) > MAX_MAGNITUDE:
        raise ValueError(_("--scale expects finite bounds of magnitude at most {limit} (for example Info=0:2), got "
                           "{text}").format(limit=f"{MAX_MAGNITUDE:g}", text=repr(text)))
    name = normalise_id(name)
    if not name or lo >= hi:
        raise ValueError(_("--scale expects a dimension name and MIN < MAX, got {text}").format(text=repr(text)))
    if bad_character(name) or len(name) > MAX_CELL:
        raise ValueError(_("--scale expects a dimension name without control characters, of at most {n} characters, "
                           "got {text}").format(n=i18n.number(MAX_CELL), text=short(text)))
    return name, lo, hi


def resolve_scales(con, dataset: str, given: dict[str, tuple[float, float]], file: str) -> tuple[dict, list[str]]:
    """Stored scales plus new ones; a given scale may not contradict a stored one."""
    stored = lookup.scales(con, dataset)
    problems = []
    for dim, (lo, hi) in given.items():
        if dim in stored and stored[dim] != (None, None) and stored[dim] != (lo, hi):
            problems.append(Problem(file, "", "--scale", _("the stored scale of {dimension} ({scale})").format(
                dimension=repr(dim), scale=f"{stored[dim][0]:g}:{stored[dim][1]:g}"), f"{lo:g}:{hi:g}"))
    if problems:
        raise ImportRefused(problems)
    new = [d for d in given if d not in stored]
    return {**stored, **given}, new


def import_ratings(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str | None,
                   scales: dict[str, tuple[float, float]] | None = None, shown: str | None = None,
                   missing: list[str] | None = None) -> ImportReport:
    """Ratings into one track, or (track None) into each row's `track` column, all in one transaction. A row
    with no score but a comment (a rating task's export carries its flags that way) is left out and counted.
    A row whose score is text matching a `missing` pattern (Missing) is checked like any other, then stored as
    no rating and counted."""
    table = read_table(path)
    check = Checker(table.file)
    absent = Missing.of(table.file, missing)
    dataset, track = check.option("--dataset", dataset), check.option("--track", track)
    if track is not None:
        require_track(con, table.file, dataset, track)
    check.require_columns(table.columns, ["model", "annotator", "dimension", "score"] + (["track"] if track is None else []))
    if "item_id" not in table.columns and "dialogue_id" not in table.columns:
        check.add("header (row 1)", "item_id", _("a column named 'item_id' or 'dialogue_id'"), _("neither"))
    check.refuse_if_any()
    # the people who rated or entered a task before: a new annotator who looks like one of them is refused as taken
    check.known("annotator", [a for (a,) in con.execute(
        "SELECT DISTINCT annotator FROM human_ratings WHERE dataset = ? UNION SELECT name FROM annotators ORDER BY 1",
        [dataset]).fetchall()], "already in the store")
    known_scales, new_dims = resolve_scales(con, dataset, scales or {}, table.file)
    item_tracks = lookup.item_tracks(con, dataset)
    known_tracks = set(lookup.tracks_of(con, dataset))
    per_track: dict[str, tuple] = {}

    def of_track(name: str) -> tuple:
        """(items, dialogues, responses, stored rating keys) of a track, read once."""
        if name not in per_track:
            per_track[name] = ({i for i, t in item_tracks.items() if t == name}, lookup.dialogue_ids(con, dataset, name),
                               lookup.response_keys(con, dataset, name), lookup.rating_keys(con, dataset, name))
        return per_track[name]

    unscaled: set[str] = set()
    seen: dict[tuple, str] = {}
    flags = 0
    batch = Batch()
    for rec, where in zip(table.records, table.places):
        if track is None and not str(rec.get("score") or "").strip() and str(rec.get("comment") or "").strip():
            flags += 1
            continue
        row_track = track
        if track is None:
            row_track = check.ident(rec, where, "track")
            if row_track is None:
                continue
            if row_track not in known_tracks:
                check.add(where, "track", _("a track of dataset {dataset}").format(dataset=repr(dataset)), repr(row_track))
                continue
        items, dialogues, responses, stored = of_track(row_track)
        item_id = check.ident(rec, where, "item_id", required=False)
        dialogue_id = None if item_id else check.ident(rec, where, "dialogue_id", required=False)
        if not item_id and not dialogue_id:
            check.add(where, "item_id", _("an item_id or a dialogue_id"), _("neither"))
        model = check.ident(rec, where, "model")
        annotator = check.ident(rec, where, "annotator")
        dimension = check.ident(rec, where, "dimension")
        no_rating = absent.matches(rec.get("score"))
        score = None if no_rating else absent.number(check, rec, where, "score")
        if None in (model, annotator, dimension) or (score is None and not no_rating) or not (item_id or dialogue_id):
            continue
        if dimension not in known_scales or known_scales[dimension] == (None, None):
            if dimension not in unscaled:
                unscaled.add(dimension)
                check.add(where, "dimension", _("a dimension with a known scale (give --scale {dimension}=MIN:MAX)").format(
                    dimension=dimension), _("{dimension} with no scale").format(dimension=repr(dimension)))
            continue
        lo, hi = known_scales[dimension]
        if not no_rating and not lo <= score <= hi:
            check.add(where, "score", _("a score on the {dimension} scale {low}..{high}").format(
                dimension=dimension, low=f"{lo:g}", high=f"{hi:g}"), f"{score:g}")
            continue
        if item_id:
            target, target_id = "response", item_id
            if item_id not in items:
                check.add(where, "item_id", _("an item of track {track}").format(track=repr(row_track)),
                          _("{id}, unknown").format(id=repr(item_id)))
                continue
            if (item_id, model) not in responses:
                check.add(where, "model", _("a model with a stored response to item {id}").format(id=repr(item_id)),
                          f"{model!r}")
                continue
        else:
            target, target_id = "dialogue", dialogue_id
            if dialogue_id not in dialogues:
                check.add(where, "dialogue_id", _("a dialogue of track {track}").format(track=repr(row_track)),
                          _("{id}, unknown").format(id=repr(dialogue_id)))
                continue
        key = (target, target_id, model, identity_key(annotator), dimension)   # 'Carol' and 'carol': one person
        if (row_track, *key) in seen:
            check.add(where, "score", (_("one score per response, model, annotator and dimension") if target == "response"
                                       else _("one score per dialogue, model, annotator and dimension")),
                      _("a second one (first at {place})").format(place=place(seen[(row_track, *key)])))
            continue
        seen[(row_track, *key)] = where
        if key in stored:
            check.add(where, "score", _("a rating not yet in the store"),
                      _("one already stored for this target, model, annotator and dimension (from {origin})").format(
                          origin=stored[key]))
            continue
        if no_rating:
            absent.counts[dimension] += 1
            continue
        batch.add("human_ratings", dataset=dataset, track=row_track, target=target,
                  item_id=item_id if target == "response" else None,
                  dialogue_id=dialogue_id if target == "dialogue" else None,
                  model=model, annotator=annotator, dimension=dimension, score=score,
                  origin=f"{Path(table.file).name} {where}")
    check.refuse_if_any()
    for dim in new_dims:
        lo, hi = known_scales[dim]
        batch.add("dimensions", dataset=dataset, dimension=dim, scale_min=lo, scale_max=hi)
    batch.shown = shown
    report = ImportReport(table.file, batch.write(con, source=table.file))
    report.notes.append(_("read as {encoding}").format(encoding=table.encoding))
    if flags:
        report.notes.append(_("{n} row(s) without a score but with a comment (a task's flags) left out").format(n=flags))
    if absent.note():
        report.notes.append(absent.note())
    report.notes += check.notes()
    return report


def scales(items: list[str]) -> dict[str, tuple[float, float]]:
    """--scale DIM=MIN:MAX options as {dimension: (min, max)}."""
    out = {}
    for text in items:
        name, lo, hi = parse_scale(text)
        out[name] = (lo, hi)
    return out


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_ratings(con, args.file, dataset=args.dataset, track=args.track, scales=scales(args.scale),
                          missing=args.missing)
