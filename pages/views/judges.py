"""Judge audit: may an LLM judge stand in for the lab's annotators, on which skill? Its agreement with people
beside people's agreement with each other, its position and length biases, its length-controlled win rates,
and how much it moved when its model or prompt changed."""
import streamlit as st

from evalcore.core.i18n import N_, _
from evalcore.pagedata import audits, calibration, catalog, ratings
from pages.kit import lang
from pages.kit.charts import bar
from pages.kit.runtime import data
from pages.kit.state import publish, start
from pages.kit.text import md_escape, md_message
from pages.kit.widgets import download, grid, select

NUMBERS = {"format": "%.3f"}
# the audit's tables' headers (grid() shows each through the catalog; the frames and downloads keep them)
HEADERS = (N_("track"), N_("skill"), N_("judge"), N_("asked"), N_("signature"), N_("dimension"), N_("level"),
           N_("verdict"), N_("judge (leave-one-out)"), N_("human ceiling (leave-one-out)"),
           N_("gap (judge - ceiling)"), N_("gap_ci_low"), N_("gap_ci_high"), N_("judge vs people's mean"),
           N_("gap_note"), N_("statistic"), N_("who"), N_("value"), N_("ci_low"), N_("ci_high"), N_("n"), N_("note"),
           N_("spearman"), N_("annotators"), N_("model"), N_("lowest annotator"), N_("highest annotator"),
           N_("targets"), N_("baseline"), N_("samples"), N_("items"), N_("pairs"), N_("decided"), N_("mean"),
           N_("rank"), N_("asked_a"), N_("asked_b"), N_("signature_a"), N_("signature_b"))
# words in the audit's cells (who a statistic is of, a level), shown in the viewer's language; the frames keep them
CELLS = ("who", "level")
WORDS = (N_("judge vs each annotator"), N_("human ceiling (pairs)"), N_("turn"), N_("dialogue"), N_("system"))
# the parts of the audit as their download buttons name them
PARTS = {"agreement": N_("Download agreement (CSV)"), "pairwise": N_("Download pairwise (CSV)"),
         "length-controlled": N_("Download length-controlled (CSV)"), "drift": N_("Download drift (CSV)"),
         "uncertainty": N_("Download uncertainty (CSV)")}


def show(frame) -> None:
    """A table of the audit with the long identifying columns (track, signature) last: the numbers first."""
    last = [c for c in frame.columns if c == "track" or c.startswith("signature")]
    frame = frame[[c for c in frame.columns if c not in last] + last]
    frame = frame.assign(**{c: frame[c].map(lambda v: _(v) if isinstance(v, str) and v else v)
                            for c in CELLS if c in frame.columns})
    grid(frame, width="stretch", column_config={c: st.column_config.NumberColumn(**NUMBERS)
                                                for c in frame.columns if frame[c].dtype.kind == "f"})


def table(part: str, caption: str) -> None:
    frame = data(audits.judge_audit_part, dataset, part)
    st.caption(caption)
    if frame.empty:
        st.caption(md_message(data(audits.nothing_to_audit, dataset, part)))
        return
    show(frame)
    download(frame, f"judge-audit-{part}-{dataset}",
             _(PARTS[part]) if part in PARTS else _("Download {part} (CSV)").format(part=part))


con, vs = start(_("Judge audit"))
judged = data(audits.judged_datasets)
datasets = data(catalog.datasets)
rated = [d for d, __ in data(ratings.multi_rated_tracks)]
dataset = vs.one("dataset", datasets, (judged or rated or datasets or [None])[0])
with st.columns([1, 2])[0]:
    dataset = select(_("Dataset"), datasets, dataset, key="ja-dataset")
values = {"dataset": dataset}
if dataset is None:
    publish("judges", values, vs.notices)
    lang.stop()   # the language switch drawn first
if dataset not in judged:
    publish("judges", values, vs.notices)
    st.info(md_message(_("{why}. Datasets with a judge: {datasets}.").format(
        why=data(audits.nothing_to_audit, dataset, "agreement"), datasets=", ".join(judged) or _("none in this store"))))
    # what can be shown without a judge: how well people agree with each other here, the bar a judge must clear
    bar_ = data(audits.human_ceiling, dataset)
    if len(bar_):
        st.subheader(_("The bar a judge must clear here"))
        st.caption(_("For each annotator, Spearman's correlation with the mean of the other annotators on the targets "
                     "both rated (responses at turn level, whole dialogues at dialogue level), averaged over "
                     "annotators; a judge audited on this dataset is set beside this number."))
        show(bar_)
    else:
        st.caption(_("No response or dialogue here is rated by two or more annotators, so there is no human ceiling "
                     "either."))
    lang.stop()   # the language switch drawn first

# ---------------------------------------------------------------- agreement beside the human ceiling
st.subheader(_("Does the judge agree with people as well as people agree with each other?"))
head = audits.judge_headline(data(audits.judge_audit_part, dataset, "agreement"))
if head.empty:
    st.caption(md_message(data(audits.nothing_to_audit, dataset, "agreement")))
else:
    judge_col, ceiling_col = "judge (leave-one-out)", "human ceiling (leave-one-out)"
    head = head.assign(dimension=head["dimension"].where(
        head["level"] == "turn", head["dimension"].map(lambda d: _("{dimension} (dialogue)").format(dimension=d))))
    long = head.melt(id_vars=["skill", "judge", "asked", "dimension"], value_vars=[judge_col, ceiling_col],
                     var_name="who", value_name="spearman")
    long["who"] = long["who"].map(_)   # the legend in the viewer's language
    long["judge"] = long["skill"] + ": " + long["judge"] + " (" + long["asked"] + ")"   # names: data
    long = long.dropna(subset=["spearman"])
    if len(long):   # one panel per judge, in one column: a second column is cut off at 800 px
        bar(long, x="dimension", y="spearman", color="who", facet="judge", key="ja-ceiling",
            y_title=_("Spearman with the others' mean"), y_domain=[-1, 1], columns=1, facet_width=360)
    else:
        st.caption(_("No response here is rated by two or more annotators: there is no human ceiling to set a judge "
                     "beside, only its correlation with the one rating (the table)."))
    st.caption(_("For each annotator, the judge's Spearman correlation with the mean of the other annotators, and "
                 "that annotator's own, on the same responses; averaged over annotators (FastChat's judge-human vs "
                 "human-human comparison). A judge at or above the ceiling agrees with people as well as they agree "
                 "with each other; below it, it does not (yet). Turn level, and dialogue level where people rated "
                 "whole dialogues (the judge's value for a dialogue: the mean of its turns'); one panel per skill and "
                 "judge."))
    show(head)
    download(head, f"judge-audit-headline-{dataset}", _("Download headline (CSV)"))
with st.expander(_("Every agreement statistic (turn and system level, Kendall, weighted kappa, CIs)")):
    table("agreement", _("Spearman and Kendall with people's mean (95% bootstrap CIs, 200 resamples); the "
                         "leave-one-out rows' interval is the range over annotators; quadratic-weighted Cohen's kappa "
                         "of the judge's values rounded to the scale, against each annotator and between annotators."))

# ---------------------------------------------------------------- pairwise judges
st.subheader(_("Pairwise judges: position and length"))
table("pairwise", _("consistency: the share of pairs whose verdict survives swapping the answers (a flipped verdict "
                    "counts as a tie); p_first: the share of single-order verdicts for the answer shown first (0.5 = "
                    "none); p_longer: among decided pairs of unequal length (characters for Chinese, words for "
                    "English), the share won by the longer answer, by the judge and by people's votes on the same "
                    "pairs; agreement with people's votes, with and without ties."))
table("length-controlled", _("AlpacaEval's length-controlled win rate against the judge's baseline (its "
                             "length_controlled_minimal GLM: logit P(win) = w_len * tanh(standardised length "
                             "difference) + w_0, fitted with cross-validated L1 logistic regression; reported at zero "
                             "length difference). length_weight > 0: the judge favours the shorter answer; < 0: the "
                             "longer. Where length alone decides the verdicts, the rate is an extrapolation and the "
                             "note says so."))

# ---------------------------------------------------------------- drift
st.subheader(_("Drift between two signatures of a judge"))
table("drift", _("The same judge under two signatures (another judge model, prompt or temperature) on the same "
                 "responses: their turn-level Spearman, and Kendall's tau between the leaderboards they induce (95% "
                 "bootstrap interval over items)."))

# ---------------------------------------------------------------- the judge's own variance
st.subheader(_("How sure is the judge? Its spread and the ranks it gives"))
table("uncertainty", _("A judge asked k times per response (scored with --judge-temperature > 0 and --judge-sample "
                       "1..k): each model's mean, judge_sd (the mean over its responses of the spread between the k "
                       "answers), its rank, and {share} rank intervals from 200 bootstrap resamples of items: over "
                       "items only, and over items and the judge's answers (each resampled response takes one of its "
                       "k answers at random), wider by what the judge's own variance adds.").format(share="95%"))

# ---------------------------------------------------------------- the judge calibrated by people
st.subheader(_("Calibrated by people: each model's mean from the judge"))
st.caption(_("The judge's values on all of a model's responses, calibrated by people's ratings of a random subset of "
             "them (prediction-powered inference, PPI++): an unbiased estimate of the model's mean on the dimension, "
             "with a {share} interval narrower than people's alone where the judge follows them (gain: the people-only "
             "interval's width over the calibrated one's).").format(share="95%"))
none = calibration.NONE


def shown(value: str) -> str:
    """An option as shown: no choice in the viewer's language, a name (a dimension, a judge) as it is."""
    return _(value) if value == none else value


dims = data(calibration.response_dimensions, dataset)
judges = data(calibration.judges_scored, dataset)
dim = vs.one("cal_dim", [none, *dims], none,
             unavailable=_("has no people's ratings of responses in {dataset}").format(dataset=dataset))
judge = vs.one("cal_by", [none, *judges], none,
               unavailable=_("has no per-response values in {dataset}").format(dataset=dataset))
assume = vs.one("cal_random", ["no", "yes"], "no") == "yes"
c1, c2 = st.columns(2)
with c1:
    dim = select(_("Human dimension"), [none, *dims], dim, key=f"ja-cal-dim-{dataset}",
                 format_func=shown, empty=_("people rated no single response here"))
with c2:
    judge = select(_("Judge"), [none, *judges], judge, key=f"ja-cal-judge-{dataset}",
                   format_func=shown, empty=_("no judge has a value on each response here"))
assume = st.checkbox(_(calibration.RANDOM_BOX), value=assume, key=f"ja-cal-random-{dataset}",
                     help=_("Off: only ratings from a rating task that sampled its units at random count. On: "
                            "ratings imported from a file count as a uniform random sample of each model's "
                            "responses; every figure then says so, and holds only if they are."))
values.update(cal_dim=dim if dim not in (none, None) else None, cal_by=judge if judge not in (none, None) else None,
              cal_random="yes" if assume else None)
if dim not in (none, None) and judge not in (none, None):
    got = data(calibration.calibrated, dataset, dim, judge, None, assume)
    if "refused" in got:
        st.warning(md_message(_("No calibrated estimate: {why}").format(why=got["refused"])))
    else:
        shown = calibration.table(got["rows"])
        grid(shown.drop(columns=["sampling", "note"]), width="stretch",
             column_config={"model": st.column_config.Column(pinned=True, width="medium"),
                            calibration.GAIN: st.column_config.NumberColumn(format="%.2f", help=_(
                                "people-only width / calibrated width: above 1, the judge narrows the interval")),
                            calibration.ANYTIME: st.column_config.Column(help=_(
                                "a confidence sequence: valid however often it is looked at"))})
        for note in calibration.notes(shown):
            st.caption(md_escape(note))
        st.caption(md_escape(calibration.caption(got)))
        download(got["rows"], f"calibrated-{dataset}-{dim}-{judge}", _("Download the calibrated estimates (CSV)"))
publish("judges", values, vs.notices)
