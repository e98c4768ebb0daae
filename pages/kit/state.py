"""A page's view state and the URL: every page's opening (start), the dataset and track choices, the link
written back into the address bar with notices about what it named that is not there (publish) beside the
dataset's offline report, multi-selects kept in the link, and links to other pages on this server."""
from __future__ import annotations

import hashlib
import threading
from urllib.parse import urlsplit

import duckdb
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import _
from evalcore.pagedata import catalog
from evalcore.pagedata.openings import opening
from evalcore.pagedata.share import ViewState, link, to_query
from evalcore.services import report
from pages.kit import lang
from pages.kit.runtime import building, building_note, cursor, data
from pages.kit.text import md_escape, safe_filename
from pages.kit.widgets import deferred, select

_RUN = threading.local()  # this script run's link box, notice box and view state (each run has its own thread)


def start(title: str) -> tuple[duckdb.DuckDBPyConnection, ViewState]:
    """Every page's opening: title (with the "Link to this view" button beside it, filled by publish()), a cursor
    on the store, and the URL's view state; stops on an empty store."""
    # The link sits beside the title, not in a sidebar: the navigation is a bar along the top (app.py), so at
    # 800 px the page has the whole width (a sidebar took 300 px of it and cut tables and definitions).
    _RUN.link = title_row(title).popover(_("Link to this view"), icon=":material/link:")
    # Notices about the URL's values (publish() draws them once the page knows them) go right under the
    # title, where a reader looks first, not under the charts.
    _RUN.notices = st.container()
    con = cursor()
    if empty_store():
        lang.stop()
    building_note()
    _RUN.view = view_state()
    return con, _RUN.view


def title_row(title: str):
    """A page's title with, at its right, a row for the page's buttons (returned) ending in the language switch's
    place (lang.place: app.py draws the switch there once the page has chosen its language)."""
    head, right = st.columns([3, 2], vertical_alignment="center")
    head.title(title)
    buttons = right.container(horizontal=True, horizontal_alignment="right", vertical_alignment="center")
    lang.place(buttons.empty())
    return buttons


def pick_track(con, vs: ViewState, prefix: str, *, skills: bool, shows=None,
               default: tuple[str, str | None] | None = None) -> tuple[str | None, str | None, list]:
    """The dataset and track selectors every data page starts with (state from and to the URL). Without them in
    the URL the page opens where it has something to show (evalcore.pagedata.openings.opening): `shows`, the
    (dataset, track) pairs where it does, best first (a view's list), or `default`, one such pair; where this
    session's last page was, when that is one of them."""
    datasets = data(catalog.datasets)
    places = list(shows or ([default] if default and default[0] else []))
    named = vs.peek("dataset")
    first, track_first = opening(places, datasets, named=named if named in datasets else None,
                                 last=st.session_state.get(_LAST), busy=building())
    dataset = vs.one("dataset", datasets, first)
    if dataset != first:   # a link's dataset that is not the one opening() saw: its first track that shows something
        track_first = next((t for d, t in places if d == dataset), None)
    track = vs.one("track", data(catalog.track_options, dataset, skills=skills), track_first)
    # Dataset, track and one control of the page's: at 800 px (sidebar open) a quarter of the row cut the
    # dataset's name to "demc"
    cols = st.columns([2, 3, 2])
    label = _("Track (or all tracks of a skill)") if skills else _("Track")
    with cols[0]:
        dataset = select(_("Dataset"), datasets, dataset, key=f"{prefix}-dataset")
    with cols[1]:
        track = select(label, data(catalog.track_options, dataset, skills=skills), track, key=f"{prefix}-track-{dataset}")
    remember(dataset, track)
    return dataset, track, cols


_LAST = "evalcore-last-place"   # session state: the (dataset, track) this session's last data page showed


def remember(dataset: str | None, track: str | None) -> None:
    """Where this session is: a page opened from the navigation opens here when it has something to show here (the
    Upload page names the track an upload wrote into, so the Leaderboard opens on the new model's track)."""
    if dataset:
        st.session_state[_LAST] = (dataset, track)


def level_and_origin(vs: ViewState, dataset: str, pairs: list[tuple[str, str]],
                     default: tuple[str | None, str | None] = (None, None)) -> tuple[list[str], str, str]:
    """(levels offered, level, origin) from the URL, offering only the (level, origin) pairs with data
    for the dataset: a stale value moves to `default` (else the first valid one) with a notice."""
    levels = list(dict.fromkeys(lv for lv, __ in pairs))
    level = vs.one("level", levels, default[0] if default[0] in levels else levels[0],
                   unavailable=_("has nothing to correlate in {dataset}").format(dataset=dataset))
    origins = origins_at(pairs, level)
    origin = vs.one("origin", origins, default[1] if default[1] in origins else origins[0],
                    unavailable=_("has no values at {level} level in {dataset}").format(level=level, dataset=dataset))
    return levels, level, origin


def origins_at(pairs: list[tuple[str, str]], level: str) -> list[str]:
    return [o for lv, o in pairs if lv == level]


_PUBLISHED = "evalcore-published-view"   # session state: the query publish() last wrote into the URL


def view_state() -> ViewState:
    """The URL's view state. A query this session's last publish() wrote is the page's own (from_link False): what
    it holds the user chose here, and a value an upstream change of theirs makes inapplicable is no stale link."""
    query = {k: st.query_params.get_all(k) for k in st.query_params.keys()}
    own = st.session_state.get(_PUBLISHED)
    return ViewState(query, from_link=own is None or own != {k: v[-1] for k, v in query.items() if v})


def publish(page: str, values: dict, notices: list[str]) -> None:
    """Write the view into the URL, show notices about ignored parameters (and, once, the chosen options the
    user's own change upstream left out: ViewState.notes), and a copyable link."""
    query = to_query(values)
    if dict(st.query_params.to_dict()) != query:
        st.query_params.from_dict(query)
    st.session_state[_PUBLISHED] = query
    box = getattr(_RUN, "notices", None)
    _RUN.notices = None
    view = getattr(_RUN, "view", None)
    _RUN.view = None
    for note in notices:  # in the place start() kept under the title
        # they quote the URL: text, not markdown; no icon (an emoji needs an emoji font, and a hostile name's
        # test takes any icon on the page for markup that fired)
        (box if box is not None else st).info(md_escape(note))
    for note in view.notes if view is not None else ():
        (box if box is not None else st).caption(md_escape(note))
    where = getattr(_RUN, "link", None)
    _RUN.link = None
    with where if where is not None else st.container():
        # Plain text: not st.code (which loads a 1.5 MB highlighter on every page), not markdown (the
        # link's host comes from the request, so it is text like any other).
        st.caption(_("Link to exactly this view: copy it from here or from the address bar"))
        st.text(link(base_url(), page, values))
        dataset = values.get("dataset")
        if dataset:
            # made only when clicked (seconds: every view's tables and bootstraps), as `evalcore report` makes it
            st.download_button(_("Offline report (HTML)"), deferred(report.build, dataset, lang=i18n.current()),
                               file_name=f"{safe_filename(f'report-{dataset}')}.html", mime="text/html",
                               key="offline-report", icon=":material/download:",
                               help=_("One HTML file of this dataset's trust, leaderboard, correlation and "
                                      "human-rating views, with signatures, definitions and a data checksum: it opens "
                                      "from disk, with no server and no network"))


def choose_many(vs: ViewState, values: dict, name: str, label: str, options: list[str],
                default: list[str] | None = None, *, key: str, unavailable: str | None = None,
                known=None, **kwargs) -> list[str]:
    """A multi-select kept in the link as `name`: the link's choice where its options are offered, else `default`
    (all options). A choice that holds every default option is not a choice: it stays out of the link, so another
    track's options come in whole. The widget's key carries its options and default (Streamlit keeps a keyed
    widget's state when they change): on another track it starts from the link's choice, never from the last
    track's widget state, which came back as a reduced set, as if chosen."""
    default = list(options) if default is None else [o for o in default if o in options]
    chosen = vs.many(name, options, default, unavailable=unavailable, known=known)
    digest = hashlib.blake2s("\x1f".join([*options, "\x1e", *default]).encode(), digest_size=6).hexdigest()
    chosen = st.multiselect(label, options, default=chosen, key=f"{key}-{digest}", **kwargs)
    values[name] = None if set(chosen) == set(default) else chosen
    return chosen


def page_link(page: str, values: dict) -> str:
    """A full link to `page` showing `values`, on this server (what a page hands out to be opened elsewhere)."""
    return link(base_url(), page, values)


def base_url() -> str:
    """This server's address as the browser reached it (for links a page hands out, e.g. an annotator's)."""
    try:
        url = st.context.url or ""
    except Exception:  # no browser context (AppTest)
        url = ""
    return url if urlsplit(url).netloc else "http://localhost:8501"


def empty_store() -> bool:
    """True (with a notice saying what to do) when the store holds no track yet."""
    if data(catalog.track_count):
        return False
    st.info(_("This store is empty. Build the embedded default with `evalcore init` or import your "
              "own data (see the README), then reload."))
    return True
