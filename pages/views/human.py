"""Human evaluation: annotator agreement with bootstrap CIs (kappas and alpha; correlations as dialogue papers
report them), score distributions, annotator bias."""
import streamlit as st

from evalcore.analysis.humans import AGGREGATES
from evalcore.pagedata import ratings
from pages.kit.charts import bar
from pages.kit.runtime import data
from pages.kit.state import pick_track, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import download, expander, grid, select, unless_empty

con, vs = start("Human evaluation")
rated = data(ratings.multi_rated_tracks)
dataset, track, _ = pick_track(con, vs, "hu", skills=False, shows=rated)
values = {"dataset": dataset, "track": track}
dist = data(ratings.score_distribution, dataset, track) if track else None
if dist is None or dist.empty:
    others = ", ".join(f"{d} / {t}" for d, t in rated) or "none in this store"
    st.warning(md_escape(f"{track or 'This dataset'} has no human ratings of single responses or dialogues, so "
                         f"there is no agreement to show. Tracks rated by several annotators: {others}."))
else:
    dims = sorted(dist["dimension"].unique())
    dim = vs.one("dimension", dims, dims[0])
    with st.columns([1, 2])[0]:  # a row of its own: beside the track an 800-px window cut it to "Engag"
        dim = select("Dimension", dims, dim, key=f"hu-dim-{track}")
    values["dimension"] = dim
    st.caption("Agreement between annotators on the ratings of this track. Elsewhere (leaderboard, correlations) "
               f"several annotators' scores are combined by a rule: {', '.join(AGGREGATES)} "
               "(pair-filter: keep a target whose scores differ by at most 1 and average them).")
    # Point estimates first (fast); the bootstrap CIs (seconds on a cold cache) fill the same place
    # once the rest of the page is drawn, and are cached until the store changes.
    table = data(ratings.agreement_table, dataset, track, 0)
    table = table[table["dimension"] == dim] if not table.empty else table

    st.subheader("Agreement")
    slot = st.empty()

    def show_agreement(table, note: str, final: bool) -> None:
        table = unless_empty(table, "note")   # the column says why a value is withheld: only then
        with slot.container():
            st.caption(note)
            numbers = {k: st.column_config.NumberColumn(format="%.3f") for k in ("value", "ci_low", "ci_high")}
            pairs = table["statistic"].str.startswith("cohen_kappa")
            grid(table[~pairs].drop(columns=["track", "dimension"]), width="stretch",
                         column_config=numbers)
            n_pairs = table.loc[pairs, "annotators"].nunique()
            if final:  # widgets once per run: the first, quick table has none
                title = f"Cohen's kappa per annotator pair ({n_pairs} pairs who rated the same targets)"
                with expander(vs, values, "pairs", title):
                    grid(table[pairs].drop(columns=["track", "dimension"]), width="stretch",
                                 column_config=numbers)
                download(table, f"agreement-{dataset}-{track}-{dim}")

    if table.empty:
        others = ", ".join(f"{d} / {t}" for d, t in rated) or "none in this store"
        slot.warning(f"No {md_escape(dim)} rating in this track has a second annotator, so there is no agreement to "
                     f"show. Tracks with several annotators: {md_escape(others)}.")
    else:
        show_agreement(table, "Computing 95% bootstrap intervals (1,000 resamples)...", final=False)

    st.subheader("Correlation between annotators, as papers report it")
    definitions = {"corr_pairwise": "pairwise (USR)", "corr_loo": "each vs the others' mean (ceiling)",
                   "corr_item_mean": "each vs its target's mean (FED)"}
    raters = {"ids": "annotators (people)", "slots": "columns as released"}
    rules = {"none": "none", "fed": "FED's rule"}
    chosen = {"corr": vs.one("corr", list(definitions), "corr_pairwise"), "raters": vs.one("raters", list(raters), "ids"),
              "outliers": vs.one("outliers", list(rules), "none")}
    columns = st.columns(3)
    for column, (name, label, options) in zip(columns, (("corr", "Definition", definitions),
                                                        ("raters", "Raters", raters),
                                                        ("outliers", "Outliers removed", rules))):
        with column:
            chosen[name] = st.selectbox(label, list(options), index=list(options).index(chosen[name]),
                                        format_func=options.get, key=f"hu-{name}-{track}")
    values.update({k: None if v == d else v for (k, v), d in zip(chosen.items(), ("corr_pairwise", "ids", "none"))})
    corr = data(ratings.correlation_agreement, dataset, track, dim, chosen["corr"], chosen["raters"],
                chosen["outliers"])
    if corr.empty:
        st.caption(md_escape(f"No {dim} target in this track is rated by two or more annotators."))
    else:
        definition = corr["definition"].iloc[0]
        st.caption(md_escape(f"{definition[:1].upper()}{definition[1:]}; over {corr['n_annotators'].max()} "
                             f"{raters[chosen['raters']]}. Columns as released: the k-th rating stored for each "
                             "target (USR's three lists are positions, not people). 95% percentile bootstrap over "
                             "targets (1,000 resamples, seed 0); more than 5% of resamples without a value withholds "
                             "the interval. Which paper means which figure: docs, \"Agreement: which figure a paper "
                             "means\"."))
        shown = corr[["level", "statistic", "value", "ci_low", "ci_high", "n_items", "note"]]
        grid(unless_empty(shown, "note"), width="stretch",
             column_config={k: st.column_config.NumberColumn(format="%.4f") for k in ("value", "ci_low", "ci_high")})
        download(corr, f"correlation-agreement-{dataset}-{track}-{dim}")

    st.subheader("Score distributions")
    shown = dist[dist["dimension"] == dim]
    bar(shown.assign(score=shown["score"].map(lambda v: f"{v:g}")), x="score", y="share", color="model",
        y_title="share of ratings", tooltip=["model", "score", "n", "share"], key="distribution", height=300)

    if not table.empty:
        st.subheader("Annotators")
        bias = data(ratings.annotator_bias, dataset, track)
        bias = bias[bias["dimension"] == dim]
        st.caption("Bias: an annotator's mean minus the mean of all ratings of the same targets.")
        bar(bias, x="annotator", y="bias", tooltip=["annotator", "n", "mean", "bias"], key="bias", height=280)
        grid(bias.drop(columns=["track", "dimension"]),
             column_config={k: st.column_config.NumberColumn(format="%.3f") for k in ("mean", "bias")})

    if not table.empty:
        full = data(ratings.agreement_table, dataset, track)
        show_agreement(full[full["dimension"] == dim], "95% percentile bootstrap intervals over rated targets (1,000 "
                       "resamples, seed 0). Fleiss' kappa over targets rated by the most common number of annotators; "
                       "Krippendorff's alpha over all.", final=True)

publish("human", values, vs.notices)
