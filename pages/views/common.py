"""Helpers every page shares: the store connection, URL state, safe text, downloads."""
from __future__ import annotations

import atexit
import hashlib
import itertools
import math
import re
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import pandas as pd
import streamlit as st

from evalcore.core.errors import DiskFull, ReadOnlyStore, StoreBusy, StoreError
from evalcore.core.export import safe_csv
from evalcore.core.malloc import tune
from evalcore.core.threads import one_blas_thread
from evalcore.ingest.readers import sweep_temp
from evalcore.services.defaults import SLOW, build_default_in_stages
from evalcore.store import ENV_VAR, Shared, lease, resolve_db_path, someone_waits, stamp
from evalcore.ui import views
from evalcore.ui.share import ViewState, link, to_query

CJK_FONT = "Noto Sans CJK SC, Noto Sans SC, PingFang SC, Microsoft YaHei, sans-serif"


_BUILDING: dict = {}  # store path -> the background build thread, while the default store is being built
_RUN = threading.local()  # this script run's connection (each run has its own thread)
PAGE_WAIT = 30.0  # seconds a page waits for a store a command is writing to (a busy notice after that)
# Seconds the store's instance stays open after the last run gives its cursor back (store.Shared.linger). Off:
# kept open 2 s it cut an annotator's click to the next unit from 2.33x to 1.70x a bare rerun, but a server
# stopped (SIGTERM) while the first run's background build wrote then hung at exit (test_first_run_browser).
STORE_LINGER = 0.0


@st.cache_resource(show_spinner="Opening the store (building it from data/ on first run)...")
def prepared(path: str, build_default: bool) -> bool:
    """Once per store file and process: migrate it and, for the default store, build it from data/
    (the quick datasets before the first page draws, demo-zh in the background), and start the check
    for scoring jobs no process runs (jobs.watch). Every connection of the dashboard is a cursor of the
    process's one database instance (store.lease): the background build keeps its cursor and gives it
    back when done, so the instance (and the file's lock) stays while it builds."""
    from evalcore.services import jobs

    tune()
    one_blas_thread()
    sweep_temp()  # copies of uploads a killed server left in the temp folder
    Shared.of(path).linger = STORE_LINGER
    con = lease(path, wait=PAGE_WAIT)
    thread = None
    try:
        if build_default:
            thread = _BUILDING[path] = build_default_in_stages(con, hand_over=True)
    finally:
        if thread is None:  # no build running: the cursor is still ours
            con.close()
    jobs.watch(path)  # queued jobs (a tab closed before its job started, a killed server's) are run
    return True


def building() -> set[str]:
    """The datasets the default store's background build has not finished yet (empty once done)."""
    thread = _BUILDING.get(str(resolve_db_path()))
    return set(SLOW) if thread is not None and thread.is_alive() else set()


def building_note() -> None:
    """A notice while the default store's slow datasets are still being built in the background."""
    if building():
        st.info("Building the embedded demo-zh dataset in the background (about 10 seconds on first run); "
                "reload the page to see it.", icon=":material/hourglass_empty:")


class _OnFirstUse:
    """This run's cursor, taken by its first query (see cursor). A run told once that the store cannot be had
    (another process held it PAGE_WAIT s) is told again at once: an annotator's click and the page after it
    waited 30 s each, 62 s before the message (issue 46)."""

    def __getattr__(self, name: str):
        con = getattr(_RUN, "con", None)
        if con is None:
            refused = getattr(_RUN, "refused", None)
            if refused is not None:
                raise refused
            try:
                con = _RUN.con = lease(str(resolve_db_path()), wait=PAGE_WAIT)
            except StoreBusy as exc:
                _RUN.refused = exc
                raise
        return getattr(con, name)


def cursor() -> duckdb.DuckDBPyConnection:
    """This run's connection to the store: a cursor of the process's one database instance (store.lease),
    taken on the run's first query and given back when the run ends (app.py); the instance closes when
    no run and no job uses it, so the dashboard holds DuckDB's file lock only while a page queries: a page whose
    tables are all cached (data()) never takes it, and a CLI command gets in between page loads. The
    default store (no EVALCORE_DB) is built from data/ on first run; a store named by EVALCORE_DB is
    opened as it is, empty or not."""
    import os

    prepared(str(resolve_db_path()), not os.environ.get(ENV_VAR))
    return _OnFirstUse()  # type: ignore[return-value]


def release() -> None:
    """Give back this run's cursor (app.py calls it when the page script ends, however it ends)."""
    con = getattr(_RUN, "con", None)
    _RUN.con = _RUN.refused = None
    if con is not None:
        con.close()


def store_trouble(exc: StoreError) -> None:
    """What a page shows in place of a traceback when the store failed it (app.py): the store layer's one sentence
    (evalcore.store.store_error), which says whether a write was stored."""
    text = md_escape(str(exc))
    if isinstance(exc, DiskFull) and exc.stored:
        st.warning(text[:1].upper() + text[1:], icon=":material/save:")
        return
    if isinstance(exc, ReadOnlyStore):
        st.info(text[:1].upper() + text[1:], icon=":material/lock:")
        return
    st.warning(f"The store cannot be used right now: {text}", icon=":material/hourglass_empty:")
    st.button("Try again", key="store-busy-retry")


def in_fragment(body) -> None:
    """body() as a rerun of an st.fragment: Streamlit reruns a fragment without app.py's script around it, so a
    StoreError raised there (a click on a full disk, a store another process holds) would be shown as an exception
    with its traceback; here it is shown as app.py shows it (store_trouble), and the run's cursor is given back
    however it ends."""
    try:
        body()
    except StoreError as exc:
        store_trouble(exc)
    finally:
        release()


def read_only_note() -> None:
    """In the sidebar of every page, while this server's store is open read-only (its file system will not let it
    be written): what that means for a visitor."""
    shared = Shared.of(str(resolve_db_path()))
    if shared.read_only:
        st.sidebar.caption("This server serves its store read-only (its file system cannot be written): pages show "
                           "what it holds; uploads, scoring and answers to rating tasks are refused.")


def log_run(page: str, started: float) -> None:
    """With EVALCORE_RUN_LOG=FILE, one line per page run (page, server-side seconds): what the
    benchmarks report as server-side time."""
    import os

    path = os.environ.get("EVALCORE_RUN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{time.time():.3f}\t/{page}\t{time.perf_counter() - started:.3f}\n")


@st.cache_data(show_spinner=False, max_entries=256)
def _memo(_fn, name: str, path: str, stamp: tuple, args: tuple, kwargs: tuple):
    # `_fn` is left out of the cache key (leading underscore): `name` stands for it, a plain string
    return _fn(cursor(), *args, **dict(kwargs))


@st.cache_resource(show_spinner=False, max_entries=8)
def _shared_memo(_fn, name: str, path: str, stamp: tuple, args: tuple, kwargs: tuple):
    return _fn(cursor(), *args, **dict(kwargs))


def data(fn, *args, **kwargs):
    """fn(con, *args, **kwargs) for a function of evalcore.ui.views (e.g. data(views.datasets)), cached until
    the store changes. What says it changed is the store's files (store.stamp: every commit grows the WAL,
    every checkpoint rewrites the file), read without opening the store, so a cached page never waits for
    a command writing to it."""
    return _cached(_memo, fn, args, kwargs)


def shared(fn, *args, **kwargs):
    """data() without a copy per run: every run and viewer gets the same object, which a page only reads
    (filters and sorts make new frames). For tables of hundreds of MB: st.cache_data unpickled the drill-down's
    550,000 responses (218 MB) on every run, 264 ms of a warm run's 487 ms on the 10M store."""
    return _cached(_shared_memo, fn, args, kwargs)


def _cached(memo, fn, args: tuple, kwargs: dict):
    path = str(resolve_db_path())
    cursor()  # the store prepared (migrated, or the default one built) before its stamp is read
    name = f"{fn.__module__}.{fn.__qualname__}"
    ours = fn.__module__ == views.__name__
    if ours and fn.__name__ in views.PER_DATASET and not args and not kwargs:
        part, merge = views.PER_DATASET[fn.__name__]   # one part per dataset: a write to one leaves the rest
        return _merged(fn.__name__, path, merge, {d: dataset_part(part, path, d) for d in data(views.datasets)})
    # each view waits only for the changes it can see (views.DATASET_SCOPED, GLOBAL_SCOPED, CATALOG_SCOPED)
    if ours and fn.__name__ in views.DATASET_SCOPED and args:
        key = stamp(path, args[0])
    elif ours and fn.__name__ in views.GLOBAL_SCOPED:
        key = stamp(path, scope="global")
    elif ours and fn.__name__ in views.CATALOG_SCOPED:
        key = stamp(path, scope="catalog")
    else:
        key = stamp(path)
    return memo(fn, name, path, key, args, tuple(sorted(kwargs.items())))


_PARTS: dict = {}   # (part, store, dataset) -> (stamp, value): each dataset's part of a view over every dataset
_PARTS_LOCK = threading.Lock()
_MAKING: dict = {}   # (part, store, dataset) -> the thread making it anew
_MERGED: dict = {}   # (view, store) -> (the parts it was merged from, the merged view)
PARTS_KEPT = 4096   # entries before the parts are dropped and made anew (a process that opened many stores: tests)


def dataset_part(part, path: str, dataset: str):
    """One dataset's part of a view over every dataset (views.PER_DATASET), made once per change to that dataset.
    Made in this run when the store can be had at once. While another process holds it (a scoring job or an import
    writing), the part as last made, and a thread of its own makes it anew as soon as the store is free: a page
    about every dataset (the overview, the dataset choices) never waits behind a write to one of them. A part never
    made before is made in this run, waiting for the store as any page does."""
    key = (part.__name__, path, dataset)
    with _PARTS_LOCK:
        last = _PARTS.get(key)
        busy = any(k[1] == path for k in _MAKING)   # a thread of this process waits for the store already
    if last is not None and last[0] == stamp(path, dataset):
        return last[1]
    if last is not None and busy:
        _make_later(part, key)
        return last[1]
    try:
        return _make(part, key, PAGE_WAIT if last is None else 0.0)
    except StoreError:
        if last is None:
            raise
        _make_later(part, key)
        return last[1]


def _make(part, key: tuple, wait: float):
    """Make a part and keep it, waiting up to `wait` s for the store (StoreError after that)."""
    _, path, dataset = key
    if wait == 0 and someone_waits(Path(path)):   # another process waits for the file: not another cursor now
        raise StoreError(f"{path} is wanted by another process")
    now = stamp(path, dataset)   # read first: a change while it is made is seen by the next run
    con = lease(path, wait=wait)
    try:
        value = part(con, dataset)
    finally:
        con.close()
    with _PARTS_LOCK:
        if len(_PARTS) >= PARTS_KEPT:
            _PARTS.clear()
        _PARTS[key] = (now, value)
    return value


def _merged(name: str, path: str, merge, parts: dict):
    """merge(parts), made again only when a part was made anew (the overview's model table: 5 ms a run)."""
    key, values = (name, path), tuple(parts.items())
    with _PARTS_LOCK:
        last = _MERGED.get(key)
    if last is not None and len(last[0]) == len(values) and all(
            a[0] == b[0] and a[1] is b[1] for a, b in zip(last[0], values)):
        return last[1]
    out = merge(parts)
    with _PARTS_LOCK:
        if len(_MERGED) >= PARTS_KEPT:
            _MERGED.clear()
        _MERGED[key] = (values, out)
    return out


def parts_being_made() -> int:
    """How many parts threads of this process are making anew now (_make_later)."""
    with _PARTS_LOCK:
        return len(_MAKING)


def _make_later(part, key: tuple) -> None:
    """Make a part anew in a thread of its own, waiting for the store (once at a time per part)."""
    with _PARTS_LOCK:
        if key in _MAKING:
            return

        def make() -> None:
            try:
                _make(part, key, PAGE_WAIT)
            except Exception as exc:   # the next run tries again
                print(f"evalcore: {part.__name__}({key[2]!r}) not made anew: {exc}", file=sys.stderr)
            finally:
                with _PARTS_LOCK:
                    _MAKING.pop(key, None)

        _MAKING[key] = threading.Thread(target=make, name="evalcore-part", daemon=True)
        _MAKING[key].start()


@atexit.register
def _join_makers() -> None:
    """At exit, let a part being made leave DuckDB first: a daemon thread inside it when Python tears itself down
    aborts the process (seen with the job check, evalcore.services.jobs)."""
    with _PARTS_LOCK:
        threads = list(_MAKING.values())
    deadline = time.monotonic() + 10
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


def start(title: str) -> tuple[duckdb.DuckDBPyConnection, ViewState]:
    """Every page's opening: title (with the "Link to this view" button beside it, filled by publish()), a cursor
    on the store, and the URL's view state; stops on an empty store."""
    head, link_box = st.columns([3, 1], vertical_alignment="center")
    head.title(title)
    # The link sits beside the title, not in a sidebar: the navigation is a bar along the top (app.py), so at
    # 800 px the page has the whole width (a sidebar took 300 px of it and cut tables and definitions).
    _RUN.link = link_box.popover("Link to this view", icon=":material/link:")
    # Notices about the URL's values (publish() draws them once the page knows them) go right under the
    # title, where a reader looks first, not under the charts.
    _RUN.notices = st.container()
    con = cursor()
    if empty_store():
        st.stop()
    building_note()
    _RUN.view = view_state()
    return con, _RUN.view


def pick_track(con, vs: ViewState, prefix: str, *, skills: bool,
               default: tuple[str, str] | None = None) -> tuple[str | None, str | None, list]:
    """The dataset and track selectors every data page starts with (state from and to the URL);
    `default` is the (dataset, track) shown when the URL names none."""
    datasets = data(views.datasets)
    busy = building()  # while the first run still builds demo-zh, open on a dataset that has data
    first = default[0] if default else None
    if first is None or first in busy:
        first = next((d for d in datasets if d not in busy), first)
    dataset = vs.one("dataset", datasets, first)
    track = vs.one("track", data(views.track_options, dataset, skills=skills),
                   default[1] if default and default[0] == dataset else None)
    # Dataset, track and one control of the page's: at 800 px (sidebar open) a quarter of the row cut the
    # dataset's name to "demc"
    cols = st.columns([2, 3, 2])
    label = "Track (or all tracks of a skill)" if skills else "Track"
    with cols[0]:
        dataset = select("Dataset", datasets, dataset, key=f"{prefix}-dataset")
    with cols[1]:
        track = select(label, data(views.track_options, dataset, skills=skills), track, key=f"{prefix}-track-{dataset}")
    return dataset, track, cols


def level_and_origin(vs: ViewState, dataset: str, pairs: list[tuple[str, str]],
                     default: tuple[str | None, str | None] = (None, None)) -> tuple[list[str], str, str]:
    """(levels offered, level, origin) from the URL, offering only the (level, origin) pairs with data
    for the dataset: a stale value moves to `default` (else the first valid one) with a notice."""
    levels = list(dict.fromkeys(lv for lv, _ in pairs))
    level = vs.one("level", levels, default[0] if default[0] in levels else levels[0],
                   unavailable=f"has nothing to correlate in {dataset}")
    origins = origins_at(pairs, level)
    origin = vs.one("origin", origins, default[1] if default[1] in origins else origins[0],
                    unavailable=f"has no values at {level} level in {dataset}")
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
        st.caption("Link to exactly this view: copy it from here or from the address bar")
        st.text(link(base_url(), page, values))


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
    if data(views.track_count):
        return False
    st.info("This store is empty. Build the embedded default with `evalcore init` or import your "
            "own data (see the README), then reload.")
    return True


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>:~$=^&\"'])")
# Streamlit rewrites some text after the markdown is parsed, where backslash escapes no longer count:
# " -- " to an em dash, " -> ", " <- ", " <-> ", " >= ", " <= ", " ~= " to arrows and signs (each between
# spaces), ":material_x:" (and ":material/x"), ":streamlit:" and ":smile:" to icons. An invisible WORD
# JOINER (U+2060) between their characters keeps them as typed; text elsewhere ("--dataset") is untouched.
WORD_JOINER = "\u2060"
_REWRITTEN = re.compile(r"(?<!\S)(?:<->|->|<-|--|>=|<=|~=)(?!\S)|(?<=:)(?=[\w+/-]+:|material/)")


def md_escape(text: str) -> str:
    """Text as literal markdown: every markdown or HTML character escaped (uploaded text is data), and
    Streamlit's own rewrites (dashes, arrows, icons) kept from firing."""
    text = _REWRITTEN.sub(lambda m: WORD_JOINER.join(m.group()) or WORD_JOINER, text)
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", "  \n")


def md_message(text: str) -> str:
    """One of evalcore's messages as markdown: its `command` spans as inline code, the rest escaped as text
    (escaped whole, a message showed its backticks: "run `evalcore score ...`"). Split at every backtick, a code
    span never holds one, so no text in it (a dataset's name) can end it early and become markup."""
    parts = text.split("`")
    if len(parts) % 2 == 0 or any(not part.strip() for part in parts[1::2]):  # unpaired or empty: all text
        return md_escape(text)
    return "".join(md_escape(part) if i % 2 == 0 else f"`{part}`" for i, part in enumerate(parts))


def safe_filename(name: str, limit: int = 150) -> str:
    """A download's file name (without extension) from text that may be a user's: letters of any script,
    digits, '.', '-' and '_' kept, every other run of characters (path separators, spaces, markup,
    control characters) one '_'; no leading dot, at most `limit` characters, never empty."""
    stem = re.sub(r"_{2,}", "_", re.sub(r"[^\w.-]+", "_", name)).strip("._-")[:limit].rstrip("._-")
    return stem or "download"


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
        tips = [{"field": t, "type": "nominal"} for t in tooltip
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
    enc: dict = {"x": {"field": x, "type": "nominal", "title": x, "sort": list(dict.fromkeys(frame[x])),
                       "axis": {"labelLimit": 180}},
                 "y": {"field": y, "type": "quantitative", "title": y_title or y},
                 "tooltip": [{"field": t} for t in tips]}
    if y_domain:
        enc["y"]["scale"] = {"domain": y_domain}
    if color:
        enc["color"] = {"field": color, "type": "nominal", "sort": list(dict.fromkeys(frame[color])),
                        "legend": {"labelLimit": 260}}
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
                           "color": {"field": color, "type": "nominal"},
                           "tooltip": [{"field": t} for t in [color, *tooltip, x, y]]}}
    diagonal = {"mark": {"type": "line", "strokeDash": [4, 4], "color": "grey"},
                "data": {"values": [{x: -1, y: -1}, {x: 1, y: 1}]},
                "encoding": {"x": {"field": x, "type": "quantitative"}, "y": {"field": y, "type": "quantitative"}}}
    st.vega_lite_chart(spec={"layer": [diagonal, points], "height": 420, "config": {"font": CJK_FONT}},
                       width="stretch", key=key)


def highlighted(segments: list[tuple[str, bool]]) -> str:
    """Escaped markdown with shared segments on a coloured background (each plain run escaped whole, so
    no rewrite spans two segments)."""
    out, plain = [], ""
    for s, shared in segments:
        if shared and s.strip():
            out += [md_escape(plain), f":orange-background[{md_escape(s)}]"]
            plain = ""
        else:
            plain += s
    return "".join(out) + md_escape(plain)


def expander(vs: ViewState, values: dict, key: str, label: str):
    """st.expander whose open state is part of the link: `open=` lists the page's open expanders."""
    box = st.expander(label, expanded=vs.member("open", key), key=f"open-{key}", on_change="rerun")
    opened = [k for k in values.get("open") or [] if k != key] + ([key] if box.open else [])
    values["open"] = opened or None
    return box


def sort_table(vs: ViewState, values: dict, frame: pd.DataFrame, key: str, *, default: str | None = None,
               descending: bool = False, columns: list[str] | None = None) -> pd.DataFrame:
    """The page's main table sorted by a column picked here, kept in the link (sort=, order=). A click
    on a grid's header sorts only that browser's copy, which no link can carry; this control can.
    `default` None keeps the table's own order until a column is picked."""
    columns = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    keep = "(as listed)"
    options = ([] if default in columns else [keep]) + columns
    col = vs.one("sort", options, default if default in columns else keep)
    order = vs.one("order", ["ascending", "descending"], "descending" if descending else "ascending")
    c1, c2, _ = st.columns([3, 4, 2])  # room for "descending" in a narrow window
    with c1:
        col = select("Sort by", options, col, key=f"sort-{key}",
                     help="Kept in the page's link; a click on a column header sorts only your own screen.")
    with c2:
        order = st.segmented_control("Order", ["ascending", "descending"], default=order, key=f"order-{key}",
                                     disabled=col == keep) or order
    values.update(sort=None if col in (keep, default) else col,
                  order=None if col == keep or order == ("descending" if descending else "ascending") else order)
    if col == keep:
        return frame
    return frame.sort_values(col, ascending=order == "ascending", na_position="last", kind="stable")


def unless_empty(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """The frame without `column` when no row fills it (a `note` that says why a value is withheld)."""
    return frame.drop(columns=[column]) if column in frame and frame[column].isna().all() else frame


def grid(frame, **kwargs) -> None:
    """st.dataframe as every page shows a table: no index, and a missing value as a blank cell (Streamlit
    otherwise prints "None")."""
    st.dataframe(frame, **{"hide_index": True, "placeholder": "", **kwargs})


def deferred(fn, *args, **kwargs):
    """A download's contents made only when its button is clicked (st.download_button calls this on a thread
    of its own): data(fn, ...), then that thread's lease on the store given back. The Upload page's template
    of every track is 44 MB of CSV for 100,000 items; made on every run, it took 3.4 s of the page's first
    view on a 1M-response store, and it went to every viewer's browser whether clicked or not."""
    def make():
        try:
            return data(fn, *args, **kwargs)
        finally:
            release()
    return make


DEFERRED_ROWS = 2_000


def download(frame: pd.DataFrame, name: str, label: str = "Download CSV", complete=None) -> None:
    """A CSV download button; `name` may hold user text (dataset, track, model): the file name is made safe,
    and so are the cells (evalcore.core.export.safe_csv: a text cell that would start a formula gets a quote).
    A table over DEFERRED_ROWS rows is made into CSV when the button is clicked: made on every run, the
    drilldown's 500,000 responses at ten million were written out (and sent to every viewer) each time a
    control moved, and its rated view's 10,000 took 0.19 s of a 0.26 s run. A smaller one goes with the page
    (a click then needs no round trip to a busy server). `complete`: frame -> the frame as downloaded (the
    columns a page left out of its sorting, added then)."""
    whole = complete or (lambda f: f)
    contents = (lambda: safe_csv(whole(frame))) if len(frame) > DEFERRED_ROWS else safe_csv(whole(frame))
    st.download_button(label, contents, file_name=f"{safe_filename(name)}.csv",
                       mime="text/csv", key=f"dl-{name}")


def select(label: str, options: list[str], value: str | None, key: str, *, empty: str | None = None,
           **kwargs) -> str | None:
    """A select box on `options` starting at `value`; with no options, a caption saying why (`empty`)
    instead of a disabled box, and None."""
    if not options:
        st.caption(md_escape(f"{label}: {empty or 'nothing to choose from here.'}"))
        return None
    return st.selectbox(label, options, index=options.index(value) if value in options else 0, key=key, **kwargs)


def rank_chart(ranks: pd.DataFrame, *, key: str, title: str) -> None:
    """One model's rank per track: a point at the rank, a bar over its 95% interval, rank 1 on top."""
    frame = ranks.dropna(subset=["rank"]).astype({"rank": float, "rank_ci_low": float, "rank_ci_high": float})
    frame = frame.assign(of=frame["ranked"].map(lambda n: f"of {n}"))
    top = max(2, int(frame[["rank", "rank_ci_high", "ranked"]].max().max()))
    y = {"type": "quantitative", "scale": {"domain": [top + 0.5, 0.5], "nice": False},
         "axis": {"tickMinStep": 1, "format": "d"}}
    x = {"field": "track", "type": "nominal", "sort": list(frame["track"]), "axis": {"labelAngle": -20, "labelLimit": 200}}
    tips = [{"field": t} for t in ("track", "skill", "rank", "rank_ci_low", "rank_ci_high", "ranked")]
    spec = {"data": {"values": _records(frame, ["track", "skill", "rank", "rank_ci_low", "rank_ci_high", "ranked", "of"])},
            "height": 260, "config": {"font": CJK_FONT},
            "layer": [
                {"mark": {"type": "rule", "strokeWidth": 3, "opacity": 0.5},
                 "encoding": {"x": x, "y": {"field": "rank_ci_low", **y, "title": title},
                              "y2": {"field": "rank_ci_high"}, "tooltip": tips}},
                {"mark": {"type": "point", "filled": True, "size": 120},
                 "encoding": {"x": x, "y": {"field": "rank", **y}, "color": {"field": "skill", "type": "nominal"},
                              "tooltip": tips}},
                {"mark": {"type": "text", "dx": 22, "align": "left"},
                 "encoding": {"x": x, "y": {"field": "rank", **y}, "text": {"field": "of"}}},
            ]}
    st.vega_lite_chart(spec=spec, width="stretch", key=key)


def _secrets() -> dict:
    try:
        return st.secrets.to_dict()
    except Exception:  # no secrets.toml: nothing configured
        return {}


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else None


_UNNAMED_PROXY_SAID: list[bool] = []


def _client_address() -> str | None:
    """The client's address as the server knows it (None: this machine). Said once in the server's log when a
    request came through a proxy that nobody named: then every client behind it counts as one."""
    address = getattr(st.context, "ip_address", None)
    if not _UNNAMED_PROXY_SAID:
        from evalcore.ui.access import trusted_proxies

        headers = getattr(st.context, "headers", None) or {}
        if headers.get("X-Forwarded-For") and not trusted_proxies(_secrets()):
            _UNNAMED_PROXY_SAID.append(True)
            print("evalcore: requests arrive through a reverse proxy that EVALCORE_TRUSTED_PROXIES does not name: "
                  "its clients' wrong guesses are counted as one client's (README, 'A lab server')",
                  file=sys.stderr, flush=True)
    return address


def checked_guess(gate: str, check):
    """One guess at `gate` ('password', 'task-code', ...), counted against this session, this client's address
    and the server (evalcore.ui.access.attempt: right, wait, checked); `check()` runs only when none of them
    holds the guess back."""
    from evalcore.ui.access import BUDGET, THROTTLE, attempt, guess_keys

    return attempt(check, guess_keys(gate, _session_id(), _client_address()), gate, THROTTLE, BUDGET)


def guess_wait(gate: str) -> tuple[float, bool]:
    """(seconds until this session may guess at `gate` again, whether it is the whole server's limit)."""
    from evalcore.ui.access import BUDGET, THROTTLE, guess_keys

    mine = THROTTLE.wait(*guess_keys(gate, _session_id(), _client_address()))
    server = BUDGET.wait(gate)
    return max(mine, server), server > mine


def wait_text(what: str, wait: float, server: bool) -> str:
    """The sentence a gate shows while guesses are held back."""
    if server:
        from evalcore.ui.access import BUDGET

        return (f"This server has had {BUDGET.limit} wrong {what} in the last {BUDGET.window:g} s, from one "
                f"person or several: the next guess is checked in {math.ceil(wait)} s (reload the page then).")
    return f"Too many wrong {what}: the next guess is checked in {math.ceil(wait)} s (reload the page then)."


def _on_password() -> None:
    """A guess is checked once, when the box's value changes (not again on every rerun of the page)."""
    from evalcore.ui.access import policy

    given = st.session_state.get("access-password") or ""
    if not given:
        return
    rule = policy(_secrets())
    outcome = checked_guess("password", lambda: rule.check(given))
    st.session_state["access-ok"] = outcome.right
    st.session_state["access-said"] = "wrong" if outcome.checked and not outcome.right else None
    st.session_state["access-password"] = ""  # never kept in the session; a locked guess is not checked


def may_write() -> tuple[bool, str | None]:
    """(allowed, who) for this session under the deployment's write policy (evalcore.ui.access); draws
    what the user needs: the read-only note, a sign-in button or a password box. A session allowed to
    write is admitted to Streamlit's upload endpoint (guard_uploads)."""
    from evalcore.ui.access import WRITERS, policy

    rule = policy(_secrets())
    if rule.mode == "read-only":
        st.info("This dashboard is read-only: uploads and scoring are off here. Import with the command "
                "line on the server (see the README), or ask whoever runs it.")
        return False, None
    if rule.mode == "sign-in":
        if not st.user.is_logged_in:
            st.info("Sign in to upload; reading needs no sign-in.")
            st.button("Sign in", on_click=st.login, key="access-login")
            return False, None
        WRITERS.grant(_session_id())
        return True, str(st.user.get("email") or st.user.get("name") or "signed in")
    if rule.mode == "password":
        if st.session_state.get("access-ok"):
            WRITERS.grant(_session_id())
            return True, "password"
        wait, server = guess_wait("password")
        st.text_input("Upload password", type="password", key="access-password", on_change=_on_password,
                      disabled=wait > 0,
                      help="This dashboard asks for a password before anything is written to its store.")
        if st.session_state.pop("access-said", None) == "wrong":   # said once, for the guess just checked
            st.error("Wrong password: nothing can be uploaded.")
        if wait > 0:
            st.error(wait_text("passwords", wait, server))
        return False, None
    WRITERS.grant(_session_id())
    return True, None


def guard_uploads() -> None:
    """Streamlit keeps a file PUT to /_stcore/upload_file/<session>/<file> in memory for any session with a
    page open, uploader or not. Refuse to keep one from a session the write gate has not admitted
    (evalcore.ui.access.WRITERS): the request then fails, and nothing stays in the server's memory. Installed
    once per process, on Streamlit's uploaded-file manager (the one both its servers use)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    from evalcore.ui.access import WRITERS

    keep = MemoryUploadedFileManager.add_file
    if getattr(keep, "guarded", False):
        return

    def add_file(self, session_id, file):
        if not WRITERS.allowed(session_id):
            raise PermissionError("uploads are open only to sessions allowed to write (see the Upload page)")
        return keep(self, session_id, file)

    add_file.guarded = True
    MemoryUploadedFileManager.add_file = add_file


guard_uploads()
