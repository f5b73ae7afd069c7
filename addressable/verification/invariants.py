"""Output invariants a problem file declares, checked on every candidate output by `verify`.

Problem file format (KernelBench style, read by `addressable verify` and `addressable audit`)::

    import torch
    from torch import nn

    batch_size = 16            # module-level size constants; `--set batch_size=2` overrides them
    dim = 393216

    class Model(nn.Module):
        def __init__(self, *init_inputs): ...
        def forward(self, *inputs) -> torch.Tensor: ...

    def get_inputs():          # fresh random inputs (CPU tensors are moved to the device)
        return [torch.rand(batch_size, dim)]

    def get_init_inputs():     # constructor arguments of Model (and of the candidate's ModelNew)
        return []

    # Optional: invariants every correct output satisfies, by name from the registry below,
    # or as (name, kwargs) tuples.
    INVARIANTS = ["probability", ("rows_sum_to_one", {"dim": -1, "tol": 1e-2})]

    # Optional: custom invariants. Each value is a bool (the check passes when True) or a float
    # violation (0 = holds exactly; passes when abs(value) <= the --invariant-tol threshold).
    def check_invariants(inputs, output) -> dict[str, bool | float]:
        return {"first_column_is_max": bool((output.argmax(-1) == 0).all())}

Registry (kwargs in brackets; every check also takes `tol`, the allowed violation; the defaults
allow bfloat16 rounding, whose relative precision is 2**-8):

- ``rows_sum_to_one`` [dim=-1, tol=1e-2]: max |sum(output, dim) - 1|
- ``nonnegative`` [tol=0]: max(-output, 0)
- ``bounded`` [lo, hi, tol=0]: how far any element lies outside [lo, hi]
- ``probability`` [tol=0]: ``bounded`` with lo=0, hi=1
- ``unit_norm`` [dim=-1, tol=1e-2]: max |‖output‖₂ over dim - 1|
- ``zero_mean`` [dim=-1, tol=1e-3]: max |mean(output, dim)|
- ``unit_variance`` [dim=-1, tol=1e-2]: max |var(output, dim, unbiased=False) - 1|

An invariant is checked on a trial only when the reference output satisfies it there (re-drawn
inputs can leave a problem's domain: a bound that holds for labels in {0, 1} need not hold for
others); the skipped ones are listed per trial.

Register more with ``@register("name")`` on ``fn(output, *, tol, **kwargs) -> float`` (the violation).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from addressable.core.errors import AddressableError

Invariant = Callable[..., float]
_REGISTRY: dict[str, tuple[Invariant, float]] = {}


def register(name: str, default_tol: float = 0.0) -> Callable[[Invariant], Invariant]:
    """Add an invariant `fn(output, **kwargs) -> violation` to the registry under `name`."""

    def deco(fn: Invariant) -> Invariant:
        _REGISTRY[name] = (fn, default_tol)
        return fn

    return deco


def names() -> list[str]:
    """Every registered invariant name."""
    return sorted(_REGISTRY)


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float64)


def _max(t: torch.Tensor) -> float:
    """Max of a tensor, NaN if any element is NaN (a NaN never satisfies an invariant)."""
    if t.numel() == 0:
        return 0.0
    if torch.isnan(t).any():
        return float("nan")
    return float(t.max())


@register("rows_sum_to_one", 1e-2)
def rows_sum_to_one(output: torch.Tensor, dim: int = -1) -> float:
    return _max((_f64(output).sum(dim) - 1).abs())


@register("nonnegative")
def nonnegative(output: torch.Tensor) -> float:
    return _max((-_f64(output)).clamp_min(0))


@register("bounded")
def bounded(output: torch.Tensor, lo: float = float("-inf"), hi: float = float("inf")) -> float:
    x = _f64(output)
    return _max(torch.maximum((lo - x).clamp_min(0), (x - hi).clamp_min(0)))


@register("probability")
def probability(output: torch.Tensor) -> float:
    return bounded(output, 0.0, 1.0)


@register("unit_norm", 1e-2)
def unit_norm(output: torch.Tensor, dim: int = -1) -> float:
    return _max((torch.linalg.vector_norm(_f64(output), dim=dim) - 1).abs())


@register("zero_mean", 1e-3)
def zero_mean(output: torch.Tensor, dim: int = -1) -> float:
    return _max(_f64(output).mean(dim).abs())


@register("unit_variance", 1e-2)
def unit_variance(output: torch.Tensor, dim: int = -1) -> float:
    return _max((_f64(output).var(dim, unbiased=False) - 1).abs())


@dataclass(frozen=True)
class InvariantSpec:
    """One declared invariant: registry name, its kwargs and the allowed violation."""

    name: str
    kwargs: dict[str, Any]
    tol: float

    def check(self, output: torch.Tensor) -> dict[str, Any]:
        """{value, threshold, passed} for one output (a NaN violation fails)."""
        fn, _ = _REGISTRY[self.name]
        value = float(fn(output, **self.kwargs))
        return {"value": value, "threshold": self.tol, "passed": bool(value <= self.tol)}


def parse_invariants(declared: Sequence[Any] | None, source: str = "INVARIANTS") -> list[InvariantSpec]:
    """Turn a problem file's INVARIANTS list into specs; unknown names or bad kwargs are user errors."""
    if declared is None:
        return []
    if isinstance(declared, str | tuple) or not isinstance(declared, Sequence):
        raise AddressableError(f"{source} must be a list of names or (name, kwargs) tuples")
    specs = []
    for item in declared:
        name, kwargs = (item, {}) if isinstance(item, str) else (item if len(item) == 2 else (None, None))
        if not isinstance(name, str) or not isinstance(kwargs, dict):
            raise AddressableError(f"{source}: bad entry {item!r}; use 'name' or ('name', {{kwargs}})")
        if name not in _REGISTRY:
            raise AddressableError(f"{source}: unknown invariant '{name}' (known: {', '.join(names())})")
        kwargs = dict(kwargs)
        tol = float(kwargs.pop("tol", _REGISTRY[name][1]))
        try:  # bind the kwargs now, so a typo is reported before anything runs
            inspect.signature(_REGISTRY[name][0]).bind(None, **kwargs)
        except TypeError as e:
            raise AddressableError(f"{source}: invariant '{name}': {e}") from None
        specs.append(InvariantSpec(name, kwargs, tol))
    return specs


def check_custom(result: Any, tol: float) -> dict[str, dict[str, Any]]:
    """Checks from a problem's `check_invariants(inputs, output)` result (bool or float violation)."""
    if not isinstance(result, dict):
        raise TypeError(f"check_invariants must return a dict, got {type(result).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for key, v in result.items():
        if isinstance(v, torch.Tensor | np.generic):
            v = v.item()
        if isinstance(v, bool):
            out[f"custom:{key}"] = {"value": bool(v), "threshold": True, "passed": bool(v)}
        else:
            value = float(v)
            out[f"custom:{key}"] = {"value": value, "threshold": tol, "passed": bool(abs(value) <= tol)}
    return out
