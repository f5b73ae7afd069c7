"""Containment for candidate code: a scratch folder, a scrubbed environment, resource limits, a guard, a sandbox.

A candidate is code a language model wrote; `verify` runs each one in a child process that

- starts in a fresh scratch folder, which is also its HOME and TMPDIR (so Triton's and torch's
  caches and extension builds land there);
- gets a scrubbed environment: only what Python, torch, CUDA/ROCm and Triton read (`KEEP`,
  `KEEP_PREFIXES`), never a variable whose name looks like a secret (`SECRET`);
- runs under resource limits (`Limits`: file size, CPU time, processes for a non-root user,
  address space on the CPU only, since the CUDA driver reserves far more address space than it uses);
- runs under a guard (a Python audit hook, which code cannot remove) that refuses and records:
  opening a file for writing, or creating/removing/renaming one, outside the scratch folder;
  reading credentials (`SECRET_PATHS` under HOME and the password database's home); opening a network socket;
  forking; starting more than `Limits.processes` processes; signalling the verifying process;
- runs inside bubblewrap when it is installed and works here (`sandbox_available`): no network,
  the whole filesystem read-only except the scratch folder, a private /tmp and /dev/shm, the
  credential folders hidden, its own process namespace, device nodes (GPUs) passed through.

Without bubblewrap, the guard and the limits are all there is: code that calls the C library
directly (a C/CUDA extension, ctypes) gets past the guard, and only file permissions stop it.
"""

from __future__ import annotations

import errno
import functools
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from addressable.core.errors import AddressableError

MODES = ("auto", "required", "off")
KEEP = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "CC", "CXX",
        "PYTHONHASHSEED", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH")
KEEP_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_", "CUBLAS_",
                 "CUDNN_", "NCCL_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "HIP_", "ROCM_", "ROCR_", "HSA_", "AMD_")
SECRET = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this `addressable` package
SECRET_PATHS = (".ssh", ".aws", ".gnupg", ".netrc", ".config", ".docker", ".kube", ".git-credentials",
                ".pypirc", ".npmrc", ".azure", ".gcloud", ".cache/huggingface", ".huggingface")


@dataclass
class Limits:
    """Resource limits of one candidate process (None: no limit)."""

    file_mb: float | None = 4096.0       # RLIMIT_FSIZE: largest file it may write
    scratch_mb: float | None = 16384.0   # total size of the scratch folder, checked after the run
    cpu_s: float | None = None           # RLIMIT_CPU; None: the timeout times the CPU count
    memory_gb: float | None = None       # RLIMIT_AS on the CPU; None: 80% of the machine's memory
    processes: int = 256                 # processes it may start (guard), and RLIMIT_NPROC headroom


@dataclass(frozen=True)
class Sandbox:
    """How candidates run here: `kind` is "bubblewrap" or "none", `note` says why when it is "none"."""

    kind: str
    note: str = ""

    @property
    def sandboxed(self) -> bool:
        return self.kind == "bubblewrap"


@functools.cache
def sandbox_available() -> Sandbox:
    """Bubblewrap when `bwrap` is installed and can start a sandbox here, else "none" with the reason."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Sandbox("none", "bubblewrap (bwrap) is not installed")
    try:
        res = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
                              "--unshare-pid", "--die-with-parent", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return Sandbox("none", f"bwrap does not start: {e}")
    if res.returncode != 0:
        return Sandbox("none", f"bwrap cannot create a sandbox here: {res.stderr.decode(errors='replace').strip()[:200]}")
    return Sandbox("bubblewrap")


def choose(mode: str) -> Sandbox:
    """The sandbox for --sandbox MODE: auto (bubblewrap if it works), required (refuse without), off."""
    if mode not in MODES:
        raise AddressableError(f"--sandbox must be one of {', '.join(MODES)}, got '{mode}'")
    if mode == "off":
        return Sandbox("none", "--sandbox off")
    found = sandbox_available()
    if mode == "required" and not found.sandboxed:
        raise AddressableError(f"--sandbox required: {found.note} (install bubblewrap, or use --sandbox auto)")
    return found


def unsandboxed_warning(box: Sandbox) -> str:
    """The one-line warning for runs without a real sandbox."""
    return (f"warning: candidates run unsandboxed ({box.note}): only a scratch folder, a scrubbed "
            "environment, resource limits and a Python-level guard contain them; --sandbox required refuses")


def real_homes() -> list[Path]:
    """The user's home folders whose credentials are hidden: HOME's and the password database's (a
    candidate can find the second whatever HOME says)."""
    homes = [os.environ.get("HOME"), pwd.getpwuid(os.getuid()).pw_dir]
    return list(dict.fromkeys(Path(h).resolve() for h in homes if h))


def scrubbed_env(scratch: Path, pythonpath: list[str]) -> dict[str, str]:
    """The candidate's environment: kept variables minus secrets, HOME/TMPDIR in scratch, PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if (k in KEEP or k.startswith(KEEP_PREFIXES)) and not SECRET.search(k)}
    tmp = scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    import site

    cache = scratch / ".cache"
    env.update(HOME=str(scratch), TMPDIR=str(tmp), XDG_CACHE_HOME=str(cache),
               TORCHINDUCTOR_CACHE_DIR=str(cache / "torchinductor"), TRITON_CACHE_DIR=str(cache / "triton"),
               PYTHONUSERBASE=site.getuserbase(), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(p for p in [*pythonpath, os.environ.get("PYTHONPATH", "")] if p))
    env.setdefault("PATH", os.defpath)
    return env


def bwrap_command(scratch: Path, writable: Path | list[Path], inputs: Iterable[Path] = (),
                  readonly: Iterable[Path] = ()) -> list[str]:
    """The bwrap prefix: read-only /, the scratch and `writable` folders writable, no network, GPUs passed through.

    `inputs` (the problem and candidate files), `readonly` folders, this Python (its prefix and
    sys.path: a venv or a checkout) and this package (wherever it is imported from: an editable
    install's finder need not put the checkout on sys.path) stay readable where they live, /tmp
    included (the sandbox's own /tmp is empty)."""
    cmd = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev",
           "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-net", "--unshare-pid",
           "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    for p in (home / name for home in real_homes() for name in SECRET_PATHS):
        if p.is_dir():
            cmd += ["--tmpfs", str(p)]
        elif p.exists():
            cmd += ["--ro-bind", "/dev/null", str(p)]
    python = [Path(p) for p in (sys.prefix, sys.exec_prefix, *sys.path, PACKAGE_ROOT) if p and Path(p).is_dir()]
    folders = {str(Path(p).resolve().parent) for p in inputs} | {str(p.resolve()) for p in [*python, *readonly]}
    for folder in sorted(folders):
        if folder == "/tmp" or folder.startswith("/tmp/"):
            cmd += ["--ro-bind", folder, folder]
    for bound in [scratch, *(writable if isinstance(writable, list) else [writable])]:
        cmd += ["--bind", str(bound), str(bound)]
    return [*cmd, "--chdir", str(scratch)]


def resolved_limits(limits: Limits, device: str, timeout: float) -> dict[str, Any]:
    """The numbers the child applies: the defaults filled in for this machine, device and timeout."""
    d = asdict(limits)
    if d["cpu_s"] is None:
        d["cpu_s"] = max(60.0, timeout * (os.cpu_count() or 1) + 60.0)
    if device == "cpu" and d["memory_gb"] is None:
        d["memory_gb"] = 0.8 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    if device != "cpu":
        d["memory_gb"] = None
    return d


def _user_tasks() -> int:
    """Threads the current user runs now (RLIMIT_NPROC counts threads, per user)."""
    uid, n = os.getuid(), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            n += int(fields.get("Threads", "1").strip() or 1)
    return n


def apply_limits(limits: dict[str, Any]) -> None:
    """Set this process's hard and soft limits (a candidate cannot raise them again)."""
    def cap(which: int, value: float | None, slack: float = 0.0) -> None:
        if value is not None:
            resource.setrlimit(which, (int(value), int(value + slack)))

    cap(resource.RLIMIT_FSIZE, limits["file_mb"] and limits["file_mb"] * 2**20)
    cap(resource.RLIMIT_CPU, limits["cpu_s"], 5)
    cap(resource.RLIMIT_AS, limits["memory_gb"] and limits["memory_gb"] * 2**30)
    if os.getuid() != 0:  # root is exempt from RLIMIT_NPROC
        cap(resource.RLIMIT_NPROC, _user_tasks() + 4 * limits["processes"])


# ---------------------------------------------------------------- the in-process guard


class Guard:
    """An audit hook that refuses, and records, what a candidate may not do (see the module docstring)."""

    _WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    _PATH_EVENTS = frozenset({"os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
                    "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile"})
    _PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "pty.spawn"})

    def __init__(self, writable: list[Path], secret_roots: list[Path], processes: int) -> None:
        self.writable = [str(Path(p).resolve()) for p in writable]
        self.secrets = [str(root / s) for root in secret_roots for s in SECRET_PATHS]
        self.processes = processes
        self.started = 0
        self.violations: list[str] = []
        self.parent = os.getppid()

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def _refuse(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)
        raise PermissionError(errno.EPERM, f"sandbox: {what}")

    def _outside(self, path: Any) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        p = os.path.realpath(os.fsdecode(path))
        ok = any(p == w or p.startswith(w + os.sep) for w in self.writable) or p.startswith(("/dev/null", "/proc/self"))
        return None if ok else p

    def _secret(self, path: Any) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        p = os.path.realpath(os.fsdecode(path))
        return p if any(p == s or p.startswith(s + os.sep) for s in self.secrets) else None

    def _hook(self, event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (*args, None, None)[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & self._WRITE_FLAGS)
            if writing and (p := self._outside(path)):
                self._refuse(f"wrote outside the scratch folder ({p})")
            if p := self._secret(path):
                self._refuse(f"read credentials ({p})")
        elif event in self._PATH_EVENTS:
            for path in args[:2]:
                if isinstance(path, str | bytes | os.PathLike) and (p := self._outside(path)):
                    self._refuse(f"changed a file outside the scratch folder ({event} {p})")
        elif event == "os.listdir" and args and (p := self._secret(args[0])):
            self._refuse(f"read credentials ({p})")
        elif event == "socket.__new__" and len(args) > 1 and args[1] not in (socket.AF_UNIX, -1):
            self._refuse("opened a network socket")
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            self._refuse(f"used a socket ({event})")
        elif event in ("os.fork", "os.forkpty"):
            self._refuse("forked the verifying process")
        elif event in self._PROCESS_EVENTS:
            self.started += 1
            if self.started > self.processes:
                self._refuse(f"started more than {self.processes} processes")
        elif event in ("os.kill", "os.killpg") and args and args[0] in (self.parent, 0, -1):
            self._refuse("signalled the verifying process")


def limit_reason(e: BaseException, limits: dict[str, Any]) -> str | None:
    """"sandbox: ..." when exception `e` is a resource limit at work, else None."""
    msg = str(e)
    if isinstance(e, MemoryError) or (limits.get("memory_gb") and "can't allocate memory" in msg):
        return f"sandbox: memory limit reached ({limits.get('memory_gb') or 0:.3g} GB of address space)"
    if isinstance(e, OSError) and e.errno == errno.EFBIG:
        return f"sandbox: file-size limit reached ({limits['file_mb']:g} MB)"
    if isinstance(e, OSError) and e.errno == errno.EAGAIN and "fork" in msg.lower():
        return "sandbox: process limit reached"
    if "sandbox: " in msg:
        return "sandbox: " + msg.split("sandbox: ", 1)[1]
    return None


def signal_reason(rc: int, limits: dict[str, Any]) -> str | None:
    """"sandbox: ..." when a child's exit code is a limit's signal, else None."""
    if rc == -signal.SIGXCPU:
        return f"sandbox: CPU-time limit reached ({limits['cpu_s']:g} s)"
    if rc == -signal.SIGXFSZ:
        return f"sandbox: file-size limit reached ({limits['file_mb']:g} MB)"
    return None


def scratch_reason(scratch: Path, limits: dict[str, Any]) -> str | None:
    """"sandbox: ..." when the candidate filled the scratch folder (a file at the size limit, or too much in all)."""
    total, largest = 0, 0
    for root, _, files in os.walk(scratch):
        for f in files:
            try:
                size = os.lstat(os.path.join(root, f)).st_size
            except OSError:
                continue
            total, largest = total + size, max(largest, size)
    if limits["file_mb"] and largest >= limits["file_mb"] * 2**20:
        return f"sandbox: file-size limit reached ({limits['file_mb']:g} MB in one file)"
    if limits["scratch_mb"] and total > limits["scratch_mb"] * 2**20:
        return f"sandbox: wrote {total / 2**20:.0f} MB to the scratch folder (limit {limits['scratch_mb']:g} MB)"
    return None
