"""`import responses`: one model's responses, in one transaction (all tracks or none).

Three layouts: a file (CSV, TSV, JSONL or xlsx with item_id, response and, without --model, model; a `track`
column or --track); the MSDE release's own workbook (History, response), whose rows are matched to the
items of --track by History; a folder or .zip holding one such file per track, each named after its track.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from dataclasses import replace as with_file
from pathlib import Path, PurePosixPath

import duckdb

from evalcore.core import lazy
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.text import blank as is_blank
from evalcore.core import i18n
from evalcore.core.i18n import N_, _, ngettext
from evalcore.ingest import archives, limits, lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.places import place
from evalcore.ingest.formats import msde
from evalcore.ingest.readers import Table, read_table
from evalcore.store import history
from evalcore.store.queries import answerable_items

# imported when a workbook is read (xlsx files only): the Upload page and every import command import this module,
# and openpyxl took 0.13 CPU-s of each
openpyxl = lazy.module("openpyxl")

RELEASE_SHEET = "大模型生成结果"  # the MSDE release's generation sheet: History, response
RATED = re.compile(r"-rated-\d+$")  # MSDE items made for human-rated rows absent from the generation sheet
KINDS = (".csv", ".tsv", ".jsonl", ".json", ".xlsx")


@dataclass(frozen=True)
class Words:
    """How messages name what the user chose outside the file: the CLI's options, or the upload page's
    controls (a page never tells its user about --track)."""

    dataset: str = "--dataset"
    track: str = "--track"
    model: str = "--model"
    track_given: str = N_("the track named with --track")        # why a row must be in that track
    name_a_track: str = "or name one track with --track"     # what else a file without a track column can do
    no_track_with_folder: str = "no --track with a folder or .zip (each file's name gives its track)"
    set_aside: str = "python -m evalcore submissions lists them, restore brings them back"


CLI = Words()
PAGE = Words(dataset=N_("Dataset"), track=N_("Track"), model=N_("Model name"),   # each shown through _ (the CLI's
             track_given=N_("the track chosen on this page: the file has no `track` column"),   # have no entry)
             name_a_track=N_("or leave it out and choose the track on this page"),
             no_track_with_folder=N_("a .zip whose files are named after their tracks"),
             set_aside=N_("the History section below lists them and can restore them"))


def require_track(con: duckdb.DuckDBPyConnection, file: str, dataset: str, track: str, words: Words = CLI) -> None:
    """Refuse a file aimed at a track the store does not have, listing the ones it has."""
    tracks = lookup.tracks_of(con, dataset)
    if track in tracks:
        return
    if not tracks:
        raise ImportRefused([Problem(file, "", _(words.dataset), _("a dataset in the store (import its items first)"),
                                     repr(dataset))])
    raise ImportRefused([Problem(file, "", _(words.track), _("a track of dataset {dataset}: {tracks}").format(
        dataset=repr(dataset), tracks=", ".join(tracks)), repr(track))])


@dataclass
class Part:
    """One file to read: where it is on disk, the name a user knows it by, the track it answers."""

    path: Path
    shown: str
    track: str | None
    why: str = CLI.track_given  # how the track was given, for messages
    origin: str = ""  # for the stored rows: the file's name, or '<zip or folder>/<member>'
    column_first: bool = False  # a `track` column in the file, when there is one, names the rows' tracks instead


def import_responses(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str | None = None,
                     model: str | None = None, replace: bool = False, uploader: str | None = None,
                     shown: str | None = None, track_column_first: bool = False, words: Words = CLI,
                     then=None) -> ImportReport:
    """Import one file into one track, or into every track it names in a `track` column, or a folder or
    .zip of files named after their tracks (then without `track`): one transaction, all tracks or none.
    With replace=True, the file's models lose their earlier responses in the tracks the file covers
    (and the ratings and computed scores that went with them) in the same transaction. `shown` is the
    name recorded in the history for an upload's temporary copy (the name its uploader gave it).

    track_column_first=True (the upload page): a file with a `track` column goes to the tracks it names,
    and `track` is only for a file without one; a folder or .zip ignores `track`. Without it (the CLI),
    `track` is every row's track and a `track` column must agree. `words` names the user's choices in
    messages: the CLI's options (CLI), or the page's controls (PAGE). `then(con, tracks)` runs inside the
    import's transaction once its rows are written (the upload page records the scoring job there)."""
    path = Path(path)
    given = Checker(str(path))   # the names chosen beside the file, in the one normal form of names (NFKC)
    dataset = given.option(_(words.dataset), dataset)
    track = given.option(_(words.track), track)
    model = given.option(_(words.model), model, what=N_("model name"))
    tracks = lookup.tracks_of(con, dataset)
    whole = path.is_dir() or path.suffix.lower() == ".zip"
    if track_column_first and whole:
        track = None
    if track is not None:
        require_track(con, str(path), dataset, track, words)
    elif not tracks:
        require_track(con, str(path), dataset, "", words)
    if not whole:
        part = Part(path, str(path), track, words.track_given, origin=path.name, column_first=track_column_first)
        return _import(con, str(path), [part], dataset, tracks, None if track_column_first else track,
                       model, replace, uploader, shown, words, then)
    if track is not None:
        raise ImportRefused([Problem(str(path), "", _(words.track), _(words.no_track_with_folder), repr(track))])
    with tempfile.TemporaryDirectory(prefix=f"{archives.TEMP_PREFIX}{os.getpid()}-") as tmp, limits.row_budget():
        files = _folder_files(path) if path.is_dir() else _zip_files(path, Path(tmp))
        parts = _parts(path, files, dataset, tracks)
        return _import(con, str(path), parts, dataset, tracks, None, model, replace, uploader, shown, words, then)


def _import(con: duckdb.DuckDBPyConnection, file: str, parts: list[Part], dataset: str, tracks: list[str],
            track: str | None, model: str | None, replace: bool, uploader: str | None = None,
            shown: str | None = None, words: Words = CLI, then=None) -> ImportReport:
    """Read every part, check every row, then write once: a problem anywhere refuses the whole import."""
    problems: list[Problem] = []
    tables: list[tuple[Part, Table]] = []
    notes: list[str] = []
    for part in parts:
        try:
            table, note = _read(con, part, dataset, model, words)
        except ImportRefused as exc:  # name the member, not its temporary copy; read the others too
            problems += [with_file(p, file=part.shown) if p.file == str(part.path) else p for p in exc.problems]
            continue
        tables.append((part, table))
        notes += [note] if note else []
    if problems:
        raise ImportRefused(problems)
    item_track = lookup.item_tracks(con, dataset)
    stored = lookup.response_keys(con, dataset, track)
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    covered: dict[str, set[str]] = {}
    blank: dict[tuple[str, str], list[str]] = {}   # (track, model) -> items answered with nothing but whitespace
    batch = Batch()
    batch.uploader, batch.shown = uploader, shown
    check = Checker(file)
    read_as = ([_("read as {encoding}").format(encoding=tables[0][1].encoding)] if len(tables) == 1
               else [_("read {file} as {encoding}").format(file=t.file, encoding=t.encoding) for __, t in tables])
    while tables:  # each file's records are let go once checked: the batch holds what is written
        part, table = tables.pop(0)
        check.file = table.file  # problems name the member of a folder or .zip
        _check_rows(check, part, table, dataset, tracks, model, item_track, stored, replace, seen, covered, batch, words,
                    blank)
        del table
    check.refuse_if_any()
    models = sorted({m for __, m in seen})
    replaced = sorted(set(models) & {m for __, m in stored}) if replace else []
    for name in replaced:   # the earlier version is set aside, not destroyed: `restore` brings it back
        batch.kind, batch.scope = "replace", history.REPLACE_SCOPE
        for tr in sorted(covered):
            for sql, params in history.set_aside(dataset, name, tr, history.REPLACE_SCOPE):
                batch.delete(sql, params)
    for name in models:
        batch.model(name)
    answerable = answerable_items(con, dataset).groupby("track")["item_id"].agg(set).to_dict()
    if then is not None:
        batch.then = lambda c: then(c, sorted(covered))
    report = ImportReport(file, batch.write(con, source=file))
    report.notes += read_as + notes + check.notes()
    report.tracks = sorted(covered)
    report.notes += blank_notes(seen, item_track, blank)
    report.notes += coverage_notes(answerable, covered, blank_items(seen, item_track, blank))
    if replaced:
        report.notes.append(_("replaced the earlier responses of {models} in {tracks} (their response ratings and "
                              "computed scores were set aside with them: {where})").format(
                                  models=", ".join(replaced), tracks=", ".join(sorted(covered)), where=_(words.set_aside)))
    return report


def _check_rows(check: Checker, part: Part, table: Table, dataset: str, tracks: list[str], model: str | None,
                item_track: dict[str, str], stored: set, replace: bool, seen: dict, covered: dict, batch: Batch,
                words: Words = CLI, blank: dict | None = None) -> None:
    """Check one file's header and rows: good rows go into the batch, problems into `check`; the items of
    responses that are empty or whitespace into `blank` ((track, model) -> items): accepted, and counted."""
    track = part.track
    by_column = "track" in table.columns
    if by_column and part.column_first:
        track = None  # the file names its rows' tracks itself
    if track is None and not by_column:
        check.add("header (row 1)", "track", _("a column named 'track' ({alternative}): {tracks}").format(
            alternative=_(words.name_a_track), tracks=", ".join(tracks)), _("no such column"))
        return
    if not check.require_columns(table.columns, ["item_id", "response"] + ([] if model else ["model"])):
        return
    for rec, where in zip(table.records, table.places):
        item_id = check.ident(rec, where, "item_id")
        text = check.text(rec, where, "response", allow_empty=True)
        name = model if model else check.ident(rec, where, "model")
        row_track = check.ident(rec, where, "track") if by_column else track
        if None in (item_id, text, name, row_track):
            continue
        if track is not None and row_track != track:
            check.add(where, "track", f"{track!r} ({_(part.why)})", repr(row_track))
            continue
        if row_track not in tracks:
            check.add(where, "track", _("a track of dataset {dataset}: {tracks}").format(
                dataset=repr(dataset), tracks=", ".join(tracks)), repr(row_track))
            continue
        if item_track.get(item_id) != row_track:
            elsewhere = item_track.get(item_id)
            got = (_("{id}, an item of track {track}").format(id=repr(item_id), track=repr(elsewhere)) if elsewhere
                   else _("{id}, unknown").format(id=repr(item_id)))
            check.add(where, "item_id", _("an item of track {track} in dataset {dataset}").format(
                track=repr(row_track), dataset=repr(dataset)), got)
            continue
        key = (item_id, name)
        if key in seen:
            first_file, first_where = seen[key]
            first = place(first_where) if first_file == table.file else place(f"{first_file} {first_where}")
            check.add(where, "item_id", _("one response per item for model {model}").format(model=repr(name)),
                      _("{id} again (first at {place})").format(id=repr(item_id), place=first))
            continue
        seen[key] = (table.file, where)
        covered.setdefault(row_track, set()).add(item_id)
        if key in stored and not replace:
            check.add(where, "item_id", _("an item model {model} has not answered yet (delete the model first to "
                                          "replace it)").format(model=repr(name)),
                      _("{id}, already answered").format(id=repr(item_id)))
            continue
        batch.add("responses", dataset=dataset, item_id=item_id, model=name, text=text, origin=f"{part.origin} {where}")
        if blank is not None and is_blank(text):
            blank.setdefault((row_track, name), []).append(item_id)


# ------------------------------------------------------------------ reading one file, in either layout
def _read(con: duckdb.DuckDBPyConnection, part: Part, dataset: str, model: str | None,
          words: Words = CLI) -> tuple[Table, str]:
    """The file as records with item_id and response (and a note on how release rows were matched)."""
    sheet = _release_sheet(part.path) if part.path.suffix.lower() == ".xlsx" and part.path.is_file() else None
    if sheet is None:
        table = read_table(part.path)
        table.file = part.shown
        return table, ""
    problems = []
    if part.track is None:
        problems.append(Problem(part.shown, "", _(words.track), _(
            "the track its rows answer, named with {control}: a workbook in the MSDE release layout (History, "
            "response) is matched to that track's items by History").format(control=_(words.track)), _("none")))
    if not model:
        problems.append(Problem(part.shown, "", _(words.model), _(
            "a model name given with {control}: a workbook in the MSDE release layout (History, response) has no "
            "model column").format(control=_(words.model)), _("none")))
    if problems:
        raise ImportRefused(problems)
    return _release_table(con, part, dataset, *sheet)


def _release_sheet(path: Path) -> tuple[str, list[tuple]] | None:
    """(title, rows) of the release's generation sheet, or of a first sheet with History and response but no
    item_id; None for any other workbook (read_table reads it)."""
    archives.check_archive(path, str(path))   # an .xlsx is a zip: its declared expanded size is bounded first
    try:  # formulas as written, not cached values: the MSDE importer read them so (LCCC has '=...' Histories)
        wb = openpyxl.load_workbook(path, read_only=True)
    except Exception as exc:  # openpyxl raises many types for a broken file
        got = f"unreadable ({type(exc).__name__}: {exc})"
        raise ImportRefused([Problem(str(path), "", "", "an .xlsx workbook", got)]) from exc
    try:
        sheets = wb.worksheets
        first = _header(next(sheets[0].iter_rows(max_row=1, values_only=True), ())) if sheets else []
        if "item_id" in first:
            return None
        ws = next((s for s in sheets if s.title == RELEASE_SHEET), None)
        if ws is None and {"history", "response"} <= set(first):
            ws = sheets[0]
        if ws is None:
            return None
        return ws.title, list(ws.iter_rows(values_only=True))
    finally:
        wb.close()


def _header(row: tuple) -> list[str]:
    return ["" if h is None else str(h).strip().lower() for h in row]


def _cell(row: tuple, col: int) -> str:
    """A History or response cell as the MSDE importer read it: empty cells are ''."""
    value = row[col] if col < len(row) else None
    return "" if value is None else value if isinstance(value, str) else str(value)


def _release_table(con: duckdb.DuckDBPyConnection, part: Part, dataset: str, title: str,
                   rows: list[tuple]) -> tuple[Table, str]:
    """Each sheet row mapped to an item of the track. Row n goes to the track's n-th item (item-id order) when
    the sheet has one row per item and the Histories agree: this keeps rows whose History repeats. Any other row
    goes to the one item whose History equals its own, and is refused when none or several have it."""
    header = _header(rows[0]) if rows else []
    check = Checker(part.shown)
    if not check.require_columns(header, ["history", "response"], where=f"sheet {title} row 1"):
        check.refuse_if_any()
    h_col, r_col = header.index("history"), header.index("response")
    body = list(rows[1:])
    while body and all(c is None for c in body[-1]):
        body.pop()  # trailing blank rows are formatting; blank rows inside are items (the release has one)
    items = _generation_items(con, dataset, part.track)
    owners: dict[str, list[str]] = defaultdict(list)
    for item_id, text in items:   # text: the item's History
        owners[text].append(item_id)
    in_order = len(body) == len(items)
    records, places, by_order, by_history = [], [], 0, 0
    for index, row in enumerate(body):
        where = f"sheet {title} row {index + 2}"
        history = _cell(row, h_col)
        if in_order and items[index][1] == history:
            item_id, by_order = items[index][0], by_order + 1
        elif len(owners.get(history, [])) == 1:
            item_id, by_history = owners[history][0], by_history + 1
        else:
            n = len(owners.get(history, []))
            got = short(history) if history else _("an empty History")
            if n == 0:
                check.add(where, "History", _("the History of an item of track {track}").format(track=repr(part.track)),
                          got)
            else:
                check.add(where, "History", _("a History only one item of track {track} has (or the sheet's rows in "
                                              "item order, one per item: {n} rows)").format(
                                                  track=repr(part.track), n=i18n.number(len(items))),
                          _("{got}, shared by {n} items").format(got=got, n=i18n.number(n)))
            continue
        records.append({"item_id": item_id, "response": _cell(row, r_col)})
        places.append(where)
    if not body:
        check.add(f"sheet {title}", "", _("at least one data row"), _("only a header"))
    check.refuse_if_any()
    note = _("{file}: {n} rows of sheet {sheet} matched to items of {track}: {by_order} by row order, {by_history} by "
             "History").format(file=part.shown, n=i18n.number(len(records)), sheet=title, track=part.track,
                               by_order=i18n.number(by_order), by_history=i18n.number(by_history))
    return Table(part.shown, ["item_id", "response"], records, places, encoding="xlsx"), note


def _generation_items(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[tuple[str, str]]:
    """(item_id, History) of the track's items in item-id order. History is the context's turns joined by a
    space: the MSDE importer stores [History], or for CPC the JSONL turns, whose join is the sheet's History."""
    rows = con.execute("SELECT item_id, context FROM items WHERE dataset = ? AND track = ?", [dataset, track]).fetchall()
    return sorted((item_id, " ".join(json.loads(context))) for item_id, context in rows if not RATED.search(item_id))


# ------------------------------------------------------------------ a folder or .zip of per-track files
def _skipped(rel: str) -> bool:
    """Hidden files, macOS resource forks and Office lock files are not submissions."""
    parts = PurePosixPath(rel).parts
    return any(p.startswith((".", "~$")) or p == "__MACOSX" for p in parts)


def _folder_files(path: Path) -> list[tuple[Path, str]]:
    """(file, path relative to the folder) of every file in it, sub-folders included."""
    return [(p, p.relative_to(path).as_posix()) for p in sorted(path.rglob("*"))
            if p.is_file() and not _skipped(p.relative_to(path).as_posix())]


def _zip_files(path: Path, tmp: Path) -> list[tuple[Path, str]]:
    """Members copied out to `tmp` under names of our own, bounded in size (archives.unpack_zip)."""
    return archives.unpack_zip(path, tmp, _skipped)


def _parts(path: Path, files: list[tuple[Path, str]], dataset: str, tracks: list[str]) -> list[Part]:
    """Each file with the track its name gives; refuse files of other kinds or named after no track."""
    parts, problems = [], []
    for real, rel in files:
        shown, name = f"{path}/{rel}", PurePosixPath(rel)
        if name.suffix.lower() not in KINDS:
            problems.append(Problem(shown, "", "", _("a .csv, .tsv, .jsonl or .xlsx file named after a track"),
                                    repr(name.name)))
            continue
        track, why = _track_of_name(name, tracks)
        if track is None:
            names = ", ".join(t.replace("/", "_") for t in tracks)
            expected = (_("a file named after a track of dataset {dataset}, '/' written as '_', '__' or '-': {names} "
                          "(or a workbook in a release folder such as 'Lic 2021_CPC')") if dataset == msde.DATASET
                        else _("a file named after a track of dataset {dataset}, '/' written as '_', '__' or '-': "
                               "{names}"))
            problems.append(Problem(shown, "", "", expected.format(dataset=repr(dataset), names=names), repr(name.name)))
            continue
        parts.append(Part(real, shown, track, why, origin=f"{path.name}/{rel}"))
    if not files:
        problems.append(Problem(str(path), "", "", _("one file per track, named after it (e.g. {name}.csv)").format(
            name=(tracks[0] if tracks else "competition/skill").replace("/", "_")), _("no files")))
    if problems:
        raise ImportRefused(problems)
    return parts


def _track_of_name(name: PurePosixPath, tracks: list[str]) -> tuple[str | None, str]:
    """'lic2021_persona.csv', 'LIC2021__persona.xlsx', 'lic2021-persona.jsonl' -> 'lic2021/persona'; else the
    release's folder naming, 'Lic 2021_CPC/qianwen.xlsx' -> 'lic2021/persona'."""
    stem = name.stem.lower()
    for track in tracks:
        if stem in {track.lower().replace("/", sep) for sep in ("_", "__", "-")}:
            return track, N_("the track the file's name gives")
    if name.parent.name:
        try:
            track = msde.track_of(name.parent.name)[0]
        except ImportRefused:
            return None, ""
        if track in tracks:
            return track, N_("the track its folder's name gives")
    return None, ""


BLANKS_SHOWN = 10   # items named per model in the blank responses' warning; the rest are counted


def blank_notes(seen: dict, item_track: dict[str, str], blank: dict[tuple[str, str], list[str]]) -> list[str]:
    """A warning per track and model with responses that are empty or whitespace: how many of its responses
    there, and which items. They are stored (an empty answer is an answer) and scored as what they are."""
    given: dict[tuple[str, str], int] = {}
    for item_id, model in seen:
        key = (item_track.get(item_id), model)
        given[key] = given.get(key, 0) + 1
    notes = []
    for (tr, model), items in sorted(blank.items()):
        named = ", ".join(sorted(items)[:BLANKS_SHOWN])
        if len(items) > BLANKS_SHOWN:
            named = _("{items} (and {n} more)").format(items=named, n=i18n.number(len(items) - BLANKS_SHOWN))
        # "warning: " stays as it is in every language: it marks the note as a warning (services.upload)
        notes.append("warning: " + _("{n} of {total} responses of {model} in {track} are empty or whitespace: items "
                                     "{items}; they are stored and scored as empty answers (nothing in them matches "
                                     "a reference)").format(n=i18n.number(len(items)),
                                                            total=i18n.number(given.get((tr, model), len(items))),
                                                            model=model, track=tr, items=named))
    return notes


def blank_items(seen: dict, item_track: dict[str, str], blank: dict[tuple[str, str], list[str]]) -> dict[str, set[str]]:
    """Per track, the items whose every response in the file is empty or whitespace."""
    empty = {(i, m) for (__, m), items in blank.items() for i in items}
    answered = {i for i, m in seen if (i, m) not in empty}
    out: dict[str, set[str]] = {}
    for i, __ in empty:
        if i not in answered:
            out.setdefault(item_track.get(i), set()).add(i)
    return out


def coverage_notes(answerable: dict[str, set[str]], covered: dict[str, set[str]],
                   blank: dict[str, set[str]] | None = None) -> list[str]:
    """One line per track the file answers: how many of the track's answerable items (see
    queries.answerable_items) have a response that is not blank, and a warning when partial or when some items
    have only blank ones (`blank`: per track, those items)."""
    notes = []
    for tr in sorted(covered):
        items = answerable.get(tr, set())
        empty = (blank or {}).get(tr, set()) & items
        n, total = len(covered[tr] & items) - len(empty), len(items)
        share = n / total if total else 0.0
        line = _("coverage of {track}: {n} of {total} items ({share})").format(
            track=tr, n=i18n.number(n), total=i18n.number(total), share=f"{share:.2%}")
        if empty:   # answered with blanks only: not counted as covered, and said ("warning: " as in blank_notes)
            said = (ngettext("partial submission: {line} have a response that is not blank; {k} more has only an "
                             "empty or whitespace one",
                             "partial submission: {line} have a response that is not blank; {k} more have only an "
                             "empty or whitespace one", len(empty)) if n + len(empty) == total else
                    ngettext("partial submission: {line} have a response that is not blank; {k} more has only an "
                             "empty or whitespace one; the other items have no response",
                             "partial submission: {line} have a response that is not blank; {k} more have only an "
                             "empty or whitespace one; the other items have no response", len(empty)))
            notes.append("warning: " + said.format(line=line, k=i18n.number(len(empty))))
        else:
            notes.append(line if n == total else "warning: " + _("partial submission: {line}; the other items have no "
                                                                 "response").format(line=line))
    return notes


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_responses(con, args.file, dataset=args.dataset, track=args.track, model=args.model)
