"""Distinct names: a names column as codes into its distinct strings, hashed.

A trace has millions of rows and a few thousand distinct kernel and call names, some of them thousands of characters
long; a test run once per distinct name is cheap, while numpy's fixed-width strings (`astype(str)`, `np.unique`)
would copy every row at the longest name's width.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def distinct(values: Any, missing: str | None = "") -> tuple[np.ndarray, list[str]]:
    """(codes, names): each value's index into `names`, its distinct strings in order of first appearance. A
    missing value (None, NaN) is the name `missing`, or code -1 where `missing` is None. A categorical Series
    keeps its categories' codes (the unused ones dropped), without materialising a string per row."""
    s = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.cat.remove_unused_categories()
        codes, names = s.cat.codes.to_numpy(), [str(c) for c in s.cat.categories]
    else:
        codes, uniques = pd.factorize(s.astype("string"), sort=False)
        names = [str(u) for u in uniques]
    if missing is not None and (codes < 0).any():
        codes = np.where(codes < 0, len(names), codes)
        names.append(missing)
    return np.asarray(codes, dtype=np.intp), names
