"""Correlations: which metrics agree with people, per track and across skills."""
import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from evalcore.correlate import LEVELS
from evalcore.metrics.registry import FLAVORS
from evalcore.stats import METHODS
from pages.views.common import CJK_FONT, data, download, md_escape, pick_track, publish, select, start

con, vs = start("Correlations with human scores")
options = data("trust_choices")  # dataset -> its (level, origin) pairs with data, richest dataset first
dataset, track, _ = pick_track(con, vs, "co", skills=True, default=(next(iter(options), None), None))
method = vs.one("method", list(METHODS), "spearman")
# Only levels and origins with data for this dataset are offered; a stale one moves to the first valid.
pairs = options.get(dataset) or [(lv, "computed") for lv in LEVELS]
levels = list(dict.fromkeys(lv for lv, _ in pairs))
level = vs.one("level", levels, levels[0], unavailable=f"has nothing to correlate in {dataset}")
origins = [o for lv, o in pairs if lv == level]
origin = vs.one("origin", origins, origins[0], unavailable=f"has no values at {level} level in {dataset}")
flavor = vs.one("flavor", list(FLAVORS), "default")
boot = int(vs.number("bootstrap", 0, 0, 5000))

c = st.columns(4)
method = c[0].radio("Method", list(METHODS), index=list(METHODS).index(method), key="co-method")
level = c[1].radio("Level", levels, index=levels.index(level), key=f"co-level-{dataset}")
origins = [o for lv, o in pairs if lv == level]
origin = c[2].radio("Metric values", origins, index=origins.index(origin) if origin in origins else 0,
                    key=f"co-origin-{dataset}-{level}", help="published: a paper's system-level tables (system level only)")
flavor = c[3].radio("Flavor", list(FLAVORS), index=list(FLAVORS).index(flavor), key="co-flavor")
boot = st.select_slider("Bootstrap resamples for CIs (0: Fisher-z for Pearson only)", [0, 200, 1000], value=boot
                        if boot in (0, 200, 1000) else 0, key="co-boot")
values = {"dataset": dataset, "track": track, "method": method, "level": level, "origin": origin,
          "flavor": flavor, "bootstrap": boot or None}

table = data("correlation_view", dataset, track, level=level, method=method, origin=origin, flavor=flavor,
                 bootstrap=boot, seed=0 if boot else None) if track else None
if table is None or table.empty:
    st.warning(f"No correlations for {md_escape(track or '')} at {level} level ({origin} values): they need metric "
               "values and human ratings of the same units." + ("" if dataset in options else f" {md_escape(dataset)} "
               "has no human ratings with metric values; import ratings (`python -m evalcore import ratings`) or pick "
               "another dataset."))
else:
    dims_all = list(dict.fromkeys(table["dimension"]))
    metrics_all = list(dict.fromkeys(table["metric"]))
    dims = vs.many("dims", dims_all, dims_all)
    metrics = vs.many("metrics", metrics_all, metrics_all)
    dims = st.multiselect("Dimensions", dims_all, default=dims, key=f"co-dims-{dataset}")
    metrics = st.multiselect("Metrics", metrics_all, default=metrics, key=f"co-metrics-{dataset}")
    values.update(dims=dims if len(dims) < len(dims_all) else None,
                  metrics=metrics if len(metrics) < len(metrics_all) else None)
    shown = table[table["dimension"].isin(dims) & table["metric"].isin(metrics)]
    st.caption(f"{method.capitalize()} at {level} level; * p < 0.05, ** p < 0.01. Hover a cell for n, p and "
               "the confidence interval; empty cells are undefined (the hover says why).")
    for tr, part in shown.groupby("track", sort=False):
        grid = part.pivot_table(index="metric", columns="dimension", values="r", aggfunc="first", dropna=False)
        grid = grid.reindex(index=[m for m in metrics if m in grid.index], columns=[d for d in dims if d in grid.columns])
        info = part.set_index(["metric", "dimension"])
        text, hover = [], []
        for m in grid.index:
            trow, hrow = [], []
            for d in grid.columns:
                row = info.loc[(m, d)]
                r, p = row["r"], row["p"]
                star = "**" if p < 0.01 else "*" if p < 0.05 else ""
                trow.append("" if np.isnan(r) else f"{r:.2f}{star}")
                ci = "" if np.isnan(row["ci_low"]) else f"<br>CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] {row['ci_method']}"
                note = f"<br>undefined: {row['note']}" if row["note"] else ""
                pub = "" if "published" not in row or np.isnan(row["published"]) else f"<br>published {row['published']:.2f}"
                hrow.append(f"{m} × {d}<br>r = {r:.4f}, p = {p:.3g}, n = {row['n']}{ci}{pub}{note}")
            text.append(trow)
            hover.append(hrow)
        fig = go.Figure(go.Heatmap(z=grid.to_numpy(), x=list(grid.columns), y=list(grid.index), zmin=-1, zmax=1,
                                   colorscale="RdBu", text=text, texttemplate="%{text}", customdata=hover,
                                   hovertemplate="%{customdata}<extra></extra>"))
        n_values = sorted(set(part["n"]))
        fig.update_layout(title=f"{tr} (n = {', '.join(map(str, n_values))})", font_family=CJK_FONT,
                          height=max(320, 28 * len(grid.index) + 120), yaxis_autorange="reversed")
        st.plotly_chart(fig, width="stretch", key=f"heat-{tr}")
    download(shown, f"correlations-{dataset}-{level}-{method}".replace("/", "_"))

    st.subheader("One metric across skills")
    choice = vs.one("metric", metrics_all, metrics_all[0])
    choice = select("Metric", metrics_all, choice, key=f"co-across-{dataset}")
    values["metric"] = choice
    across = data("across_correlations", dataset, choice, level=level, method=method, origin=origin, flavor=flavor)
    if not across.empty:
        fig = px.bar(across, x="track", y="r", color="dimension", barmode="group", range_y=[-1, 1],
                     hover_data=["n", "p", "note"], labels={"r": f"{method} r"})
        fig.update_layout(font_family=CJK_FONT, height=380)
        st.plotly_chart(fig, width="stretch", key="across")

    if "published" in table and table["published"].notna().any():
        st.subheader("Published vs recomputed")
        pub = table.dropna(subset=["published", "r"])
        fig = px.scatter(pub, x="published", y="r", color="track", hover_data=["dimension", "metric", "diff"],
                         labels={"r": "recomputed"})
        fig.add_shape(type="line", x0=-1, y0=-1, x1=1, y1=1, line={"dash": "dot", "color": "grey"})
        fig.update_layout(font_family=CJK_FONT, height=420)
        st.plotly_chart(fig, width="stretch", key="published")
        far = pub[pub["diff"].abs() > 0.05]
        st.caption(f"{int((pub['diff'].abs() <= 0.0101).sum())} of {len(pub)} cells within 0.0101 of the published "
                   f"value; {len(far)} differ by more than 0.05 (see the README for likely causes).")
        st.dataframe(far[["track", "dimension", "metric", "method", "r", "published", "diff"]], hide_index=True)

publish("correlations", values, vs.notices)
