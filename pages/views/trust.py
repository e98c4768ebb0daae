"""Metric trust: which automatic metric agrees with people on which skill, at a glance."""
import streamlit as st

from evalcore.analysis.options import ADJUSTMENTS, DIALOGUE_VALUE, METHODS
from evalcore.analysis.trust import POOLED
from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.metrics.registry import FLAVORS
from evalcore.pagedata import trust_tables
from pages.kit import lang
from pages.kit.charts import heatmap
from pages.kit.runtime import data
from pages.kit.state import level_and_origin, origins_at, publish, start
from pages.kit.text import md_escape, md_message
from pages.kit.widgets import download, expander, grid, select

ALPHAS = ("0.05", "0.01", "0.1")
# The options shown in the viewer's language (their values are ids: they stay in the link as they are)
OPTIONS = {"pearson": N_("pearson"), "spearman": N_("spearman"), "kendall": N_("kendall"), "system": N_("system"),
         "dialogue": N_("dialogue"), "turn": N_("turn"), "computed": N_("computed"), "published": N_("published"),
         "mean": N_("mean"), "holm": N_("holm"), "none": N_("none"), "default": N_("default")}
# the ranking's and the cells' headers (grid() shows each through the catalog)
HEADERS = (N_("skill"), N_("rank"), N_("metric"), N_("pooled r"), N_("95% CI"), N_("n"), N_("adjusted p"),
           N_("verdict"), N_("note"), N_("track"), N_("dimension"), N_("ci_low"), N_("ci_high"),
           N_("tied_with_best"), N_("dimensions"), N_("ci"), N_("p_adjusted"), N_("mark"), N_("column"),
           N_("r (exact)"), N_("p value"), N_("judge audit"), N_("pooled"))
# evalcore.analysis.options.DIALOGUE_VALUE, as the catalog holds it (shown through _() below)
DIALOGUE_VALUE_MSGID = N_("a dialogue's metric value is the mean of its model turns' values (signature + "
                          "'|dialogue:mean-of-turns')")


def joined(sentences: list[str]) -> str:
    """Whole sentences one after another: a space between them in English, none in Chinese (its full stop is
    full-width)."""
    return ("" if i18n.current() == i18n.ZH else " ").join(sentences)


def aside(text: str, note: str) -> str:
    """A name with a note in brackets, the brackets of the page's language."""
    return f"{text}（{note}）" if i18n.current() == i18n.ZH else f"{text} ({note})"


def colon() -> str:
    """A label's colon in the page's language."""
    return "：" if i18n.current() == i18n.ZH else ": "


def named(value: str) -> str:
    """An option (an id) as the page shows it; a dimension's or skill's name is data and stays as it is."""
    return _(OPTIONS[value]) if value in OPTIONS else trust_tables.skill_name(value)


METHODS_SAID = {"pearson": N_("Pearson"), "spearman": N_("Spearman"), "kendall": N_("Kendall")}   # in a sentence


def said_method(method: str) -> str:
    """A method's name as a sentence or a title says it."""
    return _(METHODS_SAID[method])


con, vs = start(_("Which metric to trust, per skill"))
options = data(trust_tables.trust_choices)
left_out = data(trust_tables.trust_left_out)   # dataset -> why it is not offered
not_offered = _("; ").join(aside(d, _(why)) for d, why in left_out.items())
if not options:
    st.info(_("No dataset here has both metric values and human ratings of the same units. Rate a track's responses "
              "in a rating task (Rating tasks page), or upload ratings on the Upload page (File holds: ratings); its "
              "scoring job computes the metrics. From a terminal, `evalcore import published` loads a paper's "
              "system-level tables; see the README."))
    if not_offered:
        st.caption(md_escape(_("Datasets here: {datasets}.").format(datasets=not_offered)))
    publish("trust", {}, vs.notices)
    lang.stop()   # the language switch drawn first

datasets = list(options)
asked = vs.peek("dataset")   # a dataset not offered (yet) is said with why, not as "not a known dataset"
dataset = vs.one("dataset", datasets, datasets[0], known=[*datasets, *left_out],
                 unavailable=_("has nothing to correlate yet ({why})").format(
                     why=data(trust_tables.trust_not_offered, asked)) if asked in left_out else None)
# Three short rows rather than one long one: in an 800-px window five or six controls in a row cut their
# values to "sys" and "pu".
c = st.columns(3)
with c[0]:
    dataset = select(_("Dataset"), datasets, dataset, key="tr-dataset")
# Level and origin offered are only those with data for this dataset. Without a level in the link, the page
# opens on the first one where some skill has a verdict (evalcore.analysis.trust_opening.opening, as `evalcore trust`
# does), and says why the ones before it had none; a level the user chose stays in the link and wins.
pairs = options[dataset]
found = data(trust_tables.trust_opening, dataset, method="spearman", dimension="mean")
first = (found.level, found.origin) if found.level else pairs[0]
levels, level, origin = level_and_origin(vs, dataset, pairs, first)
method = vs.one("method", list(METHODS), "spearman")
dims = data(trust_tables.trust_dimensions, dataset)
dimension = vs.one("dimension", dims, "mean", unavailable=_("is not rated in {dataset}").format(dataset=dataset))
with c[1]:
    level = select(_("Level"), levels, level, key=f"tr-level-{dataset}", format_func=named,
                   help=_("the unit a correlation is over: a model (system), a dialogue, or a response (turn)"))
    origins = origins_at(pairs, level)
with c[2]:
    origin = select(_("Metric values"), origins, origin, key=f"tr-origin-{dataset}-{level}", format_func=named,
                    help=_("published: a paper's own system-level tables; computed: this tool's scores"))
if not_offered:
    st.caption(md_escape(_("Not offered: {datasets}. A dataset needs human ratings and metric values of the same "
                           "units.").format(datasets=not_offered)))
if found.level is None:
    st.info(md_escape(_("{dataset} has {why}.").format(dataset=dataset, why=found.why)))
elif (level, origin) == (found.level, found.origin) and found.why:
    st.caption(md_escape(_("Level: {level}, the first with a verdict; {why}.").format(level=named(level),
                                                                                       why=found.why)))
m = st.columns(3)
with m[0]:
    method = select(_("Method"), list(METHODS), method, key="tr-method", format_func=named)
with m[1]:
    dimension = select(_("Human dimension"), dims, dimension, key=f"tr-dim-{dataset}", format_func=named,
                       help=_("mean: each unit's mean over the track's dimensions"))
flavor = vs.one("flavor", list(FLAVORS), "default") if origin == "computed" else None
show_tracks = vs.one("tracks", ["0", "1"], "0") == "1"
alpha = float(vs.one("alpha", list(ALPHAS), "0.05"))
adjust = vs.one("adjust", list(ADJUSTMENTS), "holm")
# What changes the numbers is read before they are computed (sorting and tracks after).
o = st.columns(4 if origin == "computed" else 3)
with o[0]:
    alpha = float(select(_("Significance"), list(ALPHAS), f"{alpha:g}", key="tr-alpha",
                         help=_("the significance level α of every test on this page")))
with o[1]:
    adjust = select(_("p adjusted by"), list(ADJUSTMENTS), adjust, key="tr-adjust", format_func=named,
                    help=_("holm: each column's p values adjusted for the number of metrics compared in it "
                           "(Holm's step-down method); none: as they are"))
if origin == "computed":
    with o[3]:
        flavor = select(_("Flavor"), list(FLAVORS), flavor, key="tr-flavor", format_func=named,
                        help=_("of the lexical metrics"))
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
    lang.stop()   # the language switch drawn first

significance = (_("p < {alpha}, Holm-adjusted over each column's metrics") if adjust == "holm"
                else "p < {alpha}").format(alpha=f"{alpha:g}")
# The answer first: one sentence per skill, then how it holds under the other methods and dimensions.
with st.container(border=True):
    st.markdown(_("**Verdicts** ({method} with human {dimension}, {level} level; significant: {significance})").format(
        method=md_escape(said_method(method)), dimension=md_escape(named(dimension)), level=named(level),
        significance=significance))
    for row in said.itertuples():
        head = next((p for p in (f"{row.skill}: ", f"{row.skill}：") if row.text.startswith(p)), "")
        rest = row.text[len(head):]
        # no icon: the sentence says it
        st.markdown(f"**{md_escape(trust_tables.skill_name(row.skill))}**{colon()}{md_escape(rest)}")
        if row.robust:
            st.caption(md_escape(row.robust))

skills = list(dict.fromkeys(frame["skill"]))
sort = vs.one("sort", ["mean"] + skills, "mean")
with m[2]:
    sort = select(_("Sort metrics by"), ["mean"] + skills, sort, key=f"tr-sort-{dataset}", format_func=named,
                  help=_("mean: the mean of the pooled values over skills"))
with o[2]:
    show_tracks = st.toggle(_("Each track"), value=show_tracks, key="tr-tracks",
                            help=_("a column per track beside each skill's pooled column"))
values.update(sort=sort if sort != "mean" else None, tracks="1" if show_tracks else None)

shown = trust_tables.trust_grid(cells, tracks=show_tracks, sort=sort)
heatmap(shown, x="column", y="metric", value="r", label="label", value_title=f"{named(method)} r",
        tooltip=["metric", "column", "r (exact)", "95% CI", "n", "p value", "adjusted p", "verdict", "rank",
                 "dimensions", "note", "judge audit"], optional=("note", "judge audit"),
        x_order=list(dict.fromkeys(shown["column"])), y_order=list(dict.fromkeys(shown["metric"])), key="trust-matrix")
n_values = sorted(set(frame.loc[frame["track"] != "pooled", "n"].dropna().astype(int)))
caption = [_("{method} correlation with human {dimension} at {level} level ({origin} metric values; n = {n}). A "
              "skill's column pools its tracks by a fixed-effect meta-analysis of Fisher z (weights n − 3). * "
              "significant ({significance}). ▲ the highest r among the significantly positive cells of the column; a "
              "column without ▲ has no metric that agrees reliably with people. ≈ significantly positive and not "
              "significantly worse than ▲ (Williams' test, one-sided α = {alpha}; pooled: per-track tests combined "
              "by Stouffer's Z). ▼ significantly negative: the metric disagrees with people. Hover a cell for its 95% "
              "CI, p values and n; – is undefined (the hover says why).").format(
    method=said_method(method), dimension=md_escape(named(dimension)), level=named(level), origin=named(origin),
    n=", ".join(map(str, n_values[:6])) + ("…" if len(n_values) > 6 else ""), significance=significance,
    alpha=f"{alpha:g}")]
if level == "system":
    caption.append(_("At system level there are few systems per track, so Williams' test has low power: many ties."))
if level == "dialogue":
    caption.append(_("At dialogue level, {how}.").format(how=_(DIALOGUE_VALUE)))
st.caption(joined(caption))

st.subheader(_("Ranking per skill"))
unranked = [sk for sk in skills if sk not in set(table["skill"])]
st.caption(joined([_("Ordered by pooled r within each skill; the order is not a verdict: see the verdict column "
                       "and the sentences above.")]
                    + ([_("Not ranked (no verdict, see above): {skills}.").format(
                        skills=md_escape(", ".join(map(trust_tables.skill_name, unranked))))]
                       if unranked else [])))
grid(table.assign(skill=table["skill"].map(trust_tables.skill_name)), width="stretch", column_config={
    "r": st.column_config.NumberColumn("pooled r", format="%.3f"),
    "ci": st.column_config.TextColumn("95% CI"),
    "p": st.column_config.NumberColumn("p", format="%.3g"),
    "p_adjusted": st.column_config.NumberColumn("adjusted p", format="%.3g")})
with expander(vs, values, "cells", _("Every cell (per track and pooled)")):
    # its words in the viewer's language (a skill, the pooled row, a mark); the download keeps the ids
    grid(frame.assign(tied_with_best=frame["tied_with_best"].map({True: _("yes"), False: _("no")}).fillna(""),
                      skill=frame["skill"].map(trust_tables.skill_name),
                      track=frame["track"].map(lambda t: _("pooled") if t == POOLED else t),
                      mark=frame["mark"].map(lambda m: _(trust_tables.TRUST_WORDS[m]) if m in trust_tables.TRUST_WORDS
                                             else m)),
         width="stretch")
download(frame, f"trust-{dataset}-{level}-{origin}-{method}-{dimension}")
publish("trust", values, vs.notices)
