"""Where a data page opens when its link names no dataset or track: a place where it has something to show.

Each page has its list of the (dataset, track) pairs where it shows something, best first, made from the store by a
view: the Leaderboard's tracks with a row its board shows (boards.board_tracks), Compare's tracks where two models
answered the same items (compared_tracks, here), the Drill-down's tracks with rated responses
(responses.rated_response_tracks), Human evaluation's tracks rated by several annotators (ratings.multi_rated_tracks),
Correlations' datasets with ratings and values to correlate (trust_tables.trust_choices). `opening` is the one rule
every page applies to its list. Opening on the first dataset by name instead showed an empty board and "0 items both
answered" once a chat task's dataset (chat-1-demo-zh) sorted first."""
from __future__ import annotations

from collections.abc import Collection, Sequence

import duckdb

from evalcore.pagedata import catalog
from evalcore.pagedata.scope import dataset_scoped, per_dataset

Place = tuple[str, "str | None"]   # (dataset, track); track None: the dataset's first track


def opening(shows: Sequence[Place], datasets: Sequence[str], *, named: str | None = None,
            last: Place | None = None, busy: Collection[str] = ()) -> Place | tuple[None, None]:
    """The (dataset, track) a page opens on. `shows`: where it has something to show, best first; `named`: the
    dataset its link names (a link always wins: its own dataset, on the first track there that shows something);
    `last`: where this person's last page was (a page opened from the navigation stays there when it has something
    to show there: the Leaderboard after an upload opens on the uploaded model's track); `busy`: datasets still being
    built. Nothing to show anywhere: the first dataset not busy, on its first track."""
    if named is not None and named in datasets:
        return next((p for p in shows if p[0] == named), (named, None))
    if last is not None and last[0] not in busy and tuple(last) in {tuple(p) for p in shows}:
        return last[0], last[1]
    found = next((p for p in shows if p[0] in datasets and p[0] not in busy), None)
    if found is not None:
        return found[0], found[1]
    return next((d for d in datasets if d not in busy), datasets[0] if datasets else None), None


@dataset_scoped
def compared_part(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The dataset's tracks where two models answered at least one item both, in name order."""
    return [t for (t,) in con.execute("""
        SELECT DISTINCT i.track FROM items i
        WHERE i.dataset = ? AND EXISTS (
            SELECT 1 FROM responses r WHERE r.dataset = i.dataset AND r.item_id = i.item_id
            HAVING count(DISTINCT r.model) >= 2)
        ORDER BY 1""", [dataset]).fetchall()]


def compared_pair(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[str]:
    """The two models of the track that answered the most items both (ties: by name), where Compare opens when
    its link names none: the track's first two by name may share no item ("0 items both answered"). Empty when
    no two models share an item."""
    row = con.execute("""
        SELECT a.model, b.model FROM responses a
        JOIN responses b ON b.dataset = a.dataset AND b.item_id = a.item_id AND b.model > a.model
        JOIN items i ON i.dataset = a.dataset AND i.item_id = a.item_id
        WHERE a.dataset = ? AND i.track = ?
        GROUP BY 1, 2 ORDER BY count(DISTINCT a.item_id) DESC, 1, 2 LIMIT 1""", [dataset, track]).fetchone()
    return list(row) if row else []


def merge_places(parts: dict[str, list[str]]) -> list[Place]:
    """Each dataset's tracks as (dataset, track) pairs, in dataset order."""
    return [(d, t) for d in sorted(parts) for t in parts[d]]


@per_dataset(compared_part, merge_places)
def compared_tracks(con: duckdb.DuckDBPyConnection) -> list[Place]:
    """(dataset, track) pairs where two models answered the same items: where Compare has something to compare
    (a chat task's dataset has none: each conversation's replies are one endpoint's)."""
    return merge_places({d: compared_part(con, d) for d in catalog.datasets(con)})
