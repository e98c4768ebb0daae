"""AlpacaEval's length-controlled win rate of each model against a pairwise judge's baseline."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.judge_pairwise import verdicts
from evalcore.analysis.judge_values import asked, tracks
from evalcore.core.i18n import _

LC_COLUMNS = ["track", "judge", "asked", "signature", "model", "baseline", "n", "win_rate", "lc_win_rate",
              "length_weight", "note"]
SEPARATED = 10.0   # |w_len| beyond this: the verdicts are (nearly) separable by length (a logit change of 10 per unit)


def lc_winrate(preference, len_model, len_baseline, *, n_splits: int = 5) -> dict:
    """AlpacaEval's length-controlled win rate, its `length_controlled_minimal` GLM, term by term:
    - preference p in [0, 1] that the model's answer beats the baseline's (1 win, 0.5 tie, 0 loss);
    - x = tanh(d / sd(d)), d = len(baseline's answer) - len(model's answer) in characters, sd with ddof 1;
    - logit P(model wins) = w_len * x + w_0 (a constant column, AlpacaEval's not_gamed_baseline; no
      intercept besides it), fitted by L1-penalised logistic regression (liblinear, random_state 123) on
      the soft labels (each pair twice, labelled 1 with weight p and 0 with weight 1 - p), the penalty
      chosen by 5-fold grouped cross-validation (the two copies of a pair in one fold) on the log loss;
    - the LC win rate is the prediction at zero length difference, 100 * logistic(w_0).
    Returns win_rate (100 * mean p), lc_win_rate, length_weight (w_len: < 0, the judge favours the longer
    answer; > 0, the shorter), n, and a note where the number cannot be read as it stands."""
    p = np.asarray(preference, float)
    delta = np.asarray(len_baseline, float) - np.asarray(len_model, float)
    n = len(p)
    out = {"n": n, "win_rate": float(p.mean() * 100) if n else np.nan, "lc_win_rate": np.nan, "length_weight": np.nan,
           "note": ""}
    sd = np.std(delta, ddof=1) if n > 1 else 0.0
    if n < 2 * n_splits or not sd:
        # a page's language (English for the CLI and the tests' AlpacaEval comparison)
        out["note"] = (_("{n} pairs: the cross-validation needs {needed}").format(n=n, needed=2 * n_splits)
                       if n < 2 * n_splits else
                       _("every pair's answers differ in length by the same amount: nothing to control for"))
        return out
    x = np.tanh(delta / sd)
    design = pd.DataFrame({"np.tanh(std_delta_len)": np.r_[x, x], "not_gamed_baseline.astype(float)": 1.0})
    prob = np.r_[p, 1 - p]
    y = np.r_[np.ones(n), np.zeros(n)].astype(int)
    groups = np.r_[np.arange(n), np.arange(n)]

    def loss(y_true, y_pred, true_prob):
        target = np.where(y_true == 1, true_prob, 1 - true_prob)
        pred = np.clip(y_pred, 1e-15, 1 - 1e-15)
        return -np.mean(target * np.log(pred) + (1 - target) * np.log(1 - pred))

    # imported here: scikit-learn takes ~0.7 s to import, on the first run of every page that imports this module
    from sklearn import config_context
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GroupKFold

    with config_context(enable_metadata_routing=True):
        scorer = make_scorer(loss, response_method="predict_proba", greater_is_better=False
                             ).set_score_request(true_prob=True)
        model = LogisticRegressionCV(cv=GroupKFold(n_splits=n_splits), scoring=scorer, random_state=123, dual=False,
                                     penalty="l1", solver="liblinear", n_jobs=None, fit_intercept=False)
        model.set_fit_request(sample_weight=True)
        model.fit(design, y, sample_weight=prob, groups=groups, true_prob=prob)
    w_len, w_0 = model.coef_[0]
    out.update(lc_win_rate=float(100 / (1 + np.exp(-w_0))), length_weight=float(w_len))
    if abs(w_len) > SEPARATED:
        out["note"] = _("length alone (nearly) decides the verdicts (|w_len| = {w}): the rate at zero length "
                        "difference is an extrapolation, not a measurement").format(w=f"{abs(w_len):.0f}")
    return out


def length_controlled(con: duckdb.DuckDBPyConnection, dataset: str, *, judge: str | None = None) -> pd.DataFrame:
    """LC_COLUMNS: per pairwise judge against its baseline, each model's raw and length-controlled win rate."""
    rows = []
    for track, __ in tracks(con, dataset):
        found = verdicts(con, dataset, track, judge)
        found = found[found["model_1"].notna()]
        for (name, sig, base, model), part in found.groupby(["judge", "signature", "model_1", "model_2"], sort=True):
            pref = 1 - (part["first"] + part["second"]) / 2      # the model's (model_2's) side
            out = lc_winrate(pref, part["text_2"].fillna("").str.len(), part["text_1"].fillna("").str.len())
            rows.append({"track": track, "judge": name, "asked": asked(sig), "signature": sig, "model": model,
                         "baseline": base, "n": out["n"], "win_rate": out["win_rate"], "lc_win_rate": out["lc_win_rate"],
                         "length_weight": out["length_weight"], "note": out["note"]})
    return pd.DataFrame(rows, columns=LC_COLUMNS)
