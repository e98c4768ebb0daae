"""Metric ensembling (MME-CRS): weights learned on some tracks, judged on held-out ones."""
import streamlit as st

from evalcore.core.i18n import N_, _
from evalcore.pagedata import catalog, ratings, trust_tables
from pages.kit.charts import bar, heatmap
from pages.kit.runtime import data
from pages.kit.state import origins_at, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import download, grid, select

# The tables' headers (grid() shows each through the catalog) and the chart's fields
HEADERS = (N_("holdout"), N_("track"), N_("dimension"), N_("method"), N_("metrics"), N_("pearson"), N_("spearman"),
           N_("n"), N_("metric"), N_("weight"), N_("label"))
# The options are ids (in links); their words are shown through the catalog
WORDS = {"system": N_("system"), "turn": N_("turn"), "competition": N_("competition"), "track": N_("track")}


def word(option: str) -> str:
    """An option as the page shows it."""
    return _(WORDS[option]) if option in WORDS else option


con, vs = start(_("Metric ensembles (MME-CRS)"))
datasets = data(catalog.datasets)
options = data(trust_tables.trust_choices)  # datasets with metric values and ratings, richest first
dataset = vs.one("dataset", datasets, next(iter(options), None))
holdout = vs.one("holdout", ["competition", "track"], "competition")
c1, c2, c3 = st.columns(3)
with c1:
    dataset = select(_("Dataset"), datasets, dataset, key="en-dataset")
# Only the levels with data for this dataset; a stale one moves to the first valid.
levels = [lv for lv in ("system", "turn") if origins_at(options.get(dataset, []), lv)] or ["system", "turn"]
level = vs.one("level", levels, levels[0], unavailable=_("has nothing to ensemble in {dataset}").format(dataset=dataset))
with c2:
    level = select(_("Level"), levels, level, key=f"en-level-{dataset}", format_func=word)
with c3:
    holdout = select(_("Hold out"), ["competition", "track"], holdout, key="en-holdout", format_func=word)
values = {"dataset": dataset, "level": level, "holdout": holdout}
st.caption(_("Per human dimension, each metric's weight is max(r, 0)^2 normalised over metrics (r: Spearman on a "
             "fitting track), averaged over the fitting tracks; metrics are z-normalised within each track. CRS is "
             "judged on the held-out tracks against Avg (plain mean of the z-scores) and the single metric with the "
             "highest correlation on the fitting tracks (a baseline, not a verdict that it is best)."))
results, weights = data(ratings.ensemble_view, dataset, level, holdout) if dataset else (None, None)
if results is None or results.empty:
    if dataset in options:
        st.warning(_("Nothing to ensemble in {dataset} at {level} level: this needs metric scores and human scores "
                     "on at least two tracks.").format(dataset=md_escape(dataset), level=word(level)))
    else:
        st.warning(_("Nothing to ensemble in {dataset} at {level} level: this needs metric scores and human scores "
                     "on at least two tracks; {dataset} has no human ratings with metric values. Pick another "
                     "dataset, or import ratings and score responses (see the README).").format(
            dataset=md_escape(dataset), level=word(level)))
else:
    groups = sorted(weights["holdout"].unique())
    group = vs.one("group", groups, groups[0])
    group = select(_("Held-out group"), groups, group, key=f"en-group-{dataset}-{holdout}")
    values["group"] = group
    mine = results[results["holdout"] == group].copy()
    mine["method"] = mine["method"].map(lambda m: _("top on fitting tracks: {metric}").format(metric=m[len("best:"):])
                                        if m.startswith("best:") else m)
    # One chart per held-out track, one under another, each as wide as the page: a faceted chart has a
    # fixed width, and a narrow window cut off its third track.
    for tr in dict.fromkeys(mine["track"]):
        st.caption(md_escape(_("Held out: {track}").format(track=tr)))
        bar(mine[mine["track"] == tr], x="dimension", y="spearman", color="method", y_title=_("Spearman r"),
            y_domain=[-1, 1], height=300, key=f"ensemble-results-{tr}")
    grid(mine, width="stretch")
    download(results, f"ensemble-{dataset}-{level}-{holdout}")
    st.subheader(_("Weights learned without {group}").format(group=md_escape(group)))
    w = weights[weights["holdout"] == group].copy()
    w["label"] = w["weight"].map(lambda v: f"{v:.2f}")
    heatmap(w, x="dimension", y="metric", value="weight", label="label", tooltip=["metric", "dimension", "label"],
            x_order=list(dict.fromkeys(w["dimension"])), y_order=sorted(set(w["metric"])), value_title=_("weight"),
            scale={"scheme": "blues", "domain": [0, 1]}, key="ensemble-weights")
publish("ensemble", values, vs.notices)
