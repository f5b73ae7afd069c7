"""How sure a replay projection is (docs/replay.md#intervals).

The interval of a projected speedup S combines three things:
- the model's own error, taken on the step fraction the what-ifs remove, f = 1 - 1/S: the `coverage`
  quantile of |f_measured - f_projected| / max(|f_projected|, floor) over the validation corpus's
  development data (gpu/replay_corpus.py, results/h200/replay_corpus/), per regime where the regime
  has enough pairs, else pooled (`replay_error.yaml`, written by gpu/replay_corpus_validation.py), for
  each CPU model the replay runs (`given`, `uniform`: docs/replay.md). An error in what a swap removes
  grows with how much it removes, so a swap that halves the step gets a wider interval than a small one;
- the spread of the unprofiled step times the replay was calibrated to (`step_noise`);
- the interval of the speedup given (the projection at k_lo and at k_hi).
The first two add in quadrature on the log scale, each side apart (`widen`). Regimes whose held-out
error stayed above `warn_above` are named, and a projection of a run in one says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from addressable.core.errors import AddressableError
from addressable.core.files import read_yaml

ERROR_MODEL = Path(__file__).with_name("replay_error.yaml")
SCALE = "removed_fraction"  # what replay_error.yaml's half-widths are relative errors of
# a projection removing less than this fraction of the step has its error taken relative to this (a
# swap that removes nothing still has an error; chosen on parts 1-16 of the validation corpus, where
# 0.02, 0.05 and 0.1 held the same pairs: docs/replay.md#intervals)
REMOVED_FLOOR = 0.05
# a regime with fewer held-out pairs than this is not checked by them (the least dev pairs a regime's own half-width
# is fitted on, fit_error_model's min_dev)
MIN_HELDOUT = 3
MAX_REMOVED = 0.95  # the interval's top removes at most this fraction of the step (a 20x speedup)


@dataclass
class ErrorModel:
    """The replay's error per regime (half-widths of its `coverage` interval, relative errors of the removed
    fraction), from dev pairs."""

    coverage: float
    pooled: float
    half_width: dict[str, float] = field(default_factory=dict)
    n_dev: dict[str, int] = field(default_factory=dict)
    heldout_max: dict[str, float] = field(default_factory=dict)  # max |error| of held-out pairs, per regime
    warn_above: float = 0.05
    source: str = ""
    floor: float = REMOVED_FLOOR
    heldout_n: dict[str, int] = field(default_factory=dict)  # held-out pairs per regime (absent: not recorded)

    def width(self, regime: str) -> float:
        return self.half_width.get(regime, self.pooled)

    def warning(self, regime: str) -> str | None:
        """A line for runs in a regime whose held-out error stayed above warn_above, or that fewer than MIN_HELDOUT
        held-out pairs ran in (held-out 14's RegNetX, the first of its regime, was 12.5% off; held-out 16's
        ResNet-18 inference at batch 256, the first GPU-bound inference, 24.7%); None otherwise."""
        worst = self.heldout_max.get(regime, math.nan)
        if math.isnan(worst):
            return (f"no held-out pair of the validation corpus ran in the {regime} regime: this projection and its "
                    f"interval (the pooled one) are unchecked there; read it as a rough one (docs/replay.md)")
        if worst > self.warn_above:
            return (f"replay projections of {regime} runs were off by up to {worst:.1%} on the validation corpus's "
                    f"held-out pairs (above {self.warn_above:.0%}): read this projection as a rough one (docs/replay.md)")
        n = self.heldout_n.get(regime, MIN_HELDOUT)
        if n < MIN_HELDOUT:
            return (f"only {n} held-out pair{'s' if n != 1 else ''} of the validation corpus ran in the {regime} "
                    f"regime (off by up to {worst:.1%}): too few to check this projection there; read it as a rough "
                    f"one (docs/replay.md)")
        return None


def step_noise(step_ms: np.ndarray, q: float = 0.25, coverage: float = 0.8, n_boot: int = 400) -> float:
    """Relative half-width of the `coverage` interval of the q-quantile of step times (a seeded bootstrap)."""
    x = np.asarray(step_ms, float)
    x = x[np.isfinite(x)]
    if len(x) < 4:
        return 0.0
    rng = np.random.default_rng(0)
    boot = np.quantile(rng.choice(x, (n_boot, len(x))), q, axis=1)
    lo, hi = np.quantile(np.log(boot), [(1 - coverage) / 2, (1 + coverage) / 2])
    return float((hi - lo) / 2)


def removed_error(projected: np.ndarray, measured: np.ndarray, floor: float = REMOVED_FLOOR) -> np.ndarray:
    """The error of a projected speedup on the step fraction it removes (f = 1 - 1/S): (f_measured -
    f_projected) / max(|f_projected|, floor)."""
    f_proj, f_meas = 1 - 1 / np.asarray(projected, float), 1 - 1 / np.asarray(measured, float)
    return (f_meas - f_proj) / np.maximum(np.abs(f_proj), floor)


def widen(point: float, lo: float, hi: float, model: float, noise: float = 0.0,
          floor: float = REMOVED_FLOOR) -> tuple[float, float]:
    """The interval [min(lo, point) e^-h_lo, max(hi, point) e^h_hi]: the removed fraction f = 1 - 1/point
    moved by ± model × max(|f|, floor) (its top at most MAX_REMOVED), each side's log distance from the
    point added in quadrature with `noise`."""
    f = 1 - 1 / point
    a = model * max(abs(f), floor)
    top = point if f >= MAX_REMOVED else 1 / (1 - min(f + a, MAX_REMOVED))
    h_lo, h_hi = (math.hypot(x, noise) for x in (math.log(point * (1 - (f - a))), math.log(top / point)))
    return min(lo, point) * math.exp(-h_lo), max(hi, point) * math.exp(h_hi)


def read_error_model(path: Path | None = None, model: str = "uniform") -> ErrorModel:
    """CPU model `model`'s error model from the committed file (ERROR_MODEL by default; a missing or
    malformed file, or one without that model, is a one-line error)."""
    path = ERROR_MODEL if path is None else path
    data = read_yaml(path, "replay error model")
    if isinstance(data, dict) and data.get("scale") != SCALE:
        raise AddressableError(f"replay error model {path}: its half-widths are not on the {SCALE} scale "
                               "(rewrite it with gpu/replay_corpus_validation.py --error-model)")
    try:
        section = data["models"][model]
        regimes = section.get("regimes") or {}
        return ErrorModel(float(data["coverage"]), float(section["pooled_half_width"]),
                          {r: float(v["half_width"]) for r, v in regimes.items() if v.get("half_width") is not None},
                          {r: int(v.get("n_dev", 0)) for r, v in regimes.items()},
                          {r: float(v["heldout_max_abs_error"]) for r, v in regimes.items()
                           if v.get("heldout_max_abs_error") is not None},
                          float(data.get("warn_above", 0.05)), str(section.get("source", "")),
                          float(data["floor"]),
                          {r: int(v["heldout_n"]) for r, v in regimes.items() if v.get("heldout_n") is not None})
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise AddressableError(f"replay error model {path}: bad or missing field ({e}) for model {model!r}") from None


def fit_error_model(errors: dict[str, list[float]], coverage: float = 0.8, min_dev: int = 3,
                    source: str = "") -> ErrorModel:
    """Half-widths from dev residuals (`removed_error`s, per regime): the `coverage` quantile of their
    absolute values, per regime with at least `min_dev` pairs, pooled over all of them otherwise."""
    absolute = {r: np.abs(np.asarray(v, float)) for r, v in errors.items() if len(v)}
    if not absolute:
        raise AddressableError("no dev residuals to fit the replay error model on")
    pooled = float(np.quantile(np.concatenate(list(absolute.values())), coverage))
    half = {r: float(np.quantile(v, coverage)) for r, v in absolute.items() if len(v) >= min_dev}
    return ErrorModel(coverage, pooled, half, {r: len(v) for r, v in absolute.items()}, source=source)


def error_model_yaml(models: dict[str, ErrorModel]) -> str:
    """The error model of each CPU model as the YAML `read_error_model` reads (written by the validation, committed)."""
    first = next(iter(models.values()))
    lines = ["# written by gpu/replay_corpus_validation.py from the validation corpus's development data (each model's source names it); do not edit",
             f"coverage: {first.coverage}", f"warn_above: {first.warn_above}",
             f"scale: {SCALE}  # half_width: relative error of the step fraction removed (intervals.py)",
             f"floor: {first.floor}", "models:"]
    for name, m in models.items():
        lines += [f"  {name}:", f"    source: {m.source!r}", f"    pooled_half_width: {m.pooled:.4f}", "    regimes:"]
        for r in sorted(set(m.n_dev) | set(m.heldout_max)):
            hw, hm = m.half_width.get(r), m.heldout_max.get(r)
            lines.append(f"      {r}: {{n_dev: {m.n_dev.get(r, 0)}, half_width: {'null' if hw is None else f'{hw:.4f}'}, "
                         f"heldout_max_abs_error: {'null' if hm is None else f'{hm:.4f}'}"
                         + (f", heldout_n: {m.heldout_n[r]}" if r in m.heldout_n else "") + "}")
    return "\n".join(lines) + "\n"
