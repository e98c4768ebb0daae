"""The pages' charts as Vega-Lite specs (names drawn as text, never markup): heatmaps, bar charts, points
against the diagonal, and a model's ranks across tracks."""
from __future__ import annotations

import itertools

import pandas as pd
import streamlit as st

from evalcore.core.i18n import N_, _

# Chinese drawn with a CJK font wherever the viewer's machine has one (Latin text too: one family, one look).
CJK_FONT = "Noto Sans CJK SC, Source Han Sans SC, Noto Sans SC, PingFang SC, Microsoft YaHei, sans-serif"

# rank_chart's fields, as its axis, legend and hover title them (heatmap's and bar's: the calling page's headers)
HEADERS = (N_("track"), N_("skill"), N_("rank"), N_("rank_ci_low"), N_("rank_ci_high"), N_("ranked"))


def _tip(field: str, **more) -> dict:
    """A tooltip entry: the field by its (English) name, titled in the viewer's language (a field's name that the
    catalog holds: a column header; a metric's or model's name is data and stays as it is)."""
    return {"field": field, "title": _(field), **more}


def _records(frame: pd.DataFrame, columns: list[str]) -> list[dict]:
    """Rows for a Vega-Lite spec: NaN as null, numbers as plain Python numbers."""
    part = frame[list(dict.fromkeys(columns))]
    return part.astype(object).where(part.notna(), None).to_dict("records")


DIVERGING = {"scheme": "redblue", "domain": [-1, 1], "domainMid": 0}


def heatmap(cells: pd.DataFrame, *, x: str, y: str, value: str, label: str, tooltip: list[str],
            x_order: list[str], y_order: list[str], value_title: str, key: str, scale: dict | None = None,
            optional: tuple[str, ...] = ()) -> None:
    """A correlation heatmap as a Vega-Lite chart: diverging colour centred on 0 (-1..1), the label
    printed in each cell, `tooltip` fields on hover. Vega draws every string as text (never markup),
    and its bundle is a fraction of Plotly's, so the page draws sooner. The `optional` tooltip fields show only
    on the cells that have one (a judge's audit, a note): Vega-Lite's tooltip lists the same fields for every
    cell, so each combination of them present is a layer of its own, filtered to its cells."""
    records = _records(cells, [x, y, value, label, *tooltip])
    many = len(x_order) > 6  # long column names: slant them rather than let Vega drop the overlapping ones
    enc_x = {"field": x, "type": "nominal", "sort": x_order, "title": None,
             "axis": {"orient": "top", "labelAngle": -35 if many else 0, "labelAlign": "left" if many else "center",
                      "labelOverlap": False, "labelLimit": 220}}
    enc_y = {"field": y, "type": "nominal", "sort": y_order, "title": None,
             "axis": {"labelLimit": 220, "labelOverlap": False}}
    optional = tuple(f for f in optional if f in tooltip)
    layers = []
    for present in itertools.product((True, False), repeat=len(optional)):
        tips = [_tip(t, type="nominal") for t in tooltip
                if t not in optional or present[optional.index(t)]]
        test = " && ".join(("" if has else "!") + f"(isValid(datum['{f}']) && datum['{f}'] !== '')"
                           for f, has in zip(optional, present))
        where = [{"filter": test}] if test else []
        layers += [
            {"transform": where, "mark": {"type": "rect", "stroke": "white"},
             "encoding": {"color": {"field": value, "type": "quantitative", "title": value_title,
                                    "scale": scale or DIVERGING,  # legend below: beside a short chart it is cut
                                    "legend": {"orient": "bottom", "direction": "horizontal", "gradientLength": 220}},
                          "tooltip": tips}},
            {"transform": where, "mark": {"type": "text", "fontSize": 12},
             "encoding": {"text": {"field": label, "type": "nominal"}, "tooltip": tips,
                          "color": {"condition": {"test": f"abs(datum['{value}']) > 0.55", "value": "white"},
                                    "value": "#222"}}},
        ]
    spec = {
        "data": {"values": records},
        "height": {"step": 28},
        "encoding": {"x": enc_x, "y": enc_y},
        "layer": layers,
        "config": {"font": CJK_FONT, "axis": {"labelFontSize": 12}, "view": {"stroke": None}},
    }
    st.vega_lite_chart(spec=spec, width="stretch", key=key)


def bar(frame: pd.DataFrame, *, x: str, y: str, key: str, color: str | None = None, facet: str | None = None,
        y_title: str | None = None, y_domain: list[float] | None = None, tooltip: list[str] | None = None,
        height: int = 320, columns: int = 3, facet_width: int = 240) -> None:
    """A (grouped, optionally faceted) bar chart in Vega-Lite; names are drawn as text."""
    tips = tooltip or [c for c in (facet, x, color, y) if c]
    enc: dict = {"x": {"field": x, "type": "nominal", "title": _(x), "sort": list(dict.fromkeys(frame[x])),
                       "axis": {"labelLimit": 180}},
                 "y": {"field": y, "type": "quantitative", "title": y_title or _(y)},
                 "tooltip": [_tip(t) for t in tips]}
    if y_domain:
        enc["y"]["scale"] = {"domain": y_domain}
    if color:
        enc["color"] = {"field": color, "type": "nominal", "sort": list(dict.fromkeys(frame[color])),
                        "title": _(color), "legend": {"labelLimit": 260}}
        enc["xOffset"] = {"field": color, "sort": list(dict.fromkeys(frame[color]))}
    inner = {"mark": {"type": "bar", "tooltip": True}, "encoding": enc, "height": height}
    spec = {"data": {"values": _records(frame, [c for c in (x, y, color, facet, *tips) if c])},
            "config": {"font": CJK_FONT}}
    if facet:
        spec.update(facet={"field": facet, "type": "nominal", "title": None}, columns=columns,
                    spec={**inner, "width": facet_width})
        if color:  # below the facets: at the side it would be cut off
            enc["color"]["legend"] = {"orient": "bottom", "columns": 2, "labelLimit": 320}
        st.vega_lite_chart(spec=spec, width="content", key=key)
    else:
        spec.update(inner)
        st.vega_lite_chart(spec=spec, width="stretch", key=key)


def scatter_vs_diagonal(frame: pd.DataFrame, *, x: str, y: str, color: str, tooltip: list[str], key: str,
                        x_title: str, y_title: str) -> None:
    """Points against the y = x line over -1..1 (e.g. recomputed vs published correlations)."""
    points = {"mark": {"type": "circle", "size": 60}, "data": {"values": _records(frame, [x, y, color, *tooltip])},
              "encoding": {"x": {"field": x, "type": "quantitative", "title": x_title, "scale": {"domain": [-1, 1]}},
                           "y": {"field": y, "type": "quantitative", "title": y_title, "scale": {"domain": [-1, 1]}},
                           "color": {"field": color, "type": "nominal", "title": _(color)},
                           "tooltip": [_tip(t) for t in [color, *tooltip, x, y]]}}
    diagonal = {"mark": {"type": "line", "strokeDash": [4, 4], "color": "grey"},
                "data": {"values": [{x: -1, y: -1}, {x: 1, y: 1}]},
                "encoding": {"x": {"field": x, "type": "quantitative"}, "y": {"field": y, "type": "quantitative"}}}
    st.vega_lite_chart(spec={"layer": [diagonal, points], "height": 420, "config": {"font": CJK_FONT}},
                       width="stretch", key=key)


def rank_chart(ranks: pd.DataFrame, *, key: str, title: str) -> None:
    """One model's rank per track: a point at the rank, a bar over its 95% interval, rank 1 on top."""
    frame = ranks.dropna(subset=["rank"]).astype({"rank": float, "rank_ci_low": float, "rank_ci_high": float})
    frame = frame.assign(of=frame["ranked"].map(lambda n: _("of {n}").format(n=n)))
    top = max(2, int(frame[["rank", "rank_ci_high", "ranked"]].max().max()))
    y = {"type": "quantitative", "scale": {"domain": [top + 0.5, 0.5], "nice": False},
         "axis": {"tickMinStep": 1, "format": "d"}}
    x = {"field": "track", "type": "nominal", "sort": list(frame["track"]), "title": _("track"),
         "axis": {"labelAngle": -20, "labelLimit": 200}}
    tips = [_tip(t) for t in ("track", "skill", "rank", "rank_ci_low", "rank_ci_high", "ranked")]
    spec = {"data": {"values": _records(frame, ["track", "skill", "rank", "rank_ci_low", "rank_ci_high", "ranked", "of"])},
            "height": 260, "config": {"font": CJK_FONT},
            "layer": [
                {"mark": {"type": "rule", "strokeWidth": 3, "opacity": 0.5},
                 "encoding": {"x": x, "y": {"field": "rank_ci_low", **y, "title": title},
                              "y2": {"field": "rank_ci_high"}, "tooltip": tips}},
                {"mark": {"type": "point", "filled": True, "size": 120},
                 "encoding": {"x": x, "y": {"field": "rank", **y},
                              "color": {"field": "skill", "type": "nominal", "title": _("skill")},
                              "tooltip": tips}},
                {"mark": {"type": "text", "dx": 22, "align": "left"},
                 "encoding": {"x": x, "y": {"field": "rank", **y}, "text": {"field": "of"}}},
            ]}
    st.vega_lite_chart(spec=spec, width="stretch", key=key)
