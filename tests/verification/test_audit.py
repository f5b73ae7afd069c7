"""audit: which problems an all-zeros or constant output passes under allclose(atol, rtol)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.verification.audit import audit, audit_to_dict, format_audit
from addressable.verification.harness import parse_scoped_overrides

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "examples" / "problems"
ZOO = Path(__file__).resolve().parent / "zoo"
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
    assert res.exit_code == 0 and "1 of 2 problems accept an all-zeros output; 1 accept a constant" in res.output
    assert "01_softmax_long_rows" in res.output and "PASS" not in res.output and "fail" not in res.output
    rows = {line.split()[0]: line.split()[-3:] for line in res.output.splitlines()[2:4]}
    # issue 26: the bad outcome (a do-nothing output accepted) read "PASS", the good one "fail"
    assert rows == {"01_softmax_long_rows": ["accepted", "accepted", "VULNERABLE"],
                    "02_rmsnorm": ["rejected", "rejected", "ok"]}


def test_audit_to_dict() -> None:
    df = pd.DataFrame([{"problem": "p", "zeros_pass": True, "max_abs_ref": 1.0},
                       {"problem": "q", "zeros_pass": None, "max_abs_ref": float("nan")}])
    assert audit_to_dict(df, 0.1, 0.0) == {"atol": 0.1, "rtol": 0.0, "problems": [
        {"problem": "p", "zeros_pass": True, "max_abs_ref": 1.0}, {"problem": "q", "zeros_pass": None, "max_abs_ref": None}]}


_PROBLEM = """import torch
from torch import nn

n = 8
scale = 1.0


class Model(nn.Module):
    def forward(self, x):
        return {body}


def get_inputs():
    {inputs}


def get_init_inputs():
    return []
"""


def _problem(folder: Path, name: str, body: str = "x * scale", inputs: str = "return [torch.randn(n)]") -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(_PROBLEM.format(body=body, inputs=inputs))
    return path


def test_numeric_order_scalar_outputs_and_zeros_counted_apart(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _problem(folder, "10_tiny", "x * 1e-4")               # zeros and the mean both pass
    _problem(folder, "2_scalar_loss", "(x * 1e-4).mean()")  # scalar: no constant test
    _problem(folder, "1_big", "x * 100")
    _problem(folder, "a_very_long_problem_name_that_is_longer_than_the_old_column")
    df = audit(folder, device="cpu")
    assert df["problem"].tolist() == ["1_big", "2_scalar_loss", "10_tiny",
                                      "a_very_long_problem_name_that_is_longer_than_the_old_column"]
    rows = df.set_index("problem")
    assert rows.loc["2_scalar_loss", "const_pass"] is None and rows.loc["2_scalar_loss", "zeros_pass"]
    assert rows.loc["10_tiny", "zeros_pass"] and rows.loc["10_tiny", "const_pass"]
    assert not rows.loc["1_big", "zeros_pass"] and not rows.loc["1_big", "const_pass"]
    text = format_audit(df, 1e-2, 1e-2)
    assert "2 of 4 problems accept an all-zeros output; 1 accept a constant" in text
    lines = text.splitlines()[1:-1]
    assert len({len(line) for line in lines}) == 1  # every row aligned, long name included
    assert lines[2].split()[-3:] == ["accepted", "-", "VULNERABLE"]  # the scalar problem's constant test is not run
    assert lines[1].split()[-3:] == ["rejected", "rejected", "ok"]
    d = audit_to_dict(df, 1e-2, 1e-2)
    assert next(r for r in d["problems"] if r["problem"] == "2_scalar_loss")["const_pass"] is None


def test_out_of_memory_is_an_error_row_and_the_audit_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _problem(folder, "1_oom", inputs="raise MemoryError()")
    _problem(folder, "2_cuda_oom", inputs="raise RuntimeError('CUDA out of memory. Tried to allocate 9 GiB')")
    _problem(folder, "3_fine")
    seen = []
    df = audit(folder, device="cpu", on_problem=lambda done, total, stem: seen.append((done, total, stem)))
    rows = df.set_index("problem")
    assert rows.loc["1_oom", "error"].startswith("out of memory")
    assert rows.loc["2_cuda_oom", "error"].startswith("out of memory") and "9 GiB" in rows.loc["2_cuda_oom", "error"]
    assert rows.loc["3_fine", "error"] == "" and rows.loc["3_fine", "output_shape"] == [8]
    assert seen == [(0, 3, "1_oom"), (1, 3, "2_cuda_oom"), (2, 3, "3_fine"), (3, 3, "")]
    res = CliRunner().invoke(main, ["audit", str(folder), "--device", "cpu", "--json"])
    assert res.exit_code == 0 and "NaN" not in res.output
    assert json.loads(res.output)["problems"][0]["max_abs_ref"] is None


def test_set_scoped_to_one_problem(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _problem(folder, "1_a")
    _problem(folder, "23_softmax")
    df = audit(folder, device="cpu", overrides=parse_scoped_overrides(["n=3", "23:n=5"])).set_index("problem")
    assert df.loc["1_a", "output_shape"] == [3] and df.loc["23_softmax", "output_shape"] == [5]
    df = audit(folder, device="cpu", overrides=parse_scoped_overrides(["23_softmax:n=6"])).set_index("problem")
    assert df.loc["1_a", "output_shape"] == [8] and df.loc["23_softmax", "output_shape"] == [6]
    with pytest.raises(AddressableError, match="no problem '7'"):
        audit(folder, device="cpu", overrides=parse_scoped_overrides(["7:n=2"]))
    with pytest.raises(AddressableError, match="has no module-level constant 'dim'"):
        audit(folder, device="cpu", overrides=parse_scoped_overrides(["23:dim=2"]))
    res = CliRunner().invoke(main, ["audit", str(folder), "--device", "cpu", "--set", "1:n=2", "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["problems"][0]["output_shape"] == [2]
    res = CliRunner().invoke(main, ["audit", str(folder), "--set", ":n=2"])
    assert res.exit_code == 2 and "PROBLEM:NAME=VALUE" in res.output


def test_peak_memory_is_at_most_three_outputs(tmp_path: Path) -> None:
    """The audit's own memory on top of the reference's run: at most 3x the output (was 8-12x)."""
    folder = tmp_path / "p"
    _problem(folder, "1_big", "x * scale", "return [torch.rand(n)]")
    n = 32 << 20  # 128 MB of float32 output
    code = ("import resource, sys, torch\n"
            "from addressable.verification.audit import audit\n"
            "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            f"df = audit(sys.argv[1], device='cpu', overrides={{'n': {n}}})\n"
            "assert df.loc[0, 'error'] == '', df.loc[0, 'error']\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)\n")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=True)
    grew = int(out.stdout.split()[-1]) * 1024
    assert grew <= 3 * 4 * n, (grew / (4 * n), out.stderr)
