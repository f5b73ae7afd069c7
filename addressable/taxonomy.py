"""Stage 2: the ordered rule set (taxonomy.yaml) and the name -> category classifier."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from addressable.errors import AddressableError

DEFAULT_TAXONOMY = Path(__file__).with_name("taxonomy.yaml")
CLASSES = ("library", "replaceable")
UNCLASSIFIED = "unclassified"
RULE_SETS = ("kernel_rules", "cpu_op_rules")


@dataclass(frozen=True)
class Rule:
    category: str
    regex: re.Pattern


@dataclass(frozen=True)
class Taxonomy:
    """Categories with their class, and ordered rules for kernel names and CPU-op names."""

    classes: dict[str, str]
    descriptions: dict[str, str]
    kernel_rules: tuple[Rule, ...]
    cpu_op_rules: tuple[Rule, ...]
    source: str = ""

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
        return Taxonomy({**self.classes, **overrides}, self.descriptions, self.kernel_rules,
                        self.cpu_op_rules, self.source)

    def classify(self, names: pd.Series | list[str], kind: str = "kernel") -> pd.Series:
        """Category of each name; every unique name is matched once, first rule wins."""
        names = pd.Series(names, dtype="string" if not isinstance(names, pd.Series) else None)
        codes, uniques = pd.factorize(names.astype("string").fillna(""), sort=False)
        categories = _match(pd.Series(uniques, dtype="string"), self.rules(kind))
        return pd.Series(categories[codes] if len(codes) else [], index=names.index, dtype="string")

    def rules(self, kind: str) -> tuple[Rule, ...]:
        return self.kernel_rules if kind == "kernel" else self.cpu_op_rules


def _match(uniques: pd.Series, rules: tuple[Rule, ...]) -> np.ndarray:
    out = np.full(len(uniques), UNCLASSIFIED, dtype=object)
    todo = np.ones(len(uniques), dtype=bool)
    for rule in rules:
        if not todo.any():
            break
        idx = np.flatnonzero(todo)
        idx = idx[[rule.regex.search(name) is not None for name in uniques.iloc[idx]]]
        out[idx] = rule.category
        todo[idx] = False
    return out


def read_yaml(path: Path, what: str) -> Any:
    """Parse a YAML file; a missing file or bad YAML is a one-line AddressableError naming `what`."""
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise AddressableError(f"no such {what}: {path}") from None
    except yaml.YAMLError as e:
        raise AddressableError(f"{what} {path} is not valid YAML: {str(e).splitlines()[0]}") from None


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Read and validate a taxonomy file (the packaged one by default)."""
    path = Path(path) if path else DEFAULT_TAXONOMY
    return parse_taxonomy(read_yaml(path, "taxonomy file"), str(path))


def parse_taxonomy(doc: Any, source: str = "<taxonomy>") -> Taxonomy:
    """Build a Taxonomy from its YAML document, naming the first problem found."""
    if not isinstance(doc, dict) or not isinstance(doc.get("categories"), dict):
        raise AddressableError(f"taxonomy {source} needs a 'categories' mapping")
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
    return Taxonomy(classes, descriptions, rule_sets["kernel_rules"], rule_sets["cpu_op_rules"], source)


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
        patterns = item.get("patterns")
        if isinstance(patterns, str):
            patterns = [patterns]
        if not patterns or not all(isinstance(p, str) for p in patterns):
            raise AddressableError(f"{where} ({category}) needs a list of regex 'patterns'")
        joined = "|".join(f"(?:{p})" for p in patterns)
        try:
            regex = re.compile(joined, re.IGNORECASE)
        except re.error as e:
            bad = next((p for p in patterns if not _compiles(p)), joined)
            raise AddressableError(f"{where} ({category}): invalid regex {bad!r}: {e}") from None
        rules.append(Rule(category, regex))
    return tuple(rules)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
