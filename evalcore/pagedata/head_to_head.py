"""The Compare page's data: two models on the items both answered, metric deltas with paired-bootstrap
intervals (evalcore.analysis.paired), human wins and losses, and the per-item table."""
from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.paired import mean_difference_interval
from evalcore.core.i18n import _
from evalcore.pagedata import catalog, responses
from evalcore.pagedata.scope import dataset_scoped


@dataset_scoped
def compare(con: duckdb.DuckDBPyConnection, dataset: str, track: str, a: str, b: str, *, flavor: str = "default",
            bootstrap: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(metric deltas with paired-bootstrap CIs, human wins/ties/losses, per-item table) for models a and b
    on the items both answered. Deltas are of per-response means (b minus a)."""
    table = responses.response_table(con, dataset, track, flavor=flavor, models=[a, b])
    left = table[table["model"] == a].set_index("item_id")
    right = table[table["model"] == b].set_index("item_id")
    common = left.index.intersection(right.index)
    left, right = left.loc[common], right.loc[common]
    numeric = [c for c in table.columns if c not in ("item_id", "model", "text")]
    dims = set(catalog.dimensions_of(con, dataset, track))
    rng = np.random.default_rng(seed)
    rows, human_rows = [], []
    for col in numeric:
        pair = pd.concat([left[col], right[col]], axis=1, keys=["a", "b"]).dropna()
        if pair.empty:
            continue
        diff = (pair["b"] - pair["a"]).to_numpy()
        if col in dims:
            human_rows.append({"dimension": col, "n": len(diff), "b wins": int((diff > 0).sum()),
                               "ties": int((diff == 0).sum()), "a wins": int((diff < 0).sum())})
            continue
        low, high = mean_difference_interval(diff, bootstrap, rng)
        rows.append({"metric": col, "n": len(diff), f"mean {a}": pair["a"].mean(), f"mean {b}": pair["b"].mean(),
                     "delta": diff.mean(), "ci_low": low, "ci_high": high,
                     "ci": _("paired bootstrap 95% B={bootstrap} seed={seed}").format(bootstrap=bootstrap, seed=seed)})
    contexts = dict(con.execute("SELECT item_id, context FROM items WHERE dataset = ? AND track = ?",
                                [dataset, track]).fetchall())
    items = pd.DataFrame({"item_id": common,
                          "context": [responses.context_snippet(json.loads(contexts.get(i) or "[]")) for i in common],
                          f"{a}": left["text"].to_numpy(), f"{b}": right["text"].to_numpy()})
    for col in numeric:
        items[f"{col} ({b} - {a})"] = (right[col] - left[col]).to_numpy()
    return pd.DataFrame(rows), pd.DataFrame(human_rows), items
