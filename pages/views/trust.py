"""Metric trust: which automatic metric agrees with people on which skill, at a glance."""
import numpy as np
import streamlit as st

from evalcore import views
from evalcore.metrics.registry import FLAVORS
from evalcore.stats import METHODS
from pages.views.common import (
    data,
    download,
    expander,
    fmt,
    heatmap,
    level_and_origin,
    md_escape,
    origins_at,
    publish,
    select,
    start,
)

con, vs = start("Which metric to trust, per skill")
options = data(views.trust_choices)
if not options:
    st.info("No dataset here has both metric values and human ratings of the same units. Import ratings "
            "(`python -m evalcore import ratings`) and score responses (`python -m evalcore score`), or a paper's "
            "tables (`python -m evalcore import published`); see the README.")
    publish("trust", {}, vs.notices)
    st.stop()

datasets = list(options)
dataset = vs.one("dataset", datasets, datasets[0])
c = st.columns([2, 1, 1, 1, 1])
with c[0]:
    dataset = select("Dataset", datasets, dataset, key="tr-dataset")
# Level and origin offered are only those with data for this dataset; a stale one moves to the first valid.
pairs = options[dataset]
levels, level, origin = level_and_origin(vs, dataset, pairs)
method = vs.one("method", list(METHODS), "spearman")
dims = data(views.trust_dimensions, dataset)
dimension = vs.one("dimension", dims, "mean", unavailable=f"is not rated in {dataset}")
with c[1]:
    level = select("Level", levels, level, key=f"tr-level-{dataset}")
    origins = origins_at(pairs, level)
with c[2]:
    origin = select("Metric values", origins, origin, key=f"tr-origin-{dataset}-{level}",
                    help="published: a paper's own system-level tables; computed: this tool's scores")
with c[3]:
    method = select("Method", list(METHODS), method, key="tr-method")
with c[4]:
    dimension = select("Human dimension", dims, dimension, key=f"tr-dim-{dataset}",
                       help="mean: each unit's mean over the track's dimensions")
flavor = vs.one("flavor", list(FLAVORS), "default") if origin == "computed" else None
show_tracks = vs.one("tracks", ["0", "1"], "0") == "1"
values = {"dataset": dataset, "level": level, "origin": origin, "method": method, "dimension": dimension,
          "flavor": flavor}

try:
    frame = data(views.trust_view, dataset, level=level, method=method, dimension=dimension, origin=origin,
                 flavor=flavor or "default")
except ValueError as exc:  # e.g. a dimension no track of this level rates
    st.warning(md_escape(str(exc)))
    publish("trust", values, vs.notices)
    st.stop()

skills = list(dict.fromkeys(frame["skill"]))
sort = vs.one("sort", ["mean"] + skills, "mean")
o = st.columns([1, 1, 2])
with o[0]:
    sort = select("Sort metrics by", ["mean"] + skills, sort, key=f"tr-sort-{dataset}",
                  help="mean: the mean of the pooled values over skills")
with o[1]:
    show_tracks = st.toggle("Show each track", value=show_tracks, key="tr-tracks")
if origin == "computed":
    with o[2]:
        flavor = select("Flavor (lexical metrics)", list(FLAVORS), flavor, key="tr-flavor")
        values["flavor"] = flavor
values.update(sort=sort if sort != "mean" else None, tracks="1" if show_tracks else None)

grid = views.trust_grid(frame, tracks=show_tracks, sort=sort).copy()
marks = np.where(grid["p"] < 0.05, "*", "") + np.where(grid["rank"].eq(1).fillna(False), " ▲",
                                                        np.where(grid["tied_with_best"].eq(True), " ≈", ""))
grid["label"] = np.where(grid["r"].isna(), "–", fmt(grid["r"], ".2f") + marks)
grid["95% CI"] = np.where(grid["ci_low"].isna(), "none", "[" + fmt(grid["ci_low"], ".2f") + ", "
                          + fmt(grid["ci_high"], ".2f") + "]")
grid["r (exact)"] = fmt(grid["r"], ".3f", "undefined")
grid["p value"] = fmt(grid["p"], ".3g")
heatmap(grid, x="column", y="metric", value="r", label="label", value_title=f"{method} r",
        tooltip=["metric", "column", "r (exact)", "95% CI", "n", "p value", "rank", "dimensions", "note"],
        x_order=list(dict.fromkeys(grid["column"])), y_order=list(dict.fromkeys(grid["metric"])), key="trust-matrix")
n_values = sorted(set(frame.loc[frame["track"] != "pooled", "n"].dropna().astype(int)))
st.caption(
    f"{method.capitalize()} correlation with human {md_escape(dimension)} at {level} level ({origin} metric values; n = "
    f"{', '.join(map(str, n_values[:6]))}{'…' if len(n_values) > 6 else ''}). A skill's column pools its tracks by a "
    "fixed-effect meta-analysis of Fisher z (weights n − 3). * p < 0.05; ▲ best in the column; ≈ not "
    "significantly worse than the best (Williams' test, one-sided α = 0.05; pooled: per-track tests combined by "
    "Stouffer's Z). Hover a cell for its 95% CI and n; – is undefined (the hover says why)."
    + (" At system level there are few systems per track, so Williams' test has low power: many ties." if level ==
       "system" else ""))

st.subheader("Ranking per skill")
pooled = frame[frame["track"] == "pooled"]
table = pooled[["skill", "rank", "metric", "r", "ci_low", "ci_high", "n", "p", "tied_with_best", "note"]]
table = table.sort_values(["skill", "rank"], key=lambda s: s.map({k: i for i, k in enumerate(skills)})
                          if s.name == "skill" else s).reset_index(drop=True)
st.dataframe(table, hide_index=True, width="stretch", column_config={
    "r": st.column_config.NumberColumn("pooled r", format="%.3f"),
    "ci_low": st.column_config.NumberColumn("CI low", format="%.3f"),
    "ci_high": st.column_config.NumberColumn("CI high", format="%.3f"),
    "p": st.column_config.NumberColumn("p", format="%.3g"),
    "tied_with_best": st.column_config.CheckboxColumn("tied with best")})
with expander(vs, values, "cells", "Every cell (per track and pooled)"):
    st.dataframe(frame, hide_index=True, width="stretch")
download(frame, f"trust-{dataset}-{level}-{origin}-{method}-{dimension}")
publish("trust", values, vs.notices)
