"""Build `engagement-en`: DailyDialog replies rated for engagement by three AMT workers each.

Source: the Predictive Engagement study (Ghazarian et al., AAAI 2020), file
`DailyDialog_groungtruth_annotated.csv` (MIT), copied byte for byte into data/engagement-en/.
Each row is one worker's HIT of ten (query, response) pairs with a 1-5 engagement score each;
300 distinct pairs, every one rated by exactly three of 24 workers. The rated reply is the one the
DailyDialog speaker gave, so it is stored as the responses of one system, not as a reference.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.readers import read_table

DATASET = "engagement-en"
TRACK = "dailydialog/chitchat"
MODEL = "dailydialog-human"
DIMENSION = "Engagement"
SCALE = (1.0, 5.0)
FILE = "DailyDialog_groungtruth_annotated.csv"
PAIRS = 10  # pairs per HIT


def build_engagement(con: duckdb.DuckDBPyConnection, folder: str | Path) -> ImportReport:
    path = Path(folder) / FILE
    if lookup.tracks_of(con, DATASET):
        raise ImportRefused([Problem(str(path), "", "--db", f"a store without dataset {DATASET!r}", "it is already there")])
    if not path.is_file():
        raise ImportRefused([Problem(str(path), "", "", "the Predictive Engagement AMT file", "no such file")])
    table = read_table(path)
    check = Checker(table.file)
    columns = ["WorkerId"] + [f"{kind}{k}" for k in range(1, PAIRS + 1)
                              for kind in ("Input.query", "Input.response", "Answer.pair")]
    check.require_columns(table.columns, columns)
    check.refuse_if_any()
    batch = Batch()
    batch.dataset(DATASET, language="en", licence="MIT",
                  source="github.com/PlusLabNLP/PredictiveEngagement (data/DailyDialog_groungtruth_annotated.csv)",
                  description="300 DailyDialog replies, each rated for engagement (1-5) by three AMT workers")
    batch.track(DATASET, TRACK, corpus="DailyDialog")
    batch.model(MODEL, "The reply the DailyDialog speaker actually gave (the corpus's ground truth), "
                       "as rated in the Predictive Engagement AMT study")
    batch.add("dimensions", dataset=DATASET, dimension=DIMENSION, scale_min=SCALE[0], scale_max=SCALE[1])
    items: dict[tuple[str, str], str] = {}
    seen: dict[tuple[str, str], str] = {}
    for rec, where in zip(table.records, table.places):
        worker = check.text(rec, where, "WorkerId")
        for k in range(1, PAIRS + 1):
            query = check.text(rec, where, f"Input.query{k}")
            reply = check.text(rec, where, f"Input.response{k}")
            score = check.number(rec, where, f"Answer.pair{k}")
            if None in (worker, query, reply, score):
                continue
            if not SCALE[0] <= score <= SCALE[1] or score != int(score):
                check.add(where, f"Answer.pair{k}", "an engagement score 1, 2, 3, 4 or 5", f"{score:g}")
                continue
            pair = (query.strip(), reply.strip())
            if pair not in items:
                item_id = items[pair] = f"dd-eng-{len(items):03d}"
                batch.add("items", dataset=DATASET, item_id=item_id, track=TRACK, dialogue_id=None,
                          context=json.dumps([pair[0]], ensure_ascii=False), grounding=None, skill="chitchat",
                          origin=f"{FILE} {where} pair {k}")
                batch.add("responses", dataset=DATASET, item_id=item_id, model=MODEL, text=pair[1],
                          origin=f"{FILE} {where} pair {k}")
            key = (items[pair], worker)
            if key in seen:
                check.add(where, f"Answer.pair{k}", "one score per pair and worker", f"a second one (first at {seen[key]})")
                continue
            seen[key] = where
            batch.add("human_ratings", dataset=DATASET, track=TRACK, target="response", item_id=items[pair],
                      dialogue_id=None, model=MODEL, annotator=worker, dimension=DIMENSION, score=score,
                      origin=f"{FILE} {where} pair {k}")
    check.refuse_if_any()
    return ImportReport(str(path), batch.write(con, source=str(path)))
