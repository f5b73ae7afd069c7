"""Progress on stderr for long phases: done/total and an ETA, only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """`label: done/total [note] (ETA …)` rewritten in place; silent when the stream is not a terminal."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()

    def update(self, done: int, note: str = "") -> None:
        """Report `done` of `total` finished, with an optional note (the item now running)."""
        self.done = done
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        eta = f" (about {elapsed / done * (self.total - done):.0f} s left)" if 0 < done < self.total else ""
        self.stream.write(f"\r\033[K{self.label}: {done}/{self.total}{' ' + note if note else ''}{eta}")
        self.stream.flush()

    def close(self) -> None:
        """End the progress line."""
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
