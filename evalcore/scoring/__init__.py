"""Scoring: run metrics over stored responses, caching per-response statistics, and write system scores.

Per-response statistics are cached in metric_scores under (signature, text_key), where text_key
is the md5 of the response and its references: a score is never computed twice for the same text,
references and signature. Corpus values are aggregated from the same statistics and stored in
system_scores with origin 'computed', the signature, and n (responses behind the value).

plan.py: what runs on a track and under which signatures and keys; run.py: `score`, a track's run from
start to end; pending.py: the rows it computes; batches.py: computing them here (and in forked helpers);
ray.py: the same plan on Ray actors; writes.py: the values cached; system.py: the system scores formed;
stored.py: the stored values read back. The names below are the layer's face.
"""
from evalcore.scoring.plan import (
                                   ANY,
                                   CHUNK,
                                   SENTENCE_MEAN,
                                   SYSTEM_AGGREGATES,
                                   Plan,
                                   compute,
                                   item_key,
                                   keys_by_metric,
                                   load_track,
                                   needs_docs,
)
from evalcore.scoring.run import ScoreReport, language_note, score
from evalcore.scoring.stored import (
                                   cached_stats,
                                   computed_config,
                                   computed_filter,
                                   elsewhere,
                                   item_stats_rows,
                                   response_scores,
                                   stored_item_stats,
                                   write_item_stats,
)

__all__ = ["ANY", "CHUNK", "SENTENCE_MEAN", "SYSTEM_AGGREGATES", "Plan", "ScoreReport", "cached_stats", "compute",
           "computed_config", "computed_filter", "elsewhere", "item_key", "item_stats_rows", "keys_by_metric", "language_note",
           "load_track", "needs_docs", "response_scores", "score", "stored_item_stats", "write_item_stats"]
