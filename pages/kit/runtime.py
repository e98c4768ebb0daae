"""A page run's hold on the store and what the pages cache: the store prepared once per process, this run's
cursor (taken on its first query, given back when the run ends), data()/shared() caching a view of evalcore.pagedata
until the store changes in a way it can see (evalcore.pagedata.scope), and the per-dataset parts of views over
every dataset, made anew in a thread of their own while another process writes."""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref
from pathlib import Path

import duckdb
import streamlit as st

from evalcore.core import i18n
from evalcore.core.i18n import _
from evalcore.core.errors import DiskFull, ReadOnlyStore, StoreBusy, StoreError
from evalcore.core.malloc import tune
from evalcore.core.threads import one_blas_thread
from evalcore.ingest.archives import sweep_temp
from evalcore.pagedata import catalog, scope
from evalcore.services import jobs
from evalcore.services.defaults import SLOW, build_default_in_stages
from evalcore.store import ENV_VAR, Shared, lease, resolve_db_path, someone_waits, stamp
from pages.kit import lang
from pages.kit.text import md_escape

_BUILDING: dict = {}  # store path -> the background build thread, while the default store is being built
_RUN = threading.local()  # this script run's connection (each run has its own thread)
PAGE_WAIT = 30.0  # seconds a page waits for a store a command is writing to (a busy notice after that)


@st.cache_resource(show_spinner=False)
def prepared(path: str, build_default: bool) -> bool:
    """Once per store file and process: migrate it and, for the default store, build it from data/
    (the quick datasets before the first page draws, demo-zh in the background), and start the check
    for scoring jobs no process runs (jobs.watch). Every connection of the dashboard is a cursor of the
    process's one database instance (store.lease): the background build keeps its cursor and gives it
    back when done, so the instance (and the file's lock) stays while it builds."""
    tune()
    one_blas_thread()
    sweep_temp()  # copies of uploads a killed server left in the temp folder
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
        st.info(_("Building the embedded demo-zh dataset in the background (about 10 seconds on first run); "
                  "reload the page to see it."), icon=":material/hourglass_empty:")


class _OnFirstUse:
    """This run's cursor, taken by its first query (see cursor). A run told once that the store cannot be had
    (another process held it PAGE_WAIT s) is told again at once: an annotator's click and the page after it
    waited 30 s each, 62 s before the message."""

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


_READY: set[tuple[str, bool]] = set()   # (store, build_default) prepared() has returned for in this process


def cursor() -> duckdb.DuckDBPyConnection:
    """This run's connection to the store: a cursor of the process's one database instance (store.lease),
    taken on the run's first query and given back when the run ends (app.py); the instance closes when
    no run and no job uses it, so the dashboard holds DuckDB's file lock only while a page queries: a page whose
    tables are all cached (data()) never takes it, and a CLI command gets in between page loads. The
    default store (no EVALCORE_DB) is built from data/ on first run; a store named by EVALCORE_DB is
    opened as it is, empty or not."""
    ready = (str(resolve_db_path()), not os.environ.get(ENV_VAR))
    if ready not in _READY:   # once per store and process, as prepared() itself: its cache's lookup (the key hashed,
        with st.spinner(_("Opening the store (building it from data/ on first run)...")):   # its lock) on each of
            prepared(*ready)   # a page's 15-30 views was 5 ms of the Leaderboard's warm run
        _READY.add(ready)
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
    st.warning(_("The store cannot be used right now: {reason}").format(reason=text), icon=":material/hourglass_empty:")
    st.button(_("Try again"), key="store-busy-retry")


def in_fragment(body) -> None:
    """body() as a rerun of an st.fragment: Streamlit reruns a fragment without app.py's script around it, so a
    StoreError raised there (a click on a full disk, a store another process holds) would be shown as an exception
    with its traceback; here it is shown as app.py shows it (store_trouble), and the run's cursor is given back
    however it ends."""
    lang.resume()
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
        st.sidebar.caption(_("This server serves its store read-only (its file system cannot be written): pages show "
                             "what it holds; uploads, scoring and answers to rating tasks are refused."))


def log_run(page: str, started: float) -> None:
    """With EVALCORE_RUN_LOG=FILE, one line per page run (page, server-side seconds): what the
    benchmarks report as server-side time."""
    path = os.environ.get("EVALCORE_RUN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{time.time():.3f}\t/{page}\t{time.perf_counter() - started:.3f}\n")


# The cache key is one tuple, `key`: (the view's name, the store, its stamp, the arguments with every value data() or
# shared() returned standing for itself by the key that made it: _keyed). The function and the arguments themselves
# (`_fn`, `_args`, `_kwargs`, leading underscore) are left out of it, and all are passed by name. Streamlit hashed a
# frame passed on from one view to another cell by cell on every run (the Leaderboard's 4 x 19 model ranks: 10-30 ms
# of a warm run), and each hashed parameter and each one passed by position costs its lookups: 14 views a run.
@st.cache_data(show_spinner=False, max_entries=256)
def _memo(_fn, key: tuple, _args: tuple, _kwargs: dict):
    return _fn(cursor(), *_args, **_kwargs)


@st.cache_resource(show_spinner=False, max_entries=8)
def _shared_memo(_fn, key: tuple, _args: tuple, _kwargs: dict):
    return _fn(cursor(), *_args, **_kwargs)


_MADE: dict[int, tuple] = {}   # id(value) -> (a weak reference to it, the key of the view that made it)


def _remember(value, key: tuple):
    """Note which view made `value` (a frame or series data() or shared() returned), while it lives."""
    try:
        ref = weakref.ref(value, lambda gone, i=id(value): _MADE.pop(i, None))
    except TypeError:   # a tuple, a list, a number: hashed as it is when passed on
        return value
    _MADE[id(value)] = (ref, key)
    return value


def _keyed(value):
    """`value` as a cache key: the key of the view that made it when data() or shared() returned this very object
    (it is that view's value: a page passes a view on as it got it, never changed in place), else itself."""
    made = _MADE.get(id(value))
    return made[1] if made is not None and made[0]() is value else value


def data(fn, *args, **kwargs):
    """fn(con, *args, **kwargs) for a view of evalcore.pagedata (e.g. data(catalog.datasets)), cached until
    the store changes. What says it changed is the store's files (store.stamp: every commit grows the WAL,
    every checkpoint rewrites the file), read without opening the store, so a cached page never waits for
    a command writing to it. A value data() or shared() returned, passed on as an argument to another view, is keyed
    by the view that made it, not hashed again (_keyed): pass it on as it came, or a changed copy, never one changed
    in place."""
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
    kind = scope.of(fn)
    if kind == scope.EVERY_DATASET and not args and not kwargs:
        part, merge = scope.PER_DATASET[fn.__name__]   # one part per dataset: a write to one leaves the rest
        return _merged(fn.__name__, path, merge, {d: dataset_part(part, path, d) for d in data(catalog.datasets)})
    # each view waits only for the changes it can see (its mark: evalcore.pagedata.scope)
    if kind == scope.DATASET and args:
        key = stamp(path, args[0])
    elif kind == scope.GLOBAL:
        key = stamp(path, scope="global")
    elif kind == scope.CATALOG:
        key = stamp(path, scope="catalog")
    else:
        key = stamp(path)
    view = (name, path, key, tuple(_keyed(a) for a in args), tuple((k, _keyed(v)) for k, v in sorted(kwargs.items())))
    if memo is _memo:   # a view's sentences are in the language of the run that made them (shared(): data only)
        view = (*view, i18n.current())
    return _remember(memo(_fn=fn, key=view, _args=args, _kwargs=kwargs), ("view", *view))


_PARTS: dict = {}   # (part, store, dataset) -> (stamp, value): each dataset's part of a view over every dataset
_PARTS_LOCK = threading.Lock()
_MAKING: dict = {}   # (part, store, dataset) -> the thread making it anew
_MERGED: dict = {}   # (view, store) -> (the parts it was merged from, the merged view)
PARTS_KEPT = 4096   # entries before the parts are dropped and made anew (a process that opened many stores: tests)


def dataset_part(part, path: str, dataset: str):
    """One dataset's part of a view over every dataset (scope.PER_DATASET), made once per change to that dataset.
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
    __, path, dataset = key
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
