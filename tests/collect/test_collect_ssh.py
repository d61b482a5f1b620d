"""SSH collection against a real sshd on 127.0.0.1 (host keys, auth, timeouts, refusals)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time

import dw_sshlab
import pytest
from dw_sshlab import UNIT

from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.errors import InputError
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do


def target(server, units=(UNIT,), name=None):
    return HostTarget(name=name or server.address, address=server.address, user="root",
                      port=server.port, units=list(units))


def one(server, opts, unit=UNIT, name=None):
    return collect_fleet([(target(server, name=name), unit)], opts, reader=READER)[0]


def test_fallback_read_over_ssh(loopback, known_hosts, options):
    raw = one(loopback, options(known_hosts(loopback)))
    assert raw.status == "fallback", raw.error
    assert raw.source == "disk"
    assert raw.paths == [f"/etc/systemd/system/{UNIT}"]
    assert raw.text.startswith(f"# /etc/systemd/system/{UNIT}\n[Unit]\n")
    assert "--port 30000" in raw.text
    assert "systemctl cat failed" in raw.error  # no systemd as PID 1 in the lab: the real fallback
    assert raw.collected_at


def test_several_units_one_connection(loopback, known_hosts, options, monkeypatch):
    import driftwatch.collect.ssh as ssh

    opened = []
    real_open = ssh.SSHConnection.open

    def counting_open(self):
        opened.append(self.endpoint.name)
        return real_open(self)

    monkeypatch.setattr(ssh.SSHConnection, "open", counting_open)
    t = target(loopback)
    raws = collect_fleet([(t, UNIT), (t, "other"), (t, "missing.service")],
                         options(known_hosts(loopback)), reader=READER)
    assert [r.unit for r in raws] == [UNIT, "other.service", "missing.service"]
    assert [r.status for r in raws] == ["fallback", "fallback", "unit not found"]
    assert "missing.service not found" in raws[2].error
    assert len(opened) == 1


def test_unknown_host_key_refused(loopback, tmp_path, options):
    kh = tmp_path / "known_hosts"
    raw = one(loopback, options(str(kh)))
    assert raw.status == "host key refused"
    assert f"is not in {kh}" in raw.error and "--accept-new" in raw.error
    assert not kh.exists() or kh.read_text() == ""


def test_accept_new_records_key(loopback, tmp_path, options):
    kh = tmp_path / "sub" / "known_hosts"
    raw = one(loopback, options(str(kh), accept_new=True))
    assert raw.status == "fallback", raw.error
    line = kh.read_text()
    assert line == loopback.known_hosts_line()
    assert oct(kh.stat().st_mode & 0o777) == "0o600"
    # next time the recorded key is enough, without --accept-new
    assert one(loopback, options(str(kh))).status == "fallback"


def test_changed_host_key_refused_even_with_accept_new(loopback, tmp_path, options, lab):
    other = dw_sshlab.make_keypair(str(tmp_path / "impostor"))
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{loopback.port} {other}\n")
    before = kh.read_text()
    for accept_new in (False, True):
        raw = one(loopback, options(str(kh), accept_new=accept_new))
        assert raw.status == "host key refused"
        assert raw.error.startswith("HOST KEY CHANGED for")
        assert f"{kh}:1" in raw.error
    assert kh.read_text() == before


def test_hashed_known_hosts_entry(loopback, tmp_path, options):
    salt = os.urandom(20)
    name = f"[127.0.0.1]:{loopback.port}"
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    hashed = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    kh = tmp_path / "known_hosts"
    kh.write_text(f"# comment\n{hashed} {loopback.host_pub}\n")
    assert one(loopback, options(str(kh))).status == "fallback"


def test_wrong_client_key_auth_failed(loopback, known_hosts, options, tmp_path):
    wrong = str(tmp_path / "wrong_key")
    dw_sshlab.make_keypair(wrong)
    raw = one(loopback, options(known_hosts(loopback), identity=wrong))
    assert raw.status == "auth failed"
    assert "authentication failed for root" in raw.error and "wrong_key: refused" in raw.error


def test_missing_identity_file_auth_failed(loopback, known_hosts, options, tmp_path):
    raw = one(loopback, options(known_hosts(loopback), identity=str(tmp_path / "nope")))
    assert raw.status == "auth failed"
    assert "no such identity file" in raw.error


def test_closed_port_unreachable(known_hosts, options, loopback):
    port = dw_sshlab.free_port()  # bound then closed: nothing listens
    t = HostTarget(name="closed", address="127.0.0.1", port=port, user="root", units=[UNIT])
    start = time.monotonic()
    raw = collect_fleet([(t, UNIT)], options(known_hosts(loopback)), reader=READER)[0]
    assert raw.status == "unreachable"
    assert "Connection refused" in raw.error
    assert time.monotonic() - start < 2


def test_silent_server_times_out(known_hosts, options, loopback):
    hung = dw_sshlab.HungServer()
    try:
        t = HostTarget(name="hung", address="127.0.0.1", port=hung.port, user="root")
        start = time.monotonic()
        raw = collect_fleet([(t, UNIT)], options(known_hosts(loopback), connect_timeout=1.5), reader=READER)[0]
        elapsed = time.monotonic() - start
    finally:
        hung.close()
    assert raw.status == "timeout", raw.error
    assert "no SSH handshake within 1.5s" in raw.error
    assert 1.4 < elapsed < 4


@pytest.mark.parametrize("bad", [
    "x;touch /tmp/dw-pwned.service", "$(id).service", "a b.service", "`id`.service",
    "unit'.service", 'u"x.service', "u\n.service", "u|cat.service", "../../etc/passwd",
])
def test_shell_metacharacters_refused_before_connecting(bad, known_hosts, options, loopback):
    hung = dw_sshlab.HungServer()
    try:
        t = HostTarget(name="h", address="127.0.0.1", port=hung.port, user="root")
        with pytest.raises(InputError) as err:
            collect_fleet([(t, bad)], options(known_hosts(loopback)), reader=READER)
        time.sleep(0.05)
        assert hung.conns == []  # nothing was even connected
    finally:
        hung.close()
    assert repr(bad) in str(err.value)
    assert not os.path.exists("/tmp/dw-pwned.service")


def test_proxyjump_through_ssh_config(loopback, fleet, known_hosts, options, tmp_path):
    inner = fleet["plain1"]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host inner\n  HostName {inner.address}\n  User root\n  ProxyJump jump\n\n"
        f"Host jump\n  HostName 127.0.0.1\n  Port {loopback.port}\n  User root\n"
    )
    raw = collect_fleet([(HostTarget(name="inner"), UNIT)],
                        options(known_hosts(loopback, inner), ssh_config=str(cfg)), reader=READER)[0]
    assert raw.status == "fallback", raw.error
    assert raw.host == "inner"
    assert "--port 31001" in raw.text


def test_ssh_config_identity_and_user(loopback, known_hosts, options, tmp_path, lab):
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host box\n  HostName 127.0.0.1\n  Port {loopback.port}\n  User root\n"
                   f"  IdentityFile {lab.client_key}\n")
    raw = collect_fleet([(HostTarget(name="box"), UNIT)],
                        options(known_hosts(loopback), ssh_config=str(cfg), identity=None), reader=READER)[0]
    assert raw.status == "fallback", raw.error


def test_paramiko_not_imported_by_local_paths():
    import subprocess
    import sys

    code = ("import sys, driftwatch.collect.local, driftwatch.collect.inventory, "
            "driftwatch.collect.interface, driftwatch.collect.fleet, driftwatch.collect.unitname; "
            "print('paramiko' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def cut_server(lab):
    """`systemctl cat` answers, then `systemctl show` hangs (ignoring TERM, so the step timeout
    cannot end it): --command-timeout cuts the round trip after the unit text arrived."""
    server = lab.start_sshd("cut-after-cat", run_dir=True)
    server.write(f"/etc/systemd/system/{UNIT}", dw_sshlab.plain_unit(30000))
    server.write("/usr/local/bin/systemctl", "#!/bin/sh\nfor a in \"$@\"; do case $a in\n"
                 f"  cat) printf '# /etc/systemd/system/{UNIT}\\n'; cat /etc/systemd/system/{UNIT}; exit 0 ;;\n"
                 "  show) trap '' TERM; exec sleep 60 ;;\nesac; done\nexit 1\n", 0o755)
    return server


def test_a_read_cut_after_the_unit_text_says_what_was_not_read(cut_server, known_hosts, options):
    """The unit is still read, but the RawUnit and its snapshot say which steps never arrived
    instead of looking complete."""
    from driftwatch.snapshots.snapshot import build_snapshot
    server = cut_server
    start = time.monotonic()
    raw = one(server, options(known_hosts(server), command_timeout=3))
    assert time.monotonic() - start < 30
    assert raw.status == "ok", (raw.status, raw.error)
    assert "--port 30000" in raw.text
    assert raw.incomplete is not None
    assert "--command-timeout" in raw.incomplete and "process" in raw.incomplete and "version" in raw.incomplete
    assert raw.main_pid is None and raw.engine_version is None
    snap = build_snapshot(raw, origin=f"{raw.host}:{raw.unit}")
    assert raw.incomplete in snap.warnings and snap.runtime["not_read"] == raw.incomplete
    # saved and read back, it is still said by every comparison (compare's and the report's warnings)
    from driftwatch.fileio import dump_yaml_readable, load_yaml_text
    from driftwatch.findings.compare import compare
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.snapshots.baseline import Baseline
    from driftwatch.snapshots.snapshot import snapshot_from_dict, snapshot_to_dict
    again = snapshot_from_dict(load_yaml_text(dump_yaml_readable(snapshot_to_dict(snap), "s"), "s", "snapshot"), "s")
    assert again.runtime["not_read"] == raw.incomplete
    full = build_snapshot(dw_sshlab_raw(raw), origin="b")
    said = compare(Baseline(name="b", snapshot=full), again, load_rules(None)).warnings
    assert any(n.startswith("current ") and raw.incomplete in n for n in said), said
    assert not any(n.startswith("baseline ") for n in said), said
    from driftwatch.report import get_format
    from driftwatch.report.data import comparison_to_dict
    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=again), full, load_rules(None)))
    assert raw.incomplete in get_format("text").render_comparison(doc)  # the baseline's side, said too
    from driftwatch.report.check import check_doc, render_check
    assert f"warning: {raw.incomplete}" in render_check(again)
    assert check_doc(again)["not_read"] == raw.incomplete and "not_read" not in check_doc(full)


def dw_sshlab_raw(raw):
    """The same unit, read completely (nothing missing)."""
    from driftwatch.collect.raw import RawUnit
    return RawUnit(host=raw.host, unit=raw.unit, text=raw.text, source=raw.source, paths=list(raw.paths))


def test_a_complete_read_says_nothing_is_missing(loopback, known_hosts, options):
    raw = one(loopback, options(known_hosts(loopback)))
    assert raw.incomplete is None, raw.incomplete


def test_a_snapshot_run_warns_of_a_cut_read(cut_server, known_hosts, lab, tmp_path):
    """The real CLI: the unit is saved, and the run says on stderr what was not read."""
    import subprocess
    import sys
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host cut\n    HostName {cut_server.address}\n    Port {cut_server.port}\n    User root\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "DRIFTWATCH_BASELINES")}
    env["HOME"] = str(tmp_path)
    dw = os.path.join(os.path.dirname(sys.executable), "driftwatch")
    run = subprocess.run([dw, "snapshot", "cut", "--unit", UNIT, "--store", str(tmp_path / "store"),
                          "--ssh-config", str(cfg), "-i", lab.client_key, "--known-hosts", known_hosts(cut_server),
                          "--connect-timeout", "3", "--command-timeout", "3"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=90, stdin=subprocess.DEVNULL)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert f"warning: cut: {UNIT}: read cut by --command-timeout after the unit text:" in run.stderr, run.stderr
    assert "process" in run.stderr and "not read" in run.stderr
