"""The embedded default: the store the dashboard opens on, built from data/ on first run."""
from __future__ import annotations

from pathlib import Path

import duckdb
from tqdm import tqdm

from evalcore.ingest.batch import ImportReport
from evalcore.ingest.demo import build_demo
from evalcore.ingest.engagement import build_engagement
from evalcore.ingest.published import import_published
from evalcore.store import is_empty

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
MSDE_SCALES = {"Info": (0.0, 2.0), "Coh": (0.0, 2.0), "Know": (0.0, 2.0), "Rec": (0.0, 2.0)}
SCORED = {"demo-zh", "engagement-en"}  # the embedded datasets with responses
SMP2018_SCALES = {"Sa": (-2.0, 2.0), "F": (-1.0, 1.0), "G": (0.0, 1.0)}


def init_store(con: duckdb.DuckDBPyConnection, data_dir: Path = DATA_DIR, *, progress: bool = False) -> list[ImportReport]:
    """Import or build each embedded dataset in its own transaction; skip those present."""
    present = {d for (d,) in con.execute("SELECT dataset FROM datasets").fetchall()}
    steps = {
        "msde-paper": lambda: import_published(con, data_dir / "msde-paper", dataset="msde-paper", scales=MSDE_SCALES, meta={
            "language": "zh", "licence": "facts from a paper",
            "source": "MSDE paper (CAAI Trans. Intell. Syst. 2025, 20(5)), Tables 4-13",
            "description": "Published system-level metric and human scores of 14 systems and their correlations",
        }),
        "demo-zh": lambda: build_demo(con, data_dir / "demo-zh"),
        "engagement-en": lambda: build_engagement(con, data_dir / "engagement-en"),
        "smp2018-task1": lambda: import_published(con, data_dir / "smp2018-task1", dataset="smp2018-task1", meta={
            "language": "zh", "licence": "facts from a paper",
            "source": "Zhang et al. 2019, An Evaluation of Chinese Human-Computer Dialogue Technology, Table 4",
            "description": "SMP2018-ECDT Task 1 (intent classification): top eight teams by F1",
        }),
        "smp2018-task2": lambda: import_published(con, data_dir / "smp2018-task2", dataset="smp2018-task2",
                                                  scales=SMP2018_SCALES, meta={
            "language": "zh", "licence": "facts from a paper",
            "source": "Zhang et al. 2019, An Evaluation of Chinese Human-Computer Dialogue Technology, Table 5",
            "description": "SMP2018-ECDT Task 2 (task-oriented dialogue): top five teams, C, T, Sa, F, G",
        }),
    }
    todo = [name for name in steps if name not in present]
    reports = []
    for name in tqdm(todo, desc="building the default store", unit="dataset", disable=not progress or not todo):
        reports.append(steps[name]())
    for name in [n for n in todo if n in SCORED]:  # their responses get lexical scores, so pages have numbers to show
        from evalcore.scoring import score

        scored = score(con, metrics="lexical", dataset=name, progress=progress)
        reports.append(ImportReport(f"{name} lexical scores", {"response scores": sum(scored.computed.values()),
                                                              "system scores": sum(scored.system.values())}))
    return reports


def ensure_default(con: duckdb.DuckDBPyConnection) -> list[ImportReport]:
    """Build the default data into an empty store; leave a store with data alone."""
    return init_store(con) if is_empty(con) else []
