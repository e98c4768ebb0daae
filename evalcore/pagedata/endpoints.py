"""The dashboard's data about endpoints: the registered ones as the Upload page lists them (the key variable and
whether it is set now, never a key), the generated models a leaderboard shows beside its board, and the template
each track of a generation would use."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.core import i18n
from evalcore.core.i18n import N_, _
from evalcore.core.keys import read_key
from evalcore.generation.listing import generated_models
from evalcore.generation.templates import resolve
from evalcore.ingest.lookup import dataset_language
from evalcore.pagedata.scope import dataset_scoped, global_scoped
from evalcore.store.endpoints import listing

SHOWN = ["name", "base_url", "model", "key", "temperature", "top_p", "max_tokens", "seed", "timeout", "concurrency",
         "template", "added_by", "added_at"]
HEADERS = (N_("name"), N_("model"), N_("temperature"), N_("top_p"), N_("max_tokens"), N_("seed"), N_("timeout"),
           N_("concurrency"), N_("template"), N_("added_by"), N_("added_at"), N_("signature"), N_("replies"),
           N_("total"), N_("empty"), N_("cut by length"), N_("refused"), N_("cut by client"))   # the headers shown


@global_scoped
def registered(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every endpoint as the store has it (its writes are marked global: no dataset's)."""
    return listing(con)


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The endpoints as the page lists them: `key` says which variable the key is read from and whether it is set
    in the dashboard's process at this moment (worked out at each drawing, never cached; a key is never read into
    a page)."""
    out = frame.copy()
    out["key"] = [_("none sent") if not var else (_("{var} (set)") if read_key(var) else _("{var} (not set)")).format(var=var)
                  for var in out["api_key_env"]]
    return out[SHOWN]


@dataset_scoped
def model_taken(con: duckdb.DuckDBPyConnection, dataset: str, model: str) -> str | None:
    """Why `model` cannot be a new generation's name in `dataset` (responses an upload wrote), or None: a name
    free, or one a generation holds (the same settings resume it; others are refused when the run is queued)."""
    uploaded = con.execute("SELECT count(*) FROM responses r WHERE dataset = ? AND model = ? AND NOT EXISTS ("
                           "SELECT 1 FROM generations g WHERE g.dataset = r.dataset AND g.model = r.model "
                           "AND g.submission_id = r.submission_id)", [dataset, model]).fetchall()[0][0]
    return (_("{model} already has {n} responses here that no endpoint generated: pick another name").format(
        model=repr(model), n=i18n.number(uploaded)) if uploaded else None)


@dataset_scoped
def generated(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None) -> pd.DataFrame:
    """The dataset's models an endpoint generated (in `track`'s items, when given), with their signatures and
    the count of replies stored with a reason."""
    frame = generated_models(con, dataset, track).rename(columns={"stored": "replies", "length": "cut by length",
                                                                  "cut": "cut by client"})
    front = ["model", "signature", "replies", "total", "empty", "cut by length", "refused", "cut by client"]
    return frame[front + [c for c in frame.columns if c not in front]]


@dataset_scoped
def track_templates(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | tuple,
                    template: str | None = None) -> pd.DataFrame:
    """The template each track would be sent with: name, hash, where it comes from, and its text."""
    language, __ = dataset_language(con, dataset)
    # the skill generation's plan takes: its first item's own, else the track's (evalcore.generation.run.prepare)
    skills = dict(con.execute("""
        SELECT i.track, arg_min(coalesce(i.skill, t.skill), i.item_id) FROM items i LEFT JOIN tracks t USING (dataset, track)
        WHERE i.dataset = ? GROUP BY i.track""", [dataset]).fetchall())
    rows = []
    for track in tracks:
        tpl = resolve(template, skills.get(track), language)
        rows.append({"track": track, "template": tpl.name, "sha256": tpl.short_hash, "source": tpl.source,
                     "text": tpl.text})
    return pd.DataFrame(rows, columns=["track", "template", "sha256", "source", "text"])
