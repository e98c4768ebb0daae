"""Correlations: which metrics agree with people, per track and across skills."""
import numpy as np
import streamlit as st

from evalcore.analysis.options import LEVELS, METHODS
from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.metrics.registry import FLAVORS
from evalcore.pagedata import catalog, correlation_tables, formatting, trust_tables
from pages.kit.charts import bar, heatmap, scatter_vs_diagonal
from pages.kit.runtime import data, shared
from pages.kit.state import choose_many, level_and_origin, origins_at, pick_track, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import download, grid, select

NOT_HERE = N_("is not scored here (no values to correlate on this track)")
# The options shown in the viewer's language (their values are ids: they stay in the link as they are)
OPTIONS = {"pearson": N_("pearson"), "spearman": N_("spearman"), "kendall": N_("kendall"), "system": N_("system"),
         "dialogue": N_("dialogue"), "turn": N_("turn"), "computed": N_("computed"), "published": N_("published"),
         "default": N_("default")}
# the tables' and hovers' headers (grid() and the charts show each through the catalog)
HEADERS = (N_("track"), N_("dimension"), N_("metric"), N_("method"), N_("r"), N_("published"), N_("diff"), N_("n"),
           N_("p"), N_("note"), N_("r (exact)"), N_("p value"), N_("CI"), N_("published r"))


def joined(sentences: list[str]) -> str:
    """Whole sentences one after another: a space between them in English, none in Chinese (its full stop is
    full-width)."""
    return ("" if i18n.current() == i18n.ZH else " ").join(sentences)


def named(value: str) -> str:
    """An option (an id) as the page shows it."""
    return _(OPTIONS[value]) if value in OPTIONS else value


METHODS_SAID = {"pearson": N_("Pearson"), "spearman": N_("Spearman"), "kendall": N_("Kendall")}   # in a sentence


def said_method(method: str) -> str:
    """A method's name as a sentence or a title says it."""
    return _(METHODS_SAID[method])


con, vs = start(_("Correlations with human scores"))
metrics_here = shared(catalog.metrics_of)   # built-in and this store's imported metrics (one object, read only)
options = data(trust_tables.trust_choices)  # dataset -> its (level, origin) pairs with data, richest dataset first
dataset, track, __ = pick_track(con, vs, "co", skills=True, default=(next(iter(options), None), None))
method = vs.one("method", list(METHODS), "spearman")
# Only levels and origins with data for this dataset are offered; a stale one moves to where the page opens
# without one: the first level where some skill has a verdict, as Metric trust (evalcore.analysis.trust_opening.opening).
pairs = options.get(dataset) or [(lv, "computed") for lv in LEVELS]
found = data(trust_tables.trust_opening, dataset, method="spearman", dimension="mean") if dataset in options else None
first = (found.level, found.origin) if found and found.level else pairs[0]
levels, level, origin = level_and_origin(vs, dataset, pairs, first)
flavor = vs.one("flavor", list(FLAVORS), "default")
boot = int(vs.number("bootstrap", 0, 0, 5000))

c = st.columns(4)
method = c[0].radio(_("Method"), list(METHODS), index=list(METHODS).index(method), key="co-method",
                    format_func=named)
level = c[1].radio(_("Level"), levels, index=levels.index(level), key=f"co-level-{dataset}", format_func=named)
origins = origins_at(pairs, level)
origin = c[2].radio(_("Metric values"), origins, index=origins.index(origin) if origin in origins else 0,
                    key=f"co-origin-{dataset}-{level}", format_func=named,
                    help=_("published: a paper's system-level tables (system level only)"))
flavor = c[3].radio(_("Flavor"), list(FLAVORS), index=list(FLAVORS).index(flavor), key="co-flavor",
                    format_func=named)
boot = st.select_slider(_("Bootstrap resamples for CIs (0: Fisher-z for Pearson only)"), [0, 200, 1000], value=boot
                        if boot in (0, 200, 1000) else 0, key="co-boot")
# a level and origin equal to where the page opens stay out of the link: another dataset opens on its own
values = {"dataset": dataset, "track": track, "method": method, "level": None if level == first[0] else level,
          "origin": None if (level, origin) == first else origin, "flavor": flavor, "bootstrap": boot or None}

table = data(correlation_tables.correlation_view, dataset, track, level=level, method=method, origin=origin, flavor=flavor,
                 bootstrap=boot, seed=0 if boot else None) if track else None
if table is None or table.empty:
    said = [_("No correlations for {track} at {level} level ({origin} values): they need metric values and human "
              "ratings of the same units.").format(track=md_escape(track or ""), level=named(level),
                                                   origin=named(origin))]
    if dataset not in options:
        said.append(_("{dataset} has no human ratings with metric values; upload ratings on the Upload page "
                      "(Evaluate: Ratings file) or pick another dataset.").format(dataset=md_escape(dataset)))
    st.warning(joined(said))
else:
    dims_all = list(dict.fromkeys(table["dimension"]))
    metrics_all = list(dict.fromkeys(table["metric"]))
    # every dimension and metric the track has, unless the user left some out (see choose_many)
    dims = choose_many(vs, values, "dims", _("Dimensions"), dims_all, key="co-dims")
    metrics = choose_many(vs, values, "metrics", _("Metrics"), metrics_all, key="co-metrics", unavailable=_(NOT_HERE),
                          known=metrics_here)
    shown = table[table["dimension"].isin(dims) & table["metric"].isin(metrics)]
    st.caption(_("{method} at {level} level; * p < 0.05, ** p < 0.01. Hover a cell for n, p and the confidence "
                 "interval; empty cells are undefined (the hover says why).").format(method=said_method(method),
                                                                                      level=named(level)))
    for tr, part in shown.groupby("track", sort=False):
        cells = part.copy()
        stars = np.where(cells["p"] < 0.01, "**", np.where(cells["p"] < 0.05, "*", ""))
        cells["label"] = np.where(cells["r"].isna(), "", formatting.as_text(cells["r"], ".2f") + stars)
        cells["r (exact)"] = formatting.as_text(cells["r"], ".4f", _("undefined"))
        cells["p value"] = formatting.as_text(cells["p"], ".3g")
        cells["CI"] = np.where(cells["ci_low"].isna(), "", formatting.ci_text(cells["ci_low"], cells["ci_high"], ".3f")
                               + " " + cells["ci_method"].fillna(""))
        tips = ["metric", "dimension", "r (exact)", "p value", "n", "CI", "note"]
        if "published" in cells:
            cells["published r"] = formatting.as_text(cells["published"], ".2f")
            tips.insert(4, "published r")
        n_values = sorted(set(part["n"]))
        st.markdown(_("**{track}** (n = {n})").format(track=md_escape(tr), n=", ".join(map(str, n_values))))
        heatmap(cells, x="dimension", y="metric", value="r", label="label", tooltip=tips,
                value_title=f"{named(method)} r",
                optional=("note",),
                x_order=[d for d in dims if d in set(cells["dimension"])],
                y_order=[m for m in metrics if m in set(cells["metric"])], key=f"heat-{tr}")
    download(shown, f"correlations-{dataset}-{level}-{method}")

    st.subheader(_("One metric across skills"))
    choice = vs.one("metric", metrics_all, metrics_all[0], unavailable=_(NOT_HERE), known=metrics_here)
    choice = select(_("Metric"), metrics_all, choice, key=f"co-across-{dataset}")
    values["metric"] = choice if choice != metrics_all[0] else None
    across = data(correlation_tables.across_correlations, dataset, choice, level=level, method=method, origin=origin,
                  flavor=flavor)
    if across.empty:
        st.caption(md_escape(_("No correlations of {metric} on any track of {dataset} at {level} level ({origin} "
                               "values).").format(metric=choice, dataset=dataset, level=named(level),
                                                  origin=named(origin))))
    else:
        bar(across, x="track", y="r", color="dimension", y_title=f"{named(method)} r",
            y_domain=[-1, 1],
            tooltip=["track", "dimension", "r", "n", "p", "note"], key="across")

    if "published" in table and table["published"].notna().any():
        st.subheader(_("Published vs recomputed"))
        pub = table.dropna(subset=["published", "r"])
        scatter_vs_diagonal(pub, x="published", y="r", color="track", tooltip=["dimension", "metric", "diff"],
                            x_title=_("published"), y_title=_("recomputed"), key="published")
        far = pub[pub["diff"].abs() > 0.05]
        st.caption((_("{close} of {cells} cells within 0.0101 of the published value; {far} differ by more than 0.05 "
                      "(listed below; see the README for likely causes).") if len(far) else
                    _("{close} of {cells} cells within 0.0101 of the published value; {far} differ by more than "
                      "0.05.")).format(close=int((pub["diff"].abs() <= 0.0101).sum()), cells=len(pub), far=len(far)))
        if len(far):
            grid(far[["track", "dimension", "metric", "method", "r", "published", "diff"]])

publish("correlations", values, vs.notices)
