"""Which format a trace file is: from its name and first bytes, never by trust in the name alone.

"kineto" (Kineto / Chrome JSON, plain or gzipped: the default, whose reader words every error of a
file that is not JSON), "rocprof" (rocprofv3 JSON), "nsys" (an SQLite file: an Nsight Systems export,
which trace.nsys checks). Formats that are recognised and not read are one-line AddressableErrors
here: a Perfetto protobuf, an Nsight Systems report (.nsys-rep), a PyTorch execution trace.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from addressable.core.errors import AddressableError

HEAD_BYTES = 4096
_GZIP_MAGIC = b"\x1f\x8b"
_SQLITE_MAGIC = b"SQLite format 3\0"
_PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".perfetto", ".proto", ".pb")
_NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
_ROCPROF = re.compile(rb'\s*\{\s*"rocprofiler-sdk-tool"\s*:')
_EXECUTION_TRACE = re.compile(rb'\s*\{\s*"schema"\s*:')


def trace_kind(path: str | Path) -> str:
    """"kineto", "rocprof" or "nsys"; an AddressableError for a format that is recognised and not read."""
    path = Path(path)
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(_NSYS_REPORT_SUFFIXES):
        raise AddressableError(f"{path} is an Nsight Systems report: export it with "
                               "`nsys export --type sqlite` and pass the .sqlite file")
    if name.endswith(_PERFETTO_SUFFIXES):
        raise perfetto_error(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(HEAD_BYTES)
    except OSError:
        return "kineto"  # the JSON reader words a missing or unreadable file
    if raw.startswith(_SQLITE_MAGIC):
        return "nsys"
    if raw[:1] == b"\n" and not _text(raw):  # a protobuf's first field (a trace packet), in a binary file
        raise perfetto_error(path)
    first = head(path) if raw.startswith(_GZIP_MAGIC) else raw
    if _ROCPROF.match(first):
        return "rocprof"
    if _EXECUTION_TRACE.match(first) and b'"nodes"' in first:
        raise AddressableError(f"{path} is a PyTorch execution trace (ExecutionTraceObserver: ops and tensors, no "
                               "timings); pass the profiler's (Kineto) trace of the same run")
    return "kineto"


def head(path: str | Path) -> bytes:
    """The first 4 KiB of a file, un-gzipped ("" where unreadable: the JSON reader words why)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(2)
        opener = gzip.open if raw == _GZIP_MAGIC else open
        with opener(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error):
        return b""


def _text(data: bytes) -> bool:
    """No NUL byte, and UTF-8 but for a character cut at the end."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start >= len(data) - 3 and e.reason == "unexpected end of data"
    return True


def perfetto_error(path: Path) -> AddressableError:
    return AddressableError(f"{path}: Perfetto protobuf traces are not read (PyPI's reader, perfetto, downloads "
                            "its trace_processor binary at run time); write JSON instead: torch.profiler's "
                            "export_chrome_trace, or rocprofv3 --output-format json")
