"""The sandbox as a user meets it (issue 26): the package installed, not this checkout on sys.path.

Before, an editable install of a checkout under /tmp failed every candidate ("No module named
'addressable'"): bubblewrap gives the candidate an empty /tmp, and the editable finder points into the
checkout, which is not on sys.path. pytest hides that by putting the checkout first on sys.path, so
these tests build real installs in fresh venvs and run `python -m addressable verify` from elsewhere:
an editable install of a checkout under /tmp, and a wheel installed into a venv outside /tmp.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from addressable.verification.sandbox import sandbox_available

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox_available().sandboxed, reason="bubblewrap is not installed or does not work here (the sandbox under test)")]


def _checkout(dst: Path) -> Path:
    """A copy of what an install needs (the package, its build files) and the two files verified."""
    dst.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, dst / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for name in ("addressable", "workloads"):
        shutil.copytree(ROOT / name, dst / name, ignore=ignore)
    shutil.copy(ROOT / "examples/problems/05_relu.py", dst / "relu.py")
    shutil.copy(ROOT / "tests/verification/zoo/honest_relu.py", dst / "candidate.py")
    return dst


def _venv(where: Path) -> Path:
    """A venv whose only extra path is this interpreter's site-packages (torch, pip, setuptools), as a plain
    path: that folder's own .pth files, this checkout's editable finder among them, are not run there."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    py = where / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "zz_base_site.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return py


def _pip(py: Path, *args: str) -> None:
    subprocess.run([str(py), "-m", "pip", "--disable-pip-version-check", "-q", *args, "--no-deps",
                    "--no-build-isolation", "--no-index"], check=True, capture_output=True, timeout=600)


def _verify(py: Path, checkout: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(py), "-m", "addressable", "verify", str(checkout / "relu.py"), str(checkout / "candidate.py"),
                           "--set", "batch_size=64", "--set", "dim=128", "--trials", "2", "--calls", "4",
                           "--sandbox", "required"], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_editable_install_of_a_checkout_under_tmp(tmp_path: Path) -> None:
    assert str(tmp_path.resolve()).startswith("/tmp/")
    checkout = _checkout(tmp_path / "clone")
    py = _venv(tmp_path / "venv")
    _pip(py, "install", "-e", str(checkout))
    where = subprocess.run([str(py), "-c", "import addressable; print(addressable.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, check=True).stdout
    assert where.startswith(str(checkout))  # the editable finder, not sys.path, leads there
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = _verify(py, checkout, elsewhere)
    assert res.returncode in (0, 3), res.stdout + res.stderr  # 3: a review for noisy CPU timing
    assert "No module named" not in res.stdout and (": PASS" in res.stdout or ": REVIEW" in res.stdout)


def test_wheel_installed_into_a_venv_outside_tmp(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "clone")
    builder = _venv(tmp_path / "builder")
    _pip(builder, "wheel", "-w", str(tmp_path / "wheels"), str(checkout))
    wheel = next((tmp_path / "wheels").glob("addressable-*.whl"))
    outside = Path(tempfile.mkdtemp(prefix="addressable-venv-", dir="/var/tmp"))
    try:
        py = _venv(outside / "venv")
        _pip(py, "install", str(wheel))
        res = _verify(py, checkout, tmp_path)
        assert res.returncode in (0, 3), res.stdout + res.stderr
        assert ": PASS" in res.stdout or ": REVIEW" in res.stdout
    finally:
        shutil.rmtree(outside)
