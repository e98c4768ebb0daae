"""The LLM judge metrics' options: which server, the pairwise baseline, how many requests, which sample."""
from __future__ import annotations

from dataclasses import dataclass

from evalcore.metrics.options import JUDGE_CONCURRENCY, JUDGE_RETRIES


@dataclass(frozen=True)
class JudgeOptions:
    judge: object | None = None            # evalcore.metrics.judge.Endpoint: the LLM judge metrics' server
    judge_baseline: str | None = None      # the model pairwise judging compares against
    judge_concurrency: int = JUDGE_CONCURRENCY
    judge_retries: int = JUDGE_RETRIES
    judge_sample: int | None = None        # which of k samples this run is (temperature > 0): its own signature

