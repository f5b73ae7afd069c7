"""Which problems can a do-nothing kernel pass under an absolute-tolerance allclose?

KernelBench accepts a candidate when ``torch.allclose(out, ref, atol=1e-2, rtol=1e-2)`` holds, i.e.
``|out - ref| <= atol + rtol * |ref|`` everywhere. When every |ref| is below about atol, an all-zeros
output passes (softmax over 393,216-wide rows: every element is near 1/393,216; a
Frobenius-normalised tensor). For every KernelBench-format problem file in a folder, `audit` reports
whether an all-zeros output and a constant output (the reference's mean) would pass, next to the
magnitude of the reference output (max |ref|, mean |ref|, Frobenius norm).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd

from addressable.errors import AddressableError
from addressable.verify import (
    _f64,
    _on_device,
    _outputs,
    _seed_all,
    _top_level_names,
    load_module,
    make_inputs,
    resolve_device,
)

COLUMNS = ["problem", "output_shape", "dtype", "max_abs_ref", "mean_abs_ref", "fro_ref", "zeros_pass",
           "const_value", "const_pass", "vulnerable", "error"]


def _audit_one(path: Path, atol: float, rtol: float, device: str, overrides: dict[str, Any],
               seed: int) -> dict[str, Any]:
    import torch

    row: dict[str, Any] = {"problem": path.stem}
    try:
        names = _top_level_names(path)
    except (SyntaxError, UnicodeDecodeError) as e:
        return {**row, "error": f"does not parse: {e}"}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        return {**row, "error": f"not a KernelBench problem: no {', '.join(missing)}"}
    try:
        mod = load_module(path, {k: v for k, v in overrides.items() if k in names})
        _seed_all(seed)
        init = list(mod.get_init_inputs())
        _seed_all(seed)
        model = _on_device(mod.Model(*copy.deepcopy(init)), device)
        inputs = make_inputs(mod, seed, "native", device)
        with torch.no_grad():
            outs = _outputs(model(*inputs), "reference")
    except Exception as e:
        return {**row, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"}
    ref = torch.cat([_f64(o, o.device).flatten() for o in outs])
    finite = ref[torch.isfinite(ref)]
    const = float(finite.mean()) if finite.numel() else 0.0
    zeros_pass = all(torch.allclose(torch.zeros_like(o), o, atol=atol, rtol=rtol) for o in outs)
    const_pass = all(torch.allclose(torch.full_like(o, const), o, atol=atol, rtol=rtol) for o in outs)
    shape = list(outs[0].shape) if len(outs) == 1 else [list(o.shape) for o in outs]
    return {**row, "output_shape": shape, "dtype": str(outs[0].dtype).removeprefix("torch."),
            "max_abs_ref": float(finite.abs().max()) if finite.numel() else 0.0,
            "mean_abs_ref": float(finite.abs().mean()) if finite.numel() else 0.0,
            "fro_ref": float(torch.linalg.vector_norm(finite)), "zeros_pass": bool(zeros_pass),
            "const_value": const, "const_pass": bool(const_pass), "vulnerable": bool(zeros_pass or const_pass),
            "error": ""}


def audit(problems_dir: str | Path, atol: float = 1e-2, rtol: float = 1e-2, device: str = "cpu",
          overrides: dict[str, Any] | None = None, seed: int = 42) -> pd.DataFrame:
    """One row per problem file (names starting with "_" skipped); see the module docstring.

    `overrides` sets module-level constants (e.g. {"batch_size": 2}) in the problems that define them.
    A file that is not a problem, or whose reference fails, gets its reason in the `error` column.
    """
    folder = Path(problems_dir)
    if not folder.is_dir():
        raise AddressableError(f"problems folder not found: {folder}")
    if atol < 0 or rtol < 0:
        raise AddressableError("--atol and --rtol must be non-negative")
    files = sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise AddressableError(f"no problem files (*.py) in {folder}")
    dev = resolve_device(device)
    rows = [_audit_one(p, atol, rtol, dev, overrides or {}, seed) for p in files]
    return pd.DataFrame(rows, columns=COLUMNS).fillna({"error": ""})


def audit_to_dict(df: pd.DataFrame, atol: float, rtol: float) -> dict[str, Any]:
    """The JSON form printed by `audit --json`: the tolerances and one record per problem."""
    return {"atol": atol, "rtol": rtol, "problems": df.to_dict(orient="records")}


def format_audit(df: pd.DataFrame, atol: float, rtol: float) -> str:
    """A terminal table: magnitudes and which trivial outputs pass allclose."""
    lines = [f"allclose(atol={atol:g}, rtol={rtol:g}) against trivial outputs",
             f"  {'problem':<28}{'max|ref|':>11}{'mean|ref|':>11}{'‖ref‖_F':>11}  {'zeros':<7}{'mean':<7}"]
    for r in df.itertuples():
        if r.error:
            lines.append(f"  {r.problem:<28}error: {r.error}")
            continue
        lines.append(f"  {r.problem:<28}{r.max_abs_ref:>11.3g}{r.mean_abs_ref:>11.3g}{r.fro_ref:>11.3g}  "
                     f"{'PASS' if r.zeros_pass else 'fail':<7}{'PASS' if r.const_pass else 'fail':<7}")
    n = int(df["vulnerable"].fillna(False).astype(bool).sum())
    lines.append(f"{n} of {len(df)} problems accept a trivial output under this allclose")
    return "\n".join(lines)
