"""Judge metrics as the scorer runs them: one request per response (two for pairwise, both orders),
each answer read by a named rule; an answer that cannot be read, or a request that failed, gives no
value and its reason (stored with the cache row), never a number.

Per-response statistics: G-Eval and MT-Bench single store [rating]; pairwise stores
[value, score as A, score as B] (1 win, 0.5 tie, 0 loss in each order), from which the position bias
is reported (`bias_note`).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from evalcore.metrics.base import TRANSIENT
from evalcore.metrics.judge import client, prompts

JUDGE_VERSION = "1"
FAILED = TRANSIENT   # reasons starting so are asked again on the next run; unparseable ones are not
UNPARSEABLE = "unparseable"


def signature_parts(template: str, dimension: str | None, opts, pairwise: bool = False) -> tuple[str, ...]:
    """Endpoint model, prompt template hash, temperature and parsing rule (and the baseline for pairwise)."""
    lang = prompts.norm_lang(opts.lang)
    rule = prompts.VERDICT_RULE if pairwise else prompts.RATING_RULE
    parts = [opts.judge.signature_part(), f"prompt:{template}-{lang}-{prompts.template_hash(template, dimension, lang)}",
             f"parse:{rule}", f"v:judge-{JUDGE_VERSION}"]
    if pairwise:
        parts.insert(3, f"baseline:{opts.judge_baseline}|orders:both")
    if opts.judge_sample is not None:   # one of k samples of the same judge: kept apart, compared by judge-audit
        parts.insert(-1, f"sample:{opts.judge_sample}")
    return tuple(parts)


def _turns(value) -> list[str]:
    if isinstance(value, (list, tuple, np.ndarray)):
        return [str(t) for t in value]
    if isinstance(value, str) and value:
        try:
            parsed = json.loads(value)
            return [str(t) for t in parsed] if isinstance(parsed, list) else [value]
        except ValueError:
            return [value]
    return []


def _grounding(value) -> dict | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        try:
            parsed = json.loads(value)
            return parsed if isinstance(parsed, dict) else None
        except ValueError:
            return None
    return None


def item_texts(rows: pd.DataFrame | None, n: int) -> tuple[list[list[str]], list[dict | None]]:
    """Each response's item context (turns) and grounding from the rows load_track(full=True) gives."""
    rows = rows if rows is not None else pd.DataFrame(index=range(n))
    contexts = [_turns(c) for c in rows.get("context", pd.Series([None] * n))]
    groundings = [_grounding(g) for g in rows.get("grounding", pd.Series([None] * n))]
    return contexts, groundings


def ratings(opts, convs: list[list[dict]], lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """(values, reasons): each conversation's rating read by RATING_RULE within [lo, hi], or the reason
    there is none (a failed request, an unparseable answer)."""
    values, reasons = np.full(len(convs), np.nan), np.full(len(convs), None, dtype=object)
    for i, reply in enumerate(_ask(opts, convs)):
        if reply.error:
            reasons[i] = f"{FAILED}: {reply.error}"
            continue
        value, why = prompts.parse_rating(reply.text, lo, hi)
        if value is None:
            reasons[i] = f"{UNPARSEABLE}: {why}"
        else:
            values[i] = value
    return values, reasons


def _ask(opts, convs: list[list[dict]]):
    return client.chat_many(opts.judge, convs, concurrency=opts.judge_concurrency, retries=opts.judge_retries)


def pairwise(opts, hyps, contexts, rows, lang):
    """(values, stats [value, score as A, score as B], reasons) of each response against the baseline's."""
    n = len(hyps)
    values, stats = np.full(n, np.nan), np.full((n, 3), np.nan)
    reasons = np.full(n, None, dtype=object)
    base = list(rows["baseline_text"]) if "baseline_text" in rows else [None] * n
    own = list(rows["is_baseline"]) if "is_baseline" in rows else [False] * n
    todo = []
    for i in range(n):
        if own[i]:
            reasons[i] = f"the baseline {opts.judge_baseline!r} itself (not judged against itself)"
        elif not isinstance(base[i], str):
            reasons[i] = f"no response of the baseline {opts.judge_baseline!r} to this item"
        else:
            todo.append(i)
    convs = [prompts.pairwise_messages(contexts[i], hyps[i], base[i], lang) for i in todo]
    convs += [prompts.pairwise_messages(contexts[i], base[i], hyps[i], lang) for i in todo]
    replies = _ask(opts, convs)
    for k, i in enumerate(todo):
        first, swapped = replies[k], replies[len(todo) + k]
        failed = [r.error for r in (first, swapped) if r.error]
        if failed:
            reasons[i] = f"{FAILED}: {failed[0]}"
            continue
        (ab, why_ab), (ba, why_ba) = prompts.parse_verdict(first.text), prompts.parse_verdict(swapped.text)
        value, why = prompts.pairwise_value(ab, ba)
        if value is None:
            reasons[i] = f"{UNPARSEABLE}: {why}: {why_ab or why_ba}"
            continue
        values[i] = value
        stats[i] = [value, {"A": 1.0, "tie": 0.5, "B": 0.0}[ab], {"B": 1.0, "tie": 0.5, "A": 0.0}[ba]]
    return values, stats, reasons


def bias_note(stats: np.ndarray) -> str | None:
    """Position bias of pairwise judgments from their statistics [value, score as A, score as B]."""
    ok = stats[~np.isnan(stats).any(axis=1)]
    if len(ok) == 0:
        return None
    as_a, as_b = ok[:, 1], ok[:, 2]
    inconsistent = float(np.mean(as_a != as_b))
    # verdict "A" in the first order = the test answer won (1); in the swapped order = the baseline won (0)
    first = float(((as_a == 1.0).sum() + (as_b == 0.0).sum()) / (2 * len(ok)))
    return (f"position bias over {len(ok)} pairs: the verdict changed with the order in {inconsistent:.0%}, "
            f"the first position was chosen in {first:.0%} of verdicts (0.5 = no preference)")
