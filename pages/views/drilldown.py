"""Drill-down: the items of a track, filtered and sorted by metric-human disagreement, down to one item."""
import pandas as pd
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.metrics.registry import FLAVORS
from evalcore.pagedata import annotation, catalog, responses
from pages.kit import lang
from pages.kit.runtime import data, shared
from pages.kit.state import choose_many, pick_track, publish, start
from pages.kit.text import highlighted, md_escape
from pages.kit.widgets import download, grid, select, sort_table

ITEM_CHOICES = 1_000   # items offered under "Open item" (a track's 50,000 ids went to the browser on every run)
# The table's headers (grid() shows each through the catalog) and the flavor shown in words
HEADERS = (N_("item_id"), N_("model"), N_("response"), N_("disagreement"), N_("entity"), N_("attribute"),
           N_("value"))
FLAVOR_WORDS = (N_("default"),)
# A grounding's parts as the item shows them (others by their own name)

con, vs = start(_("Drill-down"))
metrics_here = shared(catalog.metrics_of)   # built-in and this store's imported metrics (one object, read only)
# Opens on a track with rated responses, where the disagreement sort means something.
dataset, track, c = pick_track(con, vs, "dd", skills=False, shows=data(responses.rated_response_tracks))
flavor = vs.one("flavor", list(FLAVORS), "default")
with c[2]:
    # two short options as a radio: a select box in this narrow column showed "defau" in an 800-px window
    flavor = st.radio(_("Flavor"), list(FLAVORS), index=list(FLAVORS).index(flavor), format_func=_,
                      key="dd-flavor")
values = {"dataset": dataset, "track": track, "flavor": flavor}

dims = data(catalog.dimensions_of, dataset, track) if track else []
models_box = st.container()   # drawn above the row below, filled once the table is loaded
c = st.columns([2, 2, 3])  # the toggle's label needs the room in a narrow window
rated = vs.one("rated", ["1", "0"], "1" if dims else "0") == "1"
rated_only = c[2].toggle(_("Rated responses only"), value=rated, key="dd-rated") if dims else False
# Rated only, the table holds just the rated items' responses: on a 50,000-item track, 1,000 items
# instead of every response (what a disagreement sort can use anyway).
table = shared(responses.response_table, dataset, track, flavor=flavor, rated_only=rated_only) if track else None
if table is None or table.empty:
    st.warning(_("No response on this track has a person's rating now; turn off 'Rated responses only' to see "
                 "every response.") if rated_only else _("This track has no responses."))
    publish("drilldown", values, vs.notices)
    lang.stop()

metrics = [col for col in table.columns if col not in ("item_id", "model", "text") and col not in dims]
models = data(catalog.models_of, dataset, track)
with models_box:
    chosen = choose_many(vs, values, "models", _("Models"), models, key="dd-models")
metric = vs.one("metric", metrics, metrics[0] if metrics else None, unavailable=_("is not scored on this track"),
                known=metrics_here)
dim = vs.one("dim", dims, dims[0] if dims else None)   # `dim` in links: "human dimension" in what a reader sees
with c[0]:
    metric = select(_("Metric"), metrics, metric, key=f"dd-metric-{track}",
                    empty=_("none scored on this track yet (the Upload page's 'Score what is missing on this "
                            "track' computes them)."))
with c[1]:
    dim = select(_("Human dimension"), dims, dim, key=f"dd-dim-{track}",
                 empty=_("no human ratings on this track, so no disagreement sort."))
# what equals its default stays out of the link: on another track it is that track's own (evalcore.pagedata.share)
values.update(metric=metric if metric != (metrics[0] if metrics else None) else None,
              dim=dim if dim != (dims[0] if dims else None) else None,
              rated=None if rated_only == bool(dims) else "1" if rated_only else "0")

# filtered and sorted without the texts (a track's 550,000 were copied twice a run); the shown rows take theirs
shown = table.loc[table["model"].isin(chosen), [col for col in table.columns if col != "text"]]
if rated_only and dim:
    shown = shown[shown[dim].notna()]
if metric and shown[metric].notna().any():
    lo, hi, step, digits = responses.range_grid(float(shown[metric].min()), float(shown[metric].max()))
    if hi > lo:
        # Positions lie on a round grid; a handle left at its end filters nothing and stays out of the URL.
        snap = lambda v: round(lo + round((v - lo) / step) * step, digits)  # noqa: E731
        want = (snap(vs.number("min", lo, lo, hi)), snap(vs.number("max", hi, lo, hi)))
        rng = st.slider(_("{metric} range").format(metric=md_escape(metric)), lo, hi, want, step=step, format=f"%.{digits}f",
                        key=f"dd-range-{track}-{metric}")
        low, high = round(rng[0], digits), round(rng[1], digits)
        use_low, use_high = low > lo + step / 2, high < hi - step / 2
        if use_low:
            shown = shown[shown[metric] >= low]
        if use_high:
            shown = shown[shown[metric] <= high]
        values.update(min=f"{low:.{digits}f}" if use_low else None, max=f"{high:.{digits}f}" if use_high else None)
if metric and dim:
    shown = shown.assign(disagreement=responses.disagreement(shown, metric, dim))
    st.caption(_("disagreement: |percentile rank of {metric} − percentile rank of {dim}|.").format(
        metric=md_escape(metric), dim=md_escape(dim)))
shown = sort_table(vs, values, shown, "dd", default="disagreement" if "disagreement" in shown else None,
                   descending=True, columns=["disagreement", *metrics, *dims, "model", "item_id"])


def with_texts(frame):
    """The frame with its rows' texts, where the table has them (after model)."""
    out = frame.copy()
    out.insert(out.columns.get_loc("model") + 1, "text", table["text"].reindex(frame.index))
    return out


# The sort's own columns (the metric, the human dimension, their disagreement) before the long response text: at
# 800 px the text took the width and pushed them out of sight. Ratings and the disagreement to 2 decimals.
first = ["item_id", "model", *[col for col in (metric, dim, "disagreement") if col and col in shown], "text"]
page_rows = with_texts(shown.head(500))
grid(page_rows, width="stretch", column_order=first + [col for col in page_rows.columns if col not in first],
     column_config={"text": st.column_config.TextColumn("response", width="large"),
                    **{col: st.column_config.NumberColumn(col, format="%.4f" if col in metrics else "%.2f",
                                                          help=catalog.describe(col, metrics_here))
                       for col in metrics + dims + ["disagreement"] if col in shown}})
st.caption(_("{n} responses ({shown} shown).").format(n=i18n.number(len(shown)),
                                                      shown=i18n.number(min(len(shown), 500))))
download(shown, f"drilldown-{dataset}-{track}", complete=with_texts)

items = shown["item_id"].unique().tolist()   # in order of first appearance; unique() before any Python strings


def item_rows(item_id: str):
    """The item's responses: from the table when it holds them, else read alone (a link's item outside it)."""
    rows = table[table["item_id"] == item_id]
    return rows if len(rows) else data(responses.response_table, dataset, track, flavor=flavor, items=(item_id,))


# A linked item the filters leave out still opens, when the track has it.
asked = vs.peek("item")
extra = [asked] if asked and asked not in set(items) and not item_rows(asked).empty else []
item = vs.one("item", items + extra, items[0] if items else None)
listed = items[:ITEM_CHOICES]
item = select(_("Open item"), listed if item in listed or item is None else [item] + listed, item,
              key=f"dd-item-{track}", empty=_("no response passes the filters above."),
              help=_("The first {n} items of the table, in its order.").format(n=i18n.number(ITEM_CHOICES))
              if len(items) > ITEM_CHOICES else None)
values["item"] = item if item != (items[0] if items else None) else None
detail = data(responses.item_detail, dataset, item) if item else None
if detail:
    st.subheader(_("Item {item}").format(item=md_escape(item)))
    left, right = st.columns(2)
    with left:
        st.markdown(_("**Context**"))
        for i, turn in enumerate(detail["context"]):
            with st.chat_message("user" if (len(detail["context"]) - i) % 2 else "assistant"):
                st.text(turn)
        st.markdown(_("**References**"))
        for ref in detail["references"] or []:
            st.text(ref)
        if not detail["references"]:
            st.caption(_("No reference: reference-based metrics are unavailable for this item."))
    with right:
        if detail["grounding"]:
            st.markdown(_("**Grounding**"))
            for key, value in detail["grounding"].items():
                st.caption(md_escape(annotation.grounding_heading(key)))
                if key == "knowledge" and value and isinstance(value[0], list):
                    grid(pd.DataFrame([{"entity": t[0], "attribute": t[1] if len(t) > 1 else "",
                                        "value": t[2] if len(t) > 2 else ""} for t in value]))
                else:
                    st.json(value)
    st.markdown(_("**Responses** (tokens shared with a reference highlighted)"))
    language = "zh"
    for __, row in item_rows(item).iterrows():
        with st.container(border=True):
            st.markdown(f"**{md_escape(row['model'])}**")
            st.markdown(highlighted(responses.overlap_segments(row["text"], detail["references"], language)) or _("*(empty)*"))
            scores = {k: row[k] for k in metrics + dims if k in row and row[k] == row[k]}
            st.caption(md_escape(" · ".join(f"{k} {v:.3f}" for k, v in scores.items()) or _("no scores yet")))

publish("drilldown", values, vs.notices)
