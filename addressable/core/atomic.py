"""Write files and folders so that a failure never leaves a half-written result.

Files and folders get the permissions the user's umask gives (0644 and 0755 usually), not the
0600/0700 of the temporary-file functions, so colleagues on a shared machine can read results.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from addressable.core import interrupt
from addressable.core.errors import AddressableError


def umask() -> int:
    """The process's umask (read without changing it for longer than a moment)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _writable_parent(path: Path) -> Path:
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AddressableError(f"cannot create output folder {parent}: {e.strerror or e}") from None
    if not os.access(parent, os.W_OK):
        raise AddressableError(f"output folder {parent} is not writable")
    return parent


@contextmanager
def atomic_file(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Yield a temporary file beside `path` (opened with `mode`, "w" or "wb"); on success it becomes `path`."""
    path = Path(path)
    parent = _writable_parent(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    interrupt.track(Path(tmp))
    try:
        with os.fdopen(fd, mode) as f:
            yield f
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        interrupt.untrack(Path(tmp))


def write_text(path: str | Path, text: str) -> Path:
    """Write text to path via a temporary file in the same folder and a rename."""
    with atomic_file(path) as f:
        f.write(text)
    return Path(path)


def free_path(path: str | Path) -> Path:
    """`path` if nothing is there, else the first of `path-2`, `path-3`, ... that is free."""
    path = Path(path)
    n = 2
    free = path
    while free.exists():
        free = path.with_name(f"{path.name}-{n}")
        n += 1
    return free


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces `path`, on failure it is removed."""
    path = Path(path)
    parent = _writable_parent(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=parent))
    interrupt.track(tmp)
    try:
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes 0700
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        interrupt.untrack(tmp)
