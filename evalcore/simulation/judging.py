"""A judge over whole conversations: each counted conversation of a chat task (simulated, people's, or both) rated on
each of the task's dimensions that has an MSDE rubric, by a registered endpoint reading the whole conversation at
once (evalcore.metrics.judge.prompts.dialogue_messages), not by the mean of per-turn judgments. Kept in
chat_judgments with the judge's signature, apart from the ratings of whoever held the conversation; the simulator
audit can rank simulated conversations by it (`simulator-audit --rated-by JUDGE`). Already judged (same signature)
is not asked again, so a run that stopped goes on; a rating the judge did not give is kept with its reason and asked
again by the next run."""
from __future__ import annotations

from collections import Counter
from datetime import datetime

import duckdb

from evalcore import __version__
from evalcore.core.chat import chat_iter
from evalcore.ingest.lookup import dataset_language
from evalcore.metrics.judge.prompts import (
    DIALOGUE_KIND,
    DIMENSION_SCALES,
    dialogue_messages,
    norm_lang,
    parse_rating,
    template_hash,
)
from evalcore.simulation.conversations import load
from evalcore.store import chats as stored
from evalcore.store.endpoints import get as get_endpoint
from evalcore.store.transactions import bump_revision, transaction

HELD_BY = ("all", "simulated", "people")


def signature(con: duckdb.DuckDBPyConnection, judge: str, dimension: str, lang: str) -> str:
    entry = get_endpoint(con, judge).judge()
    return (f"{entry.signature_part()}|tpl:{DIALOGUE_KIND}#{template_hash(DIALOGUE_KIND, dimension, lang)}"
            f"|lang:{lang}|evalcore:{__version__}")


def judge(con: duckdb.DuckDBPyConnection, task_id: int, judge_name: str, *, held_by: str = "all",
          counted: tuple[str, ...] = stored.COUNTED, concurrency: int | None = None) -> dict:
    """Ask the judge for every (conversation, dimension) not judged yet with this signature; {"judged": stored now,
    "failed": Counter of reasons, "skipped": dimensions without a rubric, "asked": requests}."""
    if held_by not in HELD_BY:
        raise ValueError(f"held_by is one of {', '.join(HELD_BY)}")
    task = stored.get(con, task_id)
    registered = get_endpoint(con, judge_name)
    lang = norm_lang(dataset_language(con, task.dataset)[0])
    dims = [d.dimension for d in task.dimensions if d.dimension in DIMENSION_SCALES]
    skipped = [d.dimension for d in task.dimensions if d.dimension not in DIMENSION_SCALES]
    convs = stored.conversations(con, task_id)
    convs = convs[convs["state"].isin(counted)]
    if held_by == "simulated":
        convs = convs[convs["simulator"].notna()]
    elif held_by == "people":
        convs = convs[convs["simulator"].isna()]
    signs = {d: signature(con, judge_name, d, lang) for d in dims}
    # a judgment without a rating (a server down, an answer without [[n]]) is asked again
    done = set(con.execute("SELECT conversation_id, dimension FROM chat_judgments WHERE list_contains(?, signature) "
                           "AND value IS NOT NULL", [list(signs.values())]).fetchall())
    asks = []
    for cid, c in sorted(load(con, task, [int(i) for i in convs["conversation_id"]]).items()):
        asks += [((cid, d), dialogue_messages(d, lang, c.turns, c.grounding)) for d in dims if (cid, d) not in done]
    failed: Counter = Counter()
    judged = 0
    for (cid, d), reply in chat_iter(registered.judge(), iter(asks), concurrency=concurrency or registered.concurrency):
        lo, hi = DIMENSION_SCALES[d]
        value, why = parse_rating(reply.text, lo, hi) if reply.error is None else (None, reply.error)
        with transaction(con):   # each judgment written when it comes
            con.execute("INSERT OR REPLACE INTO chat_judgments VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [cid, judge_name, signs[d], d, value, why, datetime.now()])
        judged += value is not None
        if why:
            failed[why] += 1
    if asks:
        with transaction(con):
            bump_revision(con)
    return {"judged": judged, "failed": failed, "skipped": skipped, "asked": len(asks)}


def judged(con: duckdb.DuckDBPyConnection, conversation_ids: list[int], judge_name: str) -> dict[tuple[int, str], float]:
    """{(conversation, dimension): the judge's latest usable rating} of the given conversations."""
    return {(int(c), d): v for c, d, v in con.execute("""
        SELECT conversation_id, dimension, arg_max(value, given_at) FROM chat_judgments
        WHERE judge = ? AND value IS NOT NULL AND list_contains(?, conversation_id) GROUP BY ALL""",
                                                    [judge_name, [int(c) for c in conversation_ids]]).fetchall()}
