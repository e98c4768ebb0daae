"""The embedded default: the store the dashboard opens on, built from data/ on first run."""
from __future__ import annotations

import threading
from pathlib import Path

import duckdb
from tqdm import tqdm

from evalcore.core import lazy
from evalcore.core.paths import data_dir
from evalcore.ingest.batch import ImportReport

# What builds and scores the datasets is imported when a build runs: every page server's first run imports this
# module (is the default store complete?), and these pulled in the readers (openpyxl) and the statistics (scipy.stats)
demo = lazy.module("evalcore.ingest.builtin.demo")
engagement = lazy.module("evalcore.ingest.builtin.engagement")
published = lazy.module("evalcore.ingest.formats.published")
scoring = lazy.module("evalcore.scoring")
tasks = lazy.module("evalcore.services.tasks")

DATA_DIR = data_dir()
MSDE_SCALES = {"Info": (0.0, 2.0), "Coh": (0.0, 2.0), "Know": (0.0, 2.0), "Rec": (0.0, 2.0)}
SCORED = {"demo-zh", "engagement-en"}  # the embedded datasets with responses
SMP2018_SCALES = {"Sa": (-2.0, 2.0), "F": (-1.0, 1.0), "G": (0.0, 1.0)}


DEFAULT_DATASETS = ("msde-paper", "demo-zh", "engagement-en", "smp2018-task1", "smp2018-task2")
SLOW = ("demo-zh",)  # seconds to build (retrieval baselines over KdConv, then scoring): the dashboard builds it last


def init_store(con: duckdb.DuckDBPyConnection, data_dir: Path = DATA_DIR, *, progress: bool = False,
               only: tuple[str, ...] | None = None) -> list[ImportReport]:
    """Import or build each embedded dataset (or those in `only`) in its own transaction; skip those
    present. Datasets with responses get their lexical scores (only what is missing)."""
    present = {d for (d,) in con.execute("SELECT dataset FROM datasets").fetchall()}
    steps = {
        "msde-paper": lambda: published.import_published(con, data_dir / "msde-paper", dataset="msde-paper",
                                                         scales=MSDE_SCALES, meta={
            "language": "zh", "licence": "facts from a paper",
            "source": "MSDE paper (CAAI Trans. Intell. Syst. 2025, 20(5)), Tables 4-13",
            "description": "Published system-level metric and human scores of 14 systems and their correlations",
        }),
        "demo-zh": lambda: demo.build_demo(con, data_dir / "demo-zh"),
        "engagement-en": lambda: engagement.build_engagement(con, data_dir / "engagement-en"),
        "smp2018-task1": lambda: published.import_published(con, data_dir / "smp2018-task1", dataset="smp2018-task1", meta={
            "language": "zh", "licence": "facts from a paper",
            "source": "Zhang et al. 2019, An Evaluation of Chinese Human-Computer Dialogue Technology, Table 4",
            "description": "SMP2018-ECDT Task 1 (intent classification): top eight teams by F1",
        }),
        "smp2018-task2": lambda: published.import_published(con, data_dir / "smp2018-task2", dataset="smp2018-task2",
                                                  scales=SMP2018_SCALES, meta={
            "language": "zh", "licence": "facts from a paper",
            "source": "Zhang et al. 2019, An Evaluation of Chinese Human-Computer Dialogue Technology, Table 5",
            "description": "SMP2018-ECDT Task 2 (task-oriented dialogue): top five teams, C, T, Sa, F, G",
        }),
    }
    wanted = [name for name in steps if only is None or name in only]
    todo = [name for name in wanted if name not in present]
    reports = []
    for name in tqdm(todo, desc="building the default store", unit="dataset", disable=not progress or not todo):
        reports.append(steps[name]())
    # their responses get lexical scores, so pages have numbers to show (also after an interrupted build)
    for name in [n for n in wanted if n in SCORED]:
        scored = scoring.score(con, metrics="lexical", dataset=name, progress=progress)
        if name in todo or sum(scored.computed.values()):
            reports.append(ImportReport(f"{name} lexical scores", {"response scores": sum(scored.computed.values()),
                                                                  "system scores": sum(scored.system.values())}))
    if "demo-zh" in wanted and not con.execute("SELECT count(*) FROM tasks").fetchall()[0][0]:
        # a rating task to try the Annotate page on (people's ratings of it count like any other); in its dataset's
        # language, Chinese, as its rubric and page are: "a demonstration task on the embedded demo-zh data: rate each
        # response for how informative (Info) and how coherent (Coh) it is, 0 to 2"
        tasks.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=10, per_item=2,
                          seed=0, name=DEMO_TASK, guidelines="内置 demo-zh 数据上的演示任务：请为每条回复的丰富度（Info）"
                          "和连贯性（Coh）各打 0 到 2 分。")
    return reports


DEMO_TASK = "Demo (embedded data): ten demo-zh responses, Info and Coh"


def default_incomplete(con: duckdb.DuckDBPyConnection) -> bool:
    """Empty, or holding only embedded datasets but not all of them (a first build that was
    interrupted): a store the dashboard may (re)build the defaults into. A store with a dataset of
    the user's own is left alone."""
    present = {d for (d,) in con.execute("SELECT dataset FROM datasets").fetchall()}
    return present <= set(DEFAULT_DATASETS) and present != set(DEFAULT_DATASETS)


def build_default_in_stages(con: duckdb.DuckDBPyConnection, *, hand_over: bool = False) -> threading.Thread | None:
    """The dashboard's first run: the quick datasets now (under a second), the slow ones in a
    background thread, so the first page draws without waiting for them. Every dataset is its own
    transaction; the store's revision bump makes pages pick the new data up.

    The thread never opens the store a second time while `con` is open (DuckDB refuses a file already
    attached in the process when the first connection is being closed meanwhile): it works on a cursor
    of `con`, or with hand_over=True on `con` itself, which it then closes when the build ends (the
    caller must not close it: the dashboard closes its page connections when a page run ends, and the
    build outlives that). None, with `con` untouched, when there is nothing to build."""
    if not default_incomplete(con):
        return None
    init_store(con, only=tuple(d for d in DEFAULT_DATASETS if d not in SLOW))
    thread = threading.Thread(target=_build_slow, args=(con if hand_over else con.cursor(),),
                              name="evalcore-default-build", daemon=True)
    thread.start()
    return thread


def _build_slow(con: duckdb.DuckDBPyConnection) -> None:
    """The slow datasets on a connection this thread owns (a cursor, or the caller's connection handed
    over); closed however the build ends."""
    try:
        init_store(con, only=SLOW)
    finally:
        con.close()
