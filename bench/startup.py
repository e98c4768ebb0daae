"""Benchmark: what a cold start imports, measured in CPU time (steady under other load, unlike wall time).

    python bench/startup.py [--runs 5] [--top 12] [--cases server,page,...] [--against DIR]

Each case runs --runs times in a fresh `python` process; the figure is the median of the child's user + system
CPU seconds (getrusage of the children), beside an interpreter that imports nothing. Then one run of each under
`python -X importtime` lists the modules with the largest cumulative import time (microseconds) at its top levels.

  server    what `python app.py` (the server `evalcore app` starts) imports before Streamlit serves: the same
            imports as app.py's __main__ branch, and streamlit.web.cli's own
  page      what the first page run imports on top: app.py's page half (pages.kit.runtime and the navigation)
            and the default page (overview)
  cold      server and page together, with the overview's own imports (pages.kit.state): a start to the first
            page drawn, in imports
  bare-cold a bare app's start to its first page (Streamlit and pandas, what bench/bare_app.py imports)
  cli-app   the `evalcore app` parent before it hands over to the server: the parser and the command's handler
  jobs      evalcore.services.jobs alone (the server's job check)
  registry  evalcore.metrics.registry alone (every metric's name and metadata)
  bare      Streamlit's own server imports (a bare app's start), for scale

--against DIR: the same cases in another checkout too (e.g. an earlier commit's `git archive` unpacked in DIR), its
runs alternating with this one's, so a change in the machine's load falls on both; the module lists are this
checkout's.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "server": "import streamlit; from streamlit.runtime.pages_manager import PagesManager; from streamlit.web import cli; "
              "from evalcore.core.errors import StoreError; from evalcore.core.processes import die_with_parent; "
              "from evalcore.pagedata.access import forwarded_allow_ips; from evalcore.services import jobs; "
              "from evalcore.store import resolve_db_path, server_lock",
    "page": "import streamlit; from streamlit.web import cli; from evalcore.services import jobs; "
            "from evalcore.core import collector; from evalcore.core.errors import StoreError; from pages import PAGES; "
            "from pages.kit.access import guard_uploads; import pages.kit.runtime; import pages.kit.state; "
            "import evalcore.pagedata.catalog",
    "cold": "import streamlit; from streamlit.runtime.pages_manager import PagesManager; from streamlit.web import cli; "
            "from evalcore.core.processes import die_with_parent; from evalcore.pagedata.access import forwarded_allow_ips; "
            "from evalcore.services import jobs; from evalcore.store import resolve_db_path, server_lock; "
            "from evalcore.core import collector; from pages import PAGES; from pages.kit.access import guard_uploads; "
            "import pages.kit.runtime, pages.kit.state, evalcore.pagedata.catalog",
    "bare-cold": "import streamlit; from streamlit.web import cli; import pandas",
    "cli-app": "from evalcore.cli import build_parser; from evalcore.cli.commands import load; "
               "args = build_parser().parse_args(['app']); load('evalcore.cli.running:run'); load(args.declared.handler)",
    "jobs": "import evalcore.services.jobs",
    "registry": "import evalcore.metrics.registry",
    "bare": "import streamlit; from streamlit.web import cli",
    "python": "pass",
}


def cpu_of(code: str, env: dict, importtime: bool = False, root: Path = ROOT) -> tuple[float, str]:
    """(user + system CPU seconds of one fresh `python -c code` in the checkout at `root`, its standard error)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    args = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    done = subprocess.run(args, cwd=root, env={**env, "PYTHONPATH": str(root)}, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{code!r} failed in {root}:\n{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stderr


def top_modules(stderr: str, top: int, depth: int = 2) -> list[tuple[int, str]]:
    """The modules with the largest cumulative import time (us) at nesting depth <= `depth`."""
    found = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m and (len(m.group(3)) - 1) // 2 <= depth:
            found.append((int(m.group(2)), "  " * ((len(m.group(3)) - 1) // 2) + m.group(4)))
    return sorted(found, reverse=True)[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--against", type=Path, help="another checkout to measure alternately (its CPU medians beside)")
    args = ap.parse_args()
    roots = [ROOT] + ([args.against.resolve()] if args.against else [])
    with tempfile.TemporaryDirectory() as tmp:
        # a store that does not exist: nothing here opens one (imports only)
        env = {**os.environ, "EVALCORE_DB": str(Path(tmp) / "none.duckdb")}
        for root in roots:
            cpu_of("pass", env, root=root)   # the interpreter's files into the page cache first
        for name in args.cases.split(","):
            times: dict[Path, list[float]] = {root: [] for root in roots}
            for _ in range(args.runs):
                for root in roots:
                    times[root].append(cpu_of(CASES[name], env, root=root)[0])
            print(f"{name:9s} " + "; ".join(
                f"{'' if root == ROOT else f'{root}: '}CPU {statistics.median(t):.3f} s median of {args.runs} "
                f"(min {min(t):.3f}, max {max(t):.3f})" for root, t in times.items()), flush=True)
            if name != "python":
                for us, module in top_modules(cpu_of(CASES[name], env, importtime=True)[1], args.top):
                    print(f"    {us / 1000:8.1f} ms  {module}")


if __name__ == "__main__":
    main()
