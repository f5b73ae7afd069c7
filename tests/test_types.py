"""The static type check: mypy, configured in pyproject.toml ([tool.mypy]), finds no error in addressable/ and
workloads/ (the DLRM-Bench problem and candidate files included), and the same configuration reports the
errors it is there to catch.

It runs cold, as CI does: no cache is read or written (--cache-dir os.devnull). About 35 s and 1.7 GB on a
2-core machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"


def mypy(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m mypy` with the project's configuration, from the repository root, without a cache."""
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(CONFIG), "--cache-dir", os.devnull]
    return subprocess.run([*cmd, *map(str, args)], cwd=ROOT, capture_output=True, text=True)


def test_the_package_type_checks() -> None:
    res = mypy()  # the files of [tool.mypy]
    report = res.stdout + res.stderr
    assert res.returncode == 0, f"mypy found errors (run `python -m mypy`):\n{report}"
    git = ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"]
    tracked = subprocess.run([*git, "addressable/*.py", "workloads/*.py"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert f"no issues found in {len(tracked)} source files" in report, report  # none left out


BAD = '''\
from __future__ import annotations

from pathlib import Path


class Taxonomy:
    classes: dict[str, str]


def check_of_run(folder: Path, taxonomy: Taxonomy | None = None) -> int:
    return len(taxonomy.classes)  # taxonomy may be None


def roofline(source: Path, taxonomy: Path | None) -> int:
    return check_of_run(source, taxonomy)  # the rule file's path where the rules belong


def first(names: list[str]) -> str:
    return names[0]  # type: ignore[index]
'''


def test_the_configuration_reports_what_it_is_there_to_catch(tmp_path: Path) -> None:
    """A file with three mistakes: a path passed for the rules (the `roofline --taxonomy` bug), an attribute
    of something that may be None, and a stale `type: ignore` (reported only under the project's
    warn_unused_ignores)."""
    bad = tmp_path / "bad.py"
    bad.write_text(BAD)
    res = mypy(bad)
    report = res.stdout + res.stderr
    assert res.returncode == 1, report
    errors = [x.split(":", 2)[1:] for x in report.splitlines() if x.startswith(f"{bad}:")]

    def line_of(text: str) -> str:
        return str(next(i for i, x in enumerate(BAD.splitlines(), 1) if text in x))

    assert len(errors) == 3, report
    found = dict(errors)
    assert "[union-attr]" in found[line_of("may be None")], report
    assert '"Path | None"; expected "Taxonomy | None"' in found[line_of("where the rules belong")], report
    assert 'Unused "type: ignore" comment' in found[line_of("type: ignore")], report
