"""An audit of LLM judges against the lab's own people, per skill and human dimension.

Judges are the computed metrics of the judge family (G-Eval rubrics, MT-Bench single, MT-Bench pairwise
against a baseline), one per signature (judge model, server, temperature, prompt), and the pairwise
judgments a store holds with source 'judge' (MT-Bench's imported verdicts).

- agreement(): a rating judge against people, per track, human dimension and level (turn: ratings of responses;
  dialogue: ratings of whole dialogues, the judge's value for a dialogue the mean of its turns'):
  * Spearman and Kendall with the mean of the annotators, at turn and system level (bootstrap CIs);
  * the same question put fairly to people: for each annotator a, the correlation of a's scores with the
    mean of the *other* annotators on the same responses, and the judge's with that same leave-a-out mean;
    each averaged over annotators ('human ceiling' vs 'judge, leave-one-out'), as FastChat compares
    judge-human with human-human agreement. A judge at or above the ceiling agrees with people as well as
    people agree with each other;
  * quadratic-weighted Cohen's kappa of the judge's values rounded to the human scale against each
    annotator, beside the mean kappa between annotators (only when judge and people share a scale).
- pairwise(): a pairwise judge, per track:
  * position consistency: the share of pairs whose verdict survives swapping the two answers (both
    orders are asked; a verdict that flips counts as a tie in the judge's value, stated);
  * P(first): the share of single-order verdicts that chose the answer shown first (0.5 = none);
  * P(longer): among pairs the judge decided (not a tie) whose answers differ in length, the share where
    it preferred the longer answer; the same for people's votes on the same pairs (length in characters
    for Chinese, words for English);
  * agreement with people's votes on the same pairs, with and without ties.
- length_controlled(): AlpacaEval's length-controlled win rate of each model against the pairwise
  judge's baseline (see lc_winrate).
- drift(): two signatures of one judge over the same responses: their turn-level Spearman, and Kendall's
  tau between the leaderboards (models by mean value) they induce, with a bootstrap CI over items.
- uncertainty(): a judge sampled k times (`--judge-sample`) or several judges: each model's mean, the judge's
  spread per response, and rank intervals with and without the judge's own variance.

Each part is computed in its own module (judge_agreement, judge_pairwise, judge_length_control,
judge_stability, over what judge_values reads from the store); this one picks a part by its name
(audit_part) and says why a part is empty (nothing_to_audit).
"""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.analysis.judge_agreement import agreement, headline
from evalcore.analysis.judge_length_control import lc_winrate, length_controlled
from evalcore.analysis.judge_pairwise import pairwise
from evalcore.analysis.judge_stability import drift, uncertainty
from evalcore.analysis.judge_values import judge_names
from evalcore.core.i18n import _

# the audit's parts under one name (lc_winrate: the fit length_controlled makes per model)
__all__ = ["agreement", "audit_part", "drift", "headline", "lc_winrate", "length_controlled", "nothing_to_audit",
           "pairwise", "uncertainty"]


def audit_part(con: duckdb.DuckDBPyConnection, dataset: str, name: str, *, judge: str | None = None,
         across: str = "samples", bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One table of the audit by its name (JUDGE_AUDIT_PARTS): what `judge-audit --part` and the page show."""
    if name in ("agreement", "headline"):
        table = agreement(con, dataset, judge=judge, bootstrap=bootstrap, seed=seed)
        return headline(table) if name == "headline" else table
    if name == "pairwise":
        return pairwise(con, dataset, judge=judge)
    if name == "length-controlled":
        return length_controlled(con, dataset, judge=judge)
    if name == "uncertainty":
        return uncertainty(con, dataset, across=across, bootstrap=bootstrap, seed=seed)
    return drift(con, dataset, bootstrap=bootstrap, seed=seed)


def nothing_to_audit(con: duckdb.DuckDBPyConnection, dataset: str, part: str) -> str:
    """Why a part of the audit is empty, in one sentence saying what to do."""
    judged = con.execute("SELECT count(*) FROM metric_signatures WHERE list_contains(?, metric)",
                         [judge_names(con)]).fetchall()[0][0]
    imported = con.execute("SELECT count(*) FROM pairwise_judgments WHERE dataset = ? AND source = 'judge'",
                           [dataset]).fetchall()[0][0]
    rated = con.execute("SELECT count(*) FROM human_ratings WHERE dataset = ? AND target IN ('response', 'dialogue')",
                        [dataset]).fetchall()[0][0]
    # in the viewer's language on a page (English for the CLI: _ is the identity there)
    if not judged and not imported:
        return _("no LLM judge has scored {dataset}: run `evalcore score --metrics judge --judge-base-url URL "
                 "--judge-model NAME` (or import MT-Bench judgments) first").format(dataset=repr(dataset))
    if part in ("agreement", "headline") and not rated:
        return _("{dataset} has no human ratings of responses or dialogues to audit a rating judge against").format(
            dataset=repr(dataset))
    if part == "drift":
        return _("drift needs one judge scored under two signatures (another judge model, prompt or temperature)")
    if part == "uncertainty":
        return _("the judge's spread needs it asked k times: score with --judge-temperature 0.7 and --judge-sample 1, "
                 "then 2, ... (or, with --across judges, two judge models)")
    if part in ("pairwise", "length-controlled"):
        return _("no pairwise judge (Judge-Pairwise with --judge-baseline, or imported judgments) on {dataset}").format(
            dataset=repr(dataset))
    return _("no rating judge on {dataset} has values for responses people rated").format(dataset=repr(dataset))
