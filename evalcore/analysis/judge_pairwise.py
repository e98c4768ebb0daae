"""A pairwise judge, per track: position consistency, first-position preference, length preference beside
people's, and agreement with people's votes on the same pairs."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.judge_values import PAIRWISE, asked, judge_values, tracks
from evalcore.core.i18n import _
from evalcore.metrics.base import Signature

PAIRWISE_COLUMNS = ["track", "skill", "judge", "asked", "signature", "pairs", "consistency", "p_first", "decided",
                    "p_longer_judge", "p_longer_people", "people_pairs", "agreement_with_ties",
                    "agreement_without_ties", "note"]


def text_length(texts: pd.Series, language: str | None) -> pd.Series:
    """Characters for Chinese (and any language not English), words for English."""
    if (language or "").lower().startswith("en"):
        return texts.fillna("").str.split().str.len()
    return texts.fillna("").str.len()


def _language(con, dataset: str) -> str | None:
    row = con.execute("SELECT language FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    return row[0][0] if row else None


def verdicts(con: duckdb.DuckDBPyConnection, dataset: str, track: str, judge: str | None = None) -> pd.DataFrame:
    """Every pairwise verdict of a judge on a track: judge, signature, item_id, model_1, model_2, first and
    second (the verdict with model_1's answer shown first, then second: 1 = model_1 won, 0 = model_2, 0.5 tie),
    text_1, text_2. From the Judge-Pairwise metric (model_1 = the baseline) and from imported judgments."""
    columns = ["judge", "signature", "item_id", "model_1", "model_2", "first", "second"]
    frames = []
    values = judge_values(con, dataset, track, judge)
    pw = values[values["judge"] == PAIRWISE]
    for sig, part in pw.groupby("signature"):
        baseline = Signature.parse(sig).field("baseline")
        baseline = baseline.split("|")[0] if baseline else None
        stats = np.stack(part["stats"].to_numpy())
        # stats: [value, score of the test answer shown first, score of it shown second]; model_1 = the baseline
        frames.append(pd.DataFrame({"judge": part["judge"].to_numpy(), "signature": sig,
                                    "item_id": part["item_id"].to_numpy(), "model_1": baseline,
                                    "model_2": part["model"].to_numpy(),
                                    "first": 1 - stats[:, 2], "second": 1 - stats[:, 1]}))
    winner = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}
    imported = con.execute("""
        SELECT judge || ' (' || prompt || ')' AS judge, prompt AS signature, item_id, model_1, model_2,
               g1_winner, g2_winner FROM pairwise_judgments
        WHERE dataset = ? AND track = ? AND source = 'judge' AND g1_winner <> 'error' AND g2_winner <> 'error'
    """, [dataset, track]).df()
    if judge is not None:
        imported = imported[(imported["judge"] == judge) | (imported["signature"] == judge)]
    if len(imported):
        frames.append(imported.assign(first=imported["g1_winner"].map(winner),
                                      second=imported["g2_winner"].map(winner))[columns])
    out = pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    texts = con.execute("SELECT r.item_id, r.model, r.text FROM responses r JOIN items i USING (dataset, item_id) "
                        "WHERE r.dataset = ? AND i.track = ?", [dataset, track]).df()
    texts = texts.set_index(["item_id", "model"])["text"]
    out["text_1"] = [texts.get((i, m)) for i, m in zip(out["item_id"], out["model_1"])]
    out["text_2"] = [texts.get((i, m)) for i, m in zip(out["item_id"], out["model_2"])]
    return out


def people_votes(con, dataset: str, track: str) -> pd.DataFrame:
    """People's votes: item_id, model_1, model_2, voter, score (1 = model_1 won, 0 = model_2, 0.5 tie)."""
    frame = con.execute("""
        SELECT item_id, model_1, model_2, judge AS voter, g1_winner FROM pairwise_judgments
        WHERE dataset = ? AND track = ? AND source = 'human' AND g1_winner <> 'error'""", [dataset, track]).df()
    return frame.assign(score=frame["g1_winner"].map({"model_1": 1.0, "model_2": 0.0, "tie": 0.5}))


def _oriented(votes: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """People's votes on the judge's pairs, scored from the judge pair's model_1 side."""
    fwd = votes.merge(pairs[["item_id", "model_1", "model_2"]], on=["item_id", "model_1", "model_2"])
    rev = votes.rename(columns={"model_1": "model_2", "model_2": "model_1"}).merge(
        pairs[["item_id", "model_1", "model_2"]], on=["item_id", "model_1", "model_2"])
    rev["score"] = 1 - rev["score"]
    return pd.concat([fwd, rev], ignore_index=True)


def p_longer(score: pd.Series, len_1: pd.Series, len_2: pd.Series) -> tuple[float, int]:
    """Among decided preferences (score 1: side 1 preferred, 0: side 2) between answers of different length,
    the share where the longer answer was preferred; and how many such preferences there were."""
    mask = (score != 0.5) & score.notna() & (len_1 != len_2)
    if not mask.any():
        return np.nan, 0
    longer_first = (len_1 > len_2)[mask]
    chose_first = (score > 0.5)[mask]
    return float((longer_first == chose_first).mean()), int(mask.sum())


def pairwise(con: duckdb.DuckDBPyConnection, dataset: str, *, judge: str | None = None) -> pd.DataFrame:
    """PAIRWISE_COLUMNS: position consistency, first-position preference, length preference (judge and people),
    agreement with people's votes, per judge signature and track."""
    rows = []
    language = _language(con, dataset)
    for track, skill in tracks(con, dataset):
        found = verdicts(con, dataset, track, judge)
        if found.empty:
            continue
        votes = people_votes(con, dataset, track)
        for (name, sig), part in found.groupby(["judge", "signature"], sort=True):
            part = part.reset_index(drop=True)
            consistent = part["first"] == part["second"]
            # a single-order verdict chose the answer shown first: model_1 in the first order, model_2 in the second
            chose_first = np.r_[(part["first"] == 1.0).to_numpy(), (part["second"] == 0.0).to_numpy()]
            decided_any = np.r_[(part["first"] != 0.5).to_numpy(), (part["second"] != 0.5).to_numpy()]
            value = (part["first"] + part["second"]) / 2   # a flipped verdict averages to a tie
            len_1, len_2 = text_length(part["text_1"], language), text_length(part["text_2"], language)
            pl_judge, decided = p_longer(value, len_1, len_2)
            theirs = _oriented(votes, part)
            note = []
            pl_people, people_pairs, agree, agree_decided = np.nan, 0, np.nan, np.nan
            if len(theirs):
                lengths = part.set_index(["item_id", "model_1", "model_2"])
                key = list(zip(theirs["item_id"], theirs["model_1"], theirs["model_2"]))
                t1 = text_length(pd.Series([lengths["text_1"].get(k) for k in key]), language)
                t2 = text_length(pd.Series([lengths["text_2"].get(k) for k in key]), language)
                pl_people, __ = p_longer(theirs["score"].reset_index(drop=True), t1, t2)
                verdict = pd.Series(value.to_numpy(), index=pd.MultiIndex.from_frame(part[["item_id", "model_1", "model_2"]]))
                verdict = verdict[~verdict.index.duplicated()]
                judged = np.array([verdict.get(k, np.nan) for k in key])
                people_pairs = len(set(key))
                same = judged == theirs["score"].to_numpy()
                agree = float(same.mean())
                no_tie = (judged != 0.5) & (theirs["score"].to_numpy() != 0.5)
                agree_decided = float(same[no_tie].mean()) if no_tie.any() else np.nan
            else:
                note.append(_("no people's votes on these pairs"))   # a page's language; the CLI's English
            rows.append({"track": track, "skill": skill, "judge": name, "asked": asked(sig), "signature": sig,
                         "pairs": len(part),
                         "consistency": float(consistent.mean()),
                         "p_first": float(chose_first[decided_any].mean()) if decided_any.any() else np.nan,
                         "decided": decided, "p_longer_judge": pl_judge, "p_longer_people": pl_people,
                         "people_pairs": people_pairs, "agreement_with_ties": agree,
                         "agreement_without_ties": agree_decided,
                         "note": _("; ").join(note + ([] if decided else
                                                      [_("the judge decided no pair of unequal length")]))})
    return pd.DataFrame(rows, columns=PAIRWISE_COLUMNS)
