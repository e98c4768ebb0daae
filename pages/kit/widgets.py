"""The pages' controls and tables: a select box that says why it is empty, expanders and sort orders kept in
the link, tables without an index, and CSV downloads (made when clicked when they are large)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import N_, _

from evalcore.core.export import safe_csv
from evalcore.pagedata.share import ViewState
from pages.kit.runtime import data, release
from pages.kit.text import md_escape, safe_filename


def grid(frame, **kwargs) -> None:
    """st.dataframe as every page shows a table: no index, a missing value as a blank cell (Streamlit otherwise
    prints "None"), and its headers in the viewer's language (headers()); the frame keeps its own column names, which
    a download and a link's sort= use."""
    kwargs["column_config"] = headers(frame, kwargs.get("column_config"))
    st.dataframe(frame, **{"hide_index": True, "placeholder": "", **kwargs})


def headers(frame, config: dict | None) -> dict | None:
    """A table's column_config with each header (a column's name, or the label a page gave it) through the catalog.
    Only headers the catalog holds change: a model's name as a header is data and has no entry."""
    if i18n.current() == i18n.EN:
        return config
    config = dict(config or {})
    for col in getattr(getattr(frame, "data", frame), "columns", ()):
        name = str(col)
        entry = config.get(name, config.get(col))
        if entry is None and (name in config or col in config):
            continue   # hidden
        if entry is None:
            if _(name) != name:
                config[name] = {"label": _(name)}
        elif isinstance(entry, str):
            config[name] = _(entry)
        elif isinstance(entry, dict):
            config[name] = {**entry, "label": _(entry.get("label") or name)}
    return config


def select(label: str, options: list[str], value: str | None, key: str, *, empty: str | None = None,
           **kwargs) -> str | None:
    """A select box on `options` starting at `value`; with no options, a caption saying why (`empty`)
    instead of a disabled box, and None."""
    if not options:
        st.caption(md_escape(_("{label}: {why}").format(label=label, why=empty or _("nothing to choose from here."))))
        return None
    return st.selectbox(label, options, index=options.index(value) if value in options else 0, key=key, **kwargs)


def expander(vs: ViewState, values: dict, key: str, label: str):
    """st.expander whose open state is part of the link: `open=` lists the page's open expanders."""
    box = st.expander(label, expanded=vs.member("open", key), key=f"open-{key}", on_change="rerun")
    opened = [k for k in values.get("open") or [] if k != key] + ([key] if box.open else [])
    values["open"] = opened or None
    return box


HEADERS = (N_("(as listed)"), N_("ascending"), N_("descending"))   # the sort control's options, shown translated


def sort_table(vs: ViewState, values: dict, frame: pd.DataFrame, key: str, *, default: str | None = None,
               descending: bool = False, columns: list[str] | None = None) -> pd.DataFrame:
    """The page's main table sorted by a column picked here, kept in the link (sort=, order=). A click
    on a grid's header sorts only that browser's copy, which no link can carry; this control can.
    `default` None keeps the table's own order until a column is picked."""
    columns = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    keep = "(as listed)"   # an option's id (in the link as sort=); shown in the viewer's language
    options = ([] if default in columns else [keep]) + columns
    col = vs.one("sort", options, default if default in columns else keep)
    order = vs.one("order", ["ascending", "descending"], "descending" if descending else "ascending")
    c1, c2, __ = st.columns([3, 4, 2])  # room for "descending" in a narrow window
    with c1:
        col = select(_("Sort by"), options, col, key=f"sort-{key}", format_func=_,
                     help=_("Kept in the page's link; a click on a column header sorts only your own screen."))
    with c2:
        order = st.segmented_control(_("Order"), ["ascending", "descending"], default=order, key=f"order-{key}",
                                     format_func=_, disabled=col == keep) or order
    values.update(sort=None if col in (keep, default) else col,
                  order=None if col == keep or order == ("descending" if descending else "ascending") else order)
    if col == keep:
        return frame
    return frame.sort_values(col, ascending=order == "ascending", na_position="last", kind="stable")


def unless_empty(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """The frame without `column` when no row fills it (a `note` that says why a value is withheld)."""
    return frame.drop(columns=[column]) if column in frame and frame[column].isna().all() else frame


def deferred(fn, *args, **kwargs):
    """A download's contents made only when its button is clicked (st.download_button calls this on a thread
    of its own): data(fn, ...), then that thread's lease on the store given back. The Upload page's template
    of every track is 44 MB of CSV for 100,000 items; made on every run, it took 3.4 s of the page's first
    view on a 1M-response store, and it went to every viewer's browser whether clicked or not."""
    lang = i18n.current()   # the click's thread is not the page's: made in the language the page was drawn in

    def make():
        i18n.use(lang)
        try:
            return data(fn, *args, **kwargs)
        finally:
            release()
    return make


DEFERRED_ROWS = 2_000


def download(frame: pd.DataFrame, name: str, label: str | None = None, complete=None) -> None:
    """A CSV download button; `name` may hold user text (dataset, track, model): the file name is made safe,
    and so are the cells (evalcore.core.export.safe_csv: a text cell that would start a formula gets a quote).
    A table over DEFERRED_ROWS rows is made into CSV when the button is clicked: made on every run, the
    drilldown's 500,000 responses at ten million were written out (and sent to every viewer) each time a
    control moved, and its rated view's 10,000 took 0.19 s of a 0.26 s run. A smaller one goes with the page
    (a click then needs no round trip to a busy server). `complete`: frame -> the frame as downloaded (the
    columns a page left out of its sorting, added then)."""
    whole = complete or (lambda f: f)
    contents = (lambda: safe_csv(whole(frame))) if len(frame) > DEFERRED_ROWS else safe_csv(whole(frame))
    st.download_button(label or _("Download CSV"), contents, file_name=f"{safe_filename(name)}.csv",
                       mime="text/csv", key=f"dl-{name}")
