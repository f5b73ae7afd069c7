"""Stage 2: the ordered rule set (taxonomy.yaml) and the name -> category classifier.

Kernel rules match the kernel's qualified name (kernel_names.py), and also its template arguments
or parameter types where a rule says `template:` or `params:`; launch-op rules classify the CPU op
that launched a kernel, a signal of the same rank: it decides where no name rule claims the kernel,
and `disagreements` says, per pair of categories, which of the two decides where they differ.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.core.errors import AddressableError
from addressable.core.files import read_yaml
from addressable.core.names import distinct
from addressable.core.schema import check_version
from addressable.trace.kernel_names import KernelName, parse_kernel_name, template_args

DEFAULT_TAXONOMY = Path(__file__).with_name("taxonomy.yaml")
CLASSES = ("library", "replaceable")
UNCLASSIFIED = "unclassified"
RULE_SETS = ("kernel_rules", "cpu_op_rules", "launch_op_rules")
SIGNALS = ("name", "launch_op", "none")  # what classified a kernel: its own name, its launching op, nothing
_NUMBER = re.compile(r"^[-+\d.]+[a-z]*$|^\(?\w*\)?\s*(true|false|\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    """One rule: a category and its patterns (joined into `regex`); `key` and `index` say where it is written."""

    category: str
    regex: re.Pattern
    patterns: tuple[str, ...] = ()
    template: re.Pattern | None = None  # kernel rules: the template arguments must match this too
    params: re.Pattern | None = None  # kernel rules: the parameter types must match this too
    launch_op_wins: bool = False  # kernel rules: a launching op that a launch_op rule claims decides
    key: str = "kernel_rules"
    index: int = 0

    def matching_pattern(self, text: str) -> str:
        """The first of this rule's patterns that matches `text` ('' if none)."""
        return next((p for p in self.patterns if re.search(p, text, re.IGNORECASE)), "")


@dataclass(frozen=True)
class Disagreement:
    """Where the name says one of `name` and the launching op one of `op`: `decide` (op or name) wins, for `why`."""

    name: frozenset[str]
    op: frozenset[str]
    decide: str
    why: str
    index: int = 0


@dataclass(frozen=True)
class Taxonomy:
    """Categories with their class, and ordered rules for kernel names and CPU-op names."""

    classes: dict[str, str]
    descriptions: dict[str, str]
    kernel_rules: tuple[Rule, ...]
    cpu_op_rules: tuple[Rule, ...]
    source: str = ""
    launch_op_rules: tuple[Rule, ...] = ()
    wrappers: re.Pattern | None = None  # launcher templates whose first type argument is the real kernel
    disagreements: tuple[Disagreement, ...] = ()  # first match decides; none: the name decides

    def class_of(self, category: str) -> str:
        return self.classes.get(category, UNCLASSIFIED)

    def with_classes(self, overrides: dict[str, str]) -> Taxonomy:
        """A copy with some categories' class flipped (e.g. triton=library)."""
        for category, cls in overrides.items():
            if category not in self.classes:
                known = ", ".join(sorted(self.classes))
                raise AddressableError(f"unknown category '{category}' in --class (known: {known})")
            if cls not in CLASSES:
                raise AddressableError(f"class for '{category}' must be library or replaceable, not '{cls}'")
        return replace(self, classes={**self.classes, **overrides})

    def classify(self, names: pd.Series | list[str], kind: str = "kernel") -> pd.Series:
        """Category of each name; every unique name is matched once, first rule wins."""
        names = pd.Series(names, dtype="string" if not isinstance(names, pd.Series) else None)
        codes, uniques = pd.factorize(names.astype("string").fillna(""), sort=False)
        rule = self.match_rules(list(uniques), kind)
        categories = np.array([r.category if r else UNCLASSIFIED for r in rule] + [UNCLASSIFIED], dtype=object)
        return pd.Series(categories[codes] if len(codes) else [], index=names.index, dtype="string")

    def classify_kernels(self, names: pd.Series, ops: pd.Series | None = None) -> pd.DataFrame:
        """Each kernel's category from its own name, else from the CPU op that launched it.

        Columns: `category`, `signal` (name, launch_op or none), `name_category`, `op_category`
        (all categorical). Every unique name and unique op is matched once.
        """
        cats = [UNCLASSIFIED, *self.classes]
        code_of = {c: i for i, c in enumerate(cats)}
        n_codes, n_uniques = distinct(names, missing=None)
        n_rules = self.match_rules(n_uniques, "kernel")
        name_code = np.array([code_of[r.category] if r else 0 for r in n_rules] + [0], dtype=np.int32)[n_codes]
        defer = np.array([bool(r and r.launch_op_wins) for r in n_rules] + [False])[n_codes]
        op_code = np.zeros(len(name_code), dtype=np.int32)
        if ops is not None and self.launch_op_rules:
            o_codes, o_uniques = distinct(ops, missing=None)
            o_rules = self.match_rules(o_uniques, "launch_op")
            op_code = np.array([code_of[r.category] if r else 0 for r in o_rules] + [0], dtype=np.int32)[o_codes]
        use_op = (op_code > 0) & ((name_code == 0) | defer | self.op_decides(cats)[name_code, op_code])
        final = np.where(use_op, op_code, name_code)
        # the launching op is credited only where it changed the answer
        signal = np.where(final != name_code, 1, np.where(final > 0, 0, 2))
        dtype = pd.CategoricalDtype(cats)
        return pd.DataFrame({
            "category": pd.Categorical.from_codes(final, dtype=dtype),
            "signal": pd.Categorical.from_codes(signal, categories=list(SIGNALS)),
            "name_category": pd.Categorical.from_codes(name_code, dtype=dtype),
            "op_category": pd.Categorical.from_codes(op_code, dtype=dtype),
        }, index=names.index)

    def op_decides(self, cats: list[str]) -> np.ndarray:
        """A (name category, op category) table over `cats`: True where the launching op decides."""
        table = np.zeros((len(cats), len(cats)), dtype=bool)
        for (i, n), (j, o) in itertools.product(enumerate(cats), enumerate(cats)):
            entry = self.disagreement(n, o)
            table[i, j] = entry is not None and entry.decide == "op"
        return table

    def disagreement(self, name_category: str, op_category: str) -> Disagreement | None:
        """The first `disagreements` entry for a name and an op that differ, or None (the name decides)."""
        if name_category == op_category:
            return None
        return next((d for d in self.disagreements if name_category in d.name and op_category in d.op), None)

    def rules(self, kind: str) -> tuple[Rule, ...]:
        """The rule list for 'kernel', 'cpu_op' or 'launch_op' names."""
        return {"kernel": self.kernel_rules, "cpu_op": self.cpu_op_rules, "launch_op": self.launch_op_rules}[kind]

    def parse(self, name: str) -> KernelName:
        """A kernel name as kernel rules see it: parsed, with a launcher template (`cutlass::device_kernel<K>`) unwrapped."""
        parsed = parse_kernel_name(name)
        if self.wrappers is not None and self.wrappers.fullmatch(parsed.qualified):
            inner = next((a for a in template_args(parsed.template) if not _NUMBER.match(a)), "")
            if inner:  # rules see "cutlass::device_kernel<flash::FlashAttnFwdSm90>"
                kernel = parse_kernel_name(inner)
                return replace(parsed, qualified=f"{parsed.qualified}<{kernel.qualified}>", template=inner)
        return parsed

    def describe(self, rule: Rule | None, text: str) -> str:
        """Where a rule is written and which of its patterns matched `text`: 'taxonomy.yaml kernel_rules #3: 'x''."""
        if rule is None:
            return "no rule"
        where = f"{Path(self.source).name} {rule.key} #{rule.index} ({rule.category}): '{rule.matching_pattern(text)}'"
        where += f" and template '{rule.template.pattern}'" if rule.template is not None else ""
        return where + (f" and params '{rule.params.pattern}'" if rule.params is not None else "")

    def rule_for(self, names: list[str], category: str = "CATEGORY") -> str:
        """A kernel_rules entry (one YAML line) that would claim these kernel names."""
        stems = dict.fromkeys(re.escape(self.parse(n).qualified.split("::")[-1]) for n in names)
        patterns = ", ".join(f"'{s}'" for s in stems if s)
        return f"- {{category: {category}, patterns: [{patterns}]}}"

    def match_rules(self, names: list[str], kind: str = "kernel") -> list[Rule | None]:
        """The first rule that claims each (unique) name, or None."""
        rules = self.rules(kind)
        if kind == "kernel":
            parsed = [self.parse(n) for n in names]
            texts, templates, params = [p.qualified for p in parsed], [p.template for p in parsed], [p.params for p in parsed]
        else:
            texts, templates, params = names, names, names
        out: list[Rule | None] = [None] * len(names)
        todo = np.arange(len(names))
        for rule in rules:
            if not len(todo):
                break
            hit = [rule.regex.search(texts[i]) is not None
                   and (rule.template is None or rule.template.search(templates[i]) is not None)
                   and (rule.params is None or rule.params.search(params[i]) is not None) for i in todo]
            for i in todo[hit]:
                out[i] = rule
            todo = todo[~np.array(hit, dtype=bool)]
        return out


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Read and validate a taxonomy file (the packaged one by default)."""
    path = Path(path) if path else DEFAULT_TAXONOMY
    return parse_taxonomy(read_yaml(path, "taxonomy file"), str(path))


@cache
def default_taxonomy() -> Taxonomy:
    """The packaged taxonomy, read once (for readers that classify with the default rules)."""
    return load_taxonomy()


def parse_taxonomy(doc: Any, source: str = "<taxonomy>") -> Taxonomy:
    """Build a Taxonomy from its YAML document, naming the first problem found."""
    if not isinstance(doc, dict) or not isinstance(doc.get("categories"), dict):
        raise AddressableError(f"taxonomy {source} needs a 'categories' mapping")
    check_version(doc, "taxonomy", f"taxonomy {source}")
    classes, descriptions = {}, {}
    for name, spec in doc["categories"].items():
        cls = spec.get("class") if isinstance(spec, dict) else spec
        if cls not in CLASSES:
            raise AddressableError(f"taxonomy {source}: category '{name}' has class {cls!r}, "
                                   "expected library or replaceable")
        classes[str(name)] = cls
        descriptions[str(name)] = spec.get("description", "") if isinstance(spec, dict) else ""
    rule_sets = {key: _parse_rules(doc.get(key) or [], classes, source, key) for key in RULE_SETS}
    if not rule_sets["kernel_rules"]:
        raise AddressableError(f"taxonomy {source} has no kernel_rules")
    wrappers = doc.get("wrappers") or []
    if not isinstance(wrappers, list) or not all(isinstance(w, str) for w in wrappers):
        raise AddressableError(f"taxonomy {source}: 'wrappers' must be a list of regexes")
    return Taxonomy(classes, descriptions, rule_sets["kernel_rules"], rule_sets["cpu_op_rules"], source,
                    rule_sets["launch_op_rules"],
                    _compile(wrappers, f"taxonomy {source}: wrappers", re.IGNORECASE) if wrappers else None,
                    _parse_disagreements(doc.get("disagreements") or [], classes, source))


def _parse_disagreements(items: Any, classes: dict[str, str], source: str) -> tuple[Disagreement, ...]:
    """The `disagreements` list: each entry names categories under `name` and `op`, `decide` and `why`."""
    if not isinstance(items, list):
        raise AddressableError(f"taxonomy {source}: 'disagreements' must be a list")
    out = []
    for i, item in enumerate(items, 1):
        where = f"taxonomy {source}: disagreements #{i}"
        if not isinstance(item, dict) or set(item) != {"name", "op", "decide", "why"}:
            raise AddressableError(f"{where} needs exactly 'name', 'op', 'decide' and 'why'")
        if item["decide"] not in ("op", "name"):
            raise AddressableError(f"{where}: decide must be 'op' or 'name', not {item['decide']!r}")
        sides = {}
        for key in ("name", "op"):
            cats = _pattern_list(item[key])
            if not cats or set(cats) - set(classes):
                bad = sorted(set(cats) - set(classes)) if cats else []
                raise AddressableError(f"{where}: '{key}' must list declared categories"
                                       + (f" (unknown: {', '.join(bad)})" if bad else ""))
            sides[key] = frozenset(cats)
        out.append(Disagreement(sides["name"], sides["op"], item["decide"], str(item["why"]), i))
    return tuple(out)


def _compile(patterns: list[str], where: str, flags: int = re.IGNORECASE) -> re.Pattern:
    joined = "|".join(f"(?:{p})" for p in patterns)
    try:
        return re.compile(joined, flags)
    except re.error as e:
        bad = next((p for p in patterns if not _compiles(p)), joined)
        raise AddressableError(f"{where}: invalid regex {bad!r}: {e}") from None


def _pattern_list(value: Any) -> list[str] | None:
    patterns = [value] if isinstance(value, str) else value
    if not patterns or not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        return None
    return patterns


def _parse_rules(items: Any, classes: dict[str, str], source: str, key: str) -> tuple[Rule, ...]:
    if not isinstance(items, list):
        raise AddressableError(f"taxonomy {source}: '{key}' must be a list of rules")
    rules = []
    for i, item in enumerate(items, 1):
        where = f"taxonomy {source}: {key} #{i}"
        if not isinstance(item, dict) or "category" not in item:
            raise AddressableError(f"{where} needs a 'category'")
        category = item["category"]
        if category not in classes:
            raise AddressableError(f"{where}: category '{category}' is not declared under 'categories'")
        patterns = _pattern_list(item.get("patterns"))
        if patterns is None:
            raise AddressableError(f"{where} ({category}) needs a list of regex 'patterns'")
        extra = {}
        for part in ("template", "params"):
            given = _pattern_list(item.get(part))
            if item.get(part) is not None and given is None:
                raise AddressableError(f"{where} ({category}): '{part}' must be a regex or a list of them")
            extra[part] = _compile(given, f"{where} ({category})") if given else None
        unknown = set(item) - {"category", "patterns", "template", "params", "launch_op_wins"}
        if unknown:
            raise AddressableError(f"{where} ({category}): unknown key(s) {', '.join(sorted(unknown))}")
        rules.append(Rule(category, _compile(patterns, f"{where} ({category})"), tuple(patterns),
                          extra["template"], extra["params"], bool(item.get("launch_op_wins", False)), key, i))
    return tuple(rules)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
