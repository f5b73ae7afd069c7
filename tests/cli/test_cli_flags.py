"""Each flag means one thing in every command; renamed spellings still work for one release, with a warning."""

from __future__ import annotations

from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _commands(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    out = {}
    for name, cmd in group.commands.items():
        if cmd.hidden:  # a deprecated name (`bench`) has the same subcommands as the current one
            continue
        if isinstance(cmd, click.Group):
            out.update(_commands(cmd, f"{prefix}{name} "))
        else:
            out[prefix + name] = cmd
    return out


def _options(flag: str) -> dict[str, click.Option]:
    """Each command's visible option spelled `flag`."""
    return {name: p for name, cmd in _commands().items() for p in cmd.params
            if isinstance(p, click.Option) and flag in p.opts and not p.hidden}


def test_each_flag_means_one_thing() -> None:
    outs = _options("--out")
    assert {"classify", "profile", "sweep"} <= set(outs)
    assert all(isinstance(p.type, click.Path) and not p.type.file_okay for p in outs.values()), \
        "--out is always a folder"
    runs = _options("--runs")
    assert set(runs) == {"project", "plot"} and all(p.multiple for p in runs.values()), "--runs: run folders"
    assert set(_options("--repeats")) == {"profile", "sweep"}, "--repeats: profile's repeats"
    calls = _options("--calls")
    assert set(calls) == {"verify", "verify-batch", "dlrm-bench time"}, "--calls: timed calls of a model"
    devices = _options("--device")
    assert len(devices) >= 6 and {p.default for p in devices.values()} == {"auto"}, "--device: auto by default"
    for flag in ("--csv", "--figure", "--peaks"):  # files
        assert all(isinstance(p.type, click.Path) and not p.type.dir_okay for p in _options(flag).values()), flag


class _Reached(Exception):
    """Raised by a stand-in for verification.runner.verify once it has the arguments the CLI passed."""


def test_old_verify_spelling_still_works_and_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify --runs 2` reaches the verifier as calls=2, with the warning: the flag's meaning, not a verdict (an
    honest candidate's timing on a loaded machine can fail its clock check, which says nothing about the flag)."""
    from addressable.verification import runner

    seen: dict = {}

    def reached(reference: Path, candidate: Path, **kw: object) -> None:
        seen.update(kw)
        raise _Reached
    monkeypatch.setattr(runner, "verify", reached)
    zoo = ROOT / "tests" / "verification" / "zoo"
    res = CliRunner().invoke(main, ["verify", str(zoo / "softmax_long.py"), str(zoo / "honest_torch.py"), "--runs", "2",
                                    "--trials", "2", "--warmup", "0", "--device", "cpu"])
    assert isinstance(res.exception, _Reached), res.output
    assert seen["calls"] == 2 and seen["trials"] == 2 and seen["warmup"] == 0
    assert "warning: --runs is deprecated here and goes in the next release; use --calls" in res.stderr


def test_old_dlrm_bench_spelling_still_works_and_warns(tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    res = CliRunner().invoke(main, ["dlrm-bench", "time", "10", "--small", "--device", "cpu", "--warmup", "0",
                                    "--repeats", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "warning: --repeats is deprecated here and goes in the next release; use --calls" in res.stderr
    assert "warning: --out is deprecated here and goes in the next release; use --csv" in res.stderr
    assert pd.read_csv(out)["problem"].tolist() == ["10_sigmoid_bce_loss"]


def test_old_spellings_are_hidden_from_help() -> None:
    text = CliRunner().invoke(main, ["verify", "--help"]).output
    assert "--calls" in text and "--runs" not in text
    text = CliRunner().invoke(main, ["plot", "--help"]).output
    assert "--figure" in text and "--out" not in text
