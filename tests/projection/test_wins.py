"""Wins files (addressable/projection/wins.py): what verify-batch writes (write_wins) is what project reads (load_wins)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from addressable.projection.wins import load_wins, write_wins
from addressable.verification.runner import WINS_COLUMNS


def test_write_wins_keeps_a_wins_columns_and_reads_back(tmp_path: Path) -> None:
    rows = pd.DataFrame([{"problem": "23_Softmax", "target": "softmax", "speedup": 2.5, "verified": True,
                          "source": "triton", "notes": "", "speedup_lo": 2.25, "speedup_hi": 2.75, "verdict": "pass"}])
    path = write_wins(tmp_path / "wins.csv", rows)
    assert path.read_text().splitlines()[0] == ",".join(WINS_COLUMNS)
    back = load_wins(path)
    assert back[["target", "speedup", "speedup_lo", "speedup_hi", "verified", "source"]].to_dict(orient="records") \
        == [{"target": "softmax", "speedup": 2.5, "speedup_lo": 2.25, "speedup_hi": 2.75, "verified": True,
             "source": "triton"}]
    assert back.attrs["warnings"] == []  # no column project does not know


def test_cpu_us_after_is_optional_and_checked(tmp_path: Path) -> None:
    import math

    import pytest

    from addressable.core.errors import AddressableError

    path = tmp_path / "wins.csv"
    path.write_text("target,speedup,cpu_us_after\nmodule:A,2,12.5\nmodule:B,3,\n")
    t = load_wins(path)
    assert t["cpu_us_after"].iloc[0] == 12.5 and math.isnan(t["cpu_us_after"].iloc[1])
    assert t.attrs["warnings"] == []  # a known column
    for bad, words in (("-1", ">= 0"), ("fast", "not a number"), ("inf", ">= 0")):
        path.write_text(f"target,speedup,cpu_us_after\nmodule:A,2,{bad}\n")
        with pytest.raises(AddressableError, match=f"row 1: cpu_us_after.*{words}|cpu_us_after '{bad}' is {words}"):
            load_wins(path)


def test_cpu_ratio_after_is_optional_and_checked(tmp_path: Path) -> None:
    import math

    import pytest

    from addressable.core.errors import AddressableError

    path = tmp_path / "wins.csv"
    path.write_text("target,speedup,cpu_ratio_after,backward_cpu_ratio_after\nmodule:A,2,0.4,\nmodule:B,3,,0.7\n")
    t = load_wins(path)
    assert t["cpu_ratio_after"].iloc[0] == 0.4 and math.isnan(t["cpu_ratio_after"].iloc[1])
    assert t["backward_cpu_ratio_after"].iloc[1] == 0.7 and t.attrs["warnings"] == []
    for bad, words in (("-1", ">= 0"), ("fast", "not a number"), ("inf", ">= 0")):
        path.write_text(f"target,speedup,cpu_ratio_after\nmodule:A,2,{bad}\n")
        with pytest.raises(AddressableError, match=f"row 1: cpu_ratio_after.*{words}|cpu_ratio_after '{bad}' is {words}"):
            load_wins(path)


def test_output_dtype_is_optional_and_a_floating_dtype(tmp_path: Path) -> None:
    import pytest

    from addressable.core.errors import AddressableError

    path = tmp_path / "wins.csv"
    path.write_text("target,speedup,output_dtype\nmodule:A,2,bfloat16\nmodule:B,3,\nmodule:C,2, torch.Float16\n")
    t = load_wins(path)
    assert t["output_dtype"].tolist() == ["bfloat16", "", "float16"] and t.attrs["warnings"] == []
    for bad in ("int8", "half-ish", "1"):
        path.write_text(f"target,speedup,output_dtype\nmodule:A,2,{bad}\n")
        with pytest.raises(AddressableError, match=f"row 1: output_dtype '{bad}' is not a floating dtype"):
            load_wins(path)
