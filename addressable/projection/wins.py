"""Wins files and what their targets mean: a wins.csv (or a JSON of speedups) read and validated, and each
target resolved to a group of kernels (a category, a regex, a module, or a problem name through the
problem maps). Written by `addressable verify-batch` (write_wins), read by `addressable project`.

Targets in wins.csv, resolved in this order:
  `module:M[@forward|@backward]`  the kernels launched inside module class M, or inside the modules
                   whose qualified name matches the glob M (`module:LlamaRMSNorm`, `module:*.mlp.act_fn`),
                   submodules included, from the run's modules.csv (addressable/classify/modules.py); the
                   suffix keeps one direction. Optional column `kernels_after`: kernels the
                   replacement launches per call (reported as kernels per step after; default unchanged).
                   Optional column `cpu_us_after`: the replacement's CPU time per forward call in µs,
                   profiler-free, inside the step (capture.scopes.in_step_cpu_us; timed alone with
                   forward_cpu_us it reads about half that, docs/replay.md); with the run's
                   module_cpu.csv, the replay runs model `given` for the target (docs/replay.md).
                   Optional column `backward_cpu_us_after`: the replacement's backward CPU time per call in
                   µs, profiler-free (capture.scopes.in_step_cpu_us's second value); with module_cpu.csv's backward
                   columns, `given` replays the module's backward as measured, not under two hypotheses.
                   Optional columns `cpu_ratio_after` and `backward_cpu_ratio_after`, in place of those two:
                   the replacement's CPU per call over the original's, read in alternating steps
                   (capture.scopes.paired_cpu's forward_ratio and backward_ratio); `project` multiplies
                   module_cpu.csv's CPU per call of the module by them.
                   Optional column `output_dtype`: the dtype the replacement returns (`bfloat16`, ...), where
                   it is not the module's; where the module returned a wider dtype than it took (an eager
                   norm returning float32 under autocast) and the replacement returns the one it took,
                   `given` also removes the casts its consumers made of its output (replay.consumer_casts).
  `re:REGEX`       kernels of the run whose kernels.csv name matches REGEX (re.search, case-sensitive;
                   write (?i) for case-insensitive).
  a category       a taxonomy category (case-insensitive), e.g. `softmax`.
  a problem name   a KernelBench problem (kernelbench_map.yaml) or a DLRM-Bench problem (the
                   `CATEGORY` constant of its module in addressable/dlrm_bench/problems), e.g.
                   `23_Softmax`; case, a `.py` suffix, surrounding `_` and the numeric prefix are
                   ignored (`softmax`, `Softmax.py`). It stands for its category. A KernelBench
                   level-2 problem listed in kernelbench_level2.yaml stands for its module target.
DLRM-Bench problems come from addressable.dlrm_bench.problem_categories (read without importing them).
"""

from __future__ import annotations

import difflib
import io
import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.classify.modules import MODULE_PREFIX, ModuleTarget
from addressable.classify.taxonomy import default_taxonomy
from addressable.core.atomic import write_text
from addressable.core.errors import AddressableError
from addressable.core.files import read_yaml
from addressable.dlrm_bench import problem_categories
from addressable.verification.runner import WINS_COLUMNS

KERNELBENCH_MAP = Path(__file__).with_name("kernelbench_map.yaml")
KERNELBENCH_LEVEL2 = Path(__file__).with_name("kernelbench_level2.yaml")
REGEX_PREFIX = "re:"
REQUIRED_COLUMNS = ("target", "speedup")
OPTIONAL_COLUMNS = ("verified", "source", "notes", "speedup_lo", "speedup_hi", "kernels_after", "cpu_us_after",
                    "backward_cpu_us_after", "cpu_ratio_after", "backward_cpu_ratio_after", "output_dtype")
# the floating dtypes a module may return, as torch names them (`torch.` is dropped)
DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
          "float8_e5m2fnuz")
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


# ---------------------------------------------------------------------------------------------
# Wins

def load_wins(path: str | Path) -> pd.DataFrame:
    """Read a wins.csv (or a results JSON of speedups, see _kernelbench_json) and validate every row; see parse_wins."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise AddressableError(f"no such speedups file: {path}") from None
    except (UnicodeDecodeError, IsADirectoryError) as e:
        raise AddressableError(f"cannot read speedups file {path}: {e}") from None
    if not text.strip():
        raise AddressableError(f"speedups file {path} is empty")
    if text.lstrip()[0] in "[{":
        raw, notes = _kernelbench_json(text, path)
    else:
        try:
            with warnings.catch_warnings():  # a row with more fields than the header is an error
                warnings.simplefilter("error", pd.errors.ParserWarning)
                raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True,
                                  index_col=False)
        except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError) as e:
            raise AddressableError(f"speedups file {path} is not a readable CSV: {e}") from None
        notes = []
    out = parse_wins(raw, str(path))
    out.attrs["warnings"] = notes + out.attrs.get("warnings", [])
    return out


def _kernelbench_json(text: str, path: Path) -> tuple[pd.DataFrame, list[str]]:
    """{name: {speedup, correct}} / {name: speedup} / [{problem|name, speedup, correct|verified}]."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise AddressableError(f"speedups file {path} is not valid JSON: {err}") from None
    if isinstance(doc, dict):
        entries = [({"speedup": v} if not isinstance(v, dict) else v, str(k)) for k, v in doc.items()]
    elif isinstance(doc, list):
        entries = []
        for i, e in enumerate(doc, 1):
            if not isinstance(e, dict):
                raise AddressableError(f"speedups file {path}: entry {i} is not an object")
            name = e.get("problem", e.get("name", e.get("target")))
            if not isinstance(name, str) or not name.strip():
                raise AddressableError(f"speedups file {path}: entry {i} has no 'problem' or 'name'")
            entries.append((e, name))
    else:
        raise AddressableError(f"speedups file {path}: expected a JSON object or list")
    if not entries:
        raise AddressableError(f"speedups file {path} is empty")
    if not any("speedup" in e for e, _ in entries) and any("runtime" in e for e, _ in entries):
        raise AddressableError(f"speedups file {path} holds runtimes but no speedups (KernelBench's eval_results.json "
                               "does): run `addressable verify-batch` on its problem/candidate pairs for a wins.csv")
    rows, notes = [], []
    for e, name in entries:
        ok = e.get("verified", e.get("correct"))
        speedup = e.get("speedup")
        if ok is False and (speedup is None or (isinstance(speedup, int | float) and speedup <= 0)):
            notes.append(f"{path}: '{name}' failed (correct=false, no speedup); skipped")
            continue
        rows.append({"target": name.removesuffix(".py"), "speedup": _cell(speedup),
                     "verified": _cell(ok), "speedup_lo": _cell(e.get("speedup_lo")),
                     "speedup_hi": _cell(e.get("speedup_hi")), "source": _cell(e.get("source", str(path))),
                     "notes": _cell(e.get("notes"))})
    if not rows:
        raise AddressableError(f"speedups file {path} has no usable entries (all failed)")
    return pd.DataFrame(rows), notes


def _cell(v: Any) -> str:
    return "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def parse_wins(raw: pd.DataFrame, source: str = "wins") -> pd.DataFrame:
    """Validate a raw wins table; the whole file is rejected on the first bad row.

    Returns row (1-based data row), target, speedup, speedup_lo, speedup_hi, kernels_after, cpu_us_after,
    backward_cpu_us_after, cpu_ratio_after, backward_cpu_ratio_after (NaN where not given), output_dtype ("" where
    not given), verified, source, notes.
    A `row` column in `raw` (e.g. a table this function returned) is ignored and renumbered.
    """
    if raw.empty and not len(raw.columns):
        raise AddressableError(f"speedups file {source} is empty")
    raw = raw.rename(columns=lambda c: str(c).strip().lower())
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise AddressableError(f"speedups file {source} is missing column(s) {', '.join(missing)} "
                               f"(has: {', '.join(map(str, raw.columns))})")
    if raw.empty:
        raise AddressableError(f"speedups file {source} has a header but no rows")
    notes = [f"{source}: ignoring unknown column '{c}'" for c in raw.columns
             if c not in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS, "row")]
    rows = []
    for i, r in enumerate(raw.to_dict(orient="records"), 1):
        where = f"{source} row {i}"
        target = "" if _empty(r["target"]) else str(r["target"]).strip()
        if not target:
            raise AddressableError(f"{where}: empty target")
        k = _speedup(r["speedup"], where, "speedup")
        lo = k if _empty(r.get("speedup_lo")) else _speedup(r["speedup_lo"], where, "speedup_lo")
        hi = k if _empty(r.get("speedup_hi")) else _speedup(r["speedup_hi"], where, "speedup_hi")
        if not lo <= k <= hi:
            raise AddressableError(f"{where}: need speedup_lo <= speedup <= speedup_hi, got {lo:g}, {k:g}, {hi:g}")
        rows.append({"row": i, "target": target, "speedup": k, "speedup_lo": lo, "speedup_hi": hi,
                     "kernels_after": _kernels_after(r.get("kernels_after"), where),
                     "cpu_us_after": _cpu_us_after(r.get("cpu_us_after"), where),
                     "backward_cpu_us_after": _cpu_us_after(r.get("backward_cpu_us_after"), where,
                                                            "backward_cpu_us_after"),
                     **{c: _cpu_ratio(r, where, c, us) for c, us in
                        (("cpu_ratio_after", "cpu_us_after"), ("backward_cpu_ratio_after", "backward_cpu_us_after"))},
                     "output_dtype": _output_dtype(r.get("output_dtype"), where),
                     "verified": _verified(r.get("verified"), where),
                     "source": "" if _empty(r.get("source")) else str(r["source"]).strip(),
                     "notes": "" if _empty(r.get("notes")) else str(r["notes"]).strip()})
    out = pd.DataFrame(rows)
    key = ["target", "speedup", "speedup_lo", "speedup_hi", "verified", "source"]
    dup = out.duplicated(key, keep=False)
    if dup.any():
        first = out[dup].iloc[0]
        same = out.loc[dup & (out[key] == first[key]).all(axis=1), "row"].tolist()
        raise AddressableError(f"{source}: rows {' and '.join(map(str, same))} are duplicates "
                               f"(target '{first['target']}', speedup {first['speedup']:g})")
    out.attrs["warnings"] = notes
    return out


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _speedup(v: Any, where: str, column: str) -> float:
    if _empty(v):
        raise AddressableError(f"{where}: missing {column}")
    try:
        k = float(str(v).strip().removesuffix("x")) if not isinstance(v, int | float) else float(v)
    except ValueError:
        raise AddressableError(f"{where}: {column} '{v}' is not a number") from None
    if math.isnan(k) or k <= 0:
        raise AddressableError(f"{where}: {column} must be a positive number, got '{v}'")
    return k


def _kernels_after(v: Any, where: str) -> float:
    """Kernels a replacement launches per call (NaN: unchanged)."""
    if _empty(v):
        return math.nan
    try:
        n = float(v)
    except (TypeError, ValueError):
        raise AddressableError(f"{where}: kernels_after '{v}' is not a number") from None
    if not (math.isfinite(n) and n >= 0 and n == int(n)):
        raise AddressableError(f"{where}: kernels_after must be a whole number >= 0, got '{v}'")
    return n


def _cpu_ratio(r: dict[str, Any], where: str, column: str, us_column: str) -> float:
    """A replacement's CPU per call over the original's (NaN: not given); a row gives it or `us_column`, not both."""
    if not _empty(r.get(column)) and not _empty(r.get(us_column)):
        raise AddressableError(f"{where}: give {us_column} or {column}, not both")
    return _non_negative(r.get(column), where, column, "a ratio")


def _cpu_us_after(v: Any, where: str, column: str = "cpu_us_after") -> float:
    """A replacement's CPU time per call in µs (NaN: not measured)."""
    return _non_negative(v, where, column, "a number of µs")


def _non_negative(v: Any, where: str, column: str, what: str) -> float:
    """A finite number >= 0 (NaN where empty)."""
    if _empty(v):
        return math.nan
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise AddressableError(f"{where}: {column} '{v}' is not a number") from None
    if not (math.isfinite(x) and x >= 0):
        raise AddressableError(f"{where}: {column} must be {what} >= 0, got '{v}'")
    return x


def _output_dtype(v: Any, where: str) -> str:
    """The dtype a replacement returns, as torch names it ("" where not given)."""
    if _empty(v):
        return ""
    name = str(v).strip().lower().removeprefix("torch.")
    if name not in DTYPES:
        raise AddressableError(f"{where}: output_dtype '{v}' is not a floating dtype (one of {', '.join(DTYPES)})")
    return name


def _verified(v: Any, where: str) -> bool:
    if _empty(v):
        return True
    if isinstance(v, bool | np.bool_):
        return bool(v)
    s = str(v).strip().lower()
    if s in _TRUE or s in _FALSE:
        return s in _TRUE
    raise AddressableError(f"{where}: verified must be true or false, got '{v}'")


def write_wins(path: str | Path, table: pd.DataFrame) -> Path:
    """A wins.csv of verified speedups (the WINS_COLUMNS of `table`, e.g. verify_batch's rows), written atomically."""
    return write_text(path, table[WINS_COLUMNS].to_csv(index=False))


# ---------------------------------------------------------------------------------------------
# Targets

def load_problem_map(path: str | Path | None = None,
                     problem_dirs: Sequence[str | Path] | None = None) -> dict[str, str]:
    """Problem name -> category: kernelbench_map.yaml (all sections) plus DLRM-Bench problems' CATEGORY (or those
    of the problem files in `problem_dirs`)."""
    path = Path(path) if path else KERNELBENCH_MAP
    doc = read_yaml(path, "problem map")
    if not isinstance(doc, dict) or not all(isinstance(s, dict) for s in doc.values()):
        raise AddressableError(f"problem map {path} must map sections to {{problem: category}}")
    known = default_taxonomy().classes
    out: dict[str, str] = {}
    for section, entries in doc.items():
        for name, category in entries.items():
            if category not in known:
                raise AddressableError(f"problem map {path}: {section}.{name} has unknown category '{category}'")
            out[str(name)] = category
    for name, category in problem_categories(problem_dirs).items():
        if category in known:
            out.setdefault(name, category)
    return out


def load_module_problems(path: str | Path | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """KernelBench level-2 problems (kernelbench_level2.yaml): name -> the `module:` target it stands for,
    and name -> why it has none."""
    path = Path(path) if path else KERNELBENCH_LEVEL2
    doc = read_yaml(path, "level-2 problem map")
    modules = doc.get("modules") if isinstance(doc, dict) else None
    unmapped = doc.get("unmapped") if isinstance(doc, dict) else None
    if not isinstance(modules, dict) or not all(str(t).startswith(MODULE_PREFIX) for t in modules.values()) \
            or not isinstance(unmapped, dict):
        raise AddressableError(f"level-2 problem map {path}: needs 'modules' (problem: module:TARGET) "
                               "and 'unmapped' (problem: reason)")
    return {str(k): str(v) for k, v in modules.items()}, {str(k): str(v) for k, v in unmapped.items()}


def _norm(name: str) -> str:
    """A problem name as matched: the last path component, lower case, no .py, no outer underscores."""
    return name.strip().replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".py").strip("_")


@dataclass(frozen=True)
class Target:
    """What one wins.csv target resolved to: a category group or a regex group."""

    group: str  # the group key: the category name, "re:REGEX" or "module:NAME[@direction]"
    category: str | None = None
    regex: re.Pattern | None = None
    module: ModuleTarget | None = None


class Resolver:
    """Turns wins.csv targets into groups (regex, category, problem name: in that order)."""

    def __init__(self, categories: set[str], problems: dict[str, str],
                 level2: tuple[dict[str, str], dict[str, str]] | None = None) -> None:
        self.categories = {c.lower(): c for c in categories}
        self.module_problems: dict[str, str] = {}
        self.unmapped: dict[str, str] = {}
        for table, entries in zip((self.module_problems, self.unmapped), level2 or ({}, {}), strict=True):
            for name, value in entries.items():
                table[_norm(name)] = value
                table.setdefault(_norm(re.sub(r"^\d+_", "", name.strip())), value)
        self.problems: dict[str, str | None] = {}
        short: dict[str, set[str]] = {}
        for name, category in problems.items():
            self.problems[_norm(name)] = category
            short.setdefault(_norm(re.sub(r"^\d+_", "", name.strip())), set()).add(category)
        for name, cats in short.items():  # an unprefixed name shared by two categories is ambiguous
            self.problems.setdefault(name, next(iter(cats)) if len(cats) == 1 else None)

    def resolve(self, target: str, where: str) -> tuple[Target | None, str]:
        """The target, or None and why not."""
        if target.startswith(MODULE_PREFIX):
            try:
                m = ModuleTarget.parse(target)
            except ValueError as e:
                raise AddressableError(f"{where}: bad module target '{target}': {e}") from None
            return Target(MODULE_PREFIX + m.pattern + (f"@{m.direction}" if m.direction else ""), module=m), ""
        if target.startswith(REGEX_PREFIX):
            pattern = target[len(REGEX_PREFIX):]
            if not pattern:
                raise AddressableError(f"{where}: empty regex in target '{target}'")
            try:
                return Target(target, regex=re.compile(pattern)), ""
            except re.error as e:
                raise AddressableError(f"{where}: invalid regex in target '{target}': {e}") from None
        if target.lower() in self.categories:
            c = self.categories[target.lower()]
            return Target(c, category=c), ""
        key = _norm(target)
        if key in self.module_problems:  # a KernelBench level-2 problem that one module runs
            return self.resolve(self.module_problems[key], where)
        if key in self.unmapped and key not in self.problems:
            return None, f"KernelBench level-2 problem with no module target ({self.unmapped[key]})"
        if key in self.problems:
            category = self.problems[key]
            if category is None:
                return None, "ambiguous problem name (give the numeric prefix)"
            return Target(category, category=category), ""
        near = (difflib.get_close_matches(target.lower(), self.categories, n=2, cutoff=0.75)  # categories first
                or difflib.get_close_matches(key, self.problems, n=2, cutoff=0.75))
        hint = f"; did you mean {' or '.join(repr(self.categories.get(n, n)) for n in near)}?" if near else ""
        raise AddressableError(f"{where}: unknown target '{target}': not a category, a re: regex or a known "
                               f"problem name{hint}")
