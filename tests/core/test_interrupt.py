"""Ctrl-C (issue 26: it took 14-16 s and exited 1): within about a second, exit 130, nothing half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from addressable.cli import main
from addressable.core import interrupt
from addressable.core.atomic import atomic_dir, atomic_file

ROOT = Path(__file__).resolve().parents[2]


def test_atomic_writes_are_tracked_while_open_and_removed_on_a_forced_exit(tmp_path: Path) -> None:
    # the Ctrl-C comes while both are open
    with pytest.raises(KeyboardInterrupt), atomic_dir(tmp_path / "run") as tmp, atomic_file(tmp_path / "x.txt") as f:
        f.write("half")
        held = set(interrupt._temporaries)
        assert tmp in held and any(p.name.startswith(".x.txt.") for p in held)
        interrupt.remove_temporaries()  # what the watchdog does before it ends the process
        assert not tmp.exists() and not any(p.exists() for p in held)
        raise KeyboardInterrupt
    assert not interrupt._temporaries and not any(tmp_path.iterdir())  # nothing half-written, nothing held
    with atomic_dir(tmp_path / "run") as tmp:
        pass
    assert (tmp_path / "run").is_dir() and not interrupt._temporaries  # a result that lands is no temporary


def test_the_watchdog_starts_only_where_sigint_has_its_default_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interrupt, "_installed", False)
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(interrupt.install()))
    t.start()
    t.join()
    assert out == [False]  # not from another thread
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert not interrupt.install()  # a background job that ignores Ctrl-C keeps ignoring it
    finally:
        signal.signal(signal.SIGINT, old)


def test_an_interrupted_command_exits_130_not_click_s_1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import addressable.classify.paths as paths

    def stop(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(paths, "classify_paths", stop)
    monkeypatch.setattr(interrupt, "_announced", False)
    r = CliRunner().invoke(main, ["classify", str(ROOT / "tests" / "data" / "resnet50_train.json.gz")])
    assert r.exit_code == 130 and r.stderr == "error: interrupted: nothing was written\n"
    assert "Aborted" not in r.output


ADAPTER = '''
import torch
from addressable.capture.workload import WorkloadSpec

def build(cfg):
    torch.set_num_threads(1)
    a = torch.randn(7000, 7000)

    def step():  # one multiply of about 700 GFLOP: tens of seconds in C, where Python sees no Ctrl-C
        print("multiplying", flush=True)
        torch.mm(a, a)

    return step

WORKLOADS = [WorkloadSpec("slow-mm", "test", "one long matrix multiply", build, default_dtype="fp32",
                          dtypes=("fp32",))]
'''


@pytest.mark.slow
def test_ctrl_c_inside_a_long_c_call_stops_in_about_a_second(tmp_path: Path) -> None:
    (tmp_path / "slow_mm.py").write_text(textwrap.dedent(ADAPTER))
    out = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-m", "addressable", "profile", "slow-mm", "--device", "cpu", "--adapter",
                          str(tmp_path / "slow_mm.py"), "--out", str(out)], cwd=ROOT, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline() == "multiplying\n"  # the warm-up step is in its multiply
        time.sleep(0.3)
        assert p.poll() is None and any(q.name.endswith(".partial") for q in out.iterdir())
        start = time.monotonic()
        os.killpg(p.pid, signal.SIGINT)
        rc = p.wait(timeout=30)
        took = time.monotonic() - start
    finally:
        if p.poll() is None:
            p.kill()
    err = p.stderr.read()
    assert rc == 130, err
    assert took < 3.0, took  # GRACE_S, then the watchdog; the multiply alone takes far longer
    assert err.strip().endswith("error: interrupted: nothing was written") and "Traceback" not in err
    assert not any(out.iterdir())  # the .partial run folder is gone
