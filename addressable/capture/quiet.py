"""Silence what torch.profiler prints on every normal run, so that what is left is worth reading.

Kineto (the profiler's C++ side) logs `USDT: ... profiler_start/profiler_stop` on each
collection and, on a machine without a GPU, `ERROR: ... gpuGetDeviceCount failed`; the Python
side warns that the profiler "clears events at the end of each cycle" and that a schedule "won't
be using warmup". None of it is a problem for us. Set KINETO_LOG_LEVEL yourself (0 = everything)
to see Kineto's log again.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

KINETO_QUIET = "6"  # above USDT (5) and ERROR (4): Kineto's log level that prints nothing
EXPECTED_WARNINGS = (
    r".*Profiler clears events at the end of each cycle",
    r".*Profiler won't be using warmup",
)


@contextmanager
def quiet_profiler() -> Iterator[None]:
    """Within: Kineto logs nothing (unless KINETO_LOG_LEVEL is set) and the expected warnings are dropped."""
    os.environ.setdefault("KINETO_LOG_LEVEL", KINETO_QUIET)  # read when a profiler starts
    with warnings.catch_warnings():
        for message in EXPECTED_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        yield
