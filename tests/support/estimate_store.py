"""A small store for people-calibrated estimates: dataset `toy`, one chitchat track, three models' responses to 60
items copying their reference less and less (alpha most), lexically scored, and people's ratings of dimension Q (0-2,
near 2 x F1 with noise) for 20 random responses of each model by two annotators, imported from a file."""
from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import response_scores, score
from evalcore.store import connect
from support import write_jsonl

DATASET, TRACK = "toy", "toy/chitchat"
MODELS = ("alpha", "beta", "gamma")
WORDS = "the cat sat on a mat with red blue green hat dog ran far".split()


def build(folder: Path):
    """(the store's path, the ratings imported, each response's F1 by (item_id, model)); the store is closed."""
    rng = random.Random(0)
    db = folder / "store.duckdb"
    con = connect(db)
    try:
        items = [{"item_id": f"i{i}", "dataset": DATASET, "track": TRACK, "dialogue_id": f"d{i}",
                  "context": [f"turn {i}"], "references": [" ".join(rng.sample(WORDS, 6))], "skill": "chitchat"}
                 for i in range(60)]
        import_items(con, write_jsonl(folder / "items.jsonl", items))
        rows = [{"item_id": it["item_id"], "model": m,
                 "response": " ".join(rng.sample(it["references"][0].split(), k) + rng.sample(WORDS, 6 - k))}
                for it in items for m, k in zip(MODELS, (5, 3, 1))]
        pd.DataFrame(rows).to_csv(folder / "responses.csv", index=False)
        import_responses(con, folder / "responses.csv", dataset=DATASET, track=TRACK)
        score(con, dataset=DATASET, progress=False)
        f1 = response_scores(con, DATASET, TRACK)
        f1 = f1[f1["metric"] == "F1"].set_index(["item_id", "model"])["value"]
        ratings = []
        for m in MODELS:
            for item in rng.sample([it["item_id"] for it in items], 20):
                for a in ("ann-1", "ann-2"):
                    ratings.append({"item_id": item, "model": m, "annotator": a, "dimension": "Q",
                                    "score": min(2, max(0, round(2 * f1[(item, m)] + rng.gauss(0, 0.4))))})
        pd.DataFrame(ratings).to_csv(folder / "ratings.csv", index=False)
        import_ratings(con, folder / "ratings.csv", dataset=DATASET, track=TRACK, scales={"Q": (0, 2)})
    finally:
        con.close()
    return db, pd.DataFrame(ratings), f1
