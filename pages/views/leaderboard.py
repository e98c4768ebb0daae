"""Leaderboard: models ranked per track by a chosen column, with the rank's 95% interval, coverage,
and where one model stands on every skill."""
import pandas as pd
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.core.words import count
from evalcore.metrics.registry import FLAVORS
from evalcore.pagedata import boards, calibration, catalog, formatting, trust_tables
from evalcore.pagedata import endpoints as endpoint_views
from pages.kit.charts import rank_chart
from pages.kit.runtime import data, shared
from pages.kit.state import choose_many, pick_track, publish, start
from pages.kit.text import md_escape, md_message
from pages.kit.widgets import download, expander, grid, select, sort_table

CALIBRATED_SHOWN = [calibration.CALIBRATED, calibration.COUNTS, calibration.PEOPLE_ONLY]
CALIBRATED_WIDTH = {calibration.CALIBRATED: 150, calibration.COUNTS: 104, calibration.PEOPLE_ONLY: 150}
CALIBRATED_HELP = {   # shown through _() where the column is configured
    calibration.CALIBRATED: N_("The model's mean on the chosen human dimension from the predictor's values on all its "
                            "responses, calibrated by people's ratings of a random subset (PPI++), with its 95% "
                            "interval: see the caption under the table"),
    calibration.COUNTS: N_("responses people rated / responses the predictor valued"),
    calibration.PEOPLE_ONLY: N_("the people's ratings alone (the same ratings, no predictor), with its 95% interval")}
# the headers this page's tables show (grid() translates each through _()); the calibrated ones: calibration's
HEADERS = (N_("track"), N_("rank"), N_("rank 95% CI"), N_("model"), N_("coverage"), N_("note"), N_("skill"),
           N_("ranked"), N_("value"), N_("column"), N_("origin"), N_("models"), N_("why blank"), N_("total"),
           N_("responses"), N_("stored"), N_("length"), N_("cut"))   # the last three: the generated models' table
ORIGINS = (N_("computed"), N_("published"))   # the Values radio's options: ids in the link, shown through _()
FLAVOR_NAMES = (N_("default"),)   # the Flavor box's options (ids in the link), shown through _(); msde is a name


def calibrated_column(dims: list[str]) -> tuple:
    """The optional calibrated column's controls, kept in the link (cal_dim, cal_by, cal_random): a human dimension,
    a judge or metric with per-response values here, and whether imported ratings count as a random sample. Nothing
    is computed until both are chosen, so the page's first view is the board alone. (the column's rows by track
    and model, or None; the estimate, or None; the refusal's sentence, or None)"""
    none = calibration.NONE
    shown_none = calibration.shown_none   # "(none)" in the viewer's language; the rest are names
    dim = vs.one("cal_dim", [none, *dims], none, unavailable=_("has no people's ratings on this board"))
    with expander(vs, values, "calibrated", _("Calibrated column: a judge or metric calibrated by people's ratings")):
        st.caption(_("A model's mean on a human dimension from a judge's or metric's values on all its responses, "
                   "calibrated by people's ratings of a random subset of them (prediction-powered inference, "
                   "PPI++): unbiased, and narrower than people alone where the predictor follows them."))
        c1, c2 = st.columns(2)
        with c1:
            dim = select(_("Human dimension"), [none, *dims], dim, key=f"lb-cal-dim-{dataset}-{track}",
                         format_func=shown_none)
        by, assume = none, False
        if dim != none:
            options = [none, *data(calibration.predictors, dataset, track)]
            by = vs.one("cal_by", options, none, unavailable=_("has no per-response values on this track"))
            with c2:
                by = select(_("Predictor (a judge or metric)"), options, by, key=f"lb-cal-by-{dataset}-{track}",
                            format_func=shown_none,
                            help=_("Judges and metrics with a value on each response here (scored on the Upload "
                                   "page)"))
            assume = vs.one("cal_random", ["no", "yes"], "no") == "yes"
            assume = st.checkbox(_(calibration.RANDOM_BOX), value=assume, key=f"lb-cal-random-{dataset}",
                                 help=_("Off: only ratings from a rating task that sampled its units at random count. "
                                      "On: ratings imported from a file count as a uniform random sample of each "
                                      "model's responses; every figure then says so, and holds only if they are."))
    values.update(cal_dim=dim if dim != none else None, cal_by=by if by != none else None,
                  cal_random="yes" if assume and dim != none else None)
    if dim == none or by == none:
        return None, None, None
    got = data(calibration.calibrated, dataset, dim, by, track, assume)
    if "refused" in got:
        st.warning(md_message(_("No calibrated column: {reason}").format(reason=got['refused'])))
        return None, None, got["refused"]
    return calibration.table(got["rows"]), got, None


con, vs = start(_("Leaderboard"))
metrics_here = shared(catalog.metrics_of)   # built-in and this store's imported metrics (one object, read only)
# opens where a board has rows to show (not on a chat task's dataset whose endpoints each answered a part)
dataset, track, (__, __, c3) = pick_track(con, vs, "lb", skills=True, shows=data(boards.board_tracks))
flavor = vs.one("flavor", list(FLAVORS), "default")
with c3:
    flavor = select(_("Flavor"), list(FLAVORS), flavor, key="lb-flavor", format_func=_,
                    help=_("default: char tokens; msde: the paper's script"))
values = {"dataset": dataset, "track": track, "flavor": flavor}
columns = data(boards.board_columns, dataset, track, flavor) if track else []

if not columns:
    st.warning(_("Nothing to show for this track yet: upload a model's responses on the Upload page (its scoring "
                 "job computes the metrics)."))
else:
    options, default = data(boards.rank_choices, dataset, track, tuple(columns))
    rank_by = vs.one("rank_by", options, default, unavailable=_("is not scored on this track"), known=metrics_here)
    partial = vs.one("partial", ["no", "yes"], "no") == "yes"
    r1, r2 = st.columns(2)
    r3 = st.container()  # the toggle on a line of its own: beside the others a narrow window cuts its label
    with r1:
        rank_by = select(_("Rank by"), options, rank_by, key=f"lb-rank-{dataset}-{track}", format_func=boards.shown_choice,
                         help=_("Models are ranked within each track; the interval resamples the track's items "
                                "({n} paired bootstrap resamples, seed 0).").format(n=i18n.number(1000)))
    by = None if rank_by == boards.OFFICIAL else rank_by
    with r3:
        partial = st.toggle(_("Show partial submissions"), value=partial, key=f"lb-partial-{dataset}-{track}",
                            help=_("Submissions that answer only part of a track: hidden and unranked by default; "
                                   "shown, ranked and marked 'partial' when on."))
    board = data(boards.board, dataset, track, flavor, rank_by=by, partial=partial)
    origins = [o for o in ("computed", "published") if o in set(board["origin"])]
    origin = vs.one("origin", origins, origins[0])
    with r2:
        origin = st.radio(_("Values"), origins, index=origins.index(origin), horizontal=True, key=f"lb-origin-{dataset}",
                          format_func=_,
                          help=_("computed: by `evalcore score` from the stored responses; published: the source's "
                                 "own tables. Ranked and highlighted separately."))
    # what equals its default stays out of the link: on another track it is that track's own (evalcore.pagedata.share)
    values.update(rank_by=rank_by if rank_by != default else None, partial="yes" if partial else None,
                  origin=origin if origin != origins[0] else None)
    mine = board[board["origin"] == origin]
    hidden = mine[(mine["coverage"] < 1) & ~partial] if origin == "computed" else mine.iloc[0:0]
    mine = mine.drop(hidden.index)
    metrics, dims = boards.split_columns(data(catalog.rated_dimensions, dataset), board)
    models = sorted(mine["model"].unique())
    # every model and every column with values, unless the user left some out (see choose_many)
    chosen = choose_many(vs, values, "models", _("Models"), models, key="lb-models")
    filled = [c for c in metrics + dims if mine[c].notna().any()]  # columns with a value for this origin
    shown_metrics = choose_many(vs, values, "metrics", _("Columns"), metrics + dims, filled, key="lb-cols",
                                unavailable=_("is not scored on this track"), known=metrics_here)
    table = boards.board_table(mine[mine["model"].isin(chosen)], shown_metrics)
    calibrated, estimated, __ = calibrated_column(dims)
    table = sort_table(vs, values, table, "lb", columns=["rank", "model", "coverage", *shown_metrics])
    best = boards.best_rows(table, metrics_here)
    formats = formatting.column_formats(table, shown_metrics)
    why = boards.blank_reasons(table.assign(origin=origin), shown_metrics, dataset, metrics_here)
    shown = table if calibrated is None else table.join(calibrated.set_index(["track", "model"])[CALIBRATED_SHOWN],
                                                              on=["track", "model"])
    styled = shown.style.format({c: (lambda v, f=f: "" if pd.isna(v) else f % v) for c, f in formats.items()}
                                | {"coverage": formatting.percent}, na_rep="").apply(
        lambda col: ["font-weight: bold; background-color: #fde68a" if i in best.get(col.name, set()) else ""
                     for i in col.index], subset=shown_metrics)
    if len(hidden):
        st.caption(_("{hidden} hidden (they answer only part of the track); 'Show partial submissions' lists and "
                     "ranks them, marked.").format(hidden=count(len(hidden), N_("partial submission"))))
    # On screen: rank and model (pinned), then the value columns, as narrow as their headers allow, so a
    # 1400-px window shows a track's metrics without scrolling; the interval, coverage and counts after
    # them, and only where some row has one (published rows have none). The track's name is in the box
    # above: its column only when a skill's tracks are shown together.
    after = [c for c in table.columns if c not in ("track", "rank", "model", *shown_metrics)
             and table[c].map(lambda v: not pd.isna(v) and v != "").any()]
    # the calibrated estimate, when asked for, first after the model: in view without scrolling past a track's
    # metrics (the table itself, downloaded and in LaTeX, stays the board's: the calibrated figures have their own
    # download below)
    cal_columns = CALIBRATED_SHOWN if calibrated is not None else []
    order = ((["track"] if table["track"].nunique() > 1 else []) + ["rank", "model", *cal_columns, *shown_metrics,
                                                                     *after])
    widths = {c: int(max(64, 7.5 * len(c) + 26)) for c in shown_metrics}
    # more than a 1400-px window shows (the pages are listed along the top: the table has about 1,240 px)
    wide = sum(widths.values()) + 190 + 70 * len(after) + 120 * len(cal_columns) > 1240
    ranked_among = (_("Ranked by {column} among computed rows; best value per column in bold.") if origin == "computed"
                    else _("Ranked by {column} among published rows; best value per column in bold."))
    st.caption((" " if i18n.current() == i18n.EN else "").join([ranked_among.format(column=md_escape(boards.shown_choice(rank_by))),
                         _("Blank cells: hover a column header for why.")]
                        + ([_("{n} value columns: scroll the table sideways (rank and model stay in place), or pick "
                              "fewer under Columns.").format(n=i18n.number(len(shown_metrics)))] if wide else [])
                        + ([_("Published rows have no coverage, response count or rank interval.")]
                           if origin == "published" else [])))

    blank = {}   # column -> why its blank cells are blank
    for r in why.to_dict("records"):
        blank.setdefault(r["column"], []).append(f"{r['models']}: {r['why blank']}")

    def tip(col: str) -> str:
        lines = blank.get(col)
        return catalog.describe(col, metrics_here) + ("\n\n" + _("Blank: {why}").format(why=md_escape("; ".join(lines)))
                                                      if lines else "")

    config = {c: st.column_config.Column(c, help=tip(c), width=widths[c]) for c in shown_metrics}
    config["rank"] = st.column_config.Column(pinned=True, width=56)
    config["model"] = st.column_config.Column(pinned=True)
    config["rank 95% CI"] = st.column_config.Column(help=_("2.5th-97.5th percentile of the rank over {n} paired "
                                                      "bootstrap resamples of the items (seed 0); blank where it "
                                                      "cannot be made: see 'note'").format(n=i18n.number(1000)))
    config["coverage"] = st.column_config.Column(help=_("share of the track's items this model answered; blank "
                                                   "for published rows (a paper's table says nothing of it)"), width=82)
    config.update({c: st.column_config.Column(help=_(CALIBRATED_HELP[c]), width=CALIBRATED_WIDTH[c]) for c in cal_columns})
    grid(styled, width="stretch", column_config=config, column_order=order)
    if estimated is not None:   # what every calibrated figure rests on, in words, under the table
        st.caption(md_escape(calibration.caption(estimated)))
        for note in calibration.notes(calibrated):
            st.caption(md_escape(note))
    d1, d2 = st.columns(2)
    with d1:
        download(table, f"leaderboard-{dataset}-{track}-{origin}")
        if estimated is not None:
            download(estimated["rows"], f"calibrated-{dataset}-{track}-{estimated['dimension']}",
                     _("Download the calibrated estimates (CSV)"))
    with d2:
        st.download_button(_("Download LaTeX"), boards.to_latex(table, known=metrics_here, best=best), file_name="leaderboard.tex",
                           key="dl-latex")
    generated = data(endpoint_views.generated, dataset, None if track.startswith(catalog.SKILL_PREFIX) else track)
    if len(generated):   # how each generated model was asked, beside the board
        st.caption(_("Generated by an endpoint: each model's generation signature (served model and host, templates "
                     "and their hashes, sampling, seed, sample, version), and how many of its stored replies carry a "
                     "reason: empty, cut by the length limit, refused by the server, cut by the client's limits."))
        grid(generated.drop(columns=["signature"]), width="stretch",
             column_config={"model": st.column_config.Column(pinned=True),
                            "total": st.column_config.Column(help=_("the track's items; blank for a sample"))})
        for row in generated.itertuples():   # whole and wrapped: a table's cell would cut it
            st.caption(md_escape(f"{row.model}: {row.signature}"))
    if len(why):
        with expander(vs, values, "why", _("Why cells are blank ({n})").format(n=i18n.number(len(why)))):
            grid(why, width="stretch")
    with expander(vs, values, "signatures", _("Signatures: what each computed column is")):
        grid(data(boards.signatures, dataset, track, flavor), width="stretch")
    missing = catalog.missing_metrics(list(board.columns), metrics_here)
    if len(missing):
        with expander(vs, values, "missing", _("Metrics without a column here ({n})").format(n=i18n.number(len(missing)))):
            grid(missing, width="stretch")

    st.subheader(_("Across skills: where one model stands"))
    all_models = data(catalog.models_ranked, dataset)
    model = vs.one("model", all_models, all_models[0] if all_models else None)
    every, first = data(boards.across_choices, dataset, flavor)
    across = vs.one("across_by", every, first, unavailable=_("is not scored on this dataset"), known=metrics_here)
    if not all_models or not every:  # say why instead of two empty boxes
        st.caption(md_escape(
            (_("Nothing to show here: this ranks one model on every track by its computed values, and {dataset} holds "
               "no responses of its own (only published tables).") if not all_models else
             _("Nothing to show here: this ranks one model on every track by its computed values, and {dataset} has "
               "no computed values yet (the Upload page's 'Score what is missing on this track' computes them)."))
            .format(dataset=dataset)))
        model = across = None
    else:
        a1, a2 = st.columns([2, 1])
        with a1:
            model = select(_("Model"), all_models, model, key=f"lb-model-{dataset}",
                           help=_("Computed values; newest model first."))
        with a2:
            across = select(_("Rank across skills by"), every, across, key=f"lb-across-{dataset}",
                            format_func=boards.shown_choice,
                            help=_("Default: the column with computed values on the most tracks."))
    values.update(model=model if all_models and model != all_models[0] else None,
                  across_by=across if across != first else None)
    if model and across:
        # every track ranked once for all models: choosing another model only picks its rows
        everywhere = data(boards.ranked_everywhere, dataset, across, flavor, partial=partial)
        ranks = data(boards.model_ranks, dataset, model, across, flavor, partial=partial, ranked=everywhere)
        # a skill of MSDE's taxonomy in the viewer's words (as Metric trust names it); a lab's own skill as it is
        ranks = ranks.assign(skill=ranks["skill"].map(lambda s: trust_tables.skill_name(s) if isinstance(s, str) else s))
        if ranks["rank"].notna().any():
            rank_chart(ranks, key="model-ranks", title=_("rank by {column}").format(column=boards.shown_choice(across)))
        shown = ranks.assign(**{"rank 95% CI": boards.rank_interval(ranks)})
        shown = shown[["track", "skill", "rank", "rank 95% CI", "ranked", "value", "coverage", "note"]]
        spec = formatting.sensible_format(shown["value"])
        rank_by = across
        grid(shown.style.format({"value": lambda v: "" if pd.isna(v) else spec % v,
                                 "coverage": formatting.percent}, na_rep=""),
             width="stretch",
             column_config={"ranked": st.column_config.Column(help=_("models ranked on this track")),
                            "value": st.column_config.Column(rank_by)})

publish("leaderboard", values, vs.notices)
