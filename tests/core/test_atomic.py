"""addressable.core.atomic: results get the umask's permissions, free names, nothing half-written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from addressable.core.atomic import atomic_dir, atomic_file, free_path, umask, write_text


@pytest.fixture(params=[0o022, 0o002])
def mask(request: pytest.FixtureRequest):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_files_and_folders_follow_the_umask(tmp_path: Path, mask: int) -> None:
    f = write_text(tmp_path / "a" / "x.txt", "hi")
    assert _mode(f) == 0o666 & ~mask  # 0644 under 022: readable by colleagues, not mkstemp's 0600
    with atomic_dir(tmp_path / "run") as tmp:
        write_text(tmp / "breakdown.json", "{}")
        (tmp / "sub").mkdir()
    run = tmp_path / "run"
    assert _mode(run) == 0o777 & ~mask  # not mkdtemp's 0700
    assert _mode(run / "breakdown.json") == 0o666 & ~mask
    assert _mode(run / "sub") == 0o777 & ~mask
    with atomic_file(tmp_path / "b.bin", "wb") as fh:
        fh.write(b"\x00")
    assert _mode(tmp_path / "b.bin") == 0o666 & ~mask
    assert umask() == mask


def test_failed_writes_leave_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_file(tmp_path / "x.txt") as fh:
        fh.write("half")
        raise RuntimeError
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "run") as tmp:
        write_text(tmp / "a.txt", "half")
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []


def test_free_path_counts_up(tmp_path: Path) -> None:
    assert free_path(tmp_path / "run") == tmp_path / "run"
    (tmp_path / "run").mkdir()
    assert free_path(tmp_path / "run") == tmp_path / "run-2"
    (tmp_path / "run-2").mkdir()
    assert free_path(tmp_path / "run") == tmp_path / "run-3"
