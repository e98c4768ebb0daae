"""An offline report of one dataset: the trust, leaderboard, correlation and human-rating views as one
self-contained HTML file (evalcore.services.report_html draws it). Its tables come from the same functions as
the CLI's commands, with the commands' defaults, so a number in the report is the number `evalcore leaderboard`
(`correlate`, `trust`, `agreement`) prints; a checksum of those tables says whether two reports hold the same data.
A report of an evaluation record (build_from_record) is made from the record loaded into a scratch store, its tables
first checked against the record's manifest, and names the record and its content_sha256."""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pandas as pd

from evalcore import __version__
from evalcore.analysis import agreement as ag
from evalcore.analysis import leaderboard as lb
from evalcore.analysis.agreement_corr import agreement_table
from evalcore.analysis.correlate import correlations
from evalcore.analysis.options import DIALOGUE_AGGREGATE
from evalcore.analysis.trust import POOLED
from evalcore.analysis.trust_levels import dimensions
from evalcore.analysis.trust_opening import opening
from evalcore.analysis.trust_verdicts import report as trust_report
from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem
from evalcore.core.i18n import N_, _
from evalcore.services import record, record_check, report_html
from evalcore.services.record_load import load
from evalcore.services.scope import chosen_tracks
from evalcore.store import connect, revision

VIEWS = ("trust", "leaderboard", "correlations", "human")
# analysis.options.DIALOGUE_VALUE, as a message (its English is that text: a test holds them equal)
DIALOGUE_VALUE = N_("a dialogue's metric value is the mean of its model turns' values (signature + '|{aggregate}')")
LEVEL_TITLES = {"turn": N_("{track}: Spearman r, turn level"), "dialogue": N_("{track}: Spearman r, dialogue level"),
                "system": N_("{track}: Spearman r, system level")}   # a correlations chart's title, per level
PUBLISHED_SIGNATURE = "published: the paper's own value (no signature stored)"
# the chance-corrected statistics' definitions (evalcore.analysis.agreement), which its rows leave blank
CHANCE_DEFINITIONS = {
    "cohen_kappa": "Cohen's kappa of one pair of annotators on the targets both rated, 1 - sum(W O) / sum(W E) "
                   "over the categories' confusion table; weights W {}",
    "fleiss_kappa": "Fleiss' kappa over the targets rated by the most common number of annotators",
    "krippendorff_alpha": "Krippendorff's alpha from the coincidence matrix of every target with two or more "
                          "ratings, {} distance",
}
WEIGHTS = {"unweighted": "0 on the diagonal, 1 elsewhere", "linear": "|i - j| on category ranks",
           "quadratic": "(i - j)^2 on category ranks"}
# the report's words are in the language it is made in (build's `lang`); its data (every table, whose checksum says
# whether two reports hold the same data) is the same in every language: names, numbers and the rows' definitions
CHECKSUM_COVERS = N_("sha256 of every data table below (each as its name on one line, then CSV with a header, its "
                   "rows sorted; UTF-8): the names and numbers of the report, not its charts, time or layout")
RECORD_COVERS = N_("the record's content_sha256 covers every table and figure in it (`evalcore record verify FILE` "
                 "recomputes it); each table was checked against it when this report was made")


@dataclass
class Table:
    """One data table of the report: `name` (unique, also its place in the checksum), a caption for people,
    and the frame."""

    name: str
    caption: str
    frame: pd.DataFrame


@dataclass
class View:
    """One view: its title, what it shows (notes: definitions and settings, as text), tables and charts
    (`charts`: (title, kind, frame) that report_html draws)."""

    key: str
    title: str
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[tuple[str, str, pd.DataFrame]] = field(default_factory=list)


def in_english(fn, *args, **kwargs):
    """fn(...) made in English whatever the report's language: a table's cells are data, the same in every
    language (an engine function that words a cell for a page, a note such as 'pools 2 tracks', words it in English
    here, as the CLI prints it), so the checksum of a Chinese report is the English one's."""
    before = i18n.current()
    i18n.use(i18n.EN)
    try:
        return fn(*args, **kwargs)
    finally:
        i18n.use(before)


def per_track(fn, tracks: list[str]) -> pd.DataFrame:
    """fn(track) for every track, stacked (the CLI's per-track output, one after another), made in English
    (in_english)."""
    parts = [f for f in (in_english(fn, t) for t in tracks) if len(f)]
    return pd.concat(parts, ignore_index=True) if parts else in_english(fn, tracks[0]).iloc[0:0]


def leaderboard_view(con, dataset: str, tracks: list[str]) -> View:
    board = per_track(lambda t: lb.default_ranked(con, dataset, t), tracks)
    sigs = per_track(lambda t: lb.signatures(con, dataset, t), tracks)
    view = View("leaderboard", _("Leaderboard"), notes=[
        _("As `evalcore leaderboard`: one row per track, model and origin; each track ranked by its default (the "
          "skill's official rule, else F1, else its first column), with a 95% paired-bootstrap interval of the rank "
          "(1000 resamples, seed 0). Computed columns are defined by their signatures (second table); published "
          "rows are the paper's own values.")])
    view.tables += [Table("leaderboard", _("Leaderboard"), board),
                    Table("leaderboard signatures", _("Signatures"), sigs)]
    for track, part in board.groupby("track", sort=False):
        by = part["rank_by"].dropna()
        column = by.iloc[0] if len(by) and by.iloc[0] in part.columns else None
        if column:
            view.charts.append((f"{track}: {column}", "bar", part[["model", "origin", column]].rename(
                columns={column: "value"})))
    return view


def where_to_correlate(con, dataset: str) -> tuple[str | None, str | None, str]:
    """(level, origin, why): where `evalcore trust` opens (the first level with a verdict); level None, and
    why, when there is nothing to correlate."""
    found = opening(con, dataset)
    return found.level, found.origin, found.why


def correlations_view(con, dataset: str, tracks: list[str], level: str | None, origin: str | None, why: str) -> View:
    if level is None:
        return View("correlations", _("Metric-human correlations"),
                    notes=[_("Nothing to correlate: {why}.").format(why=why)])
    frame = per_track(lambda t: correlations(con, dataset, t, level=level, origin=origin), tracks)
    sigs = per_track(lambda t: lb.signatures(con, dataset, t), tracks)
    signature = dict(zip(zip(sigs["track"], sigs["name"]), sigs["signature"]))
    frame.insert(frame.columns.get_loc("method"), "signature", [
        PUBLISHED_SIGNATURE if origin == "published" else signature.get((t, m), "")
        for t, m in zip(frame["track"], frame["metric"])])
    view = View("correlations", _("Metric-human correlations"), notes=[
        _("As `evalcore correlate --level {level} --origin {origin}`: each metric against each human dimension "
          "(annotators' mean), per track, by Spearman, Pearson and Kendall; n is the number of points correlated, p "
          "the test's p value. The signature column says which computation each metric's values are.").format(
            level=level, origin=origin)
        + (" " + _(DIALOGUE_VALUE).format(aggregate=DIALOGUE_AGGREGATE) + "." if level == "dialogue" else "")])
    view.tables.append(Table("correlations", _("Correlations"), frame))
    spearman = frame[(frame["method"] == "spearman") & frame["r"].notna()]
    title = _(LEVEL_TITLES[level]) if level in LEVEL_TITLES else _("{track}: Spearman r, {level} level")
    for track, part in spearman.groupby("track", sort=False):
        view.charts.append((title.format(track=track, level=level), "heatmap", part[["metric", "dimension", "r"]]))
    return view


def trust_view(con, dataset: str, tracks: list[str], level: str, origin: str, why: str) -> View:
    view = View("trust", _("Which metric to trust"), notes=[
        _("As `evalcore trust --level {level} --origin {origin}`: Spearman correlation of each metric with the "
          "human mean per track, pooled per skill (Fisher z, weights n-3); significant: p < 0.05, Holm-adjusted over "
          "each skill's metrics; a metric tied with the best is not significantly worse (Williams' test).").format(
            level=level, origin=origin)
        + (" " + _("Level chosen as the command opens: {why}.").format(why=why) if why else "")])
    if level is None:
        return View("trust", view.title, notes=[_("Nothing to correlate: {why}.").format(why=why)])
    asked = dict(level=level, method="spearman", dimension="mean", origin=origin, dimensions=dimensions(con, dataset))
    frame, said = trust_report(con, dataset, **asked)   # its verdicts' sentences in the report's language
    if i18n.current() != i18n.EN:   # its table in English: data (in_english)
        frame = in_english(trust_report, con, dataset, **asked)[0]
    kept = frame["track"].isin(tracks) | frame["track"].eq(POOLED)
    if not kept.all():   # the pooled rows still pool every track of their skill
        view.notes.append(_("Only the chosen tracks' rows are shown; the rows of track {pooled} pool every track "
                            "of their skill in the dataset.").format(pooled=repr(POOLED)))
    frame = frame[kept].reset_index(drop=True)
    view.notes += [row.text + (f"\n{row.robust}" if row.robust else "") for row in said.itertuples()]
    view.tables.append(Table("trust", _("Trust"), frame))
    pooled = frame[frame["track"].eq(POOLED) & frame["r"].notna()]
    for skill, part in pooled.groupby("skill", sort=False):
        view.charts.append((_("{skill}, pooled: Spearman r with 95% CI").format(skill=skill), "interval",
                            part[["metric", "r", "ci_low", "ci_high"]].rename(columns={"metric": "label"})))
    return view


def defined(statistic: str, definition: str) -> str:
    """A row's definition: its own, else that of its chance-corrected statistic."""
    if isinstance(definition, str) and definition:
        return definition
    for name, text in CHANCE_DEFINITIONS.items():
        if statistic.startswith(name):
            kind = statistic[len(name):].strip("_")
            return text.format(WEIGHTS.get(kind, kind))
    return ""


def human_view(con, dataset: str, tracks: list[str]) -> View:
    agreement = per_track(lambda t: agreement_table(con, dataset, t)[0], tracks)
    agreement["definition"] = [defined(s, d) for s, d in zip(agreement["statistic"], agreement["definition"])]
    bias = per_track(lambda t: ag.annotator_bias(con, dataset, t), tracks)
    view = View("human", _("Human ratings"), notes=[
        _("As `evalcore agreement` (chance-corrected statistics, 95% bootstrap intervals over rated targets, 1000 "
          "resamples, seed 0): every row carries its statistic's definition. The second table is each annotator's "
          "ratings: how many, their mean, and the bias (their mean minus the mean of the others on the same "
          "targets).")])
    view.tables += [Table("agreement", _("Inter-annotator agreement"), agreement),
                    Table("annotators", _("Annotators' ratings"), bias)]
    if len(agreement):
        shown = agreement[agreement["value"].notna()]
        for track, part in shown.groupby("track", sort=False):
            view.charts.append((_("{track}: agreement with 95% CI").format(track=track), "interval", part.assign(
                label=part["dimension"] + " " + part["level"] + " " + part["statistic"] + " " + part["annotators"])
                [["label", "value", "ci_low", "ci_high"]].rename(columns={"value": "r"})))
    return view


def gather(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None = None,
           views: tuple[str, ...] = VIEWS) -> list[View]:
    """The report's views, in `views`' order (each one of VIEWS)."""
    bad = [v for v in views if v not in VIEWS]
    if bad:
        raise ValueError(f"no view {bad[0]!r}; views: " + ", ".join(VIEWS))
    chosen = chosen_tracks(con, dataset, tracks)
    level, origin, why = where_to_correlate(con, dataset)
    make = {"trust": lambda: trust_view(con, dataset, chosen, level, origin, why),
            "leaderboard": lambda: leaderboard_view(con, dataset, chosen),
            "correlations": lambda: correlations_view(con, dataset, chosen, level, origin, why),
            "human": lambda: human_view(con, dataset, chosen)}
    return [make[v]() for v in dict.fromkeys(views)]


def canonical(tables: list[Table]) -> str:
    """The tables as the checksum reads them: each table's name on a line, then its CSV (header, then rows
    sorted as text so the order a function returns them in does not matter; numbers to 12 significant digits)."""
    out = []
    for t in sorted(tables, key=lambda t: t.name):
        # 12 significant digits: a sum taken in another order by a multi-threaded BLAS differs in the 16th
        lines = t.frame.to_csv(index=False, lineterminator="\n", float_format="%.12g").splitlines()
        out.append("\n".join([f"# {t.name}", lines[0] if lines else "", *sorted(lines[1:])]) + "\n")
    return "".join(out)


def checksum(tables: list[Table]) -> str:
    return hashlib.sha256(canonical(tables).encode("utf-8")).hexdigest()


def build(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None = None,
          views: tuple[str, ...] = VIEWS, now: datetime | None = None, source: tuple[str, dict] | None = None,
          lang: str | None = i18n.EN) -> str:
    """The report as one HTML document (plotly.js inlined: it opens from a file with no network). `source`, for
    a report of a record: (the record's file name, its manifest), named in the facts instead of the store's
    revision. `lang`: the language of its words (headings, captions, notes; English by default, as `evalcore
    report` makes it; a page passes its viewer's, i18n.current(), since it runs on a thread of its own): its data,
    and so its checksum, are the same in every language."""
    before = i18n.current()
    i18n.use(lang)
    try:
        return _build(con, dataset, tracks, views, now, source)
    finally:
        i18n.use(before)


def _build(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None, views: tuple[str, ...],
           now: datetime | None, source: tuple[str, dict] | None) -> str:
    shown = gather(con, dataset, tracks, views)
    tables = [t for v in shown for t in v.tables]
    facts = [(_("dataset"), dataset), (_("tracks"), ", ".join(chosen_tracks(con, dataset, tracks))),
             (_("evalcore version"), __version__),
             (_("made (UTC)"), (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M:%S"))]
    if source is None:
        facts.insert(3, (_("store revision"), str(revision(con))))
    else:
        name, manifest = source
        facts.append((_("record"), _("{name}, content_sha256 {sha}, made {made} by evalcore {version}").format(
            name=name, sha=manifest['content_sha256'], made=manifest['created_at'], version=manifest['evalcore'])))
    facts += [(_("data checksum"), checksum(tables)), (_("the checksum covers"), _(CHECKSUM_COVERS))]
    if source is not None:
        facts.append((_("the record's checksum"), _(RECORD_COVERS)))
    return report_html.page(_("evalcore report: {dataset}").format(dataset=dataset), facts, shown, canonical(tables))


def checked_record(path: str | Path, folder: Path) -> dict:
    """The manifest of the record at `path`, its tables extracted under `folder`, each table's checksum and the
    content_sha256 recomputed and equal to the manifest's; ImportRefused naming the file (and the table) when it
    is not a record or does not match its manifest."""
    return record_check.checked(path, folder)   # the one check `record import` makes too


def build_from_record(path: str | Path, tracks: list[str] | None = None, views: tuple[str, ...] = VIEWS,
                      dataset: str | None = None, now: datetime | None = None, lang: str | None = i18n.EN) -> str:
    """The report of the evaluation record at `path`: checked against its manifest, loaded (record_load.load) into
    a scratch store in a temporary folder, removed afterwards, and reported as build() reports a store. `dataset`,
    when given, must be the record's; `lang` as build's (a refusal stays English: the CLI's)."""
    with tempfile.TemporaryDirectory(prefix="evalcore-report-") as tmp:
        manifest = checked_record(path, Path(tmp) / "record")
        if dataset is not None and dataset != manifest["dataset"]:
            raise ImportRefused([Problem(str(path), "manifest.json", "dataset", f"the dataset --dataset names "
                                         f"({dataset!r})", f"{manifest['dataset']!r} (leave --dataset out: the "
                                         "record names its dataset)")])
        con = connect(Path(tmp) / "scratch.duckdb")
        try:
            try:
                load(con, path, checksums=False)   # checked above
            except duckdb.Error as exc:   # tables true to their checksums, yet not the columns a record holds
                raise ImportRefused([Problem(str(path), "", "", "tables a record import reads",
                                             str(exc).splitlines()[0])]) from None
            return build(con, manifest["dataset"], tracks, views, now, source=(Path(path).name, manifest), lang=lang)
        finally:
            con.close()
