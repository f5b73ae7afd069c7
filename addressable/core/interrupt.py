"""Ctrl-C: stop within about a second, exit 130, leave nothing half-written.

Python raises KeyboardInterrupt only when the main thread next runs Python code, so a long call into C
(a matrix multiply, the profiler writing its trace) or a process pool waiting for its workers can hold
off Ctrl-C for many seconds; and click turns KeyboardInterrupt into exit code 1. `install()` (called
by the command line's entry point) adds a watchdog thread that wakes on SIGINT through
`signal.set_wakeup_fd` whatever the main thread is doing: the main thread gets GRACE_S to unwind as
usual (cli's `_user_errors` prints one line and exits 130), after which the watchdog removes the
temporary files and folders core.atomic has open and ends the process with exit code 130.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
GRACE_S = 0.5  # how long the main thread has to unwind before the watchdog ends the process
MESSAGE = "interrupted: nothing was written"

_temporaries: set[Path] = set()
_lock = threading.Lock()
_installed = False
_announced = False


def track(path: Path) -> None:
    """Note a temporary file or folder that a forced exit must remove (core.atomic calls this)."""
    with _lock:
        _temporaries.add(path)


def untrack(path: Path) -> None:
    """The temporary became its result, or was removed."""
    with _lock:
        _temporaries.discard(path)


def remove_temporaries() -> None:
    """Remove every tracked temporary file and folder."""
    with _lock:
        paths = list(_temporaries)
        _temporaries.clear()
    for p in paths:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def install(grace_s: float = GRACE_S) -> bool:
    """Start the watchdog (once, from the main thread, where SIGINT has Python's default handler: not in a
    background job that ignores it); True when it runs."""
    global _installed
    if _installed:
        return True
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:
        return False
    threading.Thread(target=_watch, args=(r, grace_s), name="addressable-interrupt", daemon=True).start()
    _installed = True
    return True


def announce(write: Callable[[str], None] | None = None) -> None:
    """Say, once, that the command was interrupted: with `write`, or straight to fd 2 (the watchdog: no lock
    that a stuck main thread may hold)."""
    global _announced
    if not _announced:
        _announced = True
        line = f"error: {MESSAGE}"
        if write is None:
            os.write(2, f"{line}\n".encode())
        else:
            write(line)


def _watch(fd: int, grace_s: float) -> None:
    while signal.SIGINT not in os.read(fd, 64):  # one byte per signal: its number
        pass
    time.sleep(grace_s)
    remove_temporaries()
    try:
        announce()
    finally:
        os._exit(EXIT_CODE)
