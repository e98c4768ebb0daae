"""Where a trust view opens when nobody chose a level: the first level (in choices() order) at which some
skill has a verdict, with why the ones before it had none, or, when none has one, what is missing in the
words of someone who rates responses."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from evalcore.analysis.correlate import Models
from evalcore.analysis.trust import ALPHA, POOLED, VERDICT_N, load_tracks, table, units
from evalcore.analysis.trust_levels import choices, missing_words
from evalcore.core.i18n import N_, _, ngettext
from evalcore.store.queries import require_dataset


@dataclass(frozen=True)
class Opening:
    """Where a trust view opens when nobody chose a level: `level` and `origin` (None when no level of the
    dataset has a verdict), and `why`: why the levels before it were passed over ("" when it is the first),
    or, with no level, what is missing."""

    level: str | None
    origin: str | None
    why: str


def opening(con, dataset: str, *, method: str = "spearman", dimension: str = "mean", flavor: str = "default",
            tokenizer: str | None = None, aggregate: str = "mean", models: Models = Models(),
            system_aggregate: str = "corpus", level: str | None = None, origin: str | None = None) -> Opening:
    """The first (level, origin) of choices() (only those at `level` or of `origin` where given) at which some
    skill has a verdict (a pooled correlation: a track with at least VERDICT_N units rated and scored, neither
    side constant) for `method` and `dimension`.
    Used by the Metric trust page and `evalcore trust` alike, so both open on an answer: after a rating task
    of 16 responses of three models, system level has n <= 3 per track and turn level n = 15."""
    require_dataset(con, dataset)
    offered = [(lv, o) for lv, o in choices(con, dataset) if level in (None, lv) and origin in (None, o)]
    if not offered:
        return Opening(None, None, missing_words(con, dataset))
    passed, most = [], {}
    for level, origin in offered:
        loaded = load_tracks(con, dataset, level, origin, flavor, tokenizer, aggregate, models, system_aggregate)
        frame = table(loaded, method, dimension, alpha=ALPHA, adjust="none", ties=False)
        pooled = frame[frame["track"] == POOLED] if len(frame) else frame
        if len(pooled) and pooled["r"].notna().any():
            return Opening(level, origin, _("; ").join(passed))
        cells = frame[frame["track"] != POOLED] if len(frame) else frame
        most[level] = int(cells["n"].max()) if len(cells) else 0
        passed.append(_passed_over(level, origin, cells))
    return Opening(None, None, _("no verdict at any level yet: {passed}").format(passed=_("; ").join(passed))
                   + _advice(most))


def _where(level: str, origin: str) -> str:
    """A level (and its values' origin) as a sentence names it, in a page's language (English for the CLI)."""
    return (_("{level} level (published values)") if origin == "published" else _("{level} level")).format(
        level=_(level))


def _passed_over(level: str, origin: str, cells: pd.DataFrame) -> str:
    """Why a level has no verdict, in units a rater counts: models, dialogues or responses."""
    where = _where(level, origin)
    if cells.empty:
        return _(NO_VALUES[level]).format(where=where, origin=_(origin))
    most = int(cells["n"].max())
    tracks = int((cells.groupby("track")["n"].max() > 0).sum())   # tracks with a rated unit
    if 0 < most < VERDICT_N:
        said = (_("{where} has at most {count} with both ratings and metric values per track (n = {n}; a verdict "
                  "needs {needed})") if tracks > 1 else
                _("{where} has {count} with both ratings and metric values (n = {n}; a verdict needs {needed})"))
        return said.format(where=where, count=units(most, level), n=most, needed=VERDICT_N)
    notes = cells["note"][cells["note"] != ""]
    why = notes.mode().iloc[0] if len(notes) else _("nothing to correlate")
    return (_("{level} level (published values): {why}") if origin == "published" else
            _("{level} level: {why}")).format(level=_(level), why=why)


NO_VALUES = {"system": N_("{where} has no {origin} metric values of rated models"),
             "dialogue": N_("{where} has no {origin} metric values of rated dialogues"),
             "turn": N_("{where} has no {origin} metric values of rated responses")}
# the words above as the catalog holds them (shown through _() in a page's language)
WORDS = (N_("system"), N_("dialogue"), N_("turn"), N_("computed"), N_("published"))


def _advice(most: dict[str, int]) -> str:
    """What to rate next, from the level of single responses where it was tried."""
    if "turn" in most and most["turn"] < VERDICT_N:
        return _(". Rate {count} of one track (a rating task, or an imported ratings file) for a first verdict at "
                 "turn level").format(count=ngettext("{n} more response", "{n} more responses",
                                                     VERDICT_N - most["turn"]).format(n=VERDICT_N - most["turn"]))
    return ""
