"""Reading YAML and CSV files: a missing or malformed file is one AddressableError naming it.

Every YAML file (taxonomy.yaml, trace_format.yaml, module_scopes.yaml, peaks.yaml, the problem maps)
and every CSV file (a run folder's tables, a verify-batch pairs file) is read here; the formats' owners
check what the parsed document holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from addressable.core.errors import AddressableError


def read_yaml(path: Path, what: str) -> Any:
    """Parse a YAML file; a missing file or bad YAML is a one-line AddressableError naming `what`."""
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise AddressableError(f"no such {what}: {path}") from None
    except yaml.YAMLError as e:
        raise AddressableError(f"{what} {path} is not valid YAML: {str(e).splitlines()[0]}") from None


def read_csv(path: str | Path, **options: Any) -> pd.DataFrame:
    """A CSV file (pandas.read_csv with `options`); an unreadable or empty file is an AddressableError."""
    try:
        return pd.read_csv(path, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise AddressableError(f"cannot read {path}: {(str(e).splitlines() or [type(e).__name__])[0]}") from None
