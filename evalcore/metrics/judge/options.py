"""The LLM judge metrics' options: which server, the pairwise baseline, how many requests, which sample."""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class JudgeOptions:
    judge: object | None = None            # evalcore.metrics.judge.Endpoint: the LLM judge metrics' server
    judge_baseline: str | None = None      # the model pairwise judging compares against
    judge_concurrency: int = 8             # requests in flight at most
    judge_retries: int = 3                 # attempts per request (backoff between them)
    judge_sample: int | None = None        # which of k samples this run is (temperature > 0): its own signature


def default(name: str):
    """A JudgeOptions field's default (the CLI states them in its help)."""
    return next(f.default for f in fields(JudgeOptions) if f.name == name)
