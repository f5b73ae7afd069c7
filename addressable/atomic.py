"""Write files and folders so that a failure never leaves a half-written result."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from addressable.errors import AddressableError


def _writable_parent(path: Path) -> Path:
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AddressableError(f"cannot create output folder {parent}: {e.strerror or e}") from None
    if not os.access(parent, os.W_OK):
        raise AddressableError(f"output folder {parent} is not writable")
    return parent


def write_text(path: str | Path, text: str) -> Path:
    """Write text to path via a temporary file in the same folder and a rename."""
    path = Path(path)
    parent = _writable_parent(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces `path`, on failure it is removed."""
    path = Path(path)
    parent = _writable_parent(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=parent))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
