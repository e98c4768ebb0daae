"""Correlation statistics: Pearson, Spearman (average ranks) and Kendall tau-b with p-values and
confidence intervals, Williams' test for dependent correlations, and a permutation test.

Results are small typed objects. Degenerate input (n < 3, a constant vector, nothing left after
dropping NaN pairs) gives an undefined result whose `reason` says why; nothing raises and no bare
NaN reaches a caller without that reason.

Everything works on "prepared" vectors (sort order, tie groups, average ranks computed once), so a
matrix of metrics x human dimensions re-uses them, and the bootstrap draws multinomial weights
instead of index arrays: ranks and tie counts of a resample follow from the original sort order in
O(n), without re-sorting. Tie groups count values equal up to float noise as equal (ties.py), so a tie made
by averaging (3 x 17/18 against 2 x 17/18) stays a tie in every statistic here.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from evalcore.analysis.options import METHODS
from evalcore.core import lazy
from evalcore.core.i18n import _
from evalcore.analysis.ties import snap

LEVEL_LIMIT = 256  # a vector with at most this many distinct values takes Kendall's counting path
BATCH_CELLS = 4096  # Pair.weighted_r holds a table of this many cells per resample at most (1,000 resamples: 33 MB)
# past this share of resamples without a value (a constant resample, a pair no one rated twice), a percentile
# interval over the rest would be too narrow: it describes only the resamples where the statistic happens to exist
MAX_UNDEFINED = 0.05
# imported where a p value or Kendall's exact distribution is computed: every page imports this module (through the
# report and the trust table), and scipy.stats took 0.35-1.2 CPU-s of each page server's first run (bench/startup.py)
special = lazy.module("scipy.special")
stats = lazy.module("scipy.stats")


def interval(draws, confidence: float = 0.95) -> tuple[float, float, str]:
    """The percentile interval of bootstrap values and what it left out: (low, high, note). NaN values are
    resamples without a value; they are counted in the note, and past MAX_UNDEFINED of all resamples the interval
    is withheld (NaN, NaN) with the reason."""
    draws = np.asarray(draws, float)
    total = len(draws)
    bad = int(np.isnan(draws).sum())
    if total == 0:
        return math.nan, math.nan, ""
    if bad > MAX_UNDEFINED * total:
        return math.nan, math.nan, (f"interval withheld: {bad:,} of {total:,} resamples ({bad / total:.1%}) had no "
                                    f"value (more than {MAX_UNDEFINED:.0%})")
    alpha = (1 - confidence) / 2
    low, high = (float(v) for v in np.quantile(draws[~np.isnan(draws)], [alpha, 1 - alpha]))
    return low, high, (f"{bad:,} of {total:,} resamples had no value and are left out" if bad else "")


@dataclass(frozen=True)
class Correlation:
    """One correlation: r, two-sided p, n and (when asked for and defined) a confidence interval."""

    method: str
    n: int
    r: float = math.nan
    p: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    ci_method: str = ""
    seed: int | None = None
    reason: str = ""

    @property
    def defined(self) -> bool:
        return not self.reason


@dataclass(frozen=True)
class WilliamsResult:
    """Williams' test that r12 > r13, where variables 2 and 3 both correlate with variable 1."""

    t: float
    p: float  # one-sided
    df: int
    reason: str = ""


@dataclass(frozen=True)
class PermutationResult:
    method: str
    n: int
    r: float
    p: float  # two-sided, (1 + #|r_perm| >= |r|) / (1 + resamples)
    resamples: int
    seed: int
    reason: str = ""


def _undefined(method: str, n: int, reason: str) -> Correlation:
    return Correlation(method, n, reason=reason)


@dataclass
class Prepared:
    """A vector with its tie groups (dense ids in ascending value order), computed once. Values equal up to float
    noise are one group (ties.snap: means of equal values can differ in the last digit), and `values` holds each
    group's one value from then on, so every statistic and resample below sees the same ties."""

    values: np.ndarray
    group: np.ndarray = field(init=False)
    levels: np.ndarray = field(init=False)    # the distinct values, ascending
    n_groups: int = field(init=False)

    def __post_init__(self) -> None:
        self.levels, self.group = np.unique(self.values, return_inverse=True)
        snapped = snap(self.levels)   # neighbours in sorted order decide a tie: the distinct values suffice
        if snapped is not self.levels:
            self.levels, merged = np.unique(snapped, return_inverse=True)
            self.group = merged[self.group]
            self.values = self.levels[self.group]
        self.group = self.group.astype(np.int64)
        self.n_groups = len(self.levels)

    @property
    def constant(self) -> bool:
        return self.n_groups <= 1

    @functools.cached_property
    def counts(self) -> np.ndarray:
        """Elements per tie group."""
        return np.bincount(self.group, minlength=self.n_groups).astype(float)

    @functools.cached_property
    def ranks(self) -> np.ndarray:
        """Average rank of each tie group."""
        return _avg_ranks(self.counts)

    @functools.cached_property
    def tie_sums(self) -> tuple[float, float, float]:
        """(tied pairs, sum c(c-1)(c-2), sum c(c-1)(2c+5)) over tie groups: Kendall's tie terms."""
        c = self.counts
        return (float((c * (c - 1)).sum() / 2), float((c * (c - 1) * (c - 2)).sum()),
                float((c * (c - 1) * (2 * c + 5)).sum()))


def _complete(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    ok = ~(np.isnan(x) | np.isnan(y))
    return x[ok], y[ok]


def _check(method: str, px: Prepared, py: Prepared) -> str:
    n = len(px.values)
    # a page's hover says why in its viewer's language (English elsewhere: _ is the identity there)
    if n == 0:
        return _("no complete pairs")
    if n < 3:
        return _("n = {n} < 3").format(n=n)
    if px.constant and py.constant:
        return _("both vectors are constant")
    if px.constant:
        return _("the metric is constant")
    if py.constant:
        return _("the human scores are constant")
    return ""


class Pair:
    """Two prepared vectors as a contingency table of their tie groups, stored column by column
    (columns: the vector with fewer distinct values). Every statistic, for the sample or a bootstrap
    resample, comes from this table: a resample only re-counts cells."""

    def __init__(self, px: Prepared, py: Prepared):
        self.px, self.py = px, py
        rows, cols = (py, px) if px.n_groups < py.n_groups else (px, py)
        self.rows, self.cols = rows, cols
        self.small = cols.n_groups <= LEVEL_LIMIT
        self.cell = cols.group * rows.n_groups + rows.group if self.small else None
        self._table: np.ndarray | None = None
        self._kendall: tuple[float, float, float, float, float] | None = None

    def table(self, sample: np.ndarray | None = None) -> np.ndarray:
        """(columns, rows) counts; row and column groups ascend by value."""
        if sample is None:
            if self._table is None:
                self._table = self._count(self.cell)
            return self._table
        return self._count(self.cell[sample])

    def kendall_counts(self) -> tuple[float, float, float, float, float]:
        if self._kendall is None:
            n = float(len(self.px.values))
            ties_in_both = float((lambda W: int((W * (W - 1)).sum()) // 2)(self.table()))
            self._kendall = (n * (n - 1) / 2, self.rows.tie_sums[0], self.cols.tie_sums[0], ties_in_both,
                             _discordant(self.table()))
        return self._kendall

    def _count(self, cells: np.ndarray) -> np.ndarray:
        counts = np.bincount(cells, minlength=self.rows.n_groups * self.cols.n_groups)
        return counts.reshape(self.cols.n_groups, self.rows.n_groups)  # exact integer counts

    def r(self, method: str, sample: np.ndarray | None = None) -> float:
        if not self.small:
            return self._r_elementwise(method, sample)
        if method == "kendall":
            return _tau_b(*(self.kendall_counts() if sample is None else _kendall_counts(self.table(sample))))
        W = self.table(sample)
        if sample is None:
            gr, gc = self.rows.counts, self.cols.counts
        else:
            gc = W.sum(axis=1)
            gr = W[0].copy()
            for col in W[1:]:
                gr += col
        if method == "pearson":
            vr, vc = self.rows.levels, self.cols.levels
        elif method == "spearman":
            vr, vc = (self.rows.ranks, self.cols.ranks) if sample is None else (_avg_ranks(gr), _avg_ranks(gc))
        else:
            raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
        total = gc.sum()
        dr = vr - (gr @ vr) / total
        dc = vc - (gc @ vc) / total
        sxx, syy = float(gr @ (dr * dr)), float(gc @ (dc * dc))
        if sxx <= 0 or syy <= 0:
            return math.nan
        sxy = sum(float(d * (col @ dr)) for d, col in zip(dc, W))
        return sxy / math.sqrt(sxx * syy)

    def weighted_r(self, method: str, weights: np.ndarray) -> np.ndarray | None:
        """r of many resamples at once, each given as how many times it draws every element (a row of
        `weights`, resamples x elements): the same statistic as r(method, sample) for the sample those counts
        describe, NaN where correlate() has none (fewer than 3 elements, a constant vector). None when the table
        of tie groups is too large to hold for every resample (then draw one at a time)."""
        if not self.small or self.rows.n_groups * self.cols.n_groups > BATCH_CELLS:
            return None
        cells = self.rows.n_groups * self.cols.n_groups
        onehot = np.zeros((len(self.cell), cells))
        onehot[np.arange(len(self.cell)), self.cell] = 1.0
        W = (np.asarray(weights, float) @ onehot).reshape(len(weights), self.cols.n_groups, self.rows.n_groups)
        gc, gr = W.sum(axis=2), W.sum(axis=1)
        total = gc.sum(axis=1)
        undefined = (total < 3) | ((gc > 0).sum(axis=1) <= 1) | ((gr > 0).sum(axis=1) <= 1)
        if method == "kendall":
            out = _tau_b_many(W, gr, gc, total)
        else:
            if method == "pearson":
                vr = np.broadcast_to(self.rows.levels, gr.shape)
                vc = np.broadcast_to(self.cols.levels, gc.shape)
            elif method == "spearman":
                vr, vc = _avg_ranks_many(gr), _avg_ranks_many(gc)
            else:
                raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
            with np.errstate(invalid="ignore", divide="ignore"):
                dr = vr - ((gr * vr).sum(axis=1) / total)[:, None]
                dc = vc - ((gc * vc).sum(axis=1) / total)[:, None]
                sxx, syy = (gr * dr * dr).sum(axis=1), (gc * dc * dc).sum(axis=1)
                sxy = np.einsum("bc,bcr,br->b", dc, W, dr)
                out = sxy / np.sqrt(sxx * syy)
            out[(sxx <= 0) | (syy <= 0)] = np.nan
        out[undefined] = np.nan
        return out

    def _r_elementwise(self, method: str, sample: np.ndarray | None) -> float:
        """Both vectors have many distinct values: work on elements (weights for a resample)."""
        if method == "kendall":
            if sample is not None:
                raise ValueError(f"bootstrapping Kendall needs one vector with at most {LEVEL_LIMIT} distinct values")
            return float(stats.kendalltau(self.px.values, self.py.values).statistic)
        n = len(self.px.values)
        w = np.ones(n) if sample is None else np.bincount(sample, minlength=n).astype(float)
        if method == "pearson":
            a, b = self.px.values, self.py.values
        else:
            a, b = _element_ranks(self.px, w), _element_ranks(self.py, w)
        total = w.sum()
        a = a - (w @ a) / total
        b = b - (w @ b) / total
        den = math.sqrt(float((w * a) @ a) * float((w * b) @ b))
        return float((w * a) @ b) / den if den > 0 else math.nan


def _avg_ranks(counts: np.ndarray) -> np.ndarray:
    """Average 1-based rank of each tie group, given how many elements each group holds."""
    return np.cumsum(counts) - counts + (counts + 1) / 2


def _avg_ranks_many(counts: np.ndarray) -> np.ndarray:
    """_avg_ranks of every row of `counts` (resamples x tie groups)."""
    return np.cumsum(counts, axis=1) - counts + (counts + 1) / 2


def _tau_b_many(W: np.ndarray, gr: np.ndarray, gc: np.ndarray, total: np.ndarray) -> np.ndarray:
    """_tau_b(*_kendall_counts(table)) of every table of W (resamples x columns x rows)."""
    dis = np.zeros(len(W))
    above = np.zeros((len(W), W.shape[2]))   # per row group: elements in later columns and smaller rows
    for c in range(W.shape[1] - 1, -1, -1):
        col = W[:, c, :]
        dis += (col * above).sum(axis=1)
        above += np.cumsum(col, axis=1) - col
    pairs = lambda c: (c * (c - 1)).sum(axis=tuple(range(1, c.ndim))) / 2  # noqa: E731
    tot, xtie, ytie, ntie = total * (total - 1) / 2, pairs(gr), pairs(gc), pairs(W)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((tot - xtie) * (tot - ytie))
        out = np.clip((tot - xtie - ytie + ntie - 2 * dis) / den, -1.0, 1.0)
    out[~(den > 0)] = np.nan
    return out


def _element_ranks(p: Prepared, w: np.ndarray) -> np.ndarray:
    return _avg_ranks(np.bincount(p.group, weights=w, minlength=p.n_groups))[p.group]


def _discordant(W: np.ndarray) -> float:
    """Discordant pairs in a (columns, rows) table of counts whose groups ascend by value."""
    dis = 0
    above = np.zeros(W.shape[1], dtype=W.dtype)  # per row group: elements in earlier rows and larger columns
    for col in W[::-1]:
        dis += int(col @ above)
        above += np.cumsum(col) - col
    return float(dis)


def _kendall_counts(W: np.ndarray) -> tuple[float, float, float, float, float]:
    """(pairs, tied in rows, tied in columns, tied in both, discordant) from a (columns, rows)
    table of counts whose groups ascend by value."""
    dis = _discordant(W)
    gc = W.sum(axis=1)
    gr = W.sum(axis=0)
    total = gc.sum()
    pairs = lambda c: float(int((c * (c - 1)).sum()) // 2)  # noqa: E731
    return total * (total - 1) / 2, pairs(gr), pairs(gc), pairs(W), dis


def _tau_b(tot: float, xtie: float, ytie: float, ntie: float, dis: float) -> float:
    den = math.sqrt((tot - xtie) * (tot - ytie))
    return min(1.0, max(-1.0, (tot - xtie - ytie + ntie - 2 * dis) / den)) if den > 0 else math.nan


def _t_pvalue(r: float, n: int) -> float:
    """Two-sided p of H0: rho = 0 from Student's t with n - 2 df (scipy's pearsonr and spearmanr)."""
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 2) / ((1.0 - r) * (1.0 + r)))
    return float(2 * special.stdtr(n - 2, -abs(t)))


def _kendall_pvalue(pair: Pair) -> float:
    """scipy.stats.kendalltau's two-sided p (method 'auto'): exact without ties when n <= 33 or
    nearly all pairs agree, else the normal approximation with scipy's tie-corrected variance."""
    px, py = pair.px, pair.py
    n = len(px.values)
    if not pair.small:
        return float(stats.kendalltau(px.values, py.values).pvalue)
    tot, xtie, ytie, ntie, dis = pair.kendall_counts()
    if xtie == 0 and ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        return float(stats.kendalltau(px.values, py.values).pvalue)  # exact distribution
    __, x0, x1 = px.tie_sums
    __, y0, y1 = py.tie_sums
    m = n * (n - 1.0)
    var = (m * (2 * n + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (n - 2))
    z = (tot - xtie - ytie + ntie - 2 * dis) / math.sqrt(var)
    return float(2 * special.ndtr(-abs(z)))


def prepare(values) -> Prepared:
    return Prepared(np.asarray(values, dtype=float))


def correlate_prepared(method: str, px: Prepared, py: Prepared, *, confidence: float = 0.95,
                       bootstrap: int = 0, seed: int | None = None, pair: Pair | None = None) -> Correlation:
    """Correlation of two prepared vectors without NaN (see correlate for the options)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    n = len(px.values)
    reason = _check(method, px, py)
    if reason:
        return _undefined(method, n, reason)
    pair = pair or Pair(px, py)
    r = pair.r(method)
    if math.isnan(r):
        return _undefined(method, n, "undefined for this input")
    p = _kendall_pvalue(pair) if method == "kendall" else _t_pvalue(r, n)
    low = high = math.nan
    ci_method = ""
    if bootstrap:
        if seed is None:
            raise ValueError("a bootstrap needs an explicit seed, recorded with the result")
        rng = np.random.default_rng(seed)
        draws = np.array([pair.r(method, rng.integers(0, n, n)) for __ in range(bootstrap)])
        low, high, left_out = interval(draws, confidence)   # a resample can be constant
        ci_method = f"bootstrap-percentile {confidence:.0%} B={bootstrap} seed={seed}" + (f" ({left_out})" if left_out else "")
    elif method == "pearson" and n > 3 and abs(r) < 1:
        low, high = fisher_interval(r, n, confidence)
        ci_method = f"fisher-z {confidence:.0%}"
    return Correlation(method, n, r, p, low, high, ci_method, seed if bootstrap else None)


def fisher_interval(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a correlation: tanh(atanh(r) -+ q / sqrt(n - 3)). |r| = 1 is kept just
    inside the bounds so the interval stays finite."""
    z = math.atanh(max(-1 + 1e-12, min(1 - 1e-12, r)))
    se = 1 / math.sqrt(n - 3)
    q = float(special.ndtri(1 - (1 - confidence) / 2))
    return math.tanh(z - q * se), math.tanh(z + q * se)


def correlate(x, y, method: str = "pearson", *, confidence: float = 0.95, bootstrap: int = 0,
              seed: int | None = None) -> Correlation:
    """Correlation of x and y after dropping pairs with a NaN.

    Pearson gets a Fisher-z interval; any method gets a bootstrap percentile interval with
    `bootstrap` resamples drawn with `seed` (required, recorded in the result).
    """
    x, y = _complete(x, y)
    return correlate_prepared(method, prepare(x), prepare(y), confidence=confidence,
                              bootstrap=bootstrap, seed=seed)


def williams(r12: float, r13: float, r23: float, n: int) -> WilliamsResult:
    """Williams (1959) test for r12 > r13 with a shared variable 1 (as in Graham & Baldwin 2014)."""
    if n <= 3:
        return WilliamsResult(math.nan, math.nan, n - 3, f"n = {n} <= 3")
    if any(math.isnan(v) for v in (r12, r13, r23)):
        return WilliamsResult(math.nan, math.nan, n - 3, "a correlation is undefined")
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    den = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    if den <= 0:
        return WilliamsResult(math.nan, math.nan, n - 3, "degenerate correlation matrix")
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(den)
    return WilliamsResult(t, float(special.stdtr(n - 3, -t)), n - 3)


def permutation_test(x, y, method: str = "pearson", *, resamples: int = 1000, seed: int) -> PermutationResult:
    """Two-sided permutation p-value for r(x, y): permute y, keep x."""
    x, y = _complete(x, y)
    px, py = prepare(x), prepare(y)
    reason = _check(method, px, py)
    if reason:
        return PermutationResult(method, len(x), math.nan, math.nan, resamples, seed, reason)
    r = Pair(px, py).r(method)
    rng = np.random.default_rng(seed)
    hits = 0
    for __ in range(resamples):
        shuffled = Prepared(py.values[rng.permutation(len(x))])
        hits += abs(Pair(px, shuffled).r(method)) >= abs(r) - 1e-12
    return PermutationResult(method, len(x), r, (1 + hits) / (1 + resamples), resamples, seed)
