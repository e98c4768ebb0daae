"""Metric trust: which automatic metric agrees with people on which skill, at a glance."""
import streamlit as st

from evalcore.analysis.options import ADJUSTMENTS, DIALOGUE_VALUE, METHODS
from evalcore.metrics.registry import FLAVORS
from evalcore.pagedata import trust_tables
from pages.kit.charts import heatmap
from pages.kit.runtime import data
from pages.kit.state import level_and_origin, origins_at, publish, start
from pages.kit.text import md_escape, md_message
from pages.kit.widgets import download, expander, select

ALPHAS = ("0.05", "0.01", "0.1")

con, vs = start("Which metric to trust, per skill")
options = data(trust_tables.trust_choices)
left_out = data(trust_tables.trust_left_out)   # dataset -> why it is not offered
not_offered = "; ".join(f"{d} ({why})" for d, why in left_out.items())
if not options:
    st.info("No dataset here has both metric values and human ratings of the same units. Rate a track's responses in "
            "a rating task (Rating tasks page), or upload ratings on the Upload page (File holds: ratings); its "
            "scoring job computes the metrics. From a terminal, `evalcore import published` loads a paper's "
            "system-level tables; see the README.")
    if not_offered:
        st.caption(md_escape(f"Datasets here: {not_offered}."))
    publish("trust", {}, vs.notices)
    st.stop()

datasets = list(options)
asked = vs.peek("dataset")   # a dataset not offered (yet) is said with why, not as "not a known dataset"
dataset = vs.one("dataset", datasets, datasets[0], known=[*datasets, *left_out],
                 unavailable=f"has nothing to correlate yet ({data(trust_tables.trust_not_offered, asked)})"
                 if asked in left_out else None)
# Three short rows rather than one long one: in an 800-px window five or six controls in a row cut their
# values to "sys" and "pu".
c = st.columns(3)
with c[0]:
    dataset = select("Dataset", datasets, dataset, key="tr-dataset")
# Level and origin offered are only those with data for this dataset. Without a level in the link, the page
# opens on the first one where some skill has a verdict (evalcore.analysis.trust_opening.opening, as `evalcore trust`
# does), and says why the ones before it had none; a level the user chose stays in the link and wins.
pairs = options[dataset]
found = data(trust_tables.trust_opening, dataset, method="spearman", dimension="mean")
first = (found.level, found.origin) if found.level else pairs[0]
levels, level, origin = level_and_origin(vs, dataset, pairs, first)
method = vs.one("method", list(METHODS), "spearman")
dims = data(trust_tables.trust_dimensions, dataset)
dimension = vs.one("dimension", dims, "mean", unavailable=f"is not rated in {dataset}")
with c[1]:
    level = select("Level", levels, level, key=f"tr-level-{dataset}",
                   help="the unit a correlation is over: a model (system), a dialogue, or a response (turn)")
    origins = origins_at(pairs, level)
with c[2]:
    origin = select("Metric values", origins, origin, key=f"tr-origin-{dataset}-{level}",
                    help="published: a paper's own system-level tables; computed: this tool's scores")
if not_offered:
    st.caption(md_escape(f"Not offered: {not_offered}. A dataset needs human ratings and metric values of the "
                         "same units."))
if found.level is None:
    st.info(md_escape(f"{dataset} has {found.why}."))
elif (level, origin) == (found.level, found.origin) and found.why:
    st.caption(md_escape(f"Level: {level}, the first with a verdict; {found.why}."))
m = st.columns(3)
with m[0]:
    method = select("Method", list(METHODS), method, key="tr-method")
with m[1]:
    dimension = select("Human dimension", dims, dimension, key=f"tr-dim-{dataset}",
                       help="mean: each unit's mean over the track's dimensions")
flavor = vs.one("flavor", list(FLAVORS), "default") if origin == "computed" else None
show_tracks = vs.one("tracks", ["0", "1"], "0") == "1"
alpha = float(vs.one("alpha", list(ALPHAS), "0.05"))
adjust = vs.one("adjust", list(ADJUSTMENTS), "holm")
# What changes the numbers is read before they are computed (sorting and tracks after).
o = st.columns(4 if origin == "computed" else 3)
with o[0]:
    alpha = float(select("Significance", list(ALPHAS), f"{alpha:g}", key="tr-alpha",
                         help="the significance level α of every test on this page"))
with o[1]:
    adjust = select("p adjusted by", list(ADJUSTMENTS), adjust, key="tr-adjust",
                    help="holm: each column's p values adjusted for the number of metrics compared in it "
                         "(Holm's step-down method); none: as they are")
if origin == "computed":
    with o[3]:
        flavor = select("Flavor", list(FLAVORS), flavor, key="tr-flavor", help="of the lexical metrics")
# What equals its default stays out of the link (evalcore.pagedata.share): on another dataset it is derived again.
opened = (level, origin) == first
values = {"dataset": dataset, "level": None if level == first[0] else level,
          "origin": None if opened else origin, "method": method if method != "spearman" else None,
          "dimension": dimension if dimension != "mean" else None,
          "flavor": flavor if flavor not in (None, "default") else None,
          "alpha": f"{alpha:g}" if alpha != 0.05 else None, "adjust": adjust if adjust != "holm" else None}
setting = dict(level=level, method=method, dimension=dimension, origin=origin, flavor=flavor or "default",
               alpha=alpha, adjust=adjust)

try:
    frame, said, cells, table = data(trust_tables.trust_matrix, dataset, **setting)
except ValueError as exc:  # e.g. a dimension no track of this level rates
    st.warning(md_message(str(exc)))
    publish("trust", values, vs.notices)
    st.stop()

significance = f"p < {alpha:g}" + (", Holm-adjusted over each column's metrics" if adjust == "holm" else "")
# The answer first: one sentence per skill, then how it holds under the other methods and dimensions.
with st.container(border=True):
    st.markdown(f"**Verdicts** ({md_escape(method.capitalize())} with human {md_escape(dimension)}, {level} level; "
                f"significant: {significance})")
    for row in said.itertuples():
        rest = row.text[len(row.skill) + 2:] if row.text.startswith(f"{row.skill}: ") else row.text
        st.markdown(f"**{md_escape(row.skill)}**: {md_escape(rest)}")  # no icon: the sentence says it
        if row.robust:
            st.caption(md_escape(row.robust))

skills = list(dict.fromkeys(frame["skill"]))
sort = vs.one("sort", ["mean"] + skills, "mean")
with m[2]:
    sort = select("Sort metrics by", ["mean"] + skills, sort, key=f"tr-sort-{dataset}",
                  help="mean: the mean of the pooled values over skills")
with o[2]:
    show_tracks = st.toggle("Each track", value=show_tracks, key="tr-tracks",
                            help="a column per track beside each skill's pooled column")
values.update(sort=sort if sort != "mean" else None, tracks="1" if show_tracks else None)

grid = trust_tables.trust_grid(cells, tracks=show_tracks, sort=sort)
heatmap(grid, x="column", y="metric", value="r", label="label", value_title=f"{method} r",
        tooltip=["metric", "column", "r (exact)", "95% CI", "n", "p value", "adjusted p", "verdict", "rank",
                 "dimensions", "note", "judge audit"], optional=("note", "judge audit"),
        x_order=list(dict.fromkeys(grid["column"])), y_order=list(dict.fromkeys(grid["metric"])), key="trust-matrix")
n_values = sorted(set(frame.loc[frame["track"] != "pooled", "n"].dropna().astype(int)))
st.caption(
    f"{method.capitalize()} correlation with human {md_escape(dimension)} at {level} level ({origin} metric values; n = "
    f"{', '.join(map(str, n_values[:6]))}{'…' if len(n_values) > 6 else ''}). A skill's column pools its tracks by a "
    f"fixed-effect meta-analysis of Fisher z (weights n − 3). * significant ({significance}). ▲ the highest r among "
    "the significantly positive cells of the column; a column without ▲ has no metric that agrees reliably with "
    f"people. ≈ significantly positive and not significantly worse than ▲ (Williams' test, one-sided α = {alpha:g}; "
    "pooled: per-track tests combined by Stouffer's Z). ▼ significantly negative: the metric disagrees with people. "
    "Hover a cell for its 95% CI, p values and n; – is undefined (the hover says why)."
    + (" At system level there are few systems per track, so Williams' test has low power: many ties." if level ==
       "system" else "") + (f" At dialogue level, {DIALOGUE_VALUE}." if level == "dialogue" else ""))

st.subheader("Ranking per skill")
unranked = [sk for sk in skills if sk not in set(table["skill"])]
st.caption("Ordered by pooled r within each skill; the order is not a verdict: see the verdict column and the "
           "sentences above." + (f" Not ranked (no verdict, see above): {md_escape(', '.join(unranked))}."
                                  if unranked else ""))
st.dataframe(table, hide_index=True, placeholder="", width="stretch", column_config={
    "r": st.column_config.NumberColumn("pooled r", format="%.3f"),
    "ci": st.column_config.TextColumn("95% CI"),
    "p": st.column_config.NumberColumn("p", format="%.3g"),
    "p_adjusted": st.column_config.NumberColumn("adjusted p", format="%.3g")})
with expander(vs, values, "cells", "Every cell (per track and pooled)"):
    st.dataframe(frame.assign(tied_with_best=frame["tied_with_best"].map({True: "yes", False: "no"}).fillna("")),
                 hide_index=True, placeholder="", width="stretch")
download(frame, f"trust-{dataset}-{level}-{origin}-{method}-{dimension}")
publish("trust", values, vs.notices)
