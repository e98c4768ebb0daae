"""Human evaluation: annotator agreement with bootstrap CIs, score distributions, annotator bias."""
import plotly.express as px
import streamlit as st

from evalcore.humans import AGGREGATES
from pages.views.common import CJK_FONT, data, download, pick_track, publish, select, start

con, vs = start("Human evaluation")
dataset, track, c = pick_track(con, vs, "hu", skills=False)
values = {"dataset": dataset, "track": track}
st.caption("Agreement between annotators on the ratings of this track. Elsewhere (leaderboard, correlations) "
           f"several annotators' scores are combined by a rule: {', '.join(AGGREGATES)} "
           "(pair-filter: keep a target whose scores differ by at most 1 and average them).")
table = data("agreement_table", dataset, track) if track else None
if table is None or table.empty:
    st.warning("This track has no ratings by several annotators.")
else:
    dims = sorted(table["dimension"].unique())
    dim = vs.one("dimension", dims, dims[0])
    with c[2]:
        dim = select("Dimension", dims, dim, key=f"hu-dim-{track}")
    values["dimension"] = dim
    shown = table[table["dimension"] == dim].drop(columns=["track", "dimension"])
    st.subheader("Agreement")
    st.caption("95% percentile bootstrap intervals over rated targets (1,000 resamples, seed 0). Cohen's kappa is "
               "per annotator pair; Fleiss' kappa over targets rated by the most common number of annotators.")
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={k: st.column_config.NumberColumn(format="%.3f") for k in ("value", "ci_low", "ci_high")})
    download(table, f"agreement-{dataset}-{track}".replace("/", "_"))

    st.subheader("Score distributions")
    dist = data("score_distribution", dataset, track)
    dist = dist[dist["dimension"] == dim]
    fig = px.bar(dist, x="score", y="share", color="model", barmode="group", labels={"share": "share of ratings"})
    fig.update_layout(font_family=CJK_FONT, height=360)
    st.plotly_chart(fig, width="stretch")

    st.subheader("Annotators")
    bias = data("annotator_bias", dataset, track)
    bias = bias[bias["dimension"] == dim]
    st.caption("Bias: an annotator's mean minus the mean of all ratings of the same targets.")
    fig = px.bar(bias, x="annotator", y="bias", hover_data=["n", "mean"])
    fig.update_layout(font_family=CJK_FONT, height=320)
    st.plotly_chart(fig, width="stretch")
    st.dataframe(bias.drop(columns=["track", "dimension"]), hide_index=True)

publish("human", values, vs.notices)
