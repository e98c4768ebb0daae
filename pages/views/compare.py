"""Compare two models on a track: metric deltas with paired-bootstrap CIs, human wins/ties/losses."""
import streamlit as st

from evalcore.metrics.registry import FLAVORS
from pages.views.common import data, download, md_escape, pick_track, publish, select, start

con, vs = start("Compare two models")
dataset, track, c = pick_track(con, vs, "cp", skills=False)
models = data("models_of", dataset, track) if track else []
a = vs.one("a", models, models[0] if models else None)
b = vs.one("b", models, models[1] if len(models) > 1 else None)
with c[2]:
    a = select("Model A", models, a, key=f"cp-a-{track}")
with c[3]:
    b = select("Model B", models, b, key=f"cp-b-{track}")
flavor = vs.one("flavor", list(FLAVORS), "default")
values = {"dataset": dataset, "track": track, "a": a, "b": b, "flavor": flavor}

if len(models) < 2 or a == b:
    st.warning("Pick two different models of a track that has at least two.")
else:
    deltas, humans, items = data("compare", dataset, track, a, b, flavor=flavor)
    st.caption(f"On the {len(items):,} items both answered. Delta = mean per-response value of {md_escape(b)} minus "
               f"{md_escape(a)}, "
               "with a 95% paired-bootstrap interval (1,000 resamples, seed 0).")
    st.dataframe(deltas, hide_index=True, width="stretch")
    download(deltas, f"compare-{a}-{b}")
    if not humans.empty:
        st.subheader("Human scores: wins, ties, losses")
        st.dataframe(humans, hide_index=True)
    metric_cols = [col for col in items.columns if col.endswith(f"({b} - {a})")]
    if metric_cols:
        sort = vs.one("sort", metric_cols, metric_cols[0])
        sort = select("Items where they differ most, by", metric_cols, sort, key=f"cp-sort-{track}")
        values["sort"] = sort
        top = items.reindex(items[sort].abs().sort_values(ascending=False).index).head(50)
        st.dataframe(top, hide_index=True, width="stretch")

publish("compare", values, vs.notices)
