"""What the judge audit reads from a store: the dataset's tracks, each judge signature's values per response,
people's ratings of responses and a dimension's scale, and which judge model a signature asked."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.metrics import registry
from evalcore.metrics.base import Signature
from evalcore.metrics.judge.metric import Pairwise
from evalcore.scoring.plan import keys_by_metric, load_track
from evalcore.store import registered

PAIRWISE = Pairwise.name   # the judge whose values are win rates against a baseline, both orders in its stats


def asked(signature: str) -> str:
    """Which judge model answered, at which temperature, from a signature: 'gpt-4o@api.openai.com, t 0.0' (an
    imported judgment's signature is its prompt's name)."""
    sig = Signature.parse(signature)
    model = sig.field("judge")
    return f"{model}, t {sig.field('t')}" if model else signature


def tracks(con, dataset: str) -> list[tuple[str, str]]:
    """The dataset's tracks in order, each with its skill ('other' where none is set)."""
    return con.execute("SELECT track, coalesce(skill, 'other') FROM tracks WHERE dataset = ? ORDER BY track",
                       [dataset]).fetchall()


def judge_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of the judge family's metrics (the store's imported ones included)."""
    return [n for n, m in registry.of(con).items() if getattr(m, "family", None) == "judge"]


def judge_values(con: duckdb.DuckDBPyConnection, dataset: str, track: str, judge: str | None = None,
                 data: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per response, each judge signature's value and statistics: columns item_id, model, judge, signature,
    value, stats (pairwise: [value, score as first, score as second]). `judge`: one signature or name only."""
    known = registry.of(con)
    names = set(judge_names(con))
    # every signature a judge was ever asked under (the system scores keep only the latest configuration;
    # the per-response values of earlier ones stay cached, which is what drift compares)
    sigs = [(n, s) for n, s in con.execute("SELECT metric, signature FROM metric_signatures ORDER BY metric, signature"
                                           ).fetchall()
            if n in names and judge in (None, n, s)]
    columns = ["item_id", "model", "judge", "signature", "value", "stats"]
    if not sigs:
        return pd.DataFrame(columns=columns)
    data = load_track(con, dataset, track) if data is None else data
    keys = keys_by_metric(sorted({n for n, _ in sigs}), data, known)
    frames = []
    for name, sig in sigs:
        lookup = pd.DataFrame({"text_key": keys[name], "item_id": data["item_id"], "model": data["model"]})
        with registered(con, "_evalcore_keys", lookup):
            frames.append(con.execute("""
                SELECT k.item_id, k.model, ? AS judge, ? AS signature, m.value, m.stats FROM _evalcore_keys k
                JOIN metric_scores m ON m.text_key = k.text_key AND m.signature = ? WHERE m.value IS NOT NULL
            """, [name, sig, sig]).df())
    frames = [f for f in frames if len(f)]   # signatures of other tracks' scoring
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def human_ratings(con, dataset: str, track: str) -> pd.DataFrame:
    """Ratings of responses (level 'turn', target_id the item) and of whole dialogues (level 'dialogue', target_id
    the dialogue): level, target_id, model, annotator, dimension, score (an annotator's repeated rating of one
    target averaged)."""
    return con.execute("""
        SELECT CASE target WHEN 'dialogue' THEN 'dialogue' ELSE 'turn' END AS level,
               coalesce(item_id, dialogue_id) AS target_id, model, annotator, dimension, avg(score) AS score
        FROM human_ratings WHERE dataset = ? AND track = ? AND target IN ('response', 'dialogue')
        GROUP BY ALL ORDER BY ALL""", [dataset, track]).df()


def dialogue_of(con, dataset: str, track: str) -> dict[str, str]:
    """Each item's dialogue (an item without one is its own dialogue, as correlate counts it)."""
    return dict(con.execute("SELECT item_id, coalesce(dialogue_id, item_id) FROM items WHERE dataset = ? AND track = ?",
                            [dataset, track]).fetchall())


def scale(con, dataset: str, dimension: str) -> tuple[float, float] | None:
    row = con.execute("SELECT scale_min, scale_max FROM dimensions WHERE dataset = ? AND dimension = ?",
                      [dataset, dimension]).fetchall()
    return (float(row[0][0]), float(row[0][1])) if row and row[0][0] is not None and row[0][1] is not None else None
