"""How the verifying parent talks to its two helper processes: requests and replies, tensors as files.

Each helper (the reference checker, the candidate's process) serves one object (`serve`): it reads
one JSON request per line from an inherited pipe, calls the named method, and writes one JSON reply
per line to another pipe: ``{"id", "ok": value}``, or ``{"id", "error": "one line", "limit": ...}``
when the method raised. Neither pipe is the helper's stdout, so whatever a candidate prints cannot
reach the protocol. Tensors in a value travel as raw bytes in files of an exchange folder (a
small one inline, base64), described by name, shape and dtype: nothing is ever unpickled, and a
description that does not match its file is an error.

`Remote` is the parent's end of a helper process (with a deadline on every reply), `Local` the same
interface for an object in the parent's own process (`verify(isolate=False)`).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from addressable.verification.harness import one_line

MAX_LINE = 256 << 20  # the longest reply the parent reads (bytes)
_INLINE = 64 << 10  # tensors up to this many bytes travel inside the message
_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
           "complex64", "complex128")


class ChannelError(Exception):
    """The helper died, timed out or sent something that is not a reply."""


class TimedOut(ChannelError):
    """No reply before the deadline."""


# ---------------------------------------------------------------- tensors as files


def encode(value: Any, folder: Path | None, counter: Any) -> Any:
    """A JSON-safe copy of `value` with every tensor written to `folder` (or inline when small)."""
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach().contiguous().cpu()
        desc = {"__tensor__": True, "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
        raw = t.reshape(-1).view(torch.uint8).numpy()
        if raw.nbytes <= _INLINE or folder is None:
            return {**desc, "b64": base64.b64encode(raw.tobytes()).decode()}
        name = f"t{next(counter)}.bin"
        raw.tofile(folder / name)
        return {**desc, "file": name}
    if isinstance(value, list | tuple):
        return [encode(v, folder, counter) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v, folder, counter) for k, v in value.items()}
    return value


def decode(value: Any, folder: Path | None, device: str = "cpu") -> Any:
    """`value` with every tensor description replaced by the tensor (checked against its bytes)."""
    if isinstance(value, list):
        return [decode(v, folder, device) for v in value]
    if not isinstance(value, dict):
        return value
    if not value.get("__tensor__"):
        return {k: decode(v, folder, device) for k, v in value.items()}
    return _tensor(value, folder).to(device)


def _tensor(desc: dict, folder: Path | None) -> Any:
    import numpy as np
    import torch

    shape, dtype = desc.get("shape"), desc.get("dtype")
    if dtype not in _DTYPES or not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ChannelError(f"bad tensor description {str(desc)[:120]}")
    if "b64" in desc:
        raw = np.frombuffer(base64.b64decode(desc["b64"]), dtype=np.uint8).copy()
    else:
        name = str(desc.get("file", ""))
        if folder is None or not name or "/" in name or name.startswith("."):
            raise ChannelError(f"bad tensor file name {name[:80]!r}")
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            raw = np.fromfile(f, dtype=np.uint8)
    t = torch.from_numpy(raw).view(getattr(torch, dtype)) if raw.nbytes else torch.zeros(0, dtype=getattr(torch, dtype))
    n = 1
    for d in shape:
        n *= d
    if t.numel() != n:
        raise ChannelError(f"tensor of shape {shape} ({dtype}) does not match its {raw.nbytes} bytes")
    return t.reshape(shape)


# ---------------------------------------------------------------- the helper's side


def serve(obj: Any, requests_fd: int, replies_fd: int, exchange: Path | None) -> None:
    """Answer requests for `obj`'s methods until the parent closes the pipe (see the module docstring);
    tensors in replies are written to `exchange` (the methods decode the ones they receive)."""
    counter = itertools.count()
    with os.fdopen(requests_fd, "rb") as requests:
        for line in requests:
            req = json.loads(line)
            reply: dict[str, Any] = {"id": req.get("id")}
            try:
                reply["ok"] = encode(getattr(obj, req["method"])(**req.get("kwargs", {})), exchange, counter)
            except Exception as e:
                reply.update(error=one_line(e), limit=getattr(obj, "limit_reason", lambda e: None)(e))
            extra = getattr(obj, "reply_extra", None)
            if extra is not None:
                reply.update(extra())
            _write_all(replies_fd, json.dumps(reply).encode() + b"\n")


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte (a signal can cut a write to a full pipe short)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- the parent's side


class Local:
    """An object in this process behind the helper interface (a request runs when its reply is read)."""

    def __init__(self, obj: Any) -> None:
        self.obj, self.ids = obj, itertools.count()
        self.pending: dict[int, tuple[str, dict[str, Any]]] = {}

    def send(self, method: str, **kwargs: Any) -> int:
        """Queue a request; returns its id."""
        rid = next(self.ids)
        self.pending[rid] = (method, kwargs)
        return rid

    def receive(self, rid: int) -> dict[str, Any]:
        """Run request `rid` and return its reply."""
        method, kwargs = self.pending.pop(rid)
        reply: dict[str, Any] = {"id": rid}
        try:
            reply["ok"] = getattr(self.obj, method)(**kwargs)
        except Exception as e:
            reply.update(error=one_line(e), limit=getattr(self.obj, "limit_reason", lambda e: None)(e))
        extra = getattr(self.obj, "reply_extra", None)
        if extra is not None:
            reply.update(extra())
        return reply

    def call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """send, then receive."""
        return self.receive(self.send(method, **kwargs))

    def freeze(self) -> None:
        """Nothing to stop: the object shares this process."""

    def thaw(self) -> None:
        """See `freeze`."""

    def close(self) -> None:
        """Drop what is pending."""
        self.pending.clear()


class Remote:
    """A helper process: `send` a request, `receive` its reply by id; both give up at `deadline` (time.monotonic)."""

    def __init__(self, cmd: Callable[[int, int], list[str]], env: dict[str, str], cwd: Path, stderr: Path,
                 deadline: float) -> None:
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        self.stderr_path, self.deadline = stderr, deadline
        with open(stderr, "w") as err:
            self.proc = subprocess.Popen(cmd(req_r, rep_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=err, env=env, cwd=cwd, pass_fds=(req_r, rep_w), start_new_session=True)
        os.close(req_r)
        os.close(rep_w)
        os.set_blocking(self.req_w, False)
        self.ids, self.buffer = itertools.count(), b""
        self.replies: dict[int, dict[str, Any]] = {}

    def send(self, method: str, **kwargs: Any) -> int:
        """Write a request (waiting while the pipe is full, up to the deadline); returns its id."""
        rid = next(self.ids)
        data = memoryview(json.dumps({"id": rid, "method": method, "kwargs": kwargs}).encode() + b"\n")
        while data:
            if not self._wait(self.req_w, write=True):
                continue
            try:
                data = data[os.write(self.req_w, data):]
            except BlockingIOError:
                continue
            except OSError as e:
                raise ChannelError(f"the process stopped reading ({e.strerror})") from None
        return rid

    def receive(self, rid: int) -> dict[str, Any]:
        """The reply to request `rid` (others that arrive first are kept)."""
        while rid not in self.replies:
            self._read_line()
        return self.replies.pop(rid)

    def call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """send, then receive."""
        return self.receive(self.send(method, **kwargs))

    def _wait(self, fd: int, write: bool = False) -> bool:
        """Whether `fd` is ready before the deadline (TimedOut once it has passed)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimedOut("no reply in time")
        readable, writable, _ = select.select([] if write else [fd], [fd] if write else [], [], left)
        return bool(writable if write else readable)

    def _read_line(self) -> None:
        while b"\n" not in self.buffer:
            if not self._wait(self.rep_r):
                continue
            try:
                chunk = os.read(self.rep_r, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise ChannelError("the process ended")
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE:
                raise ChannelError("the process sent a reply over 256 MB")
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
            self.replies[int(reply["id"])] = reply
        except (ValueError, KeyError, TypeError):
            raise ChannelError(f"the process sent something that is not a reply: {line[:80]!r}") from None

    def _tree(self) -> list[int]:
        """The helper's process and every descendant of it (from /proc; only this process if there is none)."""
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = stat.read_text()  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
                children.setdefault(int(text.rsplit(")", 1)[1].split()[1]), []).append(int(text.split(" ", 1)[0]))
        out, todo = [], [self.proc.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo += children.get(p, [])
        return out

    def _signal(self, sig: int) -> None:
        for pid in self._tree():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def freeze(self) -> None:
        """Stop the helper and everything it started (SIGSTOP: it cannot be caught), while another one is timed."""
        if self.proc.poll() is None:
            self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen helper run again."""
        if self.proc.poll() is None:
            self._signal(signal.SIGCONT)

    def exit_status(self) -> str:
        """"exit code N" or "signal N" once the process ended (it is waited for briefly)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        rc = self.proc.returncode
        return "still running" if rc is None else (f"signal {-rc}" if rc < 0 else f"exit code {rc}")

    def stderr_tail(self) -> str:
        """The last line the process wrote to stderr (a traceback's last line, usually)."""
        lines = [ln for ln in self.stderr_path.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1].strip()[:300] if lines else ""

    def close(self) -> None:
        """Close the pipes and kill the process group (nothing the helper started outlives it)."""
        for fd in (self.req_w, self.rep_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
