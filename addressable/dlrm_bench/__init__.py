"""DLRM-Bench: recommender kernel problems in KernelBench (level-1) format.

Each problem is one self-contained file in `problems/`: `class Model(nn.Module)` (the PyTorch eager
reference), `get_inputs()`, `get_init_inputs()`, UPPERCASE size constants (MLPerf DLRM-DCNv2 sizes
that fit one GPU), `SMALL` (overrides of those constants for CPU tests), `CATEGORY` (a taxonomy
category), `DLRM_KERNEL` (regex of the kernel it stands for in a DLRM profile), and `INVARIANTS`
and/or `check_invariants(inputs, output)`. `get_inputs`/`get_init_inputs` read the constants when
called, so `load_problem(name, small=True)` shrinks a problem by overriding them.
Reference Triton candidates (`ModelNew`) live in `candidates/<problem stem>.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from addressable.core.errors import AddressableError
from addressable.runs.folder import read_kernels, read_run_keys
from addressable.verification.harness import load_module, problem_category, quartiles, time_calls

PROBLEMS_DIR = Path(__file__).with_name("problems")
CANDIDATES_DIR = Path(__file__).with_name("candidates")
_PROBLEM_FILE = re.compile(r"^\d\d_\w+\.py$")
_NOT_SIZES = {"CATEGORY", "DLRM_KERNEL", "SMALL", "INVARIANTS"}


def problem_names() -> list[str]:
    """The problem stems, in order ("01_embedding_bag_sum_uniform", ...)."""
    return sorted(p.stem for p in PROBLEMS_DIR.glob("*.py") if _PROBLEM_FILE.match(p.name))


def problem_path(ref: str | Path) -> Path:
    """A problem file from a path, a stem, its number ("1", "01") or its name without the number."""
    path = Path(ref)
    if path.suffix == ".py" and path.is_file():
        return path
    ref = str(ref).removesuffix(".py")
    for stem in problem_names():
        number, _, name = stem.partition("_")
        if ref in (stem, name) or (ref.isdigit() and int(ref) == int(number)):
            return PROBLEMS_DIR / f"{stem}.py"
    raise AddressableError(f"unknown bench problem '{ref}' (known: {', '.join(problem_names())})")


def problem_categories(dirs: Sequence[str | Path] | None = None) -> dict[str, str]:
    """Problem stem -> taxonomy category of each problem file (its CATEGORY constant, read without importing
    it: addressable.verification.harness.problem_category): DLRM-Bench's problems, or those in `dirs`."""
    out = {}
    for d in map(Path, (PROBLEMS_DIR,) if dirs is None else dirs):
        for f in sorted(d.glob("*.py")) if d.is_dir() else []:
            if not f.name.startswith("_") and (category := problem_category(f)):
                out[f.stem] = category
    return out


def candidate_path(ref: str | Path) -> Path | None:
    """The reference Triton candidate of a problem, if there is one."""
    path = CANDIDATES_DIR / f"{problem_path(ref).stem}.py"
    return path if path.is_file() else None


def _exec_file(path: Path) -> ModuleType:
    """A fresh module from a problem or candidate file (addressable.verification.harness.load_module: a new
    module each time, so size overrides never leak between loads)."""
    try:
        return load_module(path)
    except ImportError as e:
        raise AddressableError(f"cannot import {path}: {e}") from None


def load_problem(ref: str | Path, small: bool = False) -> ModuleType:
    """Load a problem as a fresh module; with `small`, apply its SMALL size overrides first."""
    module = _exec_file(problem_path(ref))
    if small:
        for key, value in getattr(module, "SMALL", {}).items():
            if not hasattr(module, key):
                raise AddressableError(f"{module.__file__}: SMALL sets unknown constant {key}")
            setattr(module, key, value)
    return module


def load_candidate(ref: str | Path) -> ModuleType:
    """Load the reference candidate (a module with ModelNew) of a problem."""
    path = candidate_path(ref)
    if path is None:
        raise AddressableError(f"no reference candidate for {problem_path(ref).stem}")
    return _exec_file(path)


def sizes(module: ModuleType) -> dict[str, object]:
    """The UPPERCASE size constants of a loaded problem (long lists abbreviated by the caller)."""
    return {k: v for k, v in vars(module).items()
            if k.isupper() and not k.startswith("_") and k not in _NOT_SIZES}


def _size_text(module: ModuleType) -> str:
    parts = []
    for k, v in sizes(module).items():
        parts.append(f"{k}=[{len(v)} values]" if isinstance(v, list) and len(v) > 6 else f"{k}={v}")
    return " ".join(parts)


def problem_table(small: bool = False) -> pd.DataFrame:
    """One row per problem: name, category, sizes, what it stands for, DLRM kernel regex, candidate."""
    rows = []
    for stem in problem_names():
        m = load_problem(stem, small=small)
        rows.append({"problem": stem, "category": m.CATEGORY, "sizes": _size_text(m),
                     "stands_for": (m.__doc__ or "").strip().splitlines()[0],
                     "dlrm_kernel": m.DLRM_KERNEL,
                     "candidate": candidate_path(stem) is not None})
    return pd.DataFrame(rows)


def format_problem_table(df: pd.DataFrame) -> str:
    """`bench list`'s text: per problem its name, category and candidate, then what it stands for, sizes and
    DLRM kernel regex."""
    lines = []
    for r in df.itertuples():
        lines += [f"{r.problem:<40}{r.category:<15}{'candidate' if r.candidate else ''}",
                  f"    {r.stands_for}",
                  f"    sizes: {r.sizes}",
                  f"    DLRM kernel: /{r.dlrm_kernel}/"]
    return "\n".join(lines)


def problem_shares(run_dir: str | Path) -> pd.DataFrame:
    """Each problem's share of a DLRM run, from its kernels.csv and DLRM_KERNEL regexes.

    kernel_share: fraction of profiled kernel time; step_share: fraction of the wall-clock step
    (needs breakdown.json). shared_with: other problems whose regex matches the same kernels
    (then the shares overlap and are upper bounds).
    """
    kernels = read_kernels(run_dir)
    total = kernels["time_us"].sum()
    per_step = _kernel_fraction_of_step(read_run_keys(run_dir, required=False))
    names = kernels["name"].astype(str)  # one row per distinct kernel name: a plain loop is fine
    masks = {}
    for stem in problem_names():
        m = load_problem(stem)
        rx = re.compile(m.DLRM_KERNEL, re.IGNORECASE)
        masks[stem] = (m, names.map(lambda n, rx=rx: rx.search(n) is not None).astype(bool))
    rows = []
    for stem, (m, mask) in masks.items():
        time_us = float(kernels.loc[mask, "time_us"].sum())
        share = time_us / total if total > 0 else 0.0
        top = kernels.loc[mask].sort_values("time_us", ascending=False)["name"].head(1).tolist()
        rows.append({"problem": stem, "category": m.CATEGORY, "kernels": int(mask.sum()),
                     "time_us": time_us, "kernel_share": share,
                     "step_share": share * per_step if per_step is not None else float("nan"),
                     "shared_with": ",".join(s for s, (_, other) in masks.items()
                                             if s != stem and bool((mask & other).any())),
                     "top_kernel": top[0] if top else ""})
    return pd.DataFrame(rows)


def _kernel_fraction_of_step(keys: dict[str, Any]) -> float | None:
    """Kernel time per step / wall-clock step time, from breakdown.json's keys (None if unavailable)."""
    try:
        return float(keys["kernel_time_per_step_us"]) / (1000.0 * float(keys["step_time_ms"]))
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return None


def baseline_times(names: list[str] | None = None, device: str = "cuda", small: bool = False,
                   warmup: int = 5, repeats: int = 50, budget_s: float = 10.0, seed: int = 0) -> pd.DataFrame:
    """Eager PyTorch time of each problem's Model in ms, timed as `addressable verify` times it
    (`addressable.verification.harness.time_calls`: median of up to `repeats` calls within `budget_s` seconds,
    L2 flushed before each call on a GPU, work on every stream included)."""
    import torch

    from addressable.core.device import resolve_device

    device = resolve_device(device)
    rows = []
    for stem in names or problem_names():
        m = load_problem(stem, small=small)
        torch.manual_seed(seed)
        with torch.device(device):  # build weights and inputs on the device: fast, and no copies
            model = m.Model(*m.get_init_inputs()).eval()
            inputs = [x.to(device) for x in m.get_inputs()]
        times = time_calls({"ref": model}, inputs, device, repeats, warmup, budget_s)["ref"]
        q1, median, q3 = quartiles(times)
        rows.append({"problem": problem_path(stem).stem, "category": m.CATEGORY, "device": device,
                     "small": small, "ref_ms": median, "ref_ms_q1": q1, "ref_ms_q3": q3, "runs": len(times)})
        del model, inputs
        if device == "cuda":
            torch.cuda.empty_cache()
    return pd.DataFrame(rows)
