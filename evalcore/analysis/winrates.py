"""Win rates from stored pairwise judgments (the MT-Bench importer fills pairwise_judgments), as FastChat
computes them: wins, losses and ties per judge and model, and the share of games whose two orders disagree."""
from __future__ import annotations

from collections import defaultdict

import duckdb
import pandas as pd


def win_rates(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None,
              judge: str | None = None) -> pd.DataFrame:
    """Per judge model and model: wins, losses and ties over the stored pairwise judgments (all tracks of the
    dataset, or one), win_rate, loss_rate and win_rate_adjusted (a tie counts half a win), as FastChat's
    `show_result.py --mode pairwise-all` computes them (lm-sys/FastChat fastchat/llm_judge/show_result.py,
    display_result_pairwise, read at commit 02d4581b): a game with 'error' in either verdict is left out; a game
    whose first verdict is 'tie', or whose two verdicts disagree, is a tie for both models; otherwise the first
    verdict's model wins. Also `inconsistent`, the model's counted games whose two verdicts disagree (position
    bias: the judge preferred whichever answer it saw first, or second), and `errors`, its games left out.
    FastChat lists only models with a counted game; so does this."""
    rows = con.execute(
        "SELECT judge, model_1, model_2, g1_winner, g2_winner FROM pairwise_judgments "
        "WHERE dataset = ? AND (? IS NULL OR track = ?) AND (? IS NULL OR judge = ?)",
        [dataset, track, track, judge, judge]).fetchall()
    tally: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"win": 0, "loss": 0, "tie": 0, "inconsistent": 0, "errors": 0})
    for judge_model, m1, m2, g1, g2 in rows:
        if g1 == "error" or g2 == "error":
            tally[judge_model, m1]["errors"] += 1
            tally[judge_model, m2]["errors"] += 1
            continue
        if g1 == "tie" or g1 != g2:
            for m in (m1, m2):
                tally[judge_model, m]["tie"] += 1
                tally[judge_model, m]["inconsistent"] += g1 != g2
            continue
        winner, loser = (m1, m2) if g1 == "model_1" else (m2, m1)
        tally[judge_model, winner]["win"] += 1
        tally[judge_model, loser]["loss"] += 1
    columns = ["judge", "model", "win", "loss", "tie", "win_rate", "loss_rate", "win_rate_adjusted",
               "inconsistent", "errors"]
    out = []
    for (judge_model, model), t in tally.items():
        games = t["win"] + t["loss"] + t["tie"]
        if not games:
            continue
        out.append({"judge": judge_model, "model": model, **t, "win_rate": t["win"] / games,
                    "loss_rate": t["loss"] / games, "win_rate_adjusted": (t["win"] + 0.5 * t["tie"]) / games})
    frame = pd.DataFrame(out, columns=columns)
    if frame.empty:
        return frame
    frame = frame.sort_values(["judge", "win_rate_adjusted", "model"], ascending=[True, False, True])
    return frame[columns].reset_index(drop=True)
