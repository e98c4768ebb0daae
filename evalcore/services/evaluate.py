""""Evaluate an endpoint" without its page: a generation and the scoring of its replies recorded as one queued job,
run by a worker process (jobs.start) that writes its progress to the store. The plan is made here first, so what
cannot run (an unknown endpoint, a model name taken by another way of asking, no items) is said at once."""
from __future__ import annotations

import duckdb

from evalcore.generation.run import prepare
from evalcore.services import jobs
from evalcore.store import retrying, transaction


def queue_generation(con: duckdb.DuckDBPyConnection, *, dataset: str, tracks: list[str] | None, endpoint: str,
                     model: str, items: int | None = None, seed: int | None = None, template: str | None = None,
                     neural: bool = False) -> tuple[int, int]:
    """The job (its id, its number of items to send): step 1 generates, the steps after it score the model's
    responses as after an upload. ValueError for a choice that cannot run."""
    plan = prepare(con, dataset=dataset, tracks=tracks, endpoint=endpoint, model=model, items=items, seed=seed,
                   template=template)
    params = {"dataset": dataset, "tracks": plan.tracks, "endpoint": endpoint, "model": model, "items": items,
              "seed": seed, "template": template}

    def write() -> int:
        with transaction(con):
            steps = [{"generate": params}] + jobs.scoring_steps(con, dataset, plan.tracks, neural=neural)
            return jobs.create(con, dataset, steps, model=model, kind="generate")

    return retrying(write), len(plan.items)
