"""Plain-JSON copies of results: numpy scalars as Python numbers, NaN and infinity spelled as the caller asks."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd


def to_jsonable(obj: Any, nan_as: Any = math.nan, inf_as: Any = math.inf) -> Any:
    """obj with dict keys as str, tuples as lists and numpy scalars as Python scalars; NaN becomes nan_as and
    +inf becomes inf_as (-inf: "-" + inf_as for a string, -inf_as for a number, else inf_as). The defaults
    keep NaN and infinity as floats; e.g. nan_as=None, inf_as="inf" or nan_as="nan", inf_as="inf"."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, nan_as, inf_as) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v, nan_as, inf_as) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        if math.isnan(obj):
            return nan_as
        if obj > 0:
            return inf_as
        return "-" + inf_as if isinstance(inf_as, str) else (-inf_as if isinstance(inf_as, int | float) else inf_as)
    return obj


def records(df: pd.DataFrame, nan_as: Any = math.nan, inf_as: Any = math.inf,
            double_precision: int | None = None) -> list[dict[str, Any]]:
    """df's rows as plain-JSON dicts (see to_jsonable). With double_precision, pandas' to_json writes them
    instead: floats rounded to that many decimals, NaN and infinity as null."""
    if double_precision is not None:
        return json.loads(df.to_json(orient="records", double_precision=double_precision))
    return to_jsonable(df.to_dict(orient="records"), nan_as, inf_as)
