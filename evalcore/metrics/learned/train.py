"""`learned train`: build the pairs, train (and the ablations), save, register the metric."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pandas as pd

from evalcore.metrics.learned import ablstm as A
from evalcore.store import bump_revision, transaction


def train_command(con, args) -> pd.DataFrame:
    tracks = [t.strip() for t in args.tracks.split(",")] if args.tracks else []
    # refuses a split too small to train on (ValueError with the counts; the CLI prints it)
    data = A.pairs_from_store(con, args.dataset, tracks or None, args.seed)
    config = A.Config(epochs=args.epochs, seed=args.seed)
    variants = A.ABLATIONS if args.ablations else {"AB-LSTM-bi-MLP": A.ABLATIONS["AB-LSTM-bi-MLP"]}
    rows = []
    for name, change in variants.items():
        variant = replace(config, **change)
        model, info = A.train(data, variant, progress=args.format == "table")
        info.update(dataset=args.dataset, tracks=tracks, dialogues=data["dialogues"], variant=name)
        rows.append({"model": name, **{k: info["test"][k] for k in ("accuracy", "precision", "recall", "f1", "n")},
                     "epochs": info["test"]["epochs"], "seconds": info["test"]["seconds"]})
        if name == "AB-LSTM-bi-MLP":
            out = Path(args.out).resolve()
            signature = A.save(model, variant, info, out)
            with transaction(con):
                bump_revision(con)
                con.execute("INSERT OR REPLACE INTO learned_models VALUES (?, ?, ?, ?, ?)",
                            ["ABLSTM", str(out), signature, datetime.now().replace(microsecond=0),
                             json.dumps(info, ensure_ascii=False)])
    return pd.DataFrame(rows)
