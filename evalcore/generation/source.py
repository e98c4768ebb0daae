"""The items a generation sends: context, grounding, skill and the context's speakers where the store has them."""
from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class Item:
    item_id: str
    track: str
    skill: str | None
    context: list[str]
    grounding: dict | None
    speakers: list[str | None] | None   # one per context turn, from the item's dialogue; None when unknown


def load_items(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None) -> list[Item]:
    """The items of `tracks` (None: every track of the dataset), in item order. An item's skill is its own, else
    its track's. Speakers come from the stored turns before the answered one, when there is one per context turn."""
    rows = con.execute("""
        SELECT i.item_id, i.track, coalesce(i.skill, t.skill), i.context, i.grounding,
               (SELECT list(u.speaker ORDER BY u.turn_index) FROM turns u
                WHERE u.dataset = i.dataset AND u.dialogue_id = i.dialogue_id AND u.turn_index < i.turn_index
                  AND u.turn_index >= i.turn_index - json_array_length(i.context)) AS speakers
        FROM items i LEFT JOIN tracks t USING (dataset, track)
        WHERE i.dataset = ? AND (? IS NULL OR list_contains(?, i.track))
        ORDER BY i.track, i.item_id""", [dataset, tracks, tracks]).fetchall()
    out = []
    for item_id, track, skill, context, grounding, speakers in rows:
        turns = json.loads(context)
        known = speakers if speakers and len(speakers) == len(turns) and all(speakers) else None
        out.append(Item(item_id, track, skill, turns, json.loads(grounding) if grounding else None, known))
    return out
