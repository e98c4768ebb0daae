"""Metric ensembling (MME-CRS): weights learned on some tracks, judged on held-out ones."""
import streamlit as st

from evalcore.pagedata import catalog, ratings, trust_tables
from pages.kit.charts import bar, heatmap
from pages.kit.runtime import data
from pages.kit.state import origins_at, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import download, grid, select

con, vs = start("Metric ensembles (MME-CRS)")
datasets = data(catalog.datasets)
options = data(trust_tables.trust_choices)  # datasets with metric values and ratings, richest first
dataset = vs.one("dataset", datasets, next(iter(options), None))
holdout = vs.one("holdout", ["competition", "track"], "competition")
c1, c2, c3 = st.columns(3)
with c1:
    dataset = select("Dataset", datasets, dataset, key="en-dataset")
# Only the levels with data for this dataset; a stale one moves to the first valid.
levels = [lv for lv in ("system", "turn") if origins_at(options.get(dataset, []), lv)] or ["system", "turn"]
level = vs.one("level", levels, levels[0], unavailable=f"has nothing to ensemble in {dataset}")
with c2:
    level = select("Level", levels, level, key=f"en-level-{dataset}")
with c3:
    holdout = select("Hold out", ["competition", "track"], holdout, key="en-holdout")
values = {"dataset": dataset, "level": level, "holdout": holdout}
st.caption("Per human dimension, each metric's weight is max(r, 0)^2 normalised over metrics (r: Spearman on a "
           "fitting track), averaged over the fitting tracks; metrics are z-normalised within each track. CRS is "
           "judged on the held-out tracks against Avg (plain mean of the z-scores) and the single metric with the "
           "highest correlation on the fitting tracks (a baseline, not a verdict that it is best).")
results, weights = data(ratings.ensemble_view, dataset, level, holdout) if dataset else (None, None)
if results is None or results.empty:
    st.warning(f"Nothing to ensemble in {md_escape(dataset)} at {level} level: this needs metric scores and human "
               "scores on at least two tracks"
               + ("." if dataset in options else f"; {md_escape(dataset)} has no human ratings with "
               "metric values. Pick another dataset, or import ratings and score responses (see the README)."))
else:
    groups = sorted(weights["holdout"].unique())
    group = vs.one("group", groups, groups[0])
    group = select("Held-out group", groups, group, key=f"en-group-{dataset}-{holdout}")
    values["group"] = group
    mine = results[results["holdout"] == group].copy()
    mine["method"] = mine["method"].str.replace("best:", "top on fitting tracks: ", regex=False)
    # One chart per held-out track, one under another, each as wide as the page: a faceted chart has a
    # fixed width, and a narrow window cut off its third track.
    for tr in dict.fromkeys(mine["track"]):
        st.caption(md_escape(f"Held out: {tr}"))
        bar(mine[mine["track"] == tr], x="dimension", y="spearman", color="method", y_title="Spearman r",
            y_domain=[-1, 1], height=300, key=f"ensemble-results-{tr}")
    grid(mine, width="stretch")
    download(results, f"ensemble-{dataset}-{level}-{holdout}")
    st.subheader(f"Weights learned without {md_escape(group)}")
    w = weights[weights["holdout"] == group].copy()
    w["label"] = w["weight"].map(lambda v: f"{v:.2f}")
    heatmap(w, x="dimension", y="metric", value="weight", label="label", tooltip=["metric", "dimension", "label"],
            x_order=list(dict.fromkeys(w["dimension"])), y_order=sorted(set(w["metric"])), value_title="weight",
            scale={"scheme": "blues", "domain": [0, 1]}, key="ensemble-weights")
publish("ensemble", values, vs.notices)
