"""Human evaluation: annotator agreement with bootstrap CIs (kappas and alpha; correlations as dialogue papers
report them), score distributions, annotator bias."""
import streamlit as st

from evalcore.analysis.humans import AGGREGATES
from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.pagedata import ratings
from pages.kit.charts import bar
from pages.kit.runtime import data
from pages.kit.state import pick_track, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import download, expander, grid, select, unless_empty

# The tables' headers (grid() shows each through the catalog) and the chart's fields
HEADERS = (N_("statistic"), N_("annotators"), N_("value"), N_("ci_low"), N_("ci_high"), N_("n_items"),
           N_("n_annotators"), N_("note"), N_("level"), N_("annotator"), N_("n"), N_("mean"), N_("bias"),
           N_("model"), N_("score"), N_("share"))
# A correlation's level as the table shows it (the view and its download keep the id)
LEVELS = {"turn": N_("turn"), "dialogue": N_("dialogue"), "system": N_("system")}
# evalcore.analysis.agreement_corr.DEFINITIONS, word for word: the caption shows a definition through the catalog
DEFINITIONS = (
    N_("per pair of annotators, r over the targets both rated; mean over pairs (USR, ACL 2020)"),
    N_("per annotator, r with the mean of the others on the same targets; mean over annotators (the judge "
       "audit's human ceiling)"),
    N_("every annotation against the mean of all annotations of its target, itself included, pooled "
       "(FED, SIGDIAL 2020, Table 3)"),
)


def leveled(frame):
    """A table as the page shows it: its levels in the viewer's language (the view and its download keep the id)."""
    return frame.assign(level=frame["level"].map(lambda v: _(LEVELS[v]) if v in LEVELS else v))


con, vs = start(_("Human evaluation"))
rated = data(ratings.multi_rated_tracks)
dataset, track, __ = pick_track(con, vs, "hu", skills=False, shows=rated)
values = {"dataset": dataset, "track": track}
dist = data(ratings.score_distribution, dataset, track) if track else None
if dist is None or dist.empty:
    others = ", ".join(f"{d} / {t}" for d, t in rated) or _("none in this store")
    if track:
        st.warning(md_escape(_("{track} has no human ratings of single responses or dialogues, so there is no "
                               "agreement to show. Tracks rated by several annotators: {others}.").format(
            track=track, others=others)))
    else:
        st.warning(md_escape(_("This dataset has no human ratings of single responses or dialogues, so there is no "
                               "agreement to show. Tracks rated by several annotators: {others}.").format(
            others=others)))
else:
    dims = sorted(dist["dimension"].unique())
    dim = vs.one("dimension", dims, dims[0])
    with st.columns([1, 2])[0]:  # a row of its own: beside the track an 800-px window cut it to "Engag"
        dim = select(_("Dimension"), dims, dim, key=f"hu-dim-{track}")
    values["dimension"] = dim
    st.caption(_("Agreement between annotators on the ratings of this track. Elsewhere (leaderboard, correlations) "
                 "several annotators' scores are combined by a rule: {rules} "
                 "(pair-filter: keep a target whose scores differ by at most 1 and average them).").format(
        rules=", ".join(AGGREGATES)))
    # Point estimates first (fast); the bootstrap CIs (seconds on a cold cache) fill the same place
    # once the rest of the page is drawn, and are cached until the store changes.
    table = data(ratings.agreement_table, dataset, track, 0)
    table = table[table["dimension"] == dim] if not table.empty else table

    st.subheader(_("Agreement"))
    slot = st.empty()

    def show_agreement(table, note: str, final: bool) -> None:
        table = unless_empty(table, "note")   # the column says why a value is withheld: only then
        with slot.container():
            st.caption(note)
            numbers = {k: st.column_config.NumberColumn(format="%.3f") for k in ("value", "ci_low", "ci_high")}
            pairs = table["statistic"].str.startswith("cohen_kappa")
            shown = leveled(table.drop(columns=["track", "dimension"]))   # the download keeps the ids
            grid(shown[~pairs], width="stretch", column_config=numbers)
            n_pairs = table.loc[pairs, "annotators"].nunique()
            if final:  # widgets once per run: the first, quick table has none
                title = _("Cohen's kappa per annotator pair ({n} pairs who rated the same targets)").format(
                    n=i18n.number(n_pairs))
                with expander(vs, values, "pairs", title):
                    grid(shown[pairs], width="stretch", column_config=numbers)
                download(table, f"agreement-{dataset}-{track}-{dim}")

    if table.empty:
        others = ", ".join(f"{d} / {t}" for d, t in rated) or _("none in this store")
        slot.warning(_("No {dim} rating in this track has a second annotator, so there is no agreement to show. "
                       "Tracks with several annotators: {others}.").format(dim=md_escape(dim),
                                                                         others=md_escape(others)))
    else:
        show_agreement(table, _("Computing 95% bootstrap intervals (1,000 resamples)..."), final=False)

    st.subheader(_("Correlation between annotators, as papers report it"))
    # the options are ids (in links); the words are shown through the catalog (format_func)
    definitions = {"corr_pairwise": N_("pairwise (USR)"), "corr_loo": N_("each vs the others' mean (ceiling)"),
                   "corr_item_mean": N_("each vs its target's mean (FED)")}
    raters = {"ids": N_("annotators (people)"), "slots": N_("columns as released")}
    rules = {"none": N_("none"), "fed": N_("FED's rule")}
    chosen = {"corr": vs.one("corr", list(definitions), "corr_pairwise"), "raters": vs.one("raters", list(raters), "ids"),
              "outliers": vs.one("outliers", list(rules), "none")}
    columns = st.columns(3)
    for column, (name, label, options) in zip(columns, (("corr", _("Definition"), definitions),
                                                        ("raters", _("Raters"), raters),
                                                        ("outliers", _("Outliers removed"), rules))):
        with column:
            chosen[name] = st.selectbox(label, list(options), index=list(options).index(chosen[name]),
                                        format_func=lambda k, options=options: _(options[k]),
                                        key=f"hu-{name}-{track}")
    values.update({k: None if v == d else v for (k, v), d in zip(chosen.items(), ("corr_pairwise", "ids", "none"))})
    corr = data(ratings.correlation_agreement, dataset, track, dim, chosen["corr"], chosen["raters"],
                chosen["outliers"])
    if corr.empty:
        st.caption(md_escape(_("No {dim} target in this track is rated by two or more annotators.").format(dim=dim)))
    else:
        definition = corr["definition"].iloc[0]
        definition = _(definition) if definition else definition   # _("") is the catalog's header
        st.caption(md_escape(_("{definition}; over {n} {raters}. Columns as released: the k-th rating stored for "
                               "each target (USR's three lists are positions, not people). 95% percentile bootstrap "
                               "over targets (1,000 resamples, seed 0); more than {share} of resamples without a value "
                               "withholds the interval. Which paper means which figure: docs, \"Agreement: which "
                               "figure a paper means\".").format(
            definition=f"{definition[:1].upper()}{definition[1:]}", n=i18n.number(int(corr["n_annotators"].max())),
            raters=_(raters[chosen["raters"]]), share=i18n.percent(0.05))))
        shown = corr[["level", "statistic", "value", "ci_low", "ci_high", "n_items", "note"]]
        shown = leveled(shown)
        grid(unless_empty(shown, "note"), width="stretch",
             column_config={k: st.column_config.NumberColumn(format="%.4f") for k in ("value", "ci_low", "ci_high")})
        download(corr, f"correlation-agreement-{dataset}-{track}-{dim}")

    st.subheader(_("Score distributions"))
    shown = dist[dist["dimension"] == dim]
    bar(shown.assign(score=shown["score"].map(lambda v: f"{v:g}")), x="score", y="share", color="model",
        y_title=_("share of ratings"), tooltip=["model", "score", "n", "share"], key="distribution", height=300)

    if not table.empty:
        st.subheader(_("Annotators"))
        bias = data(ratings.annotator_bias, dataset, track)
        bias = bias[bias["dimension"] == dim]
        st.caption(_("Bias: an annotator's mean minus the mean of all ratings of the same targets."))
        bar(bias, x="annotator", y="bias", tooltip=["annotator", "n", "mean", "bias"], key="bias", height=280)
        grid(bias.drop(columns=["track", "dimension"]),
             column_config={k: st.column_config.NumberColumn(format="%.3f") for k in ("mean", "bias")})

    if not table.empty:
        full = data(ratings.agreement_table, dataset, track)
        show_agreement(full[full["dimension"] == dim], _("95% percentile bootstrap intervals over rated targets "
                       "(1,000 resamples, seed 0). Fleiss' kappa over targets rated by the most common number of "
                       "annotators; Krippendorff's alpha over all."), final=True)

publish("human", values, vs.notices)
