"""The learned metrics' options: which trained ABLSTM model scores."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LearnedOptions:
    ablstm_model: str | None = None        # a `learned train --out` directory; default: the store's latest
