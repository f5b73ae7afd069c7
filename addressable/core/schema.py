"""Format versions: every file addressable writes or ships says which version of its format it is.

`schema_version` is an integer in taxonomy.yaml, trace_format.yaml, breakdown.json and a run's
manifest.json and module_io.json. Readers call `check_version`: a file without the key predates versioning and is read
as version 1 (results/h200/ runs), a version this addressable does not know is one clear error.
"""

from __future__ import annotations

from typing import Any

from addressable.core.errors import AddressableError

KEY = "schema_version"
# format -> the version written now; readers know versions 1..current
VERSIONS = {"taxonomy": 1, "trace_format": 1, "breakdown": 1, "manifest": 1, "module_io": 1}


def check_version(doc: Any, fmt: str, where: str) -> int:
    """The schema_version of a format's document (1 when absent); an unknown one is an AddressableError."""
    v = doc.get(KEY, 1) if isinstance(doc, dict) else 1
    current = VERSIONS[fmt]
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= current:
        raise AddressableError(f"{where}: {fmt} {KEY} {v!r} is not one this addressable reads "
                               f"(1 to {current}); upgrade addressable or rewrite the file")
    return v
