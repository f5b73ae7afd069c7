"""channel: requests and replies over pipes, tensors through files, deadlines, a helper that dies or lies."""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path

import pytest
import torch

from addressable.verification.channel import ChannelError, Local, Remote, TimedOut, decode, encode


def test_tensors_travel_as_checked_bytes(tmp_path: Path) -> None:
    counter = itertools.count()
    value = {"big": torch.arange(100_000, dtype=torch.float32).view(100, 1000).t(), "small": torch.tensor([1, 2]),
             "half": torch.ones(3, dtype=torch.bfloat16), "n": 3, "s": ["x", torch.zeros(0)]}
    wire = json.loads(json.dumps(encode(value, tmp_path, counter)))
    assert "file" in wire["big"] and "b64" in wire["small"]
    back = decode(wire, tmp_path)
    assert torch.equal(back["big"], value["big"]) and torch.equal(back["small"], value["small"])
    assert back["half"].dtype == torch.bfloat16 and back["n"] == 3 and back["s"][1].shape == (0,)
    (tmp_path / wire["big"]["file"]).write_bytes(b"\0" * 12)  # the file no longer matches its description
    with pytest.raises(ChannelError, match="does not match"):
        decode(wire["big"], tmp_path)
    for bad in ({"__tensor__": True, "shape": [2], "dtype": "object", "b64": ""},
                {"__tensor__": True, "shape": [-1], "dtype": "float32", "b64": ""},
                {"__tensor__": True, "shape": [1], "dtype": "float32", "file": "../../etc/passwd"}):
        with pytest.raises(ChannelError):
            decode(bad, tmp_path)


class _Echo:
    def twice(self, x: int) -> int:
        return 2 * x

    def boom(self) -> None:
        raise RuntimeError("no")


def test_local_replies_like_a_process() -> None:
    h = Local(_Echo())
    a, b = h.send("twice", x=2), h.send("boom")
    assert h.receive(b) == {"id": b, "error": "RuntimeError: no", "limit": None}
    assert h.receive(a) == {"id": a, "ok": 4}


def _remote(tmp_path: Path, body: str, timeout: float = 20.0) -> Remote:
    script = tmp_path / "helper.py"
    script.write_text("import json, os, sys, time\nreq, rep = int(sys.argv[1]), int(sys.argv[2])\n" + body)
    return Remote(lambda r, w: [sys.executable, str(script), str(r), str(w)], {"PATH": "/usr/bin:/bin"}, tmp_path,
                  tmp_path / "err.txt", time.monotonic() + timeout)


def test_remote_serves_a_real_role(tmp_path: Path) -> None:
    h = _remote(tmp_path, f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\nfrom addressable.verification.channel import serve\n"
                          "class E:\n    def twice(self, x): return 2 * x\n"
                          "serve(E(), req, rep, None)\n")
    try:
        ids = [h.send("twice", x=i) for i in range(3)]
        assert [h.receive(i)["ok"] for i in reversed(ids)] == [4, 2, 0]  # replies are kept by id
        assert "error" in h.call("nope")
    finally:
        h.close()


def test_remote_deadline_death_and_garbage(tmp_path: Path) -> None:
    slow = _remote(tmp_path, "time.sleep(30)\n", timeout=1.0)
    with pytest.raises(TimedOut):
        slow.call("anything")
    slow.close()
    dies = _remote(tmp_path, "sys.stderr.write('Traceback...\\nValueError: gone\\n'); sys.exit(4)\n")
    with pytest.raises(ChannelError, match="ended"):
        dies.call("anything")
    assert dies.exit_status() == "exit code 4" and dies.stderr_tail() == "ValueError: gone"
    dies.close()
    liar = _remote(tmp_path, "os.write(rep, b'not json\\n'); time.sleep(30)\n")
    with pytest.raises(ChannelError, match="not a reply"):
        liar.call("anything")
    liar.close()


def test_freeze_stops_the_helper_and_thaw_resumes_it(tmp_path: Path) -> None:
    h = _remote(tmp_path, "while True:\n    os.write(rep, b'')\n    time.sleep(0.01)\n")
    try:
        h.freeze()
        time.sleep(0.3)
        state = Path(f"/proc/{h.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state == "T"  # stopped
        h.thaw()
        time.sleep(0.3)
        assert Path(f"/proc/{h.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T"
    finally:
        h.close()
