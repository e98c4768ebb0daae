"""The dashboard's entry point: `streamlit run app.py`.

The store comes from EVALCORE_DB, else the default store, built from data/ on first run.
URL paths are fixed so shared links stay stable. The page scripts live in pages/views/, not at the
top of pages/: Streamlit treats top-level pages/*.py as its older multipage mode, which would
bypass this navigation when a link opens a page directly.
"""
import os
import sys
import time
import tomllib
from pathlib import Path

import streamlit as st

if __name__ == "__main__" and not st.runtime.exists():
    # `python app.py [streamlit options]`: `streamlit run app.py` in this process, told first that the
    # pages/ folder is not Streamlit's old multipage mode. Streamlit decides that once per process,
    # on its first session, from whether pages/ exists; deciding it wrongly is what showed the first
    # visitor of a deep link after a start a "Page not found" dialog.
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    from evalcore.core.errors import StoreError
    from evalcore.core.processes import die_with_parent
    from evalcore.pagedata.access import forwarded_allow_ips
    from evalcore.services import jobs
    from evalcore.store import resolve_db_path, server_lock

    # uvicorn (Streamlit's server) takes X-Forwarded-For from the addresses in FORWARDED_ALLOW_IPS, by default
    # from any local process: only the proxies the operator named may say who a client is (evalcore.pagedata.access).
    # Streamlit's secrets files, read here as it reads them (its st.secrets, before the server starts, would load
    # its config ahead of the command line's options).
    secrets: dict = {}
    for file in (Path.home() / ".streamlit" / "secrets.toml", Path.cwd() / ".streamlit" / "secrets.toml"):
        if file.is_file():
            secrets.update(tomllib.loads(file.read_text(encoding="utf-8")))
    try:
        os.environ["FORWARDED_ALLOW_IPS"] = forwarded_allow_ips(secrets)
    except ValueError as exc:
        print(f"evalcore: {exc}", file=sys.stderr)
        sys.exit(2)

    die_with_parent()   # a server of `evalcore app --processes N` ends with that process, however it ends
    # One server per store: a second one is refused here, before it serves anything (the first one's
    # writes and its lock on the file would collide with its own). The lock lives as long as this process.
    try:
        held = server_lock(resolve_db_path())
    except StoreError as exc:
        print(f"evalcore: {exc}", file=sys.stderr)
        sys.exit(2)
    if held is None:   # a store on a read-only file system: pages read it; a write is refused with its sentence
        print(f"evalcore: {resolve_db_path()} cannot be written here (a read-only file system, or a file this user "
              "may not write): serving it read-only; uploads, scoring and answers to rating tasks are refused",
              file=sys.stderr, flush=True)
    else:
        jobs.watch(str(resolve_db_path()))  # at start: the jobs a killed or stopped server left queued are run
    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", __file__, *sys.argv[1:]]
    sys.exit(cli.main())

from contextlib import suppress

from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from evalcore.core import collector
from evalcore.core.errors import StoreError
from evalcore.core.i18n import _
from evalcore.pagedata import crowd as crowd_data
from pages import PAGES
from pages.kit import lang
from pages.kit.access import guard_uploads
from pages.kit.runtime import log_run, read_only_note, release, store_trouble

guard_uploads()   # Streamlit's upload endpoint keeps files only for sessions the write gate admitted (once per process)
lang.choose()   # this run's language, before anything is drawn: the titles, the page and the engine's messages
st.set_page_config(page_title=_("Multi-skill dialogue evaluation"), page_icon=":material/forum:", layout="wide")

pages = [st.Page(p.script, title=_(p.title), icon=p.icon, url_path=p.url_path, default=p.url_path == "") for p in PAGES]
started = time.perf_counter()
# The pages along the top, not in a sidebar: Streamlit collapses its sidebar only below 768 px, so at 800 px it
# kept 300 px (37%) and cut the leaderboard after BLEU4, Compare's deltas and the jobs table. Along the top,
# every page has the window's whole width; a narrow window lists the first pages and the rest under "more".
# A crowd worker, who came by a study's link, sees their task's page alone: the lab's other pages are not theirs.
page = st.navigation(pages, position="hidden" if crowd_data.from_platform(st.query_params) else "top")
try:
    page.run()
    read_only_note()
except StoreError as exc:  # held by a command longer than a page waits, a full disk, ...: say so, no error page
    store_trouble(exc)
finally:
    with suppress(StopException):   # after a page's st.stop() every Streamlit call raises (lang.stop draws it first)
        lang.switch()   # beside the title, once the page chose its language (a task's on Annotate and Chat)
    release()  # the page's cursor: the store's instance (and its lock) is held only while a page or job uses it
    log_run(page.url_path, started)
    collector.after_run()  # a server's first runs: what they leave is kept for its life, never scanned again
