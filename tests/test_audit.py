"""audit: which problems an all-zeros or constant output passes under allclose(atol, rtol)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.audit import audit, audit_to_dict
from addressable.cli import main
from addressable.errors import AddressableError

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "examples" / "problems"
ZOO = Path(__file__).resolve().parent / "verify_zoo"
# Realistic widths (393,216-wide softmax rows, million-wide L2 rows), reduced batch and token counts.
SMALL = {"batch_size": 1, "tokens": 4}


def _copy(names: list[str], to: Path) -> Path:
    to.mkdir()
    for n in names:
        (to / n).write_text((PROBLEMS / n).read_text())
    return to


@pytest.fixture(scope="module")
def examples_audit():
    return audit(PROBLEMS, overrides=SMALL).set_index("problem")


def test_long_softmax_rows_accept_all_zeros(examples_audit) -> None:
    row = examples_audit.loc["01_softmax_long_rows"]
    assert row["output_shape"] == [1, 393216]
    assert row["max_abs_ref"] < 1e-5 and row["mean_abs_ref"] == pytest.approx(1 / 393216, rel=0.01)
    assert row["zeros_pass"] and row["const_pass"] and row["vulnerable"]


def test_which_examples_are_vulnerable(examples_audit) -> None:
    assert examples_audit["error"].eq("").all()
    vulnerable = set(examples_audit.index[examples_audit["vulnerable"].astype(bool)])
    assert vulnerable == {"01_softmax_long_rows", "04_frobenius_norm", "06_l2_normalize_rows"}
    frob = examples_audit.loc["04_frobenius_norm"]
    assert frob["fro_ref"] == pytest.approx(1.0, rel=1e-3) and frob["zeros_pass"]
    assert not examples_audit.loc["02_rmsnorm", "zeros_pass"] and examples_audit.loc["02_rmsnorm", "max_abs_ref"] > 1


def test_tolerances_move_the_line(tmp_path: Path) -> None:
    folder = _copy(["01_softmax_long_rows.py", "05_relu.py"], tmp_path / "p")
    loose = audit(folder, atol=10.0, overrides={"batch_size": 2, "dim": 4096}).set_index("problem")
    assert loose["zeros_pass"].all()
    tight = audit(folder, atol=1e-8, rtol=1e-8, overrides={"batch_size": 2, "dim": 4096}).set_index("problem")
    assert not tight["zeros_pass"].any() and not tight["const_pass"].any()


def test_non_problem_files_get_an_error_row(tmp_path: Path) -> None:
    folder = _copy(["05_relu.py"], tmp_path / "p")
    (folder / "helper.py").write_text("X = 1\n")
    (folder / "broken.py").write_text("def (\n")
    (folder / "raises.py").write_text("class Model:\n    pass\n\ndef get_inputs():\n    raise ValueError('boom')\n\n"
                                      "def get_init_inputs():\n    return []\n")
    (folder / "__init__.py").write_text("")
    df = audit(folder, overrides={"batch_size": 4}).set_index("problem")
    assert list(df.index) == ["05_relu", "broken", "helper", "raises"]
    assert df.loc["05_relu", "error"] == ""
    assert "not a KernelBench problem" in df.loc["helper", "error"]
    assert "does not parse" in df.loc["broken", "error"]
    assert "ValueError: boom" in df.loc["raises", "error"]


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(AddressableError, match="problems folder not found"):
        audit(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AddressableError, match="no problem files"):
        audit(tmp_path / "empty")
    with pytest.raises(AddressableError, match="non-negative"):
        audit(PROBLEMS, atol=-1)


def test_cli_audit_json_and_table(tmp_path: Path) -> None:
    folder = _copy(["01_softmax_long_rows.py", "02_rmsnorm.py"], tmp_path / "p")
    runner = CliRunner()
    res = runner.invoke(main, ["audit", str(folder), "--set", "batch_size=1", "--set", "tokens=4", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["atol"] == 0.01 and d["rtol"] == 0.01
    rows = {r["problem"]: r for r in d["problems"]}
    assert rows["01_softmax_long_rows"]["zeros_pass"] is True and rows["02_rmsnorm"]["zeros_pass"] is False
    assert {"max_abs_ref", "mean_abs_ref", "fro_ref", "const_pass", "vulnerable"} <= set(rows["02_rmsnorm"])
    res = runner.invoke(main, ["audit", str(folder), "--set", "batch_size=1", "--set", "tokens=4"])
    assert res.exit_code == 0 and "1 of 2 problems accept a trivial output" in res.output
    assert "01_softmax_long_rows" in res.output and "PASS" in res.output


def test_audit_to_dict() -> None:
    df = pd.DataFrame([{"problem": "p", "zeros_pass": True}])
    assert audit_to_dict(df, 0.1, 0.0) == {"atol": 0.1, "rtol": 0.0, "problems": [{"problem": "p", "zeros_pass": True}]}


@pytest.mark.parametrize("args", [["audit", "/nonexistent/folder"], ["audit", str(ZOO), "--set", "oops"]])
def test_cli_audit_bad_input(args: list[str]) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and res.output.startswith("error: ") and res.output.count("\n") == 1
