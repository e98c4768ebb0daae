"""A tiny store for active rating tasks (issue 63): dataset 'lab', tracks lab/chitchat (8 items) and lab/knowledge
(6 items) answered by m1, m2 and m3 with responses that share more or less of the one reference (so F1, the
predictor of the tests, takes many values), and lab/open (2 items without references: F1 has no value there)."""
from __future__ import annotations

from pathlib import Path

from support import write_jsonl

REFERENCE = "今天天气很好我们去公园散步吧"
MODELS = ["m1", "m2", "m3"]
SIZES = {"lab/chitchat": 8, "lab/knowledge": 6}   # items per track with a reference
RATED = list(SIZES)                                # the tracks F1 values


def build(con, folder: Path) -> None:
    """Fill `con` with the lab dataset and its F1 and BLEU4 values."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score

    items = [{"item_id": f"{track[4]}{i}", "dataset": "lab", "track": track, "context": ["你好"],
              "references": [REFERENCE]} for track, n in SIZES.items() for i in range(n)]
    items += [{"item_id": f"o{i}", "dataset": "lab", "track": "lab/open", "context": ["你好"], "references": []}
              for i in range(2)]
    import_items(con, write_jsonl(folder / "items.jsonl", items))
    for track in [*SIZES, "lab/open"]:
        mine = [it for it in items if it["track"] == track]
        rows = [f"{it['item_id']},{m},{REFERENCE[: (3 * i + 5 * j) % len(REFERENCE) + 1]}猫狗\n"
                for i, it in enumerate(mine) for j, m in enumerate(MODELS)]
        path = folder / f"{track.replace('/', '-')}.csv"
        path.write_text("item_id,model,response\n" + "".join(rows), encoding="utf-8")
        import_responses(con, path, dataset="lab", track=track)
    score(con, dataset="lab", metrics=["F1", "BLEU4"], progress=False)   # two: disagreement sampling
