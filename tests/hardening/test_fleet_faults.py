"""Host keys and fleet faults against a real sshd: OpenSSH's host-key rules, one bad host never stops
a fleet, one size limit for a unit however it is read, Ctrl-C ends a run at once, store paths and
terminal escapes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dw_sshlab
import pytest
from dw_sshlab import UNIT

from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.fileio import MAX_TEXT_BYTES
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

DW = Path(sys.executable).parent / "driftwatch"
PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/m"


def unit(extra: str = "", port: int = 30000) -> str:
    return f"[Unit]\nDescription=t\n\n[Service]\nExecStart={PY} --port {port}{extra}\n"


def target(server, name=None):
    return HostTarget(name=name or server.address, address=server.address, user="root", port=server.port)


@pytest.fixture(scope="module")
def servers(lab):
    good = lab.start_sshd("hard-good")
    good.write(f"/etc/systemd/system/{UNIT}", unit())
    bad = lab.start_sshd("hard-bad")
    bad.write(f"/etc/systemd/system/{UNIT}", unit(" --cuda-graph-bs 1,2,4"))
    big = lab.start_sshd("hard-big")
    big.write(f"/etc/systemd/system/{UNIT}", unit() + "# pad\n" * (2 * MAX_TEXT_BYTES // 6))
    escape = lab.start_sshd("hard-escape")
    escape.write(f"/etc/systemd/system/{UNIT}", unit(" --served-model-name 'a\\x1b[2Jb\\x9bc'").replace(
        "Description=t", "Description=t\x1b]0;pwned\x07"))
    return {"good": good, "bad": bad, "big": big, "escape": escape}


class Cli:
    def __init__(self, tmp_path, lab, servers):
        self.tmp = tmp_path
        self.kh = tmp_path / "known_hosts"
        self.kh.write_text("".join(s.known_hosts_line() for s in servers.values()))
        self.cfg = tmp_path / "ssh_config"
        self.cfg.write_text("".join(f"Host {n}\n    HostName {s.address}\n    Port {s.port}\n    User root\n"
                                    for n, s in servers.items()))
        self.key = lab.client_key
        self.store = tmp_path / "store"

    def args(self, command_timeout: float = 15) -> list[str]:
        return ["--ssh-config", str(self.cfg), "-i", self.key, "--known-hosts", str(self.kh),
                "--connect-timeout", "3", "--command-timeout", str(command_timeout)]

    def env(self):
        env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "DRIFTWATCH_BASELINES")}
        env["HOME"] = str(self.tmp)
        return env

    def run(self, *args, timeout: float = 90) -> subprocess.CompletedProcess:
        return subprocess.run([str(DW), *map(str, args)], capture_output=True, text=True, cwd=self.tmp,
                              env=self.env(), timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def cli(tmp_path, lab, servers):
    return Cli(tmp_path, lab, servers)


# ----------------------------------------------------------------------------- host keys

def _rsa_only(lab, name: str):
    """An sshd that offers only an RSA host key (sshd re-reads its config on SIGHUP)."""
    server = lab.start_sshd(name)
    server.write(f"/etc/systemd/system/{UNIT}", unit())
    key = os.path.join(server.root, "ssh_host_rsa_key")
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", key], check=True)
    config = os.path.join(server.root, "sshd_config")
    text = Path(config).read_text()
    Path(config).write_text("\n".join(f"HostKey {key}" if line.startswith("HostKey ") else line
                                      for line in text.splitlines()) + "\n")
    os.kill(server.pid, signal.SIGHUP)
    time.sleep(0.5)
    dw_sshlab.wait_port(server.address, server.port)
    return server, Path(key + ".pub").read_text().split()[:2]


def test_accept_new_never_learns_another_key_type_for_a_known_host(lab, tmp_path, options):
    server, rsa = _rsa_only(lab, "hard-rsa")
    kh = tmp_path / "known_hosts"
    kh.write_text(server.known_hosts_line())  # the ed25519 key it had before: now it offers only RSA
    before = kh.read_text()
    for accept_new in (False, True):
        raw = collect_fleet([(target(server), UNIT)], options(str(kh), accept_new=accept_new), reader=READER)[0]
        assert raw.status == "host key refused", raw.error
        assert raw.error.startswith("HOST KEY CHANGED for") and "ssh-rsa" in raw.error and "ssh-ed25519" in raw.error
    assert kh.read_text() == before
    # a host with no key at all is learnt, as before
    kh.write_text("")
    raw = collect_fleet([(target(server), UNIT)], options(str(kh), accept_new=True), reader=READER)[0]
    assert raw.status == "fallback", raw.error
    assert kh.read_text().split()[1:3] == rsa


# ----------------------------------------------------------------------------- fleet faults

def test_one_bad_host_never_aborts_a_fleet_snapshot(cli):
    run = cli.run("snapshot", "good", "bad", "big", "--unit", UNIT, "--store", cli.store, *cli.args())
    assert "Traceback" not in run.stderr and "internal error" not in run.stdout + run.stderr, run.stderr
    lines = {line.split("\t")[0]: line for line in run.stdout.splitlines()}
    assert set(lines) == {"good", "bad", "big"}, run.stdout
    from driftwatch.snapshots.store import SnapshotStore
    store = SnapshotStore(cli.store)  # a database: asked, not listed
    assert store.latest("good", UNIT) is not None
    assert store.latest("bad", UNIT) is not None  # a flag the engine refuses is a finding
    assert store.latest("big", UNIT) is None
    assert lines["big"].split("\t")[2:] == ["error", "-"]  # why, once: on stderr (issue 22 item 9)
    assert "larger than the limit" in run.stderr and "big" in run.stderr
    assert run.returncode == 2  # one host could not be read


def test_one_bad_host_never_aborts_a_fleet_baseline_save(cli):
    bl = cli.tmp / "bl"
    for host in ("bad", "good"):
        run = cli.run("baseline", "save", host, "--host", host, "--unit", UNIT, "--baselines-dir", bl, *cli.args())
        assert run.returncode == 0, run.stderr
    assert (bl / "bad.yaml").is_file() and (bl / "good.yaml").is_file()


def test_a_remote_unit_over_the_limit_is_an_error_for_that_host_never_cut(servers, lab, tmp_path, options):
    kh = tmp_path / "known_hosts"
    kh.write_text(servers["big"].known_hosts_line() + servers["good"].known_hosts_line())
    start = time.monotonic()
    big, good = collect_fleet([(target(servers["big"]), UNIT), (target(servers["good"]), UNIT)],
                              options(str(kh), command_timeout=10), reader=READER)
    assert time.monotonic() - start < 12
    assert big.status == "error" and "larger than the limit" in big.error and big.text is None
    assert good.status == "fallback", good.error


def test_ctrl_c_ends_a_run_at_once_and_leaves_no_temp_files(cli):
    hung = dw_sshlab.HungServer()
    try:
        cfg = cli.cfg.read_text() + f"Host hung\n    HostName 127.0.0.1\n    Port {hung.port}\n    User root\n"
        cli.cfg.write_text(cfg)
        args = cli.args(command_timeout=60)
        args[args.index("--connect-timeout") + 1] = "60"
        proc = subprocess.Popen([str(DW), "snapshot", "hung", "good", "--unit", UNIT, "--store", str(cli.store),
                                 *args], cwd=cli.tmp, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL,
                                # as at a terminal: a test run in the background inherits SIGINT ignored
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(3)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - start < 5, err
        assert proc.returncode != 0
    finally:
        hung.close()
    assert not list(cli.store.rglob("*.tmp")) if cli.store.exists() else True


# ----------------------------------------------------------------------------- names and escapes

def test_host_names_become_store_paths_only_inside_the_store(servers, lab, tmp_path, options):
    from driftwatch.snapshots.snapshot import build_snapshot
    from driftwatch.snapshots.store import SnapshotStore
    kh = tmp_path / "known_hosts"
    kh.write_text(servers["good"].known_hosts_line())
    root = tmp_path / "store"
    for name in ("..", "../..", "a/../../x", ".", "x" * 300):
        raw = collect_fleet([(target(servers["good"], name=name), UNIT)], options(str(kh)), reader=READER)[0]
        assert raw.status == "fallback", raw.error
        saved = SnapshotStore(root).save(build_snapshot(raw))
        assert root.resolve() in saved.resolve().parents, saved
        assert all(len(part.encode()) <= 255 for part in saved.parts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["known_hosts", "store"]


def test_terminal_escapes_from_a_remote_unit_never_reach_the_terminal(cli):
    for args in (["show", "--host", "escape", "--unit", UNIT, "--all"],
                 ["compare", "--baseline", cli.tmp / "base.service", "--host", "escape", "--unit", UNIT]):
        (cli.tmp / "base.service").write_text(unit())
        run = subprocess.run([str(DW), *map(str, args), *cli.args()], capture_output=True, cwd=cli.tmp,
                             env=cli.env(), timeout=90, stdin=subprocess.DEVNULL)
        assert run.returncode in (0, 1), run.stderr
        out = run.stdout + run.stderr  # bytes: a raw C1 byte (0x9b is CSI) must not get through either
        assert b"Traceback" not in out
        assert not any(c in out for c in (b"\x1b", b"\x9b", b"\x07", "\u009b".encode())), out
        assert b"\\x1b" in out


def test_error_lines_never_carry_a_raw_control_character():
    from driftwatch.collect.raw import RawUnit
    from driftwatch.errors import DriftwatchError
    from driftwatch.snapshots.snapshot import build_snapshot
    with pytest.raises(DriftwatchError) as exc:  # a `# /path` header from a host, with an escape in it
        build_snapshot(RawUnit(host="h", unit="u.service", source="systemctl cat",
                               text="# /etc/x\x1b[2J\x9b.service\n[Service\nExecStart=/bin/x\n"))
    assert "\x1b" not in str(exc.value) and "\x9b" not in str(exc.value) and "\\x1b" in str(exc.value)
