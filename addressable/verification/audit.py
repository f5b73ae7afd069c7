"""Which problems can a do-nothing kernel pass under an absolute-tolerance allclose?

KernelBench accepts a candidate when ``torch.allclose(out, ref, atol=1e-2, rtol=1e-2)`` holds, i.e.
``|out - ref| <= atol + rtol * |ref|`` everywhere. When every |ref| is below about atol, an all-zeros
output passes (softmax over 393,216-wide rows: every element is near 1/393,216; a
Frobenius-normalised tensor). For every KernelBench-format problem file in a folder, `audit` reports
whether an all-zeros output and a constant output (the reference's mean) would pass, next to the
magnitude of the reference output (max |ref|, mean |ref|, Frobenius norm). A scalar output gets no
constant test: its mean is the reference itself.

The tests run in float64 over chunks of the output, so the audit needs little memory beyond the
reference's own run. A problem whose reference fails (out of memory included) gets an error row,
and the audit goes on.
"""

from __future__ import annotations

import copy
import gc
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from addressable.core.device import resolve_device
from addressable.core.errors import AddressableError
from addressable.core.jsonutil import to_jsonable
from addressable.verification.harness import (
    as_outputs,
    load_module,
    make_inputs,
    on_device,
    one_line,
    overrides_for,
    problem_symbols,
    seed_all,
)

COLUMNS = ["problem", "output_shape", "dtype", "max_abs_ref", "mean_abs_ref", "fro_ref", "zeros_pass",
           "const_value", "const_pass", "vulnerable", "error"]
_CHUNK = 1 << 20  # elements per float64 chunk (8 MB)


def _chunks(outs: list) -> Any:
    for o in outs:
        flat = o.detach().reshape(-1)
        for i in range(0, flat.numel(), _CHUNK):
            yield flat[i:i + _CHUNK].double()


def output_stats(outs: list, atol: float, rtol: float) -> dict[str, Any]:
    """Magnitudes of the reference outputs, and whether zeros / their mean pass allclose(·, ref, atol, rtol).

    allclose(c, ref) holds when |c − ref| <= atol + rtol·|ref| everywhere (a NaN in ref never does).
    const_pass is None for a scalar output.
    """
    import torch

    n = count = 0
    total = abs_total = sq = mx = 0.0
    zeros = True
    for c in _chunks(outs):
        fin = torch.isfinite(c)
        f = c[fin]
        n, count = n + c.numel(), count + f.numel()
        total += float(f.sum())
        f = f.abs_()
        abs_total += float(f.sum())
        sq += float(f.square().sum())
        mx = max(mx, float(f.max()) if f.numel() else 0.0)
        zeros = zeros and bool((fin & (c.abs() <= atol + rtol * c.abs())).all())
    const = total / count if count else 0.0
    scalar = n == len(outs)
    const_pass = None if scalar else all(bool((torch.isfinite(c) & ((const - c).abs() <= atol + rtol * c.abs())).all())
                                         for c in _chunks(outs))
    return {"max_abs_ref": mx, "mean_abs_ref": abs_total / count if count else 0.0, "fro_ref": math.sqrt(sq),
            "zeros_pass": zeros, "const_value": const, "const_pass": const_pass,
            "vulnerable": bool(zeros or const_pass)}


def _is_oom(e: BaseException) -> bool:
    return isinstance(e, MemoryError) or "out of memory" in str(e).lower() or "can't allocate memory" in str(e)


def _audit_one(path: Path, atol: float, rtol: float, device: str, overrides: dict[str, Any],
               seed: int) -> dict[str, Any]:
    import torch

    row: dict[str, Any] = {"problem": path.stem}
    try:
        names = problem_symbols(path)
    except AddressableError as e:
        return {**row, "error": str(e).replace(f"reference {path} ", "")}
    try:
        mod = load_module(path, {k: v for k, v in overrides.items() if k in names})
        seed_all(seed)
        init = list(mod.get_init_inputs())
        seed_all(seed)
        model = on_device(mod.Model(*copy.deepcopy(init)), device)
        inputs = make_inputs(mod, seed, "native", device)
        with torch.no_grad():
            outs = as_outputs(model(*inputs), "reference")
        del model, inputs
        shape = list(outs[0].shape) if len(outs) == 1 else [list(o.shape) for o in outs]
        return {**row, "output_shape": shape, "dtype": str(outs[0].dtype).removeprefix("torch."),
                **output_stats(outs, atol, rtol), "error": ""}
    except Exception as e:  # MemoryError included: one error row, and the audit goes on
        return {**row, "error": f"out of memory ({one_line(e)[:160]})" if _is_oom(e) else one_line(e)[:200]}
    finally:
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()


def _sort_key(path: Path) -> tuple:
    m = re.match(r"(\d+)", path.stem)
    return (0, int(m.group(1)), path.stem) if m else (1, 0, path.stem)


def problem_files(folder: Path) -> list[Path]:
    """The *.py files of a folder (names starting with "_" skipped), sorted by leading number, then name."""
    return sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=_sort_key)


def _check_scoped(files: list[Path], scoped: dict[tuple[str | None, str], Any]) -> None:
    """A PROBLEM:NAME=VALUE override must name a problem in the folder that defines NAME."""
    for problem, name in scoped:
        if problem is None:
            continue
        hits = [p for p in files if name in overrides_for(p.stem, {(problem, name): 0})]
        if not hits:
            raise AddressableError(f"--set {problem}:{name}: no problem '{problem}' in the folder")
        for p in hits:
            try:
                defined = problem_symbols(p)
            except AddressableError:
                defined = set()
            if name not in defined:
                raise AddressableError(f"--set {problem}:{name}: {p.name} has no module-level constant '{name}'")


def audit(problems_dir: str | Path, atol: float = 1e-2, rtol: float = 1e-2, device: str = "auto",
          overrides: dict[Any, Any] | None = None, seed: int = 42,
          on_problem: Callable[[int, int, str], None] | None = None) -> pd.DataFrame:
    """One row per problem file, in numeric order (see the module docstring).

    `overrides` sets module-level constants in the problems that define them: {"batch_size": 2}, or
    {(None, "batch_size"): 2, ("23", "dim"): 64} as from `harness.parse_scoped_overrides` (a
    problem's stem or number scopes an override to that problem). A file that is not a problem, or
    whose reference fails, gets its reason in the `error` column. `on_problem(done, total, stem)` is
    called before each problem and once at the end.
    """
    folder = Path(problems_dir)
    if not folder.is_dir():
        raise AddressableError(f"problems folder not found: {folder}")
    if atol < 0 or rtol < 0:
        raise AddressableError("--atol and --rtol must be non-negative")
    files = problem_files(folder)
    if not files:
        raise AddressableError(f"no problem files (*.py) in {folder}")
    scoped = {(k if isinstance(k, tuple) else (None, k)): v for k, v in (overrides or {}).items()}
    _check_scoped(files, scoped)
    dev = resolve_device(device)
    rows = []
    for i, p in enumerate(files):
        if on_problem:
            on_problem(i, len(files), p.stem)
        rows.append(_audit_one(p, atol, rtol, dev, overrides_for(p.stem, scoped), seed))
    if on_problem:
        on_problem(len(files), len(files), "")
    return pd.DataFrame(rows, columns=COLUMNS).fillna({"error": ""})


def audit_to_dict(df: pd.DataFrame, atol: float, rtol: float) -> dict[str, Any]:
    """The JSON form printed by `audit --json`: the tolerances and one record per problem (NaN as null)."""
    records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
    return {"atol": atol, "rtol": rtol, "problems": to_jsonable(records, nan_as=None, inf_as="inf")}


def _mark(v: Any) -> str:
    """What allclose says of a trivial output: "accepted" (the problem is fooled), "rejected", or "-" (not tested)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "accepted" if bool(v) else "rejected"


def format_audit(df: pd.DataFrame, atol: float, rtol: float) -> str:
    """A terminal table: magnitudes, whether allclose accepts each trivial output, and a verdict (VULNERABLE
    in capitals where one is accepted); then the counts."""
    w = max(8, *(len(str(p)) for p in df["problem"])) + 2
    lines = [f"allclose(atol={atol:g}, rtol={rtol:g}) against trivial outputs: is an all-zeros output, or the "
             "reference's mean everywhere, accepted?",
             f"  {'problem':<{w}}{'max|ref|':>11}{'mean|ref|':>11}{'‖ref‖_F':>11}  {'zeros':<10}{'mean':<10}{'verdict':<10}"]
    for r in df.itertuples():
        if r.error:
            lines.append(f"  {r.problem:<{w}}error: {r.error}")
            continue
        verdict = "VULNERABLE" if r.vulnerable else "ok"
        lines.append(f"  {r.problem:<{w}}{r.max_abs_ref:>11.3g}{r.mean_abs_ref:>11.3g}{r.fro_ref:>11.3g}  "
                     f"{_mark(r.zeros_pass):<10}{_mark(r.const_pass):<10}{verdict:<10}")
    ok = df[df["error"] == ""]
    zeros = int(ok["zeros_pass"].astype(bool).sum())
    const = int(ok["const_pass"].map(lambda v: v is True or v == 1.0).sum())
    n_err = len(df) - len(ok)
    lines.append(f"{zeros} of {len(ok)} problems accept an all-zeros output; {const} accept a constant "
                 f"(the reference's mean; scalar outputs not tested)" + (f"; {n_err} not audited (error)" if n_err else ""))
    return "\n".join(lines)
