"""Numbers as the dashboard's pages show them: shares as percents, printf formats fit to a column's
magnitude, floating-point noise as exact zero, values rounded to what their format shows, and numbers and
intervals as text."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd


def percent(v) -> str:
    """A share as the page shows it: one decimal, two below 1% (a 10-item submission is 0.25%)."""
    return "" if pd.isna(v) else f"{v:.2%}" if v < 0.01 else f"{v:.1%}"


NOISE = 1e-12  # floating-point residue (e.g. 5.9e-17 for two equal scores), shown and exported as 0


def sensible_format(values) -> str:
    """A printf-style format for numbers of this magnitude (largest finite |x|): '%.1f' above 100, '%.2f'
    above 1, else '%.4f', so values within -1..1 (scores, correlations and their differences) keep 4 decimals."""
    flat = pd.to_numeric(pd.Series(np.ravel(np.asarray(values, dtype=object))), errors="coerce").astype(float).abs()
    top = flat[np.isfinite(flat)].max()  # NaN when there is no finite number: the finest format
    return "%.1f" if top > 100 else "%.2f" if top > 1 else "%.4f"


def column_formats(frame: pd.DataFrame, columns: list[str]) -> dict[str, str]:
    """sensible_format of each column, in one pass over the frame."""
    if not columns:
        return {}
    flat = frame[columns].apply(pd.to_numeric, errors="coerce").astype(float).abs()
    top = flat.where(np.isfinite(flat)).max()
    return {c: "%.1f" if top[c] > 100 else "%.2f" if top[c] > 1 else "%.4f" for c in columns}


def clean_noise(frame: pd.DataFrame, tol: float = NOISE) -> pd.DataFrame:
    """A copy with every float whose magnitude is below `tol` (floating-point noise) set to exactly 0."""
    out = frame.copy()
    for col in out.select_dtypes("floating").columns:
        out[col] = out[col].mask(out[col].abs() < tol, 0.0)
    return out


def round_to_format(frame: pd.DataFrame, formats: dict[str, str]) -> pd.DataFrame:
    """A copy with each column of `formats` ('%.Nf') rounded to its N decimals, negative zero made 0,
    so a value shown as zero is 0 (never '-0.0000')."""
    out = frame.copy()
    for col, spec in formats.items():
        digits = re.fullmatch(r"%\.(\d+)f", spec)
        if col in out and digits and pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].round(int(digits.group(1))) + 0.0
    return out


def as_text(values: pd.Series, spec: str, missing: str = "") -> pd.Series:
    """Numbers as text for labels and hovers; NaN as `missing` (text even when there are none: an empty column
    of a skill with no verdict)."""
    return values.map(lambda v: missing if pd.isna(v) else format(v, spec)).astype(object)


def ci_text(low: pd.Series, high: pd.Series, spec: str, missing: str = "") -> np.ndarray:
    """Intervals as "[low, high]" for hovers and tables; `missing` where there is none."""
    return np.where(low.isna(), missing, "[" + as_text(low, spec) + ", " + as_text(high, spec) + "]")
