"""Amdahl's law: the end-to-end speedup when parts of a whole run faster.

Projection (a run's projected speedup from measured wins), the roofline (its ceilings) and the report
(the amdahl figure's curves) all compute it with this one function. It lives in core because the
roofline and projection stages are independent of each other and both need it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def amdahl(times: Sequence[float], speedups: Sequence[float], total: float) -> float:
    """End-to-end speedup when parts `times` of `total` run `speedups` times faster (k = inf allowed).

    total / (total − Σt + Σt/k), i.e. 1 / ((1 − Σs) + Σs/k) with s = t / total, summed exactly
    (math.fsum) so the result does not depend on the order of the parts. NaN when the parts add up
    to more than the total (e.g. summed kernel time above the wall-clock step time) or the total is not
    positive; inf when nothing is left.
    """
    t = [float(x) for x in times]
    if not total > 0 or math.fsum(t) > total * (1 + 1e-12):
        return math.nan
    new = math.fsum([float(total), *(-x for x in t), *(x / float(k) for x, k in zip(t, speedups, strict=True))])
    return math.inf if new <= 0 else float(total) / new
