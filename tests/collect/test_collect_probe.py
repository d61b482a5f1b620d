"""--probe against a small HTTP server on loopback, reached through a real sshd's direct-tcpip channel.

The server answers in SGLang 0.5.23's documented shape (`/server_info`: the resolved ServerArgs,
`max_total_num_tokens`, `internal_states`; `/metrics`: Prometheus text). Only 127.0.0.1 is contacted.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli_helpers import run_in_process
from dw_sshlab import plain_unit

from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.probe import ProbeError, http_get, probe_unit
from driftwatch.collect.raw import RawUnit
from driftwatch.fileio import dump_yaml
from driftwatch.snapshots.reader import EngineReader
from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

KEY = "sk-probe-7f7f7f7f"
SERVER_INFO = {
    "model_path": "/root/models/m", "tp_size": 1, "api_key": KEY, "context_length": 19456,
    "max_running_requests": None, "chunked_prefill_size": 8192, "max_total_num_tokens": 19456,
    "launch_command": f"python -m sglang.launch_server --api-key {KEY}", "version": "0.5.23",
    "internal_states": [{"effective_max_running_requests_per_dp": 1, "last_gen_throughput": 41.5,
                         "avg_spec_accept_length": 1.75}],
}
METRICS = ('# TYPE sglang:num_running_reqs gauge\n'
           'sglang:num_running_reqs{model_name="m",tp_rank="0"} 1.0\n')


class _Server:
    def __init__(self, hang: bool = False):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                seen.append((self.path, self.headers.get("Authorization")))
                if hang:
                    time.sleep(30)
                body = {"/server_info": json.dumps(SERVER_INFO).encode(), "/metrics": METRICS.encode()}.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                try:
                    self.end_headers()
                    self.wfile.write(body or b"")
                except (BrokenPipeError, ConnectionResetError):
                    # The probe gave up first (the hung endpoint, 30 s later): socketserver would print a
                    # traceback on sys.stderr, which may by then be another test's in-process CLI run.
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def engine_http():
    servers = []

    def start(**kw):
        servers.append(_Server(**kw))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def unit_server(server_process):
    """start(port, extra): a process whose command line is plain_unit(port, extra)'s ExecStart, as
    the unit's server would be (on a host without systemd the probe asks only a unit whose server
    is found running)."""
    import shlex

    def start(port: int, extra: str = ""):
        return server_process(shlex.split(plain_unit(port, extra).split("ExecStart=", 1)[1].strip()))

    return start


def _target(server):
    return HostTarget(name=server.name, address=server.address, user="root", port=server.port)


def test_probe_reads_the_servers_view_through_ssh(loopback, known_hosts, options, engine_http, unit_server):
    http = engine_http()
    unit = "probe-ok.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(http.port, f" --api-key {KEY}"))
    unit_server(http.port, f" --api-key {KEY}")
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback), probe=True), reader=READER)
    assert raw.status == "fallback", raw.error
    assert set(raw.probe) == {"/server_info", "/metrics"}  # the deprecated alias is not asked once this answers
    assert [p for p, _ in http.seen] == ["/server_info", "/metrics"]
    assert all(auth == f"Bearer {KEY}" for _, auth in http.seen)  # the server needs its key to answer
    snap = build_snapshot(raw)
    effective = snap.runtime["effective"]
    assert effective["fields"]["context_length"] == 19456
    assert effective["fields"]["max_running_requests"] == 1
    assert effective["figures"]["throughput"] == 41.5 and effective["figures"]["accept_length"] == 1.75
    assert KEY not in dump_yaml(snapshot_to_dict(snap))  # the answer's api_key and launch_command
    assert "api_key" not in effective["fields"]  # the same key as the unit's: nothing to record


def test_probe_is_off_by_default(loopback, known_hosts, options, engine_http):
    http = engine_http()
    unit = "probe-off.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(http.port))
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback)), reader=READER)
    assert raw.status == "fallback" and raw.probe is None and http.seen == []


def test_a_hung_endpoint_costs_its_own_timeout_only(loopback, known_hosts, options, engine_http, unit_server):
    http = engine_http(hang=True)
    unit = "probe-hang.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(http.port))
    unit_server(http.port)
    start = time.monotonic()
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback), probe=True, probe_timeout=0.5), reader=READER)
    elapsed = time.monotonic() - start
    assert raw.status == "fallback" and raw.text  # the unit itself is read
    assert raw.probe == {}
    assert "no complete answer within 0.5s" in raw.probe_problems["/server_info"]
    assert elapsed < 10  # three paths at 0.5 s each, bounded by the unit's probe budget of 1.5 s


def test_nothing_listening_is_one_problem(loopback, known_hosts, options, unit_server):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    unit = "probe-closed.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(free))
    unit_server(free)
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback), probe=True), reader=READER)
    assert raw.status == "fallback"
    assert list(raw.probe_problems) == ["/server_info"]
    assert f"cannot connect to 127.0.0.1:{free}" in raw.probe_problems["/server_info"]


def test_a_unit_whose_server_is_not_running_is_never_asked(loopback, known_hosts, options, engine_http):
    """Whatever listens on a stopped unit's port (perhaps any user's process) is not its server:
    not believed, and not sent the key."""
    http = engine_http()
    unit = "probe-stopped.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(http.port, f" --api-key {KEY}"))
    [raw] = collect_fleet([(_target(loopback), unit)], options(known_hosts(loopback), probe=True), reader=READER)
    assert raw.status == "fallback" and http.seen == []
    assert "no process on this host is known to be the unit's server" in raw.probe_problems["*"]


def test_stopped_units_and_containers_are_never_asked():
    opened = []
    stopped = RawUnit(host="ct129", unit="x.service", active_state="failed", main_pid=None,
                      text="[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path m --port 30000\n")
    probe_unit(stopped, lambda port, timeout: opened.append(port), reader=READER)
    assert "the unit is failed" in stopped.probe_problems["*"]
    docker = RawUnit(host="ct129", unit="v.service", active_state="active", main_pid=4242,
                     text="[Service]\nExecStart=/usr/bin/docker run --rm -p 9000:8000 vllm/vllm-openai:v0.15.0 "
                          "--model m\n")
    probe_unit(docker, lambda port, timeout: opened.append(port), reader=READER)
    assert "runs in a container" in docker.probe_problems["*"]
    assert opened == []


def test_a_server_bound_elsewhere_is_never_asked():
    opened = []
    raw = RawUnit(host="ct129", unit="x.service", active_state="active", main_pid=4242,
                  text="[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path m "
                       "--host 10.1.230.5 --port 30000\n")
    probe_unit(raw, lambda port, timeout: opened.append(port), reader=READER)
    assert opened == []
    assert "listens on 10.1.230.5 only" in raw.probe_problems["*"]


def test_an_answer_over_the_limit_is_refused(monkeypatch):
    import driftwatch.collect.probe as probe

    monkeypatch.setattr(probe, "MAX_BODY_BYTES", 1000)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 500000\r\n\r\n" + b"x" * 500000)

    threading.Thread(target=serve, daemon=True).start()
    try:
        with pytest.raises(ProbeError, match="over 1000 bytes"):
            http_get(lambda port, timeout: socket.create_connection(("127.0.0.1", port), timeout),
                     listener.getsockname()[1], "/metrics", 5.0)
    finally:
        listener.close()


def test_show_probe_prints_the_servers_view_and_no_secret(loopback, known_hosts, lab, engine_http, tmp_path,
                                                          unit_server):
    """The command an operator runs: `driftwatch show --host HOST --unit U --probe`, through the real CLI."""

    http = engine_http()
    unit = "probe-cli.service"
    loopback.write(f"/etc/systemd/system/{unit}", plain_unit(http.port, f" --api-key {KEY}"))
    unit_server(http.port, f" --api-key {KEY}")
    r = run_in_process("show", "--host", f"root@127.0.0.1:{loopback.port}", "--unit", unit, "--probe",
                       "--known-hosts", known_hosts(loopback), "-i", lab.client_key, "--ssh-config", "none",
                       env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "200", "XDG_CONFIG_HOME": None,
                            "SSH_AUTH_SOCK": None})
    assert r.returncode == 0, r.stderr
    [line] = [ln for ln in r.stdout.splitlines() if ln.startswith("reported by the server (--probe):")]
    assert "context_length=19456" in line and "max_running_requests=1" in line and "throughput=41.5" in line
    assert KEY not in r.stdout + r.stderr
