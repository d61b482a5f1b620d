"""A throw-away SSH lab: real OpenSSH servers on loopback or in network namespaces we create.

Used by tests/collect (fixtures in conftest.py) and benchmarks/ssh_fleet.py.

- ``Lab.start_sshd()``: ``/usr/sbin/sshd -D -e -f CONFIG`` with a host key, ``AuthorizedKeysFile``,
  ``PidFile`` all in the lab's temp dir, ``UsePAM no``, ``StrictModes no``. When root, the server
  runs under ``unshare -m`` with bind mounts, so each server sees its own ``/etc/systemd/system``,
  ``/usr/lib/systemd/system``, ``/run/systemd`` (a tmpfs), ``/usr/local/bin`` (fake tools) and
  ``/root`` (an empty home: no rc files of this machine's root account).
- ``Lab.netns_hosts(n)``: a bridge in the root namespace with 10.213.X.1/24 (X picked among free
  private /24s, 77 first), and per host a namespace ``dwtest-<id>-<i>`` joined by a veth pair,
  address 10.213.X.(10+i). Traffic goes only to these addresses and to 127.0.0.1.
- ``Lab.close()`` kills every process it started, by pid (and their children), deletes every
  namespace, veth and bridge it made; it is registered with ``atexit`` too, and SIGTERM exits
  through it.
- ``reap_stale_labs()``: what a lab of a run that died without closing it (SIGKILL, a crash of the
  interpreter) left behind — its sshd processes, namespaces, veths, bridge and temp dir — removed by
  the next lab. A lab's temp dir names its owner (pid and start time); a lab whose owner still runs
  is never touched.
"""
from __future__ import annotations

import atexit
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

SSHD = "/usr/sbin/sshd"


def have_sshd() -> bool:
    return os.access(SSHD, os.X_OK)


def is_root() -> bool:
    return os.geteuid() == 0


def have_netns() -> bool:
    if not is_root() or shutil.which("ip") is None or shutil.which("unshare") is None:
        return False
    probe = f"dwprobe-{secrets.token_hex(3)}"
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ok


def make_keypair(path: str, comment: str = "driftwatch-test") -> str:
    """Write an OpenSSH ed25519 private key to ``path`` (0600) and ``path.pub``; return the public line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                             serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                        serialization.PublicFormat.OpenSSH).decode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(priv)
    with open(path + ".pub", "w") as fh:
        fh.write(f"{pub} {comment}\n")
    return pub


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listening on {host}:{port} after {timeout}s") from None
            time.sleep(0.02)


@dataclass
class SSHServer:
    name: str
    address: str
    port: int
    host_pub: str  # "ssh-ed25519 AAAA..."
    pid: int
    root: str  # per-server dir holding etc/, usr-lib/, run/, bin/, home/
    netns: str | None = None
    log: str = ""

    def known_hosts_line(self) -> str:
        host = self.address if self.port == 22 else f"[{self.address}]:{self.port}"
        return f"{host} {self.host_pub}\n"

    def path(self, tree: str, rel: str = "") -> str:
        """Host path of file ``rel`` in one of the server's trees: etc | usr-lib | run | bin | home."""
        return os.path.join(self.root, tree, rel)

    def write(self, host_path: str, content: str, mode: int = 0o644) -> str:
        """Write ``content`` where the server sees ``host_path`` (e.g. /etc/systemd/system/x.service)."""
        local = self.local_path(host_path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "w") as fh:
            fh.write(content)
        os.chmod(local, mode)
        return local

    def symlink(self, host_path: str, target: str) -> None:
        local = self.local_path(host_path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        os.symlink(target, local)

    def local_path(self, host_path: str) -> str:
        for prefix, tree in MOUNTS:
            if host_path == prefix or host_path.startswith(prefix + "/"):
                return os.path.join(self.root, tree, host_path[len(prefix):].lstrip("/"))
        raise ValueError(f"{host_path} is not inside a tree the test server sees privately")



def plain_unit(port: int, extra: str = "") -> str:
    """A unit starting SGLang on `port` (model /root/models/m), as the test hosts serve it."""
    return (f"[Unit]\nDescription=SGLang test server on port {port}\n\n[Service]\n"
            f"ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/m "
            f"--port {port}{extra}\n")

# host path -> per-server tree directory name
MOUNTS = (
    ("/etc/systemd/system", "etc"),
    ("/usr/lib/systemd/system", "usr-lib"),
    ("/lib/systemd/system", "usr-lib"),  # /lib -> usr/lib on merged-/usr systems
    ("/run/systemd/system", "run"),
    ("/usr/local/bin", "bin"),
    ("/root", "home"),
)


def _exit_on_sigterm() -> None:
    """A test run stopped with SIGTERM (a CI timeout, `kill`) stops as at Ctrl-C and exits through
    atexit, so every sshd, namespace and link a lab made is removed then too (SIGTERM's default
    action would skip atexit and leave them behind)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@dataclass
class Lab:
    tmp: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="dwlab-"))
    pids: list[int] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    bridge: str | None = None
    subnet: str | None = None
    _procs: list = field(default_factory=list)

    def __post_init__(self):
        self.id = secrets.token_hex(3)
        self.client_key = os.path.join(self.tmp, "client_key")
        self.client_pub = make_keypair(self.client_key)
        self.authorized_keys = os.path.join(self.tmp, "authorized_keys")
        with open(self.authorized_keys, "w") as fh:
            fh.write(self.client_pub + "\n")
        self._closed = False
        self._lock = threading.Lock()
        self._hosts = 0
        reap_stale_labs(os.path.dirname(self.tmp))
        with open(os.path.join(self.tmp, OWNER_FILE), "w") as fh:
            fh.write(f"{os.getpid()} {_start_time(os.getpid())} {self.id}\n")
        atexit.register(self.close)
        _exit_on_sigterm()

    # -- processes ----------------------------------------------------------------------------
    def spawn(self, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kw)
        self.pids.append(proc.pid)
        self._procs.append(proc)
        return proc

    def start_sshd(self, name: str, address: str = "127.0.0.1", port: int | None = None,
                   netns: str | None = None, isolate: bool = True, run_dir: bool = False,
                   max_startups: str = "200:30:400", login_user: str | None = None) -> SSHServer:
        """sshd on ``address:port``. ``run_dir``: give it a /run/systemd/system (which also makes
        ``systemctl`` believe systemd is running: it then fails to reach the bus instead).
        ``address`` 0.0.0.0 needs ``netns``: it then listens on that namespace's addresses only.
        ``login_user``: an unprivileged account (uid/gid ``LOGIN_UID``) that server alone knows — its
        own /etc/passwd and /etc/group are bind-mounted over this machine's, which stay untouched —
        accepting the lab's key, for what a collector sees when it does not log in as root."""
        if address == "0.0.0.0" and not netns:
            raise ValueError("an sshd on 0.0.0.0 only inside a namespace of the lab's own")
        port = port or (22 if netns else free_port())
        root = os.path.join(self.tmp, name)
        for _, tree in MOUNTS:
            os.makedirs(os.path.join(root, tree), exist_ok=True)
        host_key = os.path.join(root, "ssh_host_ed25519_key")
        host_pub = make_keypair(host_key, name)
        config = os.path.join(root, "sshd_config")
        with open(config, "w") as fh:
            fh.write("\n".join([
                f"Port {port}",
                f"ListenAddress {address}",
                f"HostKey {host_key}",
                f"PidFile {root}/sshd.pid",
                f"AuthorizedKeysFile {self.authorized_keys}",
                "UsePAM no",
                "StrictModes no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "AllowTcpForwarding yes",
                f"MaxStartups {max_startups}",
                "MaxSessions 100",
                "UseDNS no",
                "LogLevel ERROR",
                "",
            ]))
        os.makedirs("/run/sshd", exist_ok=True) if is_root() else None
        sshd = f"exec {SSHD} -D -e -f {shlex.quote(config)}"
        if isolate and is_root():
            q = shlex.quote
            steps = ["set -e"]
            steps.append(f"mount --bind {q(root + '/etc')} /etc/systemd/system")
            steps.append(f"mount --bind {q(root + '/usr-lib')} /usr/lib/systemd/system")
            steps.append("mkdir -p /run/systemd 2>/dev/null || true")
            steps.append("mount -t tmpfs dwrun /run/systemd")
            if run_dir:
                steps.append(f"mkdir /run/systemd/system && mount --bind {q(root + '/run')} /run/systemd/system")
            steps.append(f"mount --bind {q(root + '/bin')} /usr/local/bin")
            steps.append(f"mount --bind {q(root + '/home')} /root")
            if login_user:  # sshd reads authorized_keys as the user: the lab dir must be traversable
                os.chmod(self.tmp, 0o711)
                steps += [f"mount --bind {q(_accounts(root, login_user, 'passwd'))} /etc/passwd",
                          f"mount --bind {q(_accounts(root, login_user, 'group'))} /etc/group"]
            argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", "; ".join(steps + [sshd])]
        else:
            if login_user:
                raise ValueError("login_user needs root and isolate=True (its accounts are bind-mounted)")
            argv = ["sh", "-c", sshd]
        if netns:
            argv = ["ip", "netns", "exec", netns] + argv
        log = os.path.join(root, "sshd.log")
        proc = self.spawn(argv, stdout=subprocess.DEVNULL, stderr=open(log, "wb"),
                          start_new_session=True)
        try:
            if address == "0.0.0.0":  # reachable from inside its namespace only
                subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c",
                                f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
                                f"import dw_sshlab; dw_sshlab.wait_port('127.0.0.1', {port})"],
                               check=True, capture_output=True, timeout=30)
            else:
                wait_port(address, port)
        except (RuntimeError, subprocess.CalledProcessError):
            with open(log) as fh:
                raise RuntimeError(f"sshd {name} did not start: {fh.read()[-2000:]}") from None
        return SSHServer(name, address, port, host_pub, proc.pid, root, netns, log)

    # -- network namespaces -------------------------------------------------------------------
    def _ip(self, *args: str, ns: str | None = None) -> None:
        argv = ["ip"] + (["netns", "exec", ns, "ip"] if ns else []) + list(args)
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")

    def _pick_subnet(self) -> str:
        routes = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True,
                                text=True).stdout
        addrs = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
        for third in [77] + list(range(78, 100)):
            prefix = f"10.213.{third}."
            if prefix not in routes and prefix not in addrs:
                return f"10.213.{third}"
        raise RuntimeError("no free 10.213.X.0/24 for the test fleet")

    def _ensure_bridge(self) -> None:
        if self.bridge:
            return
        self.subnet = self._pick_subnet()
        br = f"dwb{self.id}"
        self._ip("link", "add", br, "type", "bridge")
        self.bridge = br
        self._ip("addr", "add", f"{self.subnet}.1/24", "dev", br)
        self._ip("link", "set", br, "up")

    def loopback_namespace(self) -> str:
        """A namespace of the lab's own with only its loopback up: an sshd there on 0.0.0.0 answers
        on every 127.x.y.z address, one server standing in for a whole fleet (benchmarks)."""
        with self._lock:
            ns = f"dwtest-{self.id}-lo{len(self.namespaces)}"
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            self.namespaces.append(ns)
            self._ip("link", "set", "lo", "up", ns=ns)
        return ns

    def netns_host(self, name: str | None = None, run_dir: bool = False) -> SSHServer:
        """A new namespace on the lab bridge with its own sshd on port 22."""
        with self._lock:
            self._ensure_bridge()
            i = self._hosts
            self._hosts += 1
            ns = f"dwtest-{self.id}-{i}"
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            self.namespaces.append(ns)
            a, b = f"dw{self.id}a{i}", f"dw{self.id}b{i}"
            self._ip("link", "add", a, "type", "veth", "peer", "name", b)
            self.links.append(a)
            self._ip("link", "set", b, "netns", ns)
            self._ip("link", "set", a, "master", self.bridge)
            self._ip("link", "set", a, "up")
            address = f"{self.subnet}.{10 + i}"
            self._ip("addr", "add", f"{address}/24", "dev", b, ns=ns)
            self._ip("link", "set", b, "up", ns=ns)
            self._ip("link", "set", "lo", "up", ns=ns)
        return self.start_sshd(name or f"h{i}", address=address, netns=ns, run_dir=run_dir)

    # -- cleanup ------------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for pid in reversed(self.pids):
            for child in _descendants(pid):
                _kill(child)
            _kill(pid)
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                pass
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        if self.bridge:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


OWNER_FILE = "owner"
LOGIN_UID = 4242


def _accounts(root: str, user: str, which: str) -> str:
    """A copy of this machine's /etc/passwd or /etc/group with ``user`` (uid/gid LOGIN_UID) added,
    in the server's dir: bind-mounted in that server's mount namespace only."""
    path = os.path.join(root, which)
    with open(f"/etc/{which}") as fh:
        lines = [line for line in fh.read().splitlines() if not line.startswith(f"{user}:")]
    lines.append(f"{user}:x:{LOGIN_UID}:{LOGIN_UID}::/nonexistent:/bin/sh" if which == "passwd"
                 else f"{user}:x:{LOGIN_UID}:")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (with the pid, names one process: pids
    are reused)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_alive(lab_dir: str) -> tuple[bool, str | None]:
    """(whether the run that made this lab still runs, the lab's id). A dir without a readable owner
    file (a lab being created right now, or not ours) counts as alive: it is left alone."""
    try:
        with open(os.path.join(lab_dir, OWNER_FILE)) as fh:
            pid, started, lab_id = fh.read().split()
        return _start_time(int(pid)) == started, lab_id
    except (OSError, ValueError):
        return True, None


def reap_stale_labs(tmp_root: str | None = None) -> list[str]:
    """Remove what labs of dead runs left under ``tmp_root``; returns the ids reaped. Only things
    named after such a lab are touched: processes whose command line holds its dir, namespaces
    ``dwtest-<id>-*``, links ``dw<id>a*`` and bridge ``dwb<id>``."""
    root = tmp_root or tempfile.gettempdir()
    reaped = []
    for entry in sorted(os.listdir(root)):
        lab_dir = os.path.join(root, entry)
        if not entry.startswith("dwlab-") or not os.path.isdir(lab_dir) or os.path.islink(lab_dir):
            continue
        alive, lab_id = _owner_alive(lab_dir)
        if alive or not lab_id or not lab_id.isalnum():
            continue
        for pid in _pids_naming(lab_dir + "/"):
            for child in _descendants(pid):
                _kill(child)
            _kill(pid)
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        for ns in names:
            if ns.startswith(f"dwtest-{lab_id}-"):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
        for line in links.splitlines():
            name = line.split(":", 2)[1].strip().split("@", 1)[0] if line.count(":") >= 2 else ""
            if name.startswith(f"dw{lab_id}a") or name == f"dwb{lab_id}":
                subprocess.run(["ip", "link", "del", name], capture_output=True)
        shutil.rmtree(lab_dir, ignore_errors=True)
        reaped.append(lab_id)
    return reaped


def _pids_naming(text: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            out.append(int(entry))
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class HungServer:
    """Accepts TCP connections and never says a word (a wedged sshd, a black-holed proxy)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
            except OSError:
                continue

    def close(self):
        self._stop = True
        self.thread.join(2)
        for c in self.conns:
            c.close()
        self.sock.close()


# Shared by the collect tests (import these from here: `conftest` is not a unique module name).
FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "systemctl"))
UNIT = "sglang-qwen.service"
