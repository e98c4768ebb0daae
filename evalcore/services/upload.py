"""The upload workflow without its page: a received file kept in a temporary folder while it is imported,
responses imported with their scoring job queued in the import's own transaction, ratings imported, a track's
missing scores queued, and a queued job started in a worker process. Each write runs again when another one
collided with it (store.retrying); a refused file raises ImportRefused, repeated collisions WriteConflict, a
bad option ValueError, for the caller to say. Messages name the upload page's controls (ingest.responses.PAGE)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from evalcore.core.malloc import give_back
from evalcore.ingest.archives import temp_dir
from evalcore.ingest.batch import ImportReport
from evalcore.ingest.formats.ratings import import_ratings, parse_scale
from evalcore.ingest.formats.responses import PAGE, import_responses
from evalcore.services import jobs
from evalcore.store import resolve_db_path, retrying, transaction


@dataclass
class Upload:
    """What an upload did: the import's report, and the scoring job queued with it (None: none was)."""

    report: ImportReport
    job: int | None = None
    steps: int = 0    # the job's steps

    def messages(self, path: str | Path, name: str) -> tuple[str, list[str]]:
        """(the report as text, with the temporary copy at `path` called `name` and its warnings left out,
        the warnings): each warning is said once, on its own."""
        warnings = [n for n in self.report.notes if n.startswith("warning:")]
        self.report.notes = [n for n in self.report.notes if n not in warnings]
        return self.report.render().replace(str(path), name), warnings


def received(data: bytes, name: str) -> Path:
    """The uploaded bytes as a file called `name` in a temporary folder of its own, named with this process's id
    (swept at the next start if the server is killed); discard() removes it."""
    path = temp_dir() / Path(name).name
    path.write_bytes(data)
    return path


def discard(path: Path) -> None:
    """Remove received()'s folder (the store keeps the file's name and sha256) and give the memory its records
    took back to the OS (the dashboard lives on)."""
    shutil.rmtree(path.parent, ignore_errors=True)
    give_back()


def queue_scoring(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str], *, neural: bool = False,
                  model: str | None = None) -> tuple[int, int]:
    """The scoring job the tracks need, recorded as queued on `con` (inside an import's transaction for an
    upload: imported responses never stand without their job; the server runs a queued job nobody ran):
    (its id, its number of steps)."""
    steps = jobs.scoring_steps(con, dataset, tracks, neural=neural)
    return jobs.create(con, dataset, steps, model=model), len(steps)


def upload_responses(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str | None,
                     model: str | None = None, replace: bool = False, uploader: str | None = None,
                     shown: str | None = None, neural: bool = False) -> Upload:
    """A responses file imported as the upload page imports it, with the scoring job of the tracks it wrote
    queued in the same transaction (a tab closed, or a server killed, right after the import leaves a job the
    server runs at its next check or start). The file says where it goes: a `track` column names its rows'
    tracks, a .zip's file names do; a file with neither goes to `track`. `shown`: the name its uploader gave it."""
    queued: dict = {}

    def then(c, tracks: list[str]) -> int:
        queued["job"], queued["steps"] = queue_scoring(c, dataset, tracks, neural=neural, model=model)
        return queued["job"]

    report = retrying(import_responses, con, path, dataset=dataset, track=track, model=model, replace=replace,
                      uploader=uploader, shown=shown, track_column_first=True, words=PAGE, then=then)
    return Upload(report, queued.get("job"), queued.get("steps", 0))


def parse_scales(text: str) -> dict[str, tuple[float, float]]:
    """'Info=0:2, Coh=0:2' as {dimension: (min, max)} (a ValueError names a bad one)."""
    return {n: (lo, hi) for n, lo, hi in (parse_scale(t.strip()) for t in text.split(",") if t.strip())}


def parse_patterns(text: str) -> list[str]:
    """'N/A*, none' as ['N/A*', 'none']: the page's --missing patterns (a pattern cannot hold a comma there)."""
    return [t.strip() for t in text.split(",") if t.strip()]


def upload_ratings(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str | None,
                   scales: dict[str, tuple[float, float]] | None = None, shown: str | None = None,
                   missing: list[str] | None = None) -> Upload:
    """A ratings file imported as the upload page imports it (no scoring job: ratings need none); scores
    matching a `missing` pattern are stored as no rating (import_ratings)."""
    return Upload(retrying(import_ratings, con, path, dataset=dataset, track=track, scales=scales, shown=shown,
                           missing=missing))


def queue_track(con: duckdb.DuckDBPyConnection, dataset: str, track: str, *, neural: bool = False) -> tuple[int, int]:
    """"Score what is missing on this track": its job recorded as queued in one short write, (id, steps)."""
    def write() -> tuple[int, int]:
        with transaction(con):
            return queue_scoring(con, dataset, [track], neural=neural)

    return retrying(write)


def start(job: int, db: str | None = None) -> None:
    """Run a queued job in a worker process of its own (jobs.start): it goes on if the page that asked is left."""
    jobs.start(str(resolve_db_path(db)), job)
