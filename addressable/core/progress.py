"""Progress on long work: one "label: 12/40 steps, about 0:35 left" line on stderr, redrawn in place.

Shown only when stderr is a terminal, so logs and pipes get no carriage returns. Log lines written
through `Progress.log` clear the live line first and redraw it after, so the two never mix.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO


def duration(seconds: float) -> str:
    """Seconds as "42 s", "3 min 05 s" or "1 h 02 min" (at least "1 s")."""
    s = max(1, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """Count `total` units of work (steps, problems) and show done/total with the time left."""

    def __init__(self, total: int, label: str, unit: str = "steps", stream: TextIO | None = None,
                 enabled: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.label, self.unit, self.done = total, label, unit, 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.clock = clock
        self.start = clock()
        self.first: float | None = None  # when the first unit finished (it often includes one-time costs)
        self.shown = False

    def eta(self) -> float | None:
        """Seconds left at the pace since the first unit (None until two are done)."""
        if self.first is None or self.done < 2:
            return None
        return (self.clock() - self.first) / (self.done - 1) * (self.total - self.done)

    def text(self) -> str:
        """The progress line, e.g. "resnet50: 12/40 steps, about 35 s left"."""
        eta = self.eta()
        left = "" if eta is None or self.done >= self.total else f", about {duration(eta)} left"
        return f"{self.label}: {self.done}/{self.total} {self.unit}{left}"

    def advance(self, n: int = 1) -> None:
        """n more units done."""
        self.done += n
        if self.first is None:
            self.first = self.clock()
        self._draw()

    def counting(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, counting one unit per call."""

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            self.advance()
            return out

        return counted

    def log(self, write: Callable[[str], None]) -> Callable[[str], None]:
        """`write` (a line printer), clearing the live line first and redrawing it after."""

        def logged(line: str) -> None:
            self._clear()
            write(line)
            self._draw()

        return logged

    def close(self) -> None:
        """Remove the live line."""
        self._clear()

    def _draw(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K" + self.text())
            self.stream.flush()
            self.shown = True

    def _clear(self) -> None:
        if self.enabled and self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False
