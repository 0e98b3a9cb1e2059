"""A document over `max-file-size` opened in `cslint lsp`, then edited: the hostile input of issue #34.

Starts the language server, opens a file of `--mb` MB (the default limit is 5 MB) as an unsaved buffer,
waits for its diagnostics (one WSC004, as `cslint check` reports the file), makes one incremental
edit and waits for the diagnostics of the edited text, then shuts the server down. Prints the seconds
each took and the server's peak memory (VmHWM); exits 1 if a WSC004 did not come within the time
limit. bench/hostile.py runs it for 6 MB and 50 MB; tests/test_lsp_limits.py runs the same client.

    python bench/lsp_hostile.py --mb 50
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MODEL = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
    "        if x.max() > 0:\n            y = x * 2\n        else:\n            y = x\n        return y\n"
)


class RawClient:
    """A language client writing and reading JSON-RPC frames itself: nothing between the test and the
    server's pipe (pygls' client refuses malformed messages, which some tests send on purpose)."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "cslint", "lsp"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "CSLINT_NO_CACHE": "1", **(env or {})})
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n") and length is not None:
                    break
            self.messages.put(json.loads(out.read(length)))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: Any) -> int:
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        return self.ids

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def wait(self, match: Any, timeout: float) -> dict[str, Any] | None:
        """The first message from the server (since the last one matched) that `match` accepts; None on
        timeout or when the server has closed its output."""
        deadline = time.monotonic() + timeout
        for message in self.seen:
            if match(message):
                self.seen.remove(message)
                return message
        while True:
            try:
                message = self.messages.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                return None
            if message is None:
                return None
            if match(message):
                return message
            self.seen.append(message)

    def response(self, request_id: int, timeout: float = 30) -> dict[str, Any] | None:
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def initialize(self, root: Path, capabilities: dict[str, Any] | None = None) -> dict[str, Any] | None:
        answer = self.response(self.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                                           "capabilities": capabilities or {}}), 60)
        self.notify("initialized", {})
        return answer

    def diagnostics(self, uri: str, timeout: float, version: int | None = None) -> dict[str, Any] | None:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and
                         m["params"]["uri"] == uri and (version is None or m["params"].get("version") == version),
                         timeout)

    def peak_mb(self) -> float:
        """The server's peak resident memory so far."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> int | None:
        """Shut the server down as an editor does; its exit code (None: it had to be killed)."""
        try:
            ended = self.response(self.request("shutdown", None), 30)
            if ended is not None:
                self.notify("exit", None)
            return self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def big_text(size: int) -> str:
    parts, total = [], 0
    while total < size:
        part = MODEL.replace("Net", f"Net{total}")
        parts.append(part)
        total += len(part)
    return "".join(parts)


def over_size(root: Path, size: int, timeout: float) -> dict[str, float | bool]:
    """Open a `size`-byte document in a project under `root`, edit it once: how long its WSC004 took
    each time, and the server's peak memory."""
    (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    path = root / "big.py"
    text = big_text(size)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client = RawClient(root)
    try:
        client.initialize(root)
        started = time.monotonic()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
        del text
        opened = client.diagnostics(uri, timeout)
        opened_s = time.monotonic() - started
        started = time.monotonic()
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}},
                                "text": "x = 1\n"}]})
        edited = client.diagnostics(uri, timeout, version=2)
        edited_s = time.monotonic() - started
        peak = client.peak_mb()
    finally:
        code = client.close()

    def wsc004(found: dict[str, Any] | None) -> bool:
        return found is not None and [d["code"] for d in found["params"]["diagnostics"]] == ["WSC004"]

    return {"opened": wsc004(opened), "opened_s": opened_s, "edited": wsc004(edited), "edited_s": edited_s,
            "peak_mb": peak, "exit": code == 0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=6)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cslint-lsp-hostile-") as root:
        out = over_size(Path(root), int(args.mb * 1_000_000), args.timeout)
    ok = out["opened"] and out["edited"]
    print(f"{args.mb:g} MB open document: {'WSC004' if out['opened'] else 'no WSC004'} in {out['opened_s']:.1f} s, "
          f"after an edit {'WSC004' if out['edited'] else 'no WSC004'} in {out['edited_s']:.1f} s, "
          f"server peak {out['peak_mb']:.0f} MB, {'shut down' if out['exit'] else 'did not shut down'}")
    return 0 if ok and out["exit"] else 1


if __name__ == "__main__":
    sys.exit(main())
