"""scripts/install.sh keeps an importable torch (a CUDA build is never replaced) and says what each step does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a stand-in for python: `-c "import X; print(X.__version__)"` answers from $FAKE_HAVE, pip calls are logged
FAKE_PYTHON = r'''#!/usr/bin/env bash
if [[ $1 == -c ]]; then
    mod=$(sed -E 's/^import ([a-z]+);.*/\1/' <<<"$2")
    for have in $FAKE_HAVE; do
        if [[ ${have%%=*} == "$mod" ]]; then echo "${have#*=}"; exit 0; fi
    done
    exit 1
fi
echo "$*" >>"$FAKE_LOG"
for arg in "$@"; do
    if [[ $arg == -c ]]; then grabbing=1; continue; fi
    if [[ -n ${grabbing:-} ]]; then cat "$arg" >>"$FAKE_LOG"; grabbing=; fi
    case $arg in torch==*|torchvision) FAKE_HAVE="$FAKE_HAVE ${arg%%=*}=9.9"; echo "$FAKE_HAVE" >"$FAKE_STATE";; esac
done
'''


def _install(tmp_path: Path, have: str) -> tuple[list[str], str]:
    py = tmp_path / "python"
    py.write_text(FAKE_PYTHON)
    py.chmod(0o755)
    log, state = tmp_path / "pip.log", tmp_path / "state"
    wrapper = tmp_path / "py"  # re-reads what the fake pip "installed"
    wrapper.write_text(f'#!/usr/bin/env bash\nFAKE_HAVE="$(cat {state} 2>/dev/null || echo "$FAKE_HAVE")" exec {py} "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PYTHON": str(wrapper), "FAKE_HAVE": have, "FAKE_LOG": str(log), "FAKE_STATE": str(state)}
    r = subprocess.run(["bash", str(ROOT / "scripts" / "install.sh")], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return log.read_text().splitlines(), r.stderr


def test_keeps_an_installed_cuda_torch(tmp_path: Path) -> None:
    pip, progress = _install(tmp_path, "torch=2.11.0+cu130 torchvision=0.26.0+cu130")
    installs = [line for line in pip if line.startswith("-m pip install")]
    assert not any("torch==" in line or line.endswith(" torchvision") for line in installs), installs
    # every step is constrained to them, without the local label: pip rejects "torch==2.14.1+cu130" beside
    # a "torch<=2.14.1" constraint, while "torch==2.14.1" matches the installed +cu130 build
    assert "torch==2.11.0" in pip and "torchvision==0.26.0" in pip, pip
    assert all(" -c " in line for line in installs)
    assert any(line.endswith('-e .[test,dlrm]') for line in installs)
    assert "[1/4] torch 2.11.0+cu130 is installed: keeping it" in progress
    assert [line[:5] for line in progress.splitlines() if line.startswith("[")] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]


@pytest.mark.parametrize("have", ["", "torch=2.11.0+cu130"])
def test_installs_torch_or_torchvision_only_when_missing(tmp_path: Path, have: str) -> None:
    pip, progress = _install(tmp_path, have)
    torch_installs = [line for line in pip if line.startswith("-m pip install torch==")]
    assert bool(torch_installs) == (have == "")
    assert any(line.startswith("-m pip install -c") and line.endswith(" torchvision") for line in pip)
    assert "no importable torchvision" in progress
