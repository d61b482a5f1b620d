"""A real node_exporter (Debian's prometheus-node-exporter) on loopback, reading one textfile
directory and nothing else; always stopped, even when the test fails."""
from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.request

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
MISSING = "needs prometheus-node-exporter (apt-get install prometheus-node-exporter; .ci/run installs it)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def node_exporter(directory):
    """Yields a function returning the /metrics text of a node_exporter on 127.0.0.1 reading
    `directory` with its textfile collector (every other collector off)."""
    port = _free_port()
    proc = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={directory}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("node_exporter did not start") from None
                time.sleep(0.05)

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                return r.read().decode()

        yield scrape
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
