"""The offline report drawn as HTML: its facts, each view's notes, tables and Plotly charts, and the text behind
its checksum. Everything that came from a store (a model's name, a track, an annotator, a note) is text: escaped
for HTML here, and for Plotly's labels too (Plotly reads a few tags in its labels; an escaped name shows as typed)."""
from __future__ import annotations

import html
import math
import numbers

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from evalcore.core import i18n
from evalcore.core.i18n import N_, _

DIGITS = 4   # as `evalcore ... --format table` rounds (the data text keeps full precision)
CONFIG = {"displaylogo": False, "responsive": True}
STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC",sans-serif;margin:0;
  color:#1f2328;background:#fff;line-height:1.45}
main{max-width:1280px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.6rem;margin:.4rem 0 1rem}h2{font-size:1.3rem;margin:2rem 0 .5rem;border-bottom:1px solid #d0d7de}
h3{font-size:1.05rem;margin:1.2rem 0 .4rem}
nav{margin-bottom:.6rem}nav a{margin-right:1rem;display:inline-block}
table{border-collapse:collapse;font-size:.85rem}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.long{min-width:14rem;max-width:32rem;overflow-wrap:anywhere;font-size:.8rem}
.scroll{overflow:auto;max-height:32rem;max-width:100%;margin-bottom:.6rem}
.facts th{position:static;width:11rem}.facts td{overflow-wrap:anywhere}
.note{max-width:60rem;white-space:pre-line}
pre{white-space:pre;overflow:auto;max-height:24rem;background:#f6f8fa;padding:8px;font-size:.75rem}
.chart{width:100%;margin-bottom:1rem}
"""
# a report in Chinese: its words drawn in a CJK font wherever the reader has one (no missing-glyph boxes)
CJK_FONTS = '"Noto Sans CJK SC","Source Han Sans SC","PingFang SC","Hiragino Sans GB","Microsoft YaHei",' \
            '"WenQuanYi Micro Hei",sans-serif'
CJK_STYLE = f"body{{font-family:system-ui,-apple-system,\"Segoe UI\",{CJK_FONTS}}}th{{word-break:keep-all}}\n"
# the bar charts' legend, and the tables' headers no page shows (a table's headers are its columns' names, each
# through _(): the data text under the checksum keeps the names)
HEADERS = (N_("origin"), N_("rank_by"), N_("rank_ci"), N_("ci_method"), N_("definition"))


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def cell(value) -> tuple[str, str]:
    """(class, text) of a table cell: a number rounded as the CLI's table shows it, a blank for a missing value."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "", ""
    if isinstance(value, bool):
        return "", str(value)
    if isinstance(value, numbers.Integral):
        return "num", str(int(value))
    if isinstance(value, numbers.Real):
        return "num", f"{round(float(value), DIGITS):g}" if abs(value) < 1e6 else f"{float(value):.6g}"
    text = str(value)
    return ("long" if len(text) > 40 else ""), text


def table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "<p><em>" + esc(_("(nothing: no data for this table)")) + "</em></p>"
    # a header in the report's language where the catalog has it (as a page's table); the data text keeps the names
    head = "".join(f"<th>{esc(_(str(c)))}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = (cell(v) for v in values)
        rows.append("<tr>" + "".join(f'<td class="{k}">{esc(t)}</td>' if k else f"<td>{esc(t)}</td>"
                                     for k, t in cells) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def figure(title: str, kind: str, frame: pd.DataFrame) -> go.Figure:
    """A chart of one of report.View's kinds: bar (model, origin, value), heatmap (metric, dimension, r) or
    interval (label, r, ci_low, ci_high)."""
    if kind == "bar":
        # horizontal: a model's name reads whole at any width (slanted ticks ran into the chart above)
        fig = go.Figure([go.Bar(y=[esc(m) for m in part["model"]], x=part["value"], name=esc(origin), orientation="h")
                         for origin, part in frame.groupby("origin", sort=False)])
        fig.update_layout(legend_title_text=esc(_("origin")))
        height = 140 + 22 * len(frame)
    elif kind == "heatmap":
        wide = frame.pivot_table(index="metric", columns="dimension", values="r", sort=False)
        fig = go.Figure(go.Heatmap(z=wide.values, x=[esc(c) for c in wide.columns], y=[esc(i) for i in wide.index],
                                   zmin=-1, zmax=1, colorscale="RdBu", texttemplate="%{z:.2f}", hoverongaps=False))
        height = 160 + 22 * len(wide)
    else:
        part = frame.iloc[::-1]   # first row at the top
        fig = go.Figure(go.Scatter(x=part["r"], y=[esc(v) for v in part["label"]], mode="markers", error_x=dict(
            type="data", symmetric=False, array=(part["ci_high"] - part["r"]).clip(lower=0),
            arrayminus=(part["r"] - part["ci_low"]).clip(lower=0))))
        fig.add_vline(x=0, line_width=1, line_color="#888")
        height = 140 + 22 * len(part)
    fig.update_layout(title=esc(title), height=min(height, 2400), margin=dict(l=10, r=10, t=50, b=10),
                      template="plotly_white", yaxis_automargin=True, xaxis_automargin=True)
    if i18n.current() != i18n.EN:   # Chinese titles and labels in a CJK font (the English charts as they were)
        fig.update_layout(font_family=CJK_FONTS.replace('"', ""))
    if kind != "interval":   # the table's first row at the top, as it reads
        fig.update_yaxes(autorange="reversed")
    return fig


def page(title: str, facts: list[tuple[str, str]], views, data_text: str) -> str:
    """The whole document: plotly.js goes in once, inline, with the first chart (none when nothing is drawn)."""
    inlined = False
    body = [f"<h1>{esc(title)}</h1>",
            "<nav>" + "".join(f'<a href="#{esc(v.key)}">{esc(v.title)}</a>' for v in views)
            + '<a href="#data">' + esc(_("Data behind the checksum")) + "</a></nav>",
            '<table class="facts">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
            + "</table>"]
    for view in views:
        body.append(f'<h2 id="{esc(view.key)}">{esc(view.title)}</h2>')
        body += [f'<p class="note">{esc(n)}</p>' for n in view.notes]
        for chart in view.charts:
            body.append('<div class="chart">' + pio.to_html(
                figure(*chart), full_html=False, include_plotlyjs=not inlined, include_mathjax=False,
                config=CONFIG, default_width="100%") + "</div>")
            inlined = True
        for t in view.tables:
            body += [f"<h3>{esc(t.caption)}</h3>", table(t.frame)]
    body += ['<h2 id="data">' + esc(_("Data behind the checksum")) + "</h2>",
             '<p class="note">' + esc(_("The sha256 of this text (UTF-8) is the data checksum above: every table of "
                                        "the report at full precision, each under its name, its rows sorted."))
             + "</p>",
             "<details><summary>" + esc(_("Show the text")) + f"</summary><pre>{esc(data_text)}</pre></details>"]
    lang = i18n.current()   # the language build() made the report in
    style = STYLE if lang == i18n.EN else STYLE + CJK_STYLE
    return (f'<!DOCTYPE html>\n<html lang="{esc(lang)}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{style}</style></head>"
            f"<body><main>{''.join(body)}</main></body></html>\n")
