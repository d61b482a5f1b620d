"""Fixtures for tests/collect: real OpenSSH servers (loopback and network namespaces).

Every server, namespace, veth and bridge is made by ``dw_sshlab.Lab`` and removed by it (pytest
finaliser, plus atexit) even when a test fails. SSH tests skip when not root or without
/usr/sbin/sshd; namespace tests also skip when ``ip netns`` is unavailable.
"""
from __future__ import annotations

import textwrap
import time

import dw_sshlab
import pytest
from dw_sshlab import FIXTURES, UNIT, plain_unit

from driftwatch.collect.sshoptions import SSHOptions

_SSH_OK = dw_sshlab.is_root() and dw_sshlab.have_sshd()
_NETNS_OK = _SSH_OK and dw_sshlab.have_netns()


@pytest.fixture(scope="session")
def loopback(lab):
    """One sshd on 127.0.0.1:<free port> whose /etc/systemd/system holds a plain unit."""
    server = lab.start_sshd("loopback")
    server.write(f"/etc/systemd/system/{UNIT}", plain_unit(30000))
    server.write("/etc/systemd/system/other.service", plain_unit(30001))
    return server


def _fake_systemd_host(server, state_dir: str) -> None:
    """Fake systemctl/journalctl/nvidia-smi on PATH (/usr/local/bin) replaying the recorded outputs
    in tests/fixtures/systemctl (hand-written in systemd 252's format: see its README)."""
    f = FIXTURES
    server.write("/usr/local/bin/systemctl", textwrap.dedent(f"""\
        #!/bin/sh
        # fake systemctl: replays {f}/sglang-qwen.service.* for sglang-qwen.service only
        last=; for a in "$@"; do last=$a; done
        if [ "$last" != "{UNIT}" ]; then echo "No files found for $last." >&2; exit 1; fi
        for a in "$@"; do
          case $a in
            cat) cat {f}/sglang-qwen.service.cat; cat {f}/sglang-qwen.service.cat.stderr >&2; exit 0 ;;
            show) pid=$(cat {state_dir}/mainpid 2>/dev/null || echo 0)
                  sed "s/@MAINPID@/$pid/g" {f}/sglang-qwen.service.show; exit 0 ;;
          esac
        done
        echo "fake systemctl: unsupported: $*" >&2; exit 1
        """), 0o755)
    server.write("/usr/local/bin/journalctl", f"#!/bin/sh\ncat {f}/journal.txt\n", 0o755)
    server.write("/usr/local/bin/nvidia-smi", textwrap.dedent(f"""\
        #!/bin/sh
        # fake nvidia-smi: the GPU list (-L), the link matrix (topo -m), else the --query-gpu csv
        case "$1" in
          -L) echo "GPU 0: NVIDIA RTX A6000 (UUID: GPU-0)"; echo "GPU 1: NVIDIA RTX A6000 (UUID: GPU-1)" ;;
          topo) cat {f}/nvidia-smi-topo.txt ;;
          *) cat {f}/nvidia-smi.csv ;;
        esac
        """), 0o755)
    # The version is read from the package metadata; the interpreter must never be run (it would say 9.9.9).
    server.write("/root/ml-env/bin/python3", "#!/bin/sh\necho 9.9.9\n", 0o755)
    server.write("/root/ml-env/lib/python3.11/site-packages/sglang-0.5.23.dist-info/METADATA",
                 "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n")


@pytest.fixture(scope="session")
def fleet(lab):
    """Namespaced hosts: 'systemd' (recorded systemctl), 'dropins', 'plain0'..'plain3', 'slowgpu'."""
    if not _NETNS_OK:
        pytest.skip("needs root, /usr/sbin/sshd and `ip netns`")
    hosts = {}
    for name in ("systemd", "dropins", "plain0", "plain1", "plain2", "plain3", "slowgpu"):
        hosts[name] = lab.netns_host(name, run_dir=name in ("dropins", "systemd"))
    s = hosts["systemd"]
    _fake_systemd_host(s, s.root)
    for i in range(4):
        hosts[f"plain{i}"].write(f"/etc/systemd/system/{UNIT}", plain_unit(31000 + i))
    slow = hosts["slowgpu"]
    slow.write(f"/etc/systemd/system/{UNIT}", plain_unit(32000))
    slow.write("/usr/local/bin/nvidia-smi", "#!/bin/sh\nexec sleep 60\n", 0o755)
    d = hosts["dropins"]
    d.write("/usr/lib/systemd/system/sglang-qwen.service", plain_unit(1, " --vendor"))
    d.write("/etc/systemd/system/sglang-qwen.service",
            plain_unit(30000) + "EnvironmentFile=-/root/sglang.env\n")
    d.write("/root/sglang.env", "SGLANG_DISABLE_CUDNN_CHECK=1\n")
    d.write("/usr/lib/systemd/system/sglang-qwen.service.d/10-vendor.conf", "[Service]\nNice=5\n")
    d.write("/run/systemd/system/sglang-qwen.service.d/10-vendor.conf", "[Service]\nNice=1\n")
    d.write("/etc/systemd/system/sglang-qwen.service.d/20-local.conf",
            "[Service]\nEnvironment=A=1")  # no final newline: printed with one, like systemctl cat
    d.write("/usr/lib/systemd/system/sglang-qwen.service.d/30-masked.conf", "[Service]\nNice=19\n")
    d.symlink("/etc/systemd/system/sglang-qwen.service.d/30-masked.conf", "/dev/null")
    d.write("/etc/systemd/system/sglang-qwen.service.d/notes.txt", "not a drop-in\n")
    d.write("/usr/lib/systemd/system/sglang-.service.d/05-prefix.conf", "[Service]\nLimitNOFILE=65536\n")
    d.write("/etc/systemd/system/service.d/99-top.conf", "[Service]\nTimeoutStopSec=30\n")
    d.write("/etc/systemd/system/dw-esc\\x2dtest.service", plain_unit(30005))
    d.write("/usr/lib/systemd/system/worker@.service", plain_unit(30006, " --worker %i"))
    d.write("/etc/systemd/system/worker@2.service.d/10-two.conf", "[Service]\nNice=2\n")
    return hosts


@pytest.fixture
def known_hosts(tmp_path, lab):
    """A known_hosts file trusting every server the lab has started so far."""
    path = tmp_path / "known_hosts"

    def write(*servers):
        path.write_text("".join(s.known_hosts_line() for s in servers))
        return str(path)

    return write


@pytest.fixture
def options(lab):
    def make(known_hosts: str, **kw) -> SSHOptions:
        base = dict(known_hosts=known_hosts, identity=lab.client_key, ssh_config="",
                    connect_timeout=3, command_timeout=15, allow_agent=False, look_for_keys=False)
        base.update(kw)
        return SSHOptions(**base)

    return make


@pytest.fixture
def engine_process(server_process):
    """A process whose command line is a real-looking SGLang launch (python -m sglang.launch_server)."""
    argv = ["/root/ml-env/bin/python3", "-m", "sglang.launch_server",
            "--model-path", "/root/models/Qwen3.6-27B", "--tp-size", "2"]
    return server_process(argv), argv


@pytest.fixture
def server_process(lab, tmp_path):
    """start(argv) -> a process whose /proc/PID/cmdline is `argv` (a sleeping python)."""
    pkg = tmp_path / "pkg" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text("import time\nwhile True:\n    time.sleep(60)\n")
    procs = []

    def start(words: list[str]):
        proc = lab.spawn(["bash", "-c", 'exec -a "$0" /usr/bin/python3 "$@"'] + words,
                         env={"PYTHONPATH": str(tmp_path / "pkg"), "PATH": "/usr/bin:/bin"})
        procs.append(proc)
        for _ in range(200):
            with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
                if b"sglang.launch_server" in fh.read():
                    break
            time.sleep(0.01)
        return proc.pid

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()
