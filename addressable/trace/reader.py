"""Stage 1: a Kineto trace file -> an events table (one row per GPU kernel, annotation, CPU op).

The file is streamed: a second thread reads (and un-gzips, with zlib-ng where installed; both
drop the GIL) blocks of text while this one cuts each block at the last event boundary, parses
it and keeps only the rows and fields that trace_format.yaml names, as numpy columns. So a multi-GB trace is never
held as Python objects all at once, and peak memory is the events table plus a few blocks.

Where the C scanner (_kineto.c) is built, it reads the events straight into typed columns: it
checks every byte as JSON but makes Python objects only of the distinct text values of kept rows.
It takes Kineto's plain case; from an event it cannot read exactly as below (an escaped key, a
string where a number belongs, bad JSON ...) the block is parsed as follows, which also words
the errors. Without the scanner, blocks are decoded against a schema built from
trace_format.yaml (msgspec, when installed): only the named fields of each event become Python
objects, every other field is skipped in C. A block that does not fit the schema (an event that
is not an object, say) is parsed with orjson.
"""

from __future__ import annotations

import gc
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import GenericAlias, ModuleType
from typing import Any, BinaryIO, NamedTuple

import numpy as np
import orjson
import pandas as pd

from addressable.core.errors import AddressableError
from addressable.core.files import read_yaml
from addressable.core.schema import check_version
from addressable.trace.detect import head, trace_kind
from addressable.trace.nsys import read_nsys_sqlite
from addressable.trace.rocprof import read_rocprof_json

msgspec: ModuleType | None
try:
    import msgspec
except ImportError:  # the schema decoder is an optional speed-up; orjson parses every block then
    msgspec = None
try:  # the C scanner (setup.py builds it where a compiler is); msgspec/orjson parse every block without it
    import addressable.trace._kineto as _kineto
except ImportError:
    _kineto = None
gzip_codec: ModuleType
try:  # zlib-ng: zlib's API, un-gzips these traces 2-2.5x faster; the standard zlib where it is missing
    from zlib_ng import zlib_ng as gzip_codec
except ImportError:
    gzip_codec = zlib

CHUNK_BYTES = 1 << 20
_KINDS = ("gpu", "annotation", "cpu_op", "cpu_annotation", "step", "runtime", "sync")
_INTS = ("pid", "tid", "stream", "device", "correlation", "external_id", "wait_on_stream", "wait_record")
_FLOAT, _INT, _TEXT = 0, 1, 2  # column types of the C scanner
_GZIP_MAGIC = b"\x1f\x8b"
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_NATIVE_BATCH = 16 << 20  # bytes the C scanner reads between two hand-overs of its rows
_HEAD_LIMIT = 256 << 20  # how far to look for the event list before calling a file "not a trace"
_MAX_TRIES = 4  # event boundaries tried per block (a "}, {" can sit inside a string)


@cache
def trace_format() -> dict[str, Any]:
    """The trace format description shipped with the package."""
    path = Path(__file__).with_name("trace_format.yaml")
    fmt = read_yaml(path, "trace format file")
    check_version(fmt, "trace_format", str(path))
    return fmt


@dataclass
class Trace:
    """A loaded trace: the events table and the trace's top-level metadata."""

    events: pd.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def gpu(self) -> pd.DataFrame:
        """GPU work rows: kernels, memcpys and memsets."""
        return self.events[self.events["kind"] == "gpu"]

    @property
    def has_gpu_work(self) -> bool:
        return bool((self.events["kind"] == "gpu").any())

    @property
    def n_steps(self) -> int:
        return int((self.events["kind"] == "step").sum())


# ---------------------------------------------------------------- reading blocks


def _file_blocks(path: Path, size: int) -> Iterator[bytes]:
    """The file's (decompressed) bytes in blocks of about `size`; a binary file (NUL bytes or bytes that are not
    UTF-8 in its first 4 KiB, e.g. an image) is an AddressableError before any is parsed."""
    blocks = _raw_blocks(path, size)
    first = next(blocks, None)
    if first is None:
        return
    head = first[:_HEAD_BYTES]
    if b"\0" in head or not _utf8_prefix(head):
        raise AddressableError(f"{path}: not a JSON trace (binary file)")
    yield first
    yield from blocks


_HEAD_BYTES = 4096


def _utf8_prefix(data: bytes) -> bool:
    """Whether data is UTF-8, but for a character cut at its end."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start >= len(data) - 3 and e.reason == "unexpected end of data"
    return True


def _raw_blocks(path: Path, size: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        if f.read(2) != _GZIP_MAGIC:
            f.seek(0)
            while data := f.read(size):
                yield data
            return
        f.seek(0)
        yield from _gunzip(f, path, size)


def _gunzip(f: BinaryIO, path: Path, size: int) -> Iterator[bytes]:
    """Decompress a (multi-member) gzip stream; output is capped per call, so a bomb cannot flood memory."""
    d = gzip_codec.decompressobj(gzip_codec.MAX_WBITS | 16)
    data, out, n = b"", [], 0
    while True:
        if not data:
            data = f.read(1 << 20)
            if not data:
                break
        if d.eof:  # a member ended: another member, zero padding, or garbage
            data = data.lstrip(b"\0")
            if not data:
                continue
            if not data.startswith(_GZIP_MAGIC[: len(data)]):
                raise AddressableError(f"cannot read {path}: unexpected bytes after the end of the gzip stream")
            d = gzip_codec.decompressobj(gzip_codec.MAX_WBITS | 16)
        try:
            piece = d.decompress(data, size)
        except gzip_codec.error as e:
            raise AddressableError(f"cannot read {path}: corrupt gzip data ({e})") from None
        data = d.unconsumed_tail or d.unused_data
        if piece:
            out.append(piece)
            n += len(piece)
            if n >= size:
                yield b"".join(out)
                out, n = [], 0
    if not d.eof:
        raise AddressableError(f"truncated gzip file: {path} ends before its compressed stream does")
    if out:
        yield b"".join(out)


class _ReadAhead:
    """Iterate over a file's blocks, read on a background thread, at most two blocks ahead."""

    def __init__(self, path: Path, size: int) -> None:
        self._q: queue.Queue = queue.Queue(maxsize=2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(path, size), daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, path: Path, size: int) -> None:
        try:
            for block in _file_blocks(path, size):
                if not self._put(block):
                    return
            self._put(None)
        except AddressableError as e:
            self._put(e)
        except (OSError, EOFError, MemoryError) as e:
            self._put(AddressableError(f"cannot read {path}: {e}"))

    def __iter__(self) -> Iterator[bytes]:
        while (item := self._q.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def count_matches(path: str | Path, pattern: bytes, overlap: int = 256) -> int:
    """Matches of a bytes regex (each shorter than `overlap`) in a trace file's raw, un-gzipped text."""
    regex, n, tail = re.compile(pattern), 0, b""
    for block in _file_blocks(Path(path), CHUNK_BYTES):
        buf = tail + block
        cut = max(len(buf) - overlap, 0)
        n += sum(1 for m in regex.finditer(buf) if m.start() < cut)
        tail = buf[cut:]
    return n + sum(1 for _ in regex.finditer(tail))


_CATEGORY = re.compile(rb'"cat"\s*:\s*"([^"\\]{1,200})"')


def unread_categories(path: str | Path) -> dict[str, int]:
    """Categories of a Kineto/Chrome trace that the loader neither reads nor knows to be other than work
    (trace_format's other_categories), with their event counts: a byte scan of the raw text, no parsing.
    A trace that falls back to CPU-op time names them: they may be an accelerator's device events."""
    if trace_kind(path) != "kineto":
        return {}
    fmt = trace_format()
    known = set(_compiled_format().kind_of_cat) | set(fmt.get("other_categories") or [])
    counts: dict[bytes, int] = {}
    tail = b""
    for block in _file_blocks(Path(path), CHUNK_BYTES):
        buf = tail + block
        cut = max(len(buf) - 256, 0)
        for m in _CATEGORY.finditer(buf):
            if m.start() < cut:
                counts[m[1]] = counts.get(m[1], 0) + 1
        tail = buf[cut:]
    for m in _CATEGORY.finditer(tail):
        counts[m[1]] = counts.get(m[1], 0) + 1
    names = {k.decode("utf-8", "replace"): n for k, n in counts.items()}
    return dict(sorted(((c, n) for c, n in names.items() if c not in known), key=lambda cn: -cn[1]))


# ---------------------------------------------------------------- cutting blocks into parsed events


_LAST_TOKEN = re.compile(rb"[-+.\w]*\Z")
_PARTIAL_TOKEN = re.compile(rb"-?\d*\.?\d*(?:[eE][-+]?\d*)?|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?")


def _json_error(path: Path, e: orjson.JSONDecodeError, offset: int) -> AddressableError:
    return AddressableError(f"{path} is not valid JSON (near byte {offset + max(e.pos, 0)}): {e.msg}")


def _parse(doc: bytes, path: Path, offset: int, appended: int = 0) -> Any:
    """Parse a document that runs to the end of the file (`appended` bytes were added to close it)."""
    try:
        return orjson.loads(doc)
    except orjson.JSONDecodeError as e:
        end = len(doc) - appended
        token = _LAST_TOKEN.search(doc, max(0, end - 64), end)
        assert token is not None  # it matches the empty string at the end
        if e.msg.startswith("unexpected end") or (e.pos >= token.start() and _PARTIAL_TOKEN.fullmatch(token[0])):
            raise AddressableError(f"truncated trace: {path} ends in the middle of its JSON") from None
        raise _json_error(path, e, offset) from None


def _boundaries(buf: bytes) -> list[tuple[int, int]]:
    """Up to _MAX_TRIES candidate event boundaries near the end of buf: (end of one event, start of the next).

    Boundaries whose whitespace holds a newline come first: JSON strings cannot hold one,
    so those are never inside a name.
    """
    window = 1 << 13
    while True:
        start = max(0, len(buf) - window)
        found = [(m.start() + 1, m.end() - 1, b"\n" in m[0]) for m in _BOUNDARY.finditer(buf, start)]
        if found or start == 0:
            break
        window *= 8
    safe = [(a, b) for a, b, nl in found if nl]
    return (safe or [(a, b) for a, b, _ in found])[-_MAX_TRIES:][::-1]


def _chars(doc: bytes) -> int:
    """Length of a UTF-8 document in characters, the unit of orjson's error positions."""
    return len(doc) - sum(map(doc.translate(None, _ASCII).count, _CONTINUATION))


_ASCII = bytes(range(128))
_CONTINUATION = [bytes([b]) for b in range(0x80, 0xC0)]


def _cut(buf: bytes, path: Path, offset: int, limit: int, typed: Any = None) -> tuple[list | None, bytes]:
    """Parse the complete events at the front of buf; return them and the unparsed rest.

    A split at a false boundary (inside a string or a nested object) fails only at the very
    end of what is parsed; an error before that is bad JSON whatever the split. With `typed`
    (a msgspec decoder of the event schema), a block that decodes is returned as schema objects.
    """
    doc, error = b"", None
    for end, nxt in _boundaries(buf):
        doc = b"[" + buf[:end] + b"]"
        if typed is not None and msgspec is not None:  # typed: a msgspec decoder
            try:
                return typed.decode(doc), buf[nxt:]
            except msgspec.DecodeError:  # bad JSON, a false boundary, or not the schema: orjson decides
                pass
        try:
            return orjson.loads(doc), buf[nxt:]
        except orjson.JSONDecodeError as e:
            error = e
    if error is not None and error.pos < _chars(doc) - 2:
        raise _json_error(path, error, offset - 1)
    if len(buf) > limit:  # nothing parses however far we read
        raise AddressableError(f"not a trace: no event boundary that parses in {len(buf) >> 20} MB of {path}")
    return None, buf


_START = re.compile(rb'"(?:%s)"\s*:\s*\[')
_SPACE = re.compile(rb"\s*")


class _Joined:
    """The rest of one block and the next, joined in one reused buffer. A new 1 MB bytes object per
    block costs more in page faults (about 0.5 ns a byte) than the C scanner spends reading it."""

    def __init__(self) -> None:
        self.store = bytearray()

    def join(self, rest: bytes, data: bytes) -> memoryview:
        n = len(rest) + len(data)
        if len(self.store) < n:
            self.store = bytearray(max(n, 2 * len(self.store)))
        view = memoryview(self.store)
        view[: len(rest)] = rest
        view[len(rest) : n] = data
        return view[:n]


class NativeRows(NamedTuple):
    """The rows the C scanner read from a stretch of events: (events seen, rows kept, columns)."""

    events: int
    rows: int
    columns: list


def _event_list_start(blocks: Iterator[bytes], path: Path, key: str) -> tuple[dict, bool, bytes, int]:
    """Read blocks up to the start of the event list: (the metadata before it, whether the file is a
    bare array, the bytes read after its '[', their offset in the file)."""
    start = re.compile(_START.pattern % re.escape(key.encode()))
    buf, head, bare, offset = b"", None, False, 0
    for data in blocks:
        searched, buf = max(0, len(buf) - 1024), buf + data
        space = _SPACE.match(buf)
        assert space is not None  # \s* matches
        first = space.end()
        if buf[first : first + 1] == b"[":
            head, bare, offset = b"{", True, first + 1
            buf = buf[offset:]
            break
        if buf[first : first + 1] not in (b"", b"{"):
            break
        if m := start.search(buf, searched):
            head, offset = buf[: m.start()], m.end()
            buf = buf[m.end() :]
            break
        if len(buf) > _HEAD_LIMIT:
            break
    if head is None:  # no event list: say whether the file is JSON at all
        for data in blocks:
            if len(buf) > _HEAD_LIMIT:
                raise AddressableError(f"not a trace: no '{key}' list in the first {_HEAD_LIMIT >> 20} MB of {path}")
            buf += data
        if not buf.strip():
            raise AddressableError(f"empty trace file: {path}")
        _parse(buf, path, 0)
        raise AddressableError(f"not a trace: no '{key}' list in {path}")
    metadata = _parse(head.rstrip().rstrip(b",") + b"}", path, 0) if head.strip(b"{ \n\r\t") else {}
    return metadata, bare, buf, offset


def _iter_parsed(path: str | Path, chunk_bytes: int, typed: Any = None,
                 scanner: Any = None) -> Iterator[list | NativeRows | dict]:
    """Yield lists of parsed events (anything JSON; schema objects where `typed` decodes a block)
    or, with a C `scanner`, NativeRows; then one dict of top-level metadata."""
    path = Path(path)
    if not path.is_file():
        raise AddressableError(f"no such trace file: {path}")
    key = trace_format()["events_key"]
    reader = _ReadAhead(path, chunk_bytes)
    try:
        blocks = iter(reader)
        buf: bytes | memoryview  # a memoryview: joined blocks the scanner reads, until it copies their rest
        metadata, bare, buf, offset = _event_list_start(blocks, path, key)
        limit = max(4 * chunk_bytes, 64 << 20)
        between = ended = False  # the scanner stopped after an event / at the end of the list
        joined, scanned = _Joined(), 0
        for data in blocks:
            assert isinstance(buf, bytes)  # the scanner copies the rest of what it read
            buf = buf + data if scanner is None or ended else joined.join(buf, data)
            while not ended:
                if scanner is not None:
                    pos, status, between = scanner.scan(buf, 0, between)
                    buf, offset, scanned = bytes(buf[pos:]), offset + pos, scanned + pos
                    if (status != _kineto.MORE or scanned >= _NATIVE_BATCH) and (rows := NativeRows(*scanner.take())).events:
                        yield rows  # the rows so far: before any that _cut parses, in a few large batches
                        scanned = 0
                    ended = status == _kineto.END
                    if status == _kineto.INVALID:  # no ',' between events, or one before the ']'
                        _parse(b"[0 " + buf, path, offset - 3)  # raises, worded as orjson's errors are
                        raise AddressableError(f"{path} is not valid JSON (near byte {offset})")
                    if ended or (status == _kineto.MORE and len(buf) <= limit):
                        break
                assert isinstance(buf, bytes)  # the same
                events, rest = _cut(buf, path, offset, limit, typed)
                if events is None:
                    break
                offset += len(buf) - len(rest)
                buf = rest
                yield events
                if scanner is None:
                    break
        if scanner is not None and (rows := NativeRows(*scanner.take())).events:
            yield rows
        prefix = b'{"__events__":[null' if between else b'{"__events__":['  # null: the event before buf
        tail = _parse(prefix + buf + (b"}" if bare else b""), path, offset - len(prefix), int(bare))
    finally:
        reader.close()
    if not isinstance(tail, dict) or not isinstance(tail.get("__events__"), list):
        raise AddressableError(f"not a trace: '{key}' in {path} is not a list of events")
    events = tail.pop("__events__")[int(between):]
    if events:
        yield events
    metadata.update(tail)
    yield metadata


def iter_event_chunks(path: str | Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[list[dict] | dict]:
    """Yield the trace's events in lists of parsed dicts, then one dict of top-level metadata.

    Splits the event array at `}, {` boundaries and lets the JSON parser confirm each
    split: a boundary inside an event leaves unbalanced braces and is rejected.
    """
    for chunk in _iter_parsed(path, chunk_bytes):
        yield chunk if isinstance(chunk, dict) else [e for e in chunk if isinstance(e, dict)]


# ---------------------------------------------------------------- events -> columns


@dataclass
class _Format:
    """trace_format.yaml, compiled: the categories kept and a row extractor for them."""

    keep: frozenset[str]
    runtime: frozenset[str]  # categories of runtime calls and sync records, kept on request
    kind_of_cat: dict[str, str]
    step_cats: frozenset[str]
    step_re: re.Pattern
    phase: str
    columns: list[str]
    text: tuple[str, ...]  # columns kept as (interned) text; name and cat are always text
    parents: tuple[str, ...]
    extract: Callable[[list, frozenset, str, dict], list[tuple]]
    decoder: Any = None  # msgspec decoder of a list of events with just the named fields (None without msgspec)
    event_type: type | None = None
    extract_typed: Callable[[list, frozenset, str], list[tuple]] | None = None
    filters: dict[str, Callable] = field(default_factory=dict)  # name_filters: category -> name regex match

    def scanner(self, keep: frozenset[str]) -> Any:
        """A C scanner of this format's rows for the categories in keep (None without _kineto, or
        for a format with more than one parent object, which it does not read)."""
        if _kineto is None or len(self.parents) > 1:
            return None
        types: list[int] = []
        top: list[tuple[bytes, int]] = [(b"ph", -2)]
        child: list[tuple[bytes, int]] = []
        for i, (col, keys) in enumerate(column_keys().items()):
            types.append(_TEXT if col in self.text else _INT if col in _INTS else _FLOAT)
            for key in keys:  # several keys of one column: an event with two of them is read in Python
                _, dot, sub = key.partition(".")
                (child if dot else top).append(((sub if dot else key).encode(), i))
        top += [(p.encode(), -3) for p in self.parents]
        return _kineto.Scanner(types, top, child, self.phase.encode(), [c.encode() for c in sorted(keep)],
                               self.columns.index("name"), self.columns.index("cat"))


@cache
def column_keys() -> dict[str, list[str]]:
    """Events-table column -> the keys of a trace event that hold it, in order of preference."""
    return {col: [keys] if isinstance(keys, str) else list(keys) for col, keys in trace_format()["columns"].items()}


def category_aliases() -> dict[str, str]:
    """An older spelling of a category -> today's (trace_format's category_aliases)."""
    return dict(trace_format().get("category_aliases") or {})


def _kinds_of_categories(fmt: dict[str, Any]) -> dict[str, str]:
    """Category -> kind of row, today's spellings and their aliases."""
    kind_of_cat: dict[str, str] = {}
    for kind, key in (("runtime", "runtime_categories"), ("sync", "sync_categories"),
                      ("cpu_annotation", "cpu_annotation_categories"), ("cpu_op", "cpu_op_categories"),
                      ("annotation", "annotation_categories"), ("gpu", "gpu_work_categories")):
        kind_of_cat.update(dict.fromkeys(fmt[key], kind))  # a category listed twice: the later kind wins
    kind_of_cat.update({old: kind_of_cat[new] for old, new in category_aliases().items() if new in kind_of_cat})
    return kind_of_cat


def _getter(key: str, parents: list[str]) -> str:
    """The extractor's expression for one key of an event (`parent.child` reads a nested object)."""
    parent, dot, child = key.partition(".")
    if not dot:
        return f"e.get({key!r})"
    if parent not in parents:
        parents.append(parent)
    return f"a{parents.index(parent)}.get({child!r})"


def _first_of(getters: list[str]) -> str:
    """One expression: the first of several getters whose value is not None."""
    out = getters[-1]
    for g in reversed(getters[:-1]):
        out = f"(v if (v := {g}) is not None else {out})"
    return out


@cache
def _compiled_format() -> _Format:
    fmt = trace_format()
    kind_of_cat = _kinds_of_categories(fmt)
    aliases = category_aliases()
    step_cats = frozenset(fmt["step_categories"]) | {old for old, new in aliases.items() if new in fmt["step_categories"]}
    parents: list[str] = []
    getters = [_first_of([_getter(k, parents) for k in keys]) for keys in column_keys().values()]
    loops = "".join(f" for a{i} in (e.get({p!r}) or EMPTY,)" for i, p in enumerate(parents))
    filters = {cat: re.compile(p).match for cat, p in (fmt.get("name_filters") or {}).items()}
    filters.update({old: filters[new] for old, new in aliases.items() if new in filters})  # "Python" too
    named = " and (e.get('cat') not in FILTERS or FILTERS[e.get('cat')](str(e.get('name'))))" if filters else ""
    # One pass over the events, one tuple per kept row: far cheaper than a pass per column.
    src = (f"def extract(events, keep, X, EMPTY):\n"
           f"    return [({', '.join(getters)},) for e in events"
           f" if e.get('cat') in keep and e.get('ph') == X{named}{loops}]\n")
    scope: dict[str, Any] = {"FILTERS": filters}
    exec(compile(src, "<trace_format extractor>", "exec"), scope)
    text = tuple(dict.fromkeys(["name", "cat", *fmt.get("text_columns", [])]))
    runtime = frozenset(c for c, kind in kind_of_cat.items() if kind in ("runtime", "sync"))
    out = _Format((frozenset(kind_of_cat) - runtime) | step_cats, runtime, kind_of_cat, step_cats,
                  re.compile(fmt["step_pattern"]), fmt["complete_phase"], list(fmt["columns"]), text, tuple(parents),
                  scope["extract"], filters=filters)
    if msgspec is not None:
        _add_schema(out, list(column_keys().values()), filters)
    return out


def _add_schema(fmt: _Format, column_keys: list[list[str]], filters: dict[str, Callable]) -> None:
    """The msgspec schema of one event (the named fields only, any JSON value each; a parent object
    such as args as a nested schema, or any non-object value) and an extractor over it."""
    assert msgspec is not None  # called only where it is installed
    keys = [k for ks in column_keys for k in ks]
    top = list(dict.fromkeys(["ph", "cat", *(k for k in keys if "." not in k)]))
    children: dict[str, list[str]] = {p: [] for p in fmt.parents}
    for k in keys:
        parent, dot, child = k.partition(".")
        if dot:
            children[parent].append(child)
    scalar = str | int | float | bool | list | None
    fields = [(f"f{i}", Any, msgspec.field(default=None, name=k)) for i, k in enumerate(top)]
    getters = {k: f"e.f{i}" for i, k in enumerate(top)}
    loops, scope = [], {}
    for i, parent in enumerate(fmt.parents):
        sub = msgspec.defstruct(f"Parent{i}", [(f"c{j}", Any, msgspec.field(default=None, name=c))
                                              for j, c in enumerate(children[parent])])
        fields.append((f"p{i}", sub | scalar, msgspec.field(default=None, name=parent)))
        scope[f"P{i}"], scope[f"E{i}"] = sub, sub()
        loops.append(f" for a{i} in (e.p{i} if type(e.p{i}) is P{i} else E{i},)")
        getters.update({f"{parent}.{c}": f"a{i}.c{j}" for j, c in enumerate(children[parent])})
    event = msgspec.defstruct("Event", fields)
    scope["FILTERS"] = filters  # name_filters, as in the dict extractor
    named = f" and (e.f1 not in FILTERS or FILTERS[e.f1](str({getters['name']})))" if filters else ""
    src = (f"def extract(events, keep, X):\n"
           f"    return [({', '.join(_first_of([getters[k] for k in ks]) for ks in column_keys)},) for e in events"
           f" if e.f1 in keep and e.f0 == X{named}{''.join(loops)}]\n")
    exec(compile(src, "<trace_format schema extractor>", "exec"), scope)
    decoder = msgspec.json.Decoder(GenericAlias(list, event))  # list[event], a class made at run time
    fmt.decoder, fmt.event_type, fmt.extract_typed = decoder, event, scope["extract"]


_EMPTY: dict = {}


def _sanitize(events: list, parents: tuple[str, ...]) -> list[dict]:
    """Events the fast extractor can read: dicts with a string category and dict-valued parents."""
    out = []
    for e in events:
        if type(e) is not dict or type(e.get("cat")) is not str:
            continue
        bad = [p for p in parents if e.get(p) is not None and type(e.get(p)) is not dict]
        out.append({**e, **dict.fromkeys(bad, _EMPTY)} if bad else e)
    return out


def _json_text(value: Any) -> str:
    """A string as it is; any other JSON value as its compact JSON text."""
    return value if type(value) is str else orjson.dumps(value).decode()


class _Interner:
    """Strings -> stable integer codes across chunks (every unique string is hashed into a table once per chunk)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def encode(self, values: tuple, missing: str | None) -> np.ndarray:
        """Codes of values (None -> the code of `missing`, or -1); non-strings are coded as their JSON text."""
        array = np.fromiter(values, dtype=object, count=len(values))
        try:
            codes, uniques = pd.factorize(array, use_na_sentinel=True)
        except TypeError:  # unhashable values (a list as a name)
            array = np.fromiter((None if v is None else _json_text(v) for v in values), dtype=object, count=len(values))
            codes, uniques = pd.factorize(array, use_na_sentinel=True)
        table = [self._code(u) for u in uniques]
        table.append(self._code(missing) if missing is not None and (codes < 0).any() else -1)
        return np.array(table, dtype=np.int32)[codes]  # code -1 (missing) picks the last entry

    def _code(self, value: Any) -> int:
        if value is None:
            return -1
        return self.codes.setdefault(_json_text(value), len(self.codes))

    def sorted(self) -> tuple[pd.Index, np.ndarray]:
        """The strings in sorted order, and old code -> position in that order (last entry: -1 -> -1)."""
        strings = list(self.codes)
        order = sorted(range(len(strings)), key=strings.__getitem__)
        remap = np.empty(len(strings) + 1, dtype=np.int32)
        remap[order] = np.arange(len(strings), dtype=np.int32)
        remap[-1] = -1
        return pd.Index([strings[i] for i in order], dtype="string"), remap


class _RawCodes:
    """The C scanner's codes of one text column (raw JSON values, numbered as first seen) -> an _Interner's."""

    def __init__(self, interner: _Interner) -> None:
        self.interner = interner
        self.raw: list[bytes] = []
        # scanner code -> interner code (-2 until a kept row uses it); the last entry is for code -1
        # (missing): the code of the missing text, -3 until a row lacks a value
        self.map = np.full(1, -3, np.int32)
        self.cache: dict[Any, np.ndarray] = {}

    def add(self, fresh: list[bytes]) -> None:
        if fresh:
            self.raw += fresh
            self.map = np.concatenate([self.map[:-1], np.full(len(fresh), -2, np.int32), self.map[-1:]])

    def text(self, code: int) -> str:
        try:
            return _json_text(orjson.loads(self.raw[code]))
        except orjson.JSONDecodeError as e:  # 1e999 inside a list: JSON that no parser here reads
            raise AddressableError(f"not valid JSON: {self.raw[code][:80]!r} ({e.msg})") from None

    def derived(self, key: Any, fn: Callable[[str], Any], dtype: type = object) -> np.ndarray:
        """fn of the text of every raw value so far, by scanner code (computed once per value, cached under key)."""
        done = self.cache.get(key, np.zeros(0, dtype))
        if len(done) < len(self.raw):
            fresh: np.ndarray = np.empty(len(self.raw) - len(done), dtype)
            fresh[:] = [fn(self.text(c)) for c in range(len(done), len(self.raw))]
            done = self.cache[key] = np.concatenate([done, fresh])
        return done

    def codes(self, raw_codes: np.ndarray, missing: str | None) -> np.ndarray:
        """Interner codes of scanner codes (-1: missing -> the code of `missing`, or -1)."""
        out = self.map[raw_codes]
        if out.min(initial=0) < -1:
            for code in np.unique(raw_codes[out < -1]):
                self.map[code] = (self.interner._code(self.text(int(code))) if code >= 0
                                  else self.interner._code(missing) if missing is not None else -1)
            out = self.map[raw_codes]
        return out


def _floats(values: tuple) -> np.ndarray:
    try:
        out = np.array(values, dtype=np.float64)
        if out.ndim == 1:  # equal-length lists as values would make it 2-D
            return out
    except (TypeError, ValueError, OverflowError):
        pass
    return np.array([_to_float(v) for v in values], dtype=np.float64)


def _to_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return np.nan


def _ints(values: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Integer values and a mask of missing ones (non-integers and out-of-range numbers count as missing)."""
    n_missing = values.count(None)
    if n_missing == len(values):  # e.g. the stream of CPU ops
        return np.zeros(len(values), np.int64), np.ones(len(values), bool)
    if not n_missing:  # usually all ints: let numpy infer, and take the result only if it is int64
        try:
            out = np.array(values)
            # beyond 2**53 the float path below rounds: send those there too, whatever the chunk holds
            if out.dtype == np.int64 and out.ndim == 1 and (not len(out) or -(2**53) < out.min() <= out.max() < 2**53):
                return out, np.zeros(len(values), bool)
        except (TypeError, ValueError, OverflowError):
            pass
    f = _floats(values)
    ok = np.isfinite(f) & (np.abs(f) < 2.0**63)
    ok &= f == np.trunc(np.where(ok, f, 0))
    return np.where(ok, f, 0).astype(np.int64), ~ok


def _passes(match: Callable[[str], Any]) -> Callable[[str], bool]:
    """Whether a name passes one name filter (bound to this filter, not to a loop's last)."""
    return lambda text: bool(match(text))


class _Columns:
    """The kept rows of every chunk, as numpy columns."""

    def __init__(self, fmt: _Format, runtime: bool = False) -> None:
        self.fmt = fmt
        self.keep = fmt.keep | fmt.runtime if runtime else fmt.keep
        self.strings = {c: _Interner() for c in fmt.text}
        self.parts: dict[str, list[np.ndarray]] = {c: [] for c in [*fmt.columns, *(f"{c}_na" for c in _INTS)]}
        self.n_events = 0
        self.raw = {c: _RawCodes(self.strings[c]) for c in fmt.text}  # the C scanner's text codes

    def add(self, events: list | NativeRows) -> None:
        if isinstance(events, NativeRows):
            self._add_native(events)
            return
        self.n_events += len(events)
        fmt = self.fmt
        if events and fmt.extract_typed is not None and type(events[0]) is fmt.event_type:
            try:
                rows = fmt.extract_typed(events, self.keep, fmt.phase)
            except TypeError:  # an unhashable category (a list)
                rows = fmt.extract_typed([e for e in events if type(e.f1) is str], self.keep, fmt.phase)
        else:
            try:
                rows = fmt.extract(events, self.keep, fmt.phase, _EMPTY)
            except (AttributeError, TypeError):  # a non-dict event, a list as "cat", a string as "args" ...
                rows = fmt.extract(_sanitize(events, fmt.parents), self.keep, fmt.phase, _EMPTY)
        if not rows:
            return
        for col, values in zip(fmt.columns, zip(*rows, strict=True), strict=True):
            self._add_values(col, values)

    def _add_values(self, col: str, values: tuple) -> None:
        if col in self.strings:
            self.parts[col].append(self.strings[col].encode(values, "" if col == "name" else None))
        elif col in _INTS:
            ints, na = _ints(values)
            self.parts[col].append(ints)
            self.parts[f"{col}_na"].append(na)
        else:
            self.parts[col].append(_floats(values))

    def add_columns(self, data: dict[str, Any]) -> None:
        """Rows given as columns (another format's reader: events-table column -> equal-length sequences,
        `cat` and `name` among them; a column left out is missing on every row). Kept as `add` keeps rows."""
        cats = np.asarray(data["cat"], dtype=object)
        self.n_events += len(cats)
        rows = np.flatnonzero(np.isin(cats, list(self.keep)))
        if not len(rows):
            return
        for col in self.fmt.columns:
            given = data.get(col)
            values = tuple(np.asarray(given, dtype=object)[rows]) if given is not None else (None,) * len(rows)
            self._add_values(col, values)

    def _add_native(self, batch: NativeRows) -> None:
        """The C scanner's rows: numbers as they are, text codes turned into this table's codes."""
        self.n_events += batch.events
        if not batch.rows:
            return
        columns = dict(zip(self.fmt.columns, batch.columns, strict=True))
        raw_codes = {}
        for col, (codes, fresh) in ((c, columns[c]) for c in self.raw):
            self.raw[col].add(fresh)
            raw_codes[col] = np.frombuffer(codes, np.int32)
        rows = self._name_filter(raw_codes["cat"], raw_codes["name"])
        def kept(a: np.ndarray) -> np.ndarray:
            return a if rows is None else a[rows]
        for col, item in columns.items():
            if col in raw_codes:
                self.parts[col].append(self.raw[col].codes(kept(raw_codes[col]), "" if col == "name" else None))
            elif col in _INTS:
                self.parts[col].append(kept(np.frombuffer(item[0], np.int64)))
                self.parts[f"{col}_na"].append(kept(np.frombuffer(item[1], np.bool_)))
            else:
                self.parts[col].append(kept(np.frombuffer(item, np.float64)))

    def _name_filter(self, cats: np.ndarray, names: np.ndarray) -> np.ndarray | None:
        """Rows that pass name_filters (None: all of them), from the scanner's raw codes."""
        filters = list(self.fmt.filters.items())
        if not filters:
            return None
        cat_filter = {cat: i for i, (cat, _) in enumerate(filters)}
        which = self.raw["cat"].derived("filter", lambda text: cat_filter.get(text, -1), np.int8)[cats]
        rows = None
        for i in np.unique(which[which >= 0]):
            match = filters[i][1]
            ok = self.raw["name"].derived(i, _passes(match), bool)
            ok = np.append(ok, bool(match("None")))  # code -1, no name: str(None), as the loader matches it
            rows = (np.ones(len(cats), bool) if rows is None else rows) & ((which != i) | ok[names])
        return rows

    def frame(self) -> pd.DataFrame:
        """One table of every kept row, sorted by start time; rows without ts or dur are dropped."""
        empty = {"name": np.int32, "cat": np.int32, "ts": np.float64, "dur": np.float64}
        def column(c: str) -> np.ndarray:
            parts = self.parts.pop(c)
            return np.concatenate(parts) if parts else np.zeros(0, empty.get(c, bool if c.endswith("_na") else np.int64))

        (names, name_map), (cats, cat_map) = self.strings["name"].sorted(), self.strings["cat"].sorted()
        name, cat, ts, dur = name_map[column("name")], cat_map[column("cat")], column("ts"), column("dur")
        kinds = self._kinds(name, cat, names, cats)
        cats, cat = _today(cats, cat)
        order = np.flatnonzero((kinds >= 0) & ~np.isnan(ts) & ~np.isnan(dur))
        order = order[np.argsort(ts[order], kind="stable")]
        out: dict[str, Any] = {}
        for col in self.fmt.columns:  # one column at a time: at most one extra copy alive
            if col in ("name", "cat"):
                codes = (name if col == "name" else cat)[order]
                out[col] = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(names if col == "name" else cats))
            elif col in self.strings:  # e.g. the shapes of CPU ops, as JSON text
                strings, remap = self.strings[col].sorted()
                out[col] = pd.Categorical.from_codes(remap[column(col)][order], dtype=pd.CategoricalDtype(strings))
            elif col in _INTS:
                out[col] = pd.arrays.IntegerArray(column(col)[order], column(f"{col}_na")[order])
            else:
                out[col] = (ts if col == "ts" else dur if col == "dur" else column(col))[order]
        out["kind"] = pd.Categorical.from_codes(kinds[order], categories=list(_KINDS))
        return pd.DataFrame(out, copy=False)

    def _kinds(self, name_codes: np.ndarray, cat_codes: np.ndarray, names: pd.Index, cats: pd.Index) -> np.ndarray:
        """Kind code of each row (an index into _KINDS), or -1 for a row of a step-only category that is no step."""
        fmt = self.fmt
        code = {k: i for i, k in enumerate(_KINDS)}
        by_cat = np.array([code[fmt.kind_of_cat[c]] if c in fmt.kind_of_cat else -1 for c in cats], dtype=np.int8)
        step_cat = np.array([c in fmt.step_cats and fmt.kind_of_cat.get(c) not in ("gpu", "annotation")
                             for c in cats], dtype=bool)
        step_name = np.array([bool(fmt.step_re.match(n)) for n in names], dtype=bool)
        kinds = by_cat[cat_codes]
        if len(kinds):
            kinds[step_cat[cat_codes] & step_name[name_codes]] = code["step"]
        return kinds


def _today(cats: pd.Index, codes: np.ndarray) -> tuple[pd.Index, np.ndarray]:
    """Categories under today's spelling (category_aliases) and the codes recoded to them (-1 stays -1)."""
    aliases = category_aliases()
    if not any(c in aliases for c in cats):
        return cats, codes
    renamed = pd.Index([aliases.get(c, c) for c in cats], dtype="string")
    unique = renamed.unique().sort_values()
    recode = np.append(unique.get_indexer(renamed), -1).astype(np.int32)  # the last entry: -1 -> -1
    return unique, recode[codes]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Parsing allocates millions of containers that all survive: the cyclic GC would rescan them over and over."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_trace(path: str | Path, chunk_bytes: int = CHUNK_BYTES, schema: bool = True, *,
               runtime: bool = False, native: bool = True) -> Trace:
    """Load a trace file (.json or .json.gz) into a Trace with a typed events table.

    native=False leaves the C scanner out; schema=False then parses every block with orjson (whole
    events) instead of the trace_format schema. runtime=True also keeps the CUDA/HIP runtime calls
    (kind "runtime") and the GPU's sync records (kind "sync"), which the replay needs.
    """
    fmt = _compiled_format()
    columns = _Columns(fmt, runtime)
    kind = trace_kind(path)
    if kind != "kineto":
        events, metadata = _other_format(Path(path), kind, columns)
    else:
        scanner = fmt.scanner(columns.keep) if native else None
        metadata = {}
        with _gc_paused():
            for chunk in _iter_parsed(path, chunk_bytes, fmt.decoder if schema else None, scanner):
                if isinstance(chunk, dict):
                    metadata = chunk
                else:
                    columns.add(chunk)
                del chunk
            events = columns.frame()
        if events.empty and columns.n_events:
            events = _legacy_events(Path(path), _Columns(fmt, runtime), columns.n_events)
    if events.empty and columns.n_events == 0:
        raise AddressableError(f"empty trace: the '{trace_format()['events_key']}' list in {path} is empty")
    if events.empty:
        raise AddressableError(f"empty trace: no kernels, annotations or CPU ops among the "
                               f"{columns.n_events} events in {path}")
    events["op"] = _launching_op(events)
    events["step"] = _step_of(events)
    return Trace(events=events, metadata=metadata, path=str(path))


def _legacy_events(path: Path, columns: _Columns, n_events: int) -> pd.DataFrame:
    """The rows of a bare array whose events carry no category, where their pid says what they are
    (trace_format's legacy_pids: torch.autograd.profiler's traces); an empty table for any other trace."""
    labels = trace_format().get("legacy_pids") or {}
    phase = trace_format()["complete_phase"]
    if not head(path).lstrip().startswith(b"["):  # only bare arrays are read again, by pid
        return columns.frame()
    uncategorised = 0
    for chunk in iter_event_chunks(path):
        if isinstance(chunk, list):
            bare = [e for e in chunk if "cat" not in e and e.get("ph") == phase]
            uncategorised += len(bare)
            columns.add([{**e, "cat": labels[e["pid"]]} for e in bare if isinstance(e.get("pid"), str) and e["pid"] in labels])
    events = columns.frame()
    if events.empty:
        why = (f"{uncategorised} complete events carry no 'cat' and no pid that says what they are "
               f"({', '.join(map(repr, labels))})" if uncategorised else
               f"no kernels, annotations or CPU ops among the {n_events} events")
        raise AddressableError(f"empty trace: {why} in {path}")
    return events


# ---------------------------------------------------------------- other formats (trace.detect tells which)

def _other_format(path: Path, kind: str, columns: _Columns) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The events table and metadata of a rocprofv3 JSON file or an Nsight Systems SQLite export."""
    if kind == "nsys":
        data, metadata = read_nsys_sqlite(path)
    else:
        doc = _parse(b"".join(_file_blocks(path, CHUNK_BYTES)), path, 0)
        data, metadata = read_rocprof_json(doc, str(path))
    columns.add_columns(data)
    events = columns.frame()
    if events.empty:
        raise AddressableError(f"empty trace: no kernels, copies or API calls in {path}")
    return events, metadata


# ---------------------------------------------------------------- joins


def lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """values[keys == q] for each q (keys unique): the looked-up values and a found mask."""
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    pos = np.clip(np.searchsorted(keys, query), 0, max(len(keys) - 1, 0))
    found = keys[pos] == query if len(keys) else np.zeros(len(query), bool)
    return values[pos] if len(keys) else np.zeros(len(query), values.dtype), found


def _cpu_ops_by_external_id(events: pd.DataFrame, keep: str) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers of CPU ops with an External id, one per id (the first or last to start)."""
    ext = events["external_id"]
    rows = np.flatnonzero(((events["kind"] == "cpu_op") & ext.notna()).to_numpy())
    ids = ext.to_numpy(dtype=np.int64, na_value=0)[rows]
    first = ~pd.Series(ids).duplicated(keep=keep).to_numpy()
    return ids[first], rows[first]


def _gpu_rows(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(((events["kind"] == "gpu") & events["external_id"].notna()).to_numpy())
    return rows, events["external_id"].to_numpy(dtype=np.int64, na_value=0)[rows]


def _launching_op(events: pd.DataFrame) -> pd.Categorical:
    """For GPU rows, the innermost CPU op that launched them (joined on External id)."""
    # Innermost op: the one that starts last among ops sharing an External id.
    ids, cpu_rows = _cpu_ops_by_external_id(events, "last")
    gpu_rows, gpu_ids = _gpu_rows(events)
    name_codes = events["name"].cat.codes.to_numpy()
    codes = np.full(len(events), -1, dtype=np.int32)
    found_rows, found = lookup(ids, cpu_rows, gpu_ids)
    codes[gpu_rows[found]] = name_codes[found_rows[found]]
    op = pd.Categorical.from_codes(codes, dtype=events["name"].dtype)
    return op.remove_unused_categories()


def _step_number(pattern: re.Pattern, name: str) -> int:
    """N of a step row's name (ProfilerStep#N: it matched the step pattern), at most 2**63 - 1."""
    m = pattern.match(name)
    assert m is not None, name
    return min(int(m.group(1)), 2**63 - 1)


def _step_of(events: pd.DataFrame) -> pd.arrays.IntegerArray:
    """Step number of each row: GPU rows by their launching op's start, others by their own start."""
    fmt = _compiled_format()
    is_step = (events["kind"] == "step").to_numpy()
    out_values = np.zeros(len(events), dtype=np.int64)
    out_na = np.ones(len(events), dtype=bool)
    if not is_step.any():
        return pd.arrays.IntegerArray(out_values, out_na)
    steps = events[is_step]
    numbers = np.array([_step_number(fmt.step_re, n) for n in steps["name"].astype(str)], dtype=np.int64)
    starts = steps["ts"].to_numpy()
    ends = starts + steps["dur"].to_numpy()
    order = np.argsort(starts, kind="stable")
    starts, ends, numbers = starts[order], ends[order], numbers[order]
    when = events["ts"].to_numpy(dtype=np.float64).copy()
    ids, cpu_rows = _cpu_ops_by_external_id(events, "first")
    gpu_rows, gpu_ids = _gpu_rows(events)
    found_rows, found = lookup(ids, cpu_rows, gpu_ids)
    when[gpu_rows[found]] = when[found_rows[found]]
    i = np.searchsorted(starts, when, side="right") - 1
    inside = (i >= 0) & (when <= ends[np.clip(i, 0, None)])
    out_values[inside] = numbers[i[inside]]
    out_na[inside] = False
    return pd.arrays.IntegerArray(out_values, out_na)
