"""Inputs for timed calls that never repeat: every call gets new contents in a different buffer.

A candidate that recognises a repeated input (same tensor, same contents as its previous call) and
reuses work cannot do so when no two timed calls share their inputs. Each timed call's inputs are
drawn on the device, outside the timed interval, from a seed the verifying parent picks at random
for that call (`secrets`), in the first of these modes the reference accepts:

- ``problem``: the problem's own ``get_inputs()`` under the seed (made on the device where it can be),
  so the timed calls see the problem's distribution itself: index skew, bag lengths, value ranges.
  The other modes keep only some statistics of the native draw, and a reference's cost can depend on
  the rest (on the H200 the embedding-bag reference of DLRM-Bench 02, Zipf indices, took 1.30 ms a
  call on its own inputs and 1.67 ms on ``redraw``'s uniform ones, so its candidate's speedup read 2.51x
  for a true 1.99x: `results/h200/verify_arbiter/`). Unusable when a draw's tensors differ from the
  native draw's in number or dtype, or when no tensor changes with the seed;
- ``redraw``: the trials' re-drawn distribution ("randn" in `harness.make_inputs`): floating inputs
  from N(0, σ²) with σ the native draw's RMS (in absolute value when the native draw is
  nonnegative); integer inputs, and floats holding only integers, uniformly within the native
  [min, max]; a sorted 1-D one (offsets) sorted, keeping the native first and last element;
- ``permute``: a random permutation of the native draw's elements (a sorted 1-D input: of its
  differences, so it stays sorted with the same endpoints), for problems whose reference rejects
  re-drawn inputs (offsets that must match a values tensor, lengths that must add up);
- ``fixed``: the native draw itself, every call (only when the reference rejects both: the timed
  inputs then repeat, and the verdict says so).

Two buffer sets alternate, so consecutive calls never see the same tensor either (a ``problem`` draw is
allocated while both earlier sets are alive, so it shares no address with them). A draw is a
function of (template, mode, seed, device) alone: the reference checker draws the same inputs for
a seed without ever seeing the candidate's process (`ReferenceSide.reference_sketches`).
Booleans, complex, empty and non-tensor inputs are kept as drawn natively.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from addressable.verification.harness import make_inputs, map_tensors, seed_all, tensors

MODES = ("problem", "redraw", "permute", "fixed")


@dataclass(frozen=True)
class Stats:
    """How one native input tensor is re-drawn: kind "float", "int" or "keep", and its native statistics."""

    kind: str
    rms: float = 1.0
    nonneg: bool = False
    lo: int = 0
    hi: int = 0
    sorted1d: bool = False


def stats_of(t: Any) -> Stats:
    """The re-draw statistics of one native input (the rules of `harness.make_inputs`)."""
    import torch

    c = t.detach().cpu()
    if c.numel() == 0 or c.dtype == torch.bool or c.is_complex():
        return Stats("keep")
    if c.is_floating_point() and not bool((c == c.round()).all()):
        rms = float(c.double().pow(2).mean().sqrt()) or 1.0
        return Stats("float", rms=rms, nonneg=bool((c >= 0).all()))
    lo, hi = int(c.min()), int(c.max())
    sorted1d = c.dim() == 1 and c.numel() > 1 and bool((c[1:] >= c[:-1]).all())
    return Stats("int", lo=lo, hi=hi, sorted1d=sorted1d)


def problem_draw(problem: ModuleType, seed: int, device: str) -> list:
    """The problem's get_inputs() under `seed`, its factory calls made on `device` (where one fails there:
    on the CPU, then moved, as `harness.make_inputs` does)."""
    import torch

    seed_all(seed)
    try:
        with torch.device(device):
            drawn = list(problem.get_inputs())
        return map_tensors(drawn, lambda t: t.to(device))
    except Exception:
        return make_inputs(problem, seed, "native", device)


def problem_draws_unusable(native: list, draw: Callable[[int], list], seed: int) -> str:
    """Why `problem` mode cannot time this problem ("" when it can): two draws checked against the native one."""
    import torch

    a, b = tensors(draw(seed)), tensors(draw(seed + 1))
    want = [(t.dtype, t.dim()) for t in tensors(native)]
    if [(t.dtype, t.dim()) for t in a] != want or [(t.dtype, t.dim()) for t in b] != want:
        return "get_inputs() draws tensors unlike its first draw's"
    if all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b, strict=True)):
        return "get_inputs() draws the same inputs for every seed"
    return ""


class FreshInputs:
    """Timed-call inputs for one problem: `draw(seed)` fills the next buffer set and returns it (`problem`
    mode: `problem_draw`, a function of the seed alone, is the new set)."""

    def __init__(self, native: list, mode: str, problem_draw: Callable[[int], list] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown fresh-input mode {mode!r}")
        if mode == "problem" and problem_draw is None:
            raise ValueError("problem mode needs the problem's draw")
        self.native, self.mode, self.problem_draw = native, mode, problem_draw
        self.stats = [stats_of(t) for t in tensors(native)]
        self.buffers = [map_tensors(native, lambda t: t.detach().clone()) for _ in range(2)]
        self.slot = 0

    def draw(self, seed: int) -> list:
        """The inputs for seed `seed`, in the buffer set not used by the previous draw."""
        import torch

        if self.mode == "fixed":
            return self.native
        self.slot ^= 1
        if self.problem_draw is not None and self.mode == "problem":
            self.buffers[self.slot] = self.problem_draw(seed)
            return self.buffers[self.slot]
        out = self.buffers[self.slot]
        dev = tensors(self.native)[0].device if tensors(self.native) else "cpu"
        gen = torch.Generator(device=dev).manual_seed(seed)
        for buf, nat, st in zip(tensors(out), tensors(self.native), self.stats, strict=True):
            if st.kind != "keep":
                (_redraw if self.mode == "redraw" else _permute)(buf, nat, st, gen)
        return out

    def nbytes(self) -> int:
        """Bytes the two buffer sets hold."""
        return 2 * sum(t.numel() * t.element_size() for t in tensors(self.native))


def _redraw(buf: Any, nat: Any, st: Stats, gen: Any) -> None:
    if st.kind == "float":
        buf.normal_(0.0, st.rms, generator=gen)
        if st.nonneg:
            buf.abs_()
        return
    buf.random_(st.lo, st.hi + 1, generator=gen)
    if st.sorted1d:
        buf.copy_(buf.sort().values)
        buf[0], buf[-1] = nat[0], nat[-1]


def _permute(buf: Any, nat: Any, st: Stats, gen: Any) -> None:
    import torch

    if st.sorted1d:
        diffs = nat[1:] - nat[:-1]
        perm = torch.randperm(diffs.numel(), generator=gen, device=nat.device)
        buf[0] = nat[0]
        buf[1:] = nat[0] + diffs[perm].cumsum(0)
        return
    flat = nat.reshape(-1)
    perm = torch.randperm(flat.numel(), generator=gen, device=nat.device)
    buf.copy_(flat[perm].view(nat.shape))
