"""Compare two models on a track: metric deltas with paired-bootstrap CIs, human wins/ties/losses."""
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import N_, _, pgettext
from evalcore.metrics.registry import FLAVORS
from evalcore.pagedata import catalog, formatting, head_to_head, openings, responses
from pages.kit.runtime import data
from pages.kit.state import pick_track, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import download, grid, select

# The tables' headers (grid() shows each through the catalog; model names in headers are data)
HEADERS = (N_("metric"), N_("n"), N_("delta"), N_("ci_low"), N_("ci_high"), N_("ci"), N_("dimension"), N_("b wins"),
           N_("ties"), N_("a wins"), N_("item_id"), N_("drill-down"), N_("context"))

con, vs = start(_("Compare two models"))
# opens where two models answered the same items (a chat task's dataset has none: "0 items both answered")
dataset, track, __ = pick_track(con, vs, "cp", skills=False, shows=data(openings.compared_tracks))
models = data(catalog.models_of, dataset, track) if track else []
# by default the two models that answered the most items both (the first two by name may share none)
pair = data(openings.compared_pair, dataset, track) if len(models) > 1 else []
a = vs.one("a", models, pair[0] if pair else models[0] if models else None)
b = vs.one("b", models, pair[1] if pair else models[1] if len(models) > 1 else None)
if len(models) >= 2:  # else the page says why, instead of two empty boxes
    m1, m2 = st.columns(2)  # a row of their own: beside the track a narrow window cuts the names to "bm25"
    with m1:
        a = select(_("Model A"), models, a, key=f"cp-a-{track}")
    with m2:
        b = select(_("Model B"), models, b, key=f"cp-b-{track}")
else:
    a = b = None  # nothing to pick: nothing in the link either
flavor = vs.one("flavor", list(FLAVORS), "default")
values = {"dataset": dataset, "track": track, "a": a, "b": b, "flavor": flavor}


def numbers(formats: dict[str, str], labels: dict[str, str] | None = None) -> dict:
    """Number columns shown with the given printf formats (model names in headers stay plain text), under their
    `labels` where given."""
    return {col: st.column_config.NumberColumn((labels or {}).get(col, col), format=spec)
            for col, spec in formats.items()}


if len(models) < 2:
    if models:
        why = _("Nothing to compare: {track} has one model ({model}); comparing needs two. Pick another track or "
                "dataset, or upload a second model.").format(track=track, model=models[0])
    elif track:
        why = _("Nothing to compare: {track} has no model responses; comparing needs two. Pick another track or "
                "dataset, or upload a second model.").format(track=track)
    else:
        why = _("Nothing to compare: this dataset has no model responses; comparing needs two. Pick another track "
                "or dataset, or upload a second model.")
    st.info(md_escape(why))
elif a == b:
    st.warning(_("Model A and Model B are the same: pick two different models."))
else:
    deltas, humans, items = data(head_to_head.compare, dataset, track, a, b, flavor=flavor)
    deltas = formatting.clean_noise(deltas)
    st.caption(_("On the {n} items both answered. Delta = mean per-response value of {b} minus {a}, with a 95% "
                 "paired-bootstrap interval (1,000 resamples, seed 0).").format(
        n=i18n.number(len(items)), b=md_escape(b), a=md_escape(a)))
    means = [col for col in (f"mean {a}", f"mean {b}") if col in deltas]
    spread = [col for col in ("delta", "ci_low", "ci_high") if col in deltas]
    formats = {**{col: formatting.sensible_format(deltas[means]) for col in means},
               **{col: formatting.sensible_format(deltas[spread]) for col in spread}}
    grid(formatting.round_to_format(deltas, formats), width="stretch",
                 column_config={"n": st.column_config.NumberColumn("n", format="%d"),
                                **numbers(formats, {f"mean {m}": _("mean {model}").format(model=m) for m in (a, b)})})
    download(deltas, f"compare-{a}-{b}")
    if not humans.empty:
        st.subheader(_("Human scores: wins, ties, losses"))
        grid(humans)
    metric_cols = [col for col in items.columns if col.endswith(f"({b} - {a})")]
    if metric_cols:
        sort = vs.one("sort", metric_cols, metric_cols[0])
        sort = select(_("Items where they differ most, by"), metric_cols, sort, key=f"cp-sort-{track}")
        values["sort"] = sort
        items = formatting.clean_noise(items)
        top = items.reindex(items[sort].abs().sort_values(ascending=False).index).head(50)
        # Each item opens in the drill-down (a relative link, so it works under any server address).
        top.insert(1, "drill-down", [responses.drilldown_link(dataset, track, i, flavor) for i in top["item_id"]])
        top = top[[col for col in top.columns if col not in metric_cols] + [sort]  # the sorted-by delta first
                  + [col for col in metric_cols if col != sort]]
        formats = {col: formatting.sensible_format(items[col]) for col in metric_cols}
        st.caption(_("The {n} items with the largest |{sort}|, the last two turns of their context and both "
                     "responses; **open** shows the item in the drill-down.").format(n=i18n.number(len(top)),
                                                                                     sort=md_escape(sort)))
        grid(formatting.round_to_format(top, formats), width="stretch", column_config={
            "drill-down": st.column_config.LinkColumn("drill-down", display_text=pgettext("link", "open"),
                                                      help=_("This item in the drill-down view")),
            "context": st.column_config.TextColumn("context", width="medium", help=_("The last two turns")),
            a: st.column_config.TextColumn(a, width="medium"),
            b: st.column_config.TextColumn(b, width="medium"),
            **numbers(formats)})

publish("compare", values, vs.notices)
