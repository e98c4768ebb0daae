"""Per-worker quality in a crowd study (issue 65): who answered with care and who did not.

Every function takes the long frame of a task's answers, one row per unit, annotator and dimension (`unit`,
`annotator`, `dimension`, `value`, `seconds`: from the unit being shown to the answer), as
`evalcore.store.tasks.latest` returns it, and gives one row per annotator (or per annotator and dimension):

- `mace`: MACE, Hovy, Berg-Kirkpatrick, Vaswani & Hovy (NAACL 2013), "Learning Whom to Trust with MACE". Each
  annotator j answers a unit truthfully with probability theta_j (their competence) and otherwise "spams", drawing a
  label from their own distribution xi_j; EM over each unit's latent true label, from random starts, keeping the
  start of highest log-likelihood; by default variational Bayes with a Beta(alpha, beta) prior on theta and a
  Dirichlet prior on xi. The published implementation (github.com/dirkhovy/MACE, MACE.jar) was run on the fixtures in
  tests/analysis/fixtures/mace/ and this one is tested against its output there: the same model, the same
  settings (initial noise 0.5, a uniform prior over labels, Dirichlet(10) on each xi_j, smoothing 0.01 / labels in
  plain EM), the same restart choice; written here from the paper's model as vectorised numpy. Labels are the
  distinct values given per dimension (categories: a 0-2 scale is three labels).
- `gold_agreement`: per annotator, the gold units answered and passed (every answer on the unit's gold dimensions
  inside the unit's [low, high]).
- `leave_one_out`: per annotator and dimension, their agreement with the mean of the others on the units they share
  (Spearman; Krippendorff's interval alpha of the two rows).
- `care`: answers faster than a reading-speed floor, straight-lining, seconds per unit and in all.
- `hourly_pay` / `pay_frame`: the effective hourly pay at the task's stated payment.
- `quality`: all of them, one row per annotator; `reasons`: the sentences why a worker fails a pass rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore.analysis.ties import snap
from evalcore.core import i18n, lazy
from evalcore.core.i18n import _

special = lazy.module("scipy.special")

INIT_NOISE = 0.5        # the reference's DEFAULT_NOISE: each start draws parameters from 1 + 0.5 * U(0, 1), normalised
STRATEGY_PRIOR = 10.0   # the reference's Dirichlet prior on each annotator's spamming distribution, per label
MIN_SHARED = 3          # leave-one-out: fewer shared units than this give no agreement (a reason says so)
# Chinese readers read silently at a few to about ten characters a second (IReST: 255 +/- 29 characters a minute
# read aloud, Trauzettel-Klosinski & Dietz 2012; silent reading is faster, but not several times). 25 characters a
# second is well beyond any reading: an answer faster than that was given without reading the text shown, so it is
# a floor that flags skipping, not an estimate of the time a careful reader needs. For English text (about five
# letters a word) 25 a second is about 300 words a minute, a brisk reading: pass a higher figure there.
CHARS_PER_SECOND = 25.0
MIN_UNITS = 5           # straight-lining is only said of an annotator who answered at least this many units

QUALITY_COLUMNS = ["annotator", "units", "gold_answered", "gold_passed", "gold_share", "loo_spearman", "loo_alpha", "competence",
                   "too_fast_share", "straight_lined", "median_seconds", "total_seconds", "hourly_pay"]


# ---------------------------------------------------------------- MACE
@dataclass(frozen=True)
class MaceResult:
    """MACE's estimates. `competence`: dimension, annotator, competence (the probability of answering truthfully
    rather than spamming; under variational Bayes, as in the reference, the exp-digamma estimate, which is close
    to it), answers. `labels`: dimension, unit, label (the most likely true value), probability (of that label),
    entropy (of the unit's posterior over labels, natural log: 0 when certain). `log_likelihood`: per dimension, the
    best start's."""
    competence: pd.DataFrame
    labels: pd.DataFrame
    log_likelihood: dict[str, float] = field(default_factory=dict)

    def per_annotator(self) -> pd.Series:
        """One competence per annotator: the mean over the dimensions they answered (each dimension one estimate)."""
        if self.competence.empty:
            return pd.Series(dtype=float, name="competence")
        return self.competence.groupby("annotator", sort=True)["competence"].mean().rename("competence")


def _estep(obs_unit, obs_ann, obs_label, n_units, n_labels, spam, theta):
    """Posterior over each unit's true label, the log-likelihood and the expected counts (knowing: annotators x
    [spamming, knowing]; strategy: annotators x labels) under the parameters. spam[a] = (P spamming, P knowing)."""
    s = spam[obs_ann, 0] * theta[obs_ann, obs_label]     # P(this answer | spamming), per observed answer
    k = spam[obs_ann, 1]                                 # P(knowing): the answer is then the true label
    with np.errstate(divide="ignore"):
        log_s, log_sk = np.log(s), np.log(s + k)
    # log P(unit's answers, true label l) = log(1/L) + sum over its answers of log(s + k [l == answer])
    base = np.bincount(obs_unit, weights=log_s, minlength=n_units)
    bump = np.bincount(obs_unit * n_labels + obs_label, weights=log_sk - log_s,
                       minlength=n_units * n_labels).reshape(n_units, n_labels)
    log_joint = -np.log(n_labels) + base[:, None] + bump
    log_z = special.logsumexp(log_joint, axis=1)
    posterior = np.exp(log_joint - log_z[:, None])
    # the answer came from knowing when the true label is the answer and the annotator knew: q(x) k / (s + k)
    knew = posterior[obs_unit, obs_label] * k / (s + k)
    guessed = 1.0 - knew
    n_ann = len(spam)
    knowing = np.stack([np.bincount(obs_ann, weights=guessed, minlength=n_ann),
                        np.bincount(obs_ann, weights=knew, minlength=n_ann)], axis=1)
    strategy = np.bincount(obs_ann * n_labels + obs_label, weights=guessed,
                           minlength=n_ann * n_labels).reshape(n_ann, n_labels)
    return posterior, float(log_z.sum()), knowing, strategy


def _vb_normalise(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The variational M-step: exp(digamma(count + prior) - digamma(row total)) (rows need not sum to 1)."""
    total = (counts + prior).sum(axis=1, keepdims=True)
    return np.exp(special.digamma(counts + prior) - special.digamma(total))


def _em_normalise(counts: np.ndarray, smoothing: float) -> np.ndarray:
    smoothed = counts + smoothing
    total = smoothed.sum(axis=1, keepdims=True)
    return np.divide(smoothed, total, out=np.zeros_like(smoothed), where=total > 0)


def _initial(rng: np.random.Generator, n_ann: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    spam = 1.0 + INIT_NOISE * rng.random((n_ann, 2))
    theta = 1.0 + INIT_NOISE * rng.random((n_ann, n_labels))
    return spam / spam.sum(1, keepdims=True), theta / theta.sum(1, keepdims=True)


def mace_codes(obs_unit, obs_ann, obs_label, n_units: int, n_ann: int, n_labels: int, *, iterations: int = 50,
               restarts: int = 10, alpha: float = 0.5, beta: float = 0.5, variational: bool = True,
               smoothing: float | None = None, seed: int = 0):
    """MACE over coded answers (0-based unit, annotator and label per answer): (competence per annotator, posterior
    units x labels, log-likelihood of the best start). Each start: random parameters, an E-step, then `iterations`
    M- and E-steps; the start whose last E-step has the highest log-likelihood is kept (as the reference does)."""
    obs_unit, obs_ann, obs_label = (np.asarray(x, dtype=np.int64) for x in (obs_unit, obs_ann, obs_label))
    smoothing = 0.01 / n_labels if smoothing is None else smoothing
    rng = np.random.default_rng(seed)
    knowing_prior = np.broadcast_to(np.array([alpha, beta], float), (n_ann, 2))   # alpha: spamming, beta: knowing
    strategy_prior = np.full((n_ann, n_labels), STRATEGY_PRIOR)
    best = (-np.inf, None, None)
    for _start in range(max(1, restarts)):
        spam, theta = _initial(rng, n_ann, n_labels)
        posterior, loglik, knowing, strategy = _estep(obs_unit, obs_ann, obs_label, n_units, n_labels, spam, theta)
        for _step in range(iterations):
            if variational:
                spam, theta = _vb_normalise(knowing, knowing_prior), _vb_normalise(strategy, strategy_prior)
            else:
                spam, theta = _em_normalise(knowing, smoothing), _em_normalise(strategy, smoothing)
            posterior, loglik, knowing, strategy = _estep(obs_unit, obs_ann, obs_label, n_units, n_labels, spam,
                                                          theta)
        if loglik > best[0] or best[1] is None:
            best = (loglik, spam[:, 1].copy(), posterior)
    loglik, competence, posterior = best
    return competence, posterior, loglik


def _entropy(posterior: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(posterior > 0, -posterior * np.log(posterior), 0.0)
    return terms.sum(axis=1)


def mace(frame: pd.DataFrame, *, iterations: int = 50, restarts: int = 10, alpha: float = 0.5, beta: float = 0.5,
         seed: int = 0, smoothing: float | None = None, variational: bool = True) -> MaceResult:
    """MACE per dimension of `frame` (unit, annotator, dimension, value). Variational Bayes with Beta(alpha, beta)
    on each annotator's spamming/knowing (alpha on spamming, beta on knowing, as the reference's --alpha/--beta) by
    default; `variational=False`: plain EM with `smoothing` added to the expected counts (None: 0.01 / labels, the
    reference's default). Each dimension starts from the same seed, so its result does not depend on the others."""
    comp_rows, label_frames, logliks = [], [], {}
    answers = frame.dropna(subset=["value"])
    for dimension, group in answers.groupby("dimension", sort=True):
        values = snap(group["value"].to_numpy(float))   # values equal up to float noise are one label (ties.snap)
        labels, obs_label = np.unique(values, return_inverse=True)
        units, obs_unit = np.unique(group["unit"].to_numpy(), return_inverse=True)
        names, obs_ann = np.unique(group["annotator"].astype(str).to_numpy(), return_inverse=True)
        competence, posterior, loglik = mace_codes(
            obs_unit, obs_ann, obs_label, len(units), len(names), len(labels), iterations=iterations,
            restarts=restarts, alpha=alpha, beta=beta, variational=variational, smoothing=smoothing, seed=seed)
        counts = np.bincount(obs_ann, minlength=len(names))
        comp_rows.append(pd.DataFrame({"dimension": dimension, "annotator": names, "competence": competence,
                                       "answers": counts}))
        best = posterior.argmax(axis=1)
        label_frames.append(pd.DataFrame({"dimension": dimension, "unit": units, "label": labels[best],
                                          "probability": posterior[np.arange(len(units)), best],
                                          "entropy": _entropy(posterior)}))
        logliks[str(dimension)] = loglik
    competence = pd.concat(comp_rows, ignore_index=True) if comp_rows else pd.DataFrame(
        columns=["dimension", "annotator", "competence", "answers"])
    labels = pd.concat(label_frames, ignore_index=True) if label_frames else pd.DataFrame(
        columns=["dimension", "unit", "label", "probability", "entropy"])
    return MaceResult(competence=competence, labels=labels, log_likelihood=logliks)


# ---------------------------------------------------------------- gold units
def gold_agreement(frame: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """Per annotator of `frame`: gold_answered (gold units they answered on at least one gold dimension),
    gold_passed (those where every such answer lies in the unit's [low, high]), gold_share (passed / answered; NaN
    when they answered none). `gold`: unit, dimension, low, high. A gold dimension left unanswered neither passes
    nor fails the unit."""
    annotators = pd.Index(sorted(frame["annotator"].astype(str).unique()), name="annotator")
    keyed = frame.assign(annotator=frame["annotator"].astype(str)).merge(
        gold[["unit", "dimension", "low", "high"]], on=["unit", "dimension"], how="inner")
    keyed = keyed[keyed["value"].notna()]
    keyed = keyed.assign(ok=(keyed["value"] >= keyed["low"]) & (keyed["value"] <= keyed["high"]))
    per_unit = keyed.groupby(["annotator", "unit"])["ok"].all()
    answered = per_unit.groupby(level="annotator").size().reindex(annotators, fill_value=0)
    passed = per_unit.groupby(level="annotator").sum().reindex(annotators, fill_value=0)
    out = pd.DataFrame({"gold_answered": answered.astype(int), "gold_passed": passed.astype(int)})
    out["gold_share"] = out["gold_passed"] / out["gold_answered"].where(out["gold_answered"] > 0)
    return out.reset_index()


# ---------------------------------------------------------------- leave one out
def alpha_interval_pairs(a, b) -> float:
    """Krippendorff's interval alpha of two raters who both rated every unit (a[i], b[i]): the coincidence-matrix
    formula of agreement.krippendorff_alpha in closed form, 1 - (N - 1) sum (a - b)^2 / (N sum (v - mean)^2) over
    the N = 2n values, without the categories x categories matrix (a mean of others has as many categories as units)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    values = np.concatenate([a, b])
    n = len(values)
    spread = ((values - values.mean()) ** 2).sum()
    if n < 2 or spread == 0:
        return float("nan")
    return float(1 - (n - 1) * ((a - b) ** 2).sum() / (n * spread))


def _ranks(values) -> np.ndarray:
    """Average ranks (1-based; ties share their mean rank), as scipy.stats.rankdata's default, after ties.snap (a
    mean of others equal to another up to float noise is a tie)."""
    _distinct, inverse, counts = np.unique(snap(np.asarray(values, float)), return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2)[inverse]


def spearman(a, b) -> float:
    """Spearman's rho as scipy.stats.spearmanr gives it (Pearson's r of average ranks), in numpy: 300 workers by 4
    dimensions are 1,200 of them, and scipy.stats costs a second to import."""
    ra, rb = _ranks(a), _ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra ** 2).sum() * (rb ** 2).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


def leave_one_out(frame: pd.DataFrame) -> pd.DataFrame:
    """Per annotator and dimension: units_shared (units they answered that someone else answered too), spearman
    and alpha (Krippendorff's interval) of their values against the mean of the others' on those units, and reason
    (empty, or why a value is NaN: fewer than MIN_SHARED shared units, or no variation to correlate)."""
    rows = []
    answers = frame.dropna(subset=["value"]).assign(annotator=lambda f: f["annotator"].astype(str))
    for dimension, group in answers.groupby("dimension", sort=True):
        table = group.pivot_table(index="unit", columns="annotator", values="value", aggfunc="mean")
        values = table.to_numpy(float)
        present = ~np.isnan(values)
        total, count = np.nansum(values, axis=1), present.sum(axis=1)
        for j, name in enumerate(table.columns):
            mine = present[:, j] & (count >= 2)
            own = values[mine, j]
            others = (total[mine] - own) / (count[mine] - 1)
            n = int(mine.sum())
            rho = alpha = float("nan")
            reason = ""
            if n < MIN_SHARED:
                reason = _("Fewer than {n} units shared with the others.").format(n=i18n.number(MIN_SHARED))
            elif np.ptp(own) == 0 or np.ptp(others) == 0:
                reason = _("One value throughout: nothing to correlate.")
                alpha = alpha_interval_pairs(own, others)
            else:
                rho = spearman(own, others)
                alpha = alpha_interval_pairs(own, others)
            rows.append({"annotator": name, "dimension": dimension, "units_shared": n, "spearman": rho,
                         "alpha": alpha, "reason": reason})
    return pd.DataFrame(rows, columns=["annotator", "dimension", "units_shared", "spearman", "alpha", "reason"])


# ---------------------------------------------------------------- time and care
def unit_seconds(frame: pd.DataFrame) -> pd.DataFrame:
    """Per annotator and unit: seconds, from the unit being shown to its last answer (the unit's time, as
    tasks.progress counts it); NaN when no answer of the unit was timed."""
    return (frame.assign(annotator=frame["annotator"].astype(str))
            .groupby(["annotator", "unit"], sort=True)["seconds"].max().reset_index())


def care(frame: pd.DataFrame, *, text_chars: pd.Series | None = None, chars_per_second: float = CHARS_PER_SECOND,
         min_units: int = MIN_UNITS) -> pd.DataFrame:
    """Per annotator: units (answered), too_fast_share (the share of their timed answers given sooner than the
    unit's reading floor, `text_chars[unit] / chars_per_second` seconds; NaN without `text_chars` or a timed answer),
    straight_lined (at least `min_units` units answered on some dimension, all with one value: the same answer
    everywhere; the same answer vector on every unit is such a case), median_seconds (per unit) and total_seconds
    (the sum of their units' times)."""
    answers = frame.dropna(subset=["value"]).assign(annotator=lambda f: f["annotator"].astype(str))
    annotators = pd.Index(sorted(answers["annotator"].unique()), name="annotator")
    units = answers.groupby("annotator")["unit"].nunique().reindex(annotators, fill_value=0)
    if text_chars is not None and len(answers):
        floor = answers["unit"].map(pd.Series(text_chars, dtype=float)) / chars_per_second
        timed = answers["seconds"].notna() & floor.notna()
        fast = (answers["seconds"] < floor) & timed
        too_fast = (fast.groupby(answers["annotator"]).sum()
                    / timed.groupby(answers["annotator"]).sum().replace(0, np.nan)).reindex(annotators)
    else:
        too_fast = pd.Series(np.nan, index=annotators)
    per_dim = answers.assign(v=snap(answers["value"].to_numpy(float))).groupby(["annotator", "dimension"]).agg(
        n=("unit", "nunique"), distinct=("v", "nunique"))
    straight = ((per_dim["n"] >= min_units) & (per_dim["distinct"] == 1)).groupby(level="annotator").any()
    times = unit_seconds(answers)
    grouped = times.groupby("annotator")["seconds"]
    out = pd.DataFrame({
        "units": units.astype(int),
        "too_fast_share": too_fast.astype(float),
        "straight_lined": straight.reindex(annotators, fill_value=False).astype(bool),
        "median_seconds": grouped.median().reindex(annotators),
        "total_seconds": grouped.sum(min_count=1).reindex(annotators)})
    return out.reset_index()


# ---------------------------------------------------------------- pay
def hourly_pay(total_seconds: float, pay: float) -> float:
    """The effective pay per hour: `pay` (per worker) over the hours spent; NaN when no time was spent or known."""
    if total_seconds is None or pay is None or not np.isfinite(total_seconds) or total_seconds <= 0:
        return float("nan")
    return float(pay) / (float(total_seconds) / 3600.0)


def pay_frame(seconds: pd.DataFrame, pay) -> pd.DataFrame:
    """Per annotator of `seconds` (annotator, total_seconds): hourly_pay at `pay`, one figure for every worker (the
    task's stated payment) or a Series by annotator (what each was paid)."""
    paid = pay.reindex(seconds["annotator"]).to_numpy(float) if isinstance(pay, pd.Series) \
        else np.full(len(seconds), np.nan if pay is None else float(pay))
    return pd.DataFrame({"annotator": seconds["annotator"].to_numpy(),
                         "hourly_pay": [hourly_pay(t, p) for t, p in zip(seconds["total_seconds"], paid)]})


# ---------------------------------------------------------------- all of it
def quality(frame: pd.DataFrame, *, gold: pd.DataFrame | None = None, text_chars: pd.Series | None = None,
            pay=None, chars_per_second: float = CHARS_PER_SECOND, min_units: int = MIN_UNITS, agreement: bool = True,
            seed: int = 0, restarts: int = 10, iterations: int = 50) -> pd.DataFrame:
    """One row per annotator, QUALITY_COLUMNS: units answered; gold units passed and their share (NaN without
    `gold`); leave-one-out Spearman and alpha (means over dimensions); MACE competence (mean over dimensions); the
    share of answers under the reading floor; straight-lining; median seconds per unit and total seconds; hourly pay at
    `pay` (a number for everyone, or a Series by annotator). Gold units are left out of the leave-one-out agreement
    and of MACE: they measure the workers against a known answer, not against each other. `agreement=False` leaves
    those two out (NaN): every other column of a worker depends on their own answers only, so a pass rule without a
    competence minimum can be judged on one worker's rows at their end, without the whole task's MACE (a second or
    two at 300 workers)."""
    annotators = sorted(frame["annotator"].astype(str).unique())
    out = pd.DataFrame({"annotator": annotators})
    real = frame
    if gold is not None and len(gold):
        real = frame[~frame["unit"].isin(gold["unit"])]
        out = out.merge(gold_agreement(frame, gold)[["annotator", "gold_answered", "gold_passed", "gold_share"]],
                        on="annotator", how="left")
    else:
        out = out.assign(gold_answered=0, gold_passed=0, gold_share=np.nan)
    out["loo_spearman"] = out["loo_alpha"] = out["competence"] = np.nan
    if agreement:
        loo = leave_one_out(real).groupby("annotator")[["spearman", "alpha"]].mean()
        out["loo_spearman"] = out["annotator"].map(loo["spearman"]).astype(float)
        out["loo_alpha"] = out["annotator"].map(loo["alpha"]).astype(float)
        competence = mace(real, seed=seed, restarts=restarts, iterations=iterations).per_annotator()
        out["competence"] = out["annotator"].map(competence).astype(float)
    flags = care(frame, text_chars=text_chars, chars_per_second=chars_per_second, min_units=min_units)
    out = out.merge(flags, on="annotator", how="left")
    out = out.merge(pay_frame(flags, pay), on="annotator", how="left")
    out["units"] = out["units"].fillna(0).astype(int)
    out["straight_lined"] = out["straight_lined"].fillna(False).astype(bool)
    return out[QUALITY_COLUMNS]


def reasons(row, rule: dict) -> list[str]:
    """The sentences why the worker of `row` (a row of `quality`) fails `rule` (gold_min: the least share of gold
    units passed; too_fast_max: the largest share of answers under the reading floor; straight_lining: whether the
    same answer everywhere is allowed; competence_min: the least MACE competence). Empty when they pass; a figure
    that is unknown (NaN) fails nothing."""
    said = []
    share, minimum = row.get("gold_share"), rule.get("gold_min")
    if minimum is not None and _known(share) and share < minimum:
        said.append(_("Passed {passed} of {answered} gold units ({share}); the task asks for at least {minimum}.").format(
            passed=i18n.number(int(row.get("gold_passed", 0))), answered=i18n.number(int(row.get("gold_answered", 0))),
            share=i18n.percent(share), minimum=i18n.percent(minimum)))
    fast, maximum = row.get("too_fast_share"), rule.get("too_fast_max")
    if maximum is not None and _known(fast) and fast > maximum:
        said.append(_("Gave {share} of their answers faster than the text can be read; the task allows at most "
                      "{maximum}.").format(share=i18n.percent(fast), maximum=i18n.percent(maximum)))
    if rule.get("straight_lining") is False and bool(row.get("straight_lined", False)):
        said.append(_("Gave the same answer on every unit of a dimension ({units} units answered).").format(
            units=i18n.number(int(row.get("units", 0)))))
    competence, least = row.get("competence"), rule.get("competence_min")
    if least is not None and _known(competence) and competence < least:
        said.append(_("Their competence estimate (MACE) is {value}, below the task's minimum of {minimum}.").format(
            value=i18n.number(competence, 2), minimum=i18n.number(least, 2)))
    return said


def _known(value) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value)) and not pd.isna(value)
