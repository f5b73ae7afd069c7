"""The one numpy/NaN -> plain-JSON helper: each caller's spelling of NaN and infinity."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from addressable.core.jsonutil import records, to_jsonable

DOC = {"a": np.float64(1.5), 2: (np.int64(3), math.nan), "c": [math.inf, -math.inf, np.float32(np.nan)], "d": "x"}


def test_to_jsonable_spellings() -> None:
    assert to_jsonable(DOC, nan_as=None, inf_as="inf") == {"a": 1.5, "2": [3, None], "c": ["inf", "-inf", None],
                                                          "d": "x"}
    assert to_jsonable(DOC, nan_as="nan", inf_as="inf")["c"] == ["inf", "-inf", "nan"]
    kept = to_jsonable(DOC)
    assert kept["c"][:2] == [math.inf, -math.inf] and math.isnan(kept["c"][2])
    assert type(kept["a"]) is float and type(kept["2"][0]) is int
    json.dumps(to_jsonable(DOC, nan_as=None, inf_as=None), allow_nan=False)


def test_records() -> None:
    df = pd.DataFrame({"name": ["k", "m"], "t": [0.12345678901234, np.nan], "n": np.array([1, 2], dtype=np.int64)})
    rows = records(df)
    assert rows[0] == {"name": "k", "t": 0.12345678901234, "n": 1} and type(rows[0]["n"]) is int
    assert math.isnan(rows[1]["t"])
    assert records(df, nan_as=None)[1]["t"] is None
    assert records(df, double_precision=10) == [{"name": "k", "t": 0.123456789, "n": 1},
                                                {"name": "m", "t": None, "n": 2}]
