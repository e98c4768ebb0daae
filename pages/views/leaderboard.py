"""Leaderboard: models x metrics and human dimensions per track, like the MSDE paper's Tables 4-10."""
import streamlit as st

from evalcore import views
from evalcore.metrics.registry import FLAVORS
from pages.views.common import bar, data, download, md_escape, pick_track, publish, select, start

con, vs = start("Leaderboard")
dataset, track, (_, _, c3) = pick_track(con, vs, "lb", skills=True)
flavor = vs.one("flavor", list(FLAVORS), "default")
with c3:
    flavor = select("Flavor", list(FLAVORS), flavor, key="lb-flavor", help="default: char tokens; msde: the paper's script")
board = data("board", dataset, track, flavor) if track else None
values = {"dataset": dataset, "track": track, "flavor": flavor}

if board is None or board.empty:
    st.warning("Nothing to show for this track yet: import responses and run `python -m evalcore score`.")
else:
    metrics, dims = views.split_columns(con, dataset, board)
    models = sorted(board["model"].unique())
    chosen = vs.many("models", models, models)
    chosen = st.multiselect("Models", models, default=chosen, key=f"lb-models-{dataset}-{track}")
    shown_metrics = st.multiselect("Columns", metrics + dims, default=vs.many("metrics", metrics + dims, metrics + dims),
                                   key=f"lb-cols-{dataset}-{track}")
    values.update(models=chosen if len(chosen) < len(models) else None,
                  metrics=shown_metrics if len(shown_metrics) < len(metrics + dims) else None)
    table = board[board["model"].isin(chosen)][["track", "model", "origin", *shown_metrics, views.N_COLUMN]]
    table = table.reset_index(drop=True)
    best = views.best_rows(table)
    styled = table.style.format(precision=4, na_rep="—").apply(
        lambda col: ["font-weight: bold; background-color: #fde68a" if i in best.get(col.name, set()) else ""
                     for i in col.index], subset=shown_metrics)
    st.caption("Best value per column and track in bold. Click a header to sort. Computed rows come from "
               "`evalcore score` (the last column says over how many responses); published rows from the "
               "source's own tables.")
    st.dataframe(styled, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(c, help=views.describe(c), format="%.4f")
                                for c in shown_metrics})
    d1, d2 = st.columns(2)
    with d1:
        download(table, f"leaderboard-{dataset}-{track}".replace("/", "_").replace(":", "_"))
    with d2:
        st.download_button("Download LaTeX", views.to_latex(table), file_name="leaderboard.tex", key="dl-latex")
    with st.expander("Signatures: what each computed column is"):
        st.dataframe(data("signatures", dataset, track, flavor), hide_index=True, width="stretch")
    missing = views.missing_metrics(list(board.columns))
    unavailable = missing[missing["status"] == "unavailable"]
    for row in unavailable.itertuples():
        st.info(md_escape(f"{row.metric} is unavailable: {row.why}"), icon="ℹ️")
    if len(missing):
        with st.expander(f"Metrics without a column here ({len(missing)})"):
            st.dataframe(missing, hide_index=True, width="stretch")

    st.subheader("Across skills")
    metric_options = [m for m in metrics]
    metric = vs.one("chart_metric", metric_options, "F1" if "F1" in metric_options else None)
    metric = select("Metric", metric_options, metric, key=f"lb-chart-{dataset}")
    values["chart_metric"] = metric
    if metric:
        data = data("across_tracks", dataset, metric, flavor)
        data = data[data["model"].isin(chosen) | ~data["model"].isin(models)]
        if data.empty:
            st.caption(f"No {md_escape(metric)} values in this dataset.")
        else:
            data["label"] = data["model"] + " (" + data["origin"] + ")"
            bar(data, x="track", y="value", color="label", y_title=metric,
                tooltip=["track", "skill", "model", "origin", "value"], key="across-tracks")

publish("leaderboard", values, vs.notices)
