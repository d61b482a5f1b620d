"""A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: commands in on fd 3, replies out on fd 4, NUL-delimited JSON), so the
HTML report is looked at by the engine that lays it out, with no Playwright download and no network.
Every call has a timeout; the browser's process group is killed and its profile removed even when
the test fails."""
from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
MISSING = "needs Debian's chromium (apt-get install chromium; .ci/run installs it)"
TIMEOUT = 30.0


class CdpError(RuntimeError):
    pass


class Browser:
    """One page of a headless Chromium: `call` sends a DevTools command and waits for its reply."""

    def __init__(self, proc: subprocess.Popen, commands: int, replies: int):
        self._proc, self._out = proc, commands
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue] = {}
        self._events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, args=(replies,), daemon=True)
        self._reader.start()
        self.session: str | None = None

    def _read(self, fd: int) -> None:
        buffer = b""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        with self._lock:
                            box = self._replies.setdefault(message["id"], queue.Queue())
                        box.put(message)
                    else:
                        self._events.put(message)

    def call(self, method: str, params: dict | None = None, session: bool = True, timeout: float = TIMEOUT) -> dict:
        number = next(self._ids)
        message = {"id": number, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        with self._lock:
            box = self._replies.setdefault(number, queue.Queue())
        os.write(self._out, json.dumps(message).encode() + b"\0")
        try:
            reply = box.get(timeout=timeout)
        except queue.Empty:
            raise CdpError(f"{method}: no reply within {timeout} s") from None
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_event(self, method: str, timeout: float = TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"no {method} event within {timeout} s")
            try:
                event = self._events.get(timeout=left)
            except queue.Empty:
                continue
            if event.get("method") == method:
                return event.get("params", {})

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (returned by value)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise CdpError(f"evaluate: {result['exceptionDetails'].get('text')}: {expression[:80]}")
        return result["result"].get("value")

    def open(self, path: Path, width: int, height: int = 900) -> None:
        """Load a local file at a viewport `width` CSS px wide (a phone: mobile emulation)."""
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
        self.call("Page.navigate", {"url": Path(path).resolve().as_uri()})
        deadline = time.monotonic() + TIMEOUT
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise CdpError(f"{path} did not finish loading within {TIMEOUT} s")
            time.sleep(0.05)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])


def _move_to(fd_commands: int, fd_replies: int):
    """In the child: its end of the command pipe on fd 3, of the reply pipe on fd 4."""
    def move():
        a, b = os.dup(fd_commands), os.dup(fd_replies)
        os.dup2(a, 3)
        os.dup2(b, 4)
    return move


@contextlib.contextmanager
def chromium():
    """Yields a Browser on a blank page of a fresh headless Chromium."""
    profile = tempfile.mkdtemp(prefix="dw-chromium-")
    cmd_r, cmd_w = os.pipe()
    rep_r, rep_w = os.pipe()
    proc = None
    try:
        proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage",
             "--hide-scrollbars", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=_move_to(cmd_r, rep_w), start_new_session=True)
        os.close(cmd_r)
        os.close(rep_w)
        cmd_r = rep_w = -1
        browser = Browser(proc, cmd_w, rep_r)
        rep_r = -1  # the reader thread owns it now
        target = browser.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        browser.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                       session=False)["sessionId"]
        browser.call("Page.enable")
        yield browser
    finally:
        for fd in (cmd_r, rep_w, rep_r):
            if fd >= 0:
                os.close(fd)
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        with contextlib.suppress(OSError):
            os.close(cmd_w)
        shutil.rmtree(profile, ignore_errors=True)
