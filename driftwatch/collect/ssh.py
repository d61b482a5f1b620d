"""One SSH connection to one host, and the collector that reuses it for all the host's units.

paramiko is imported lazily, inside this module's functions only. Connection recipe (see
shared/research/drift-tools.md): a socket connected by us with ``TCP_NODELAY`` and the connect
timeout, handed to ``paramiko.Transport`` (no Nagle/delayed-ACK stalls); host-key check against
known_hosts before any authentication; then explicit identity files, ssh-agent keys and the default
``~/.ssh/id_*`` keys, in OpenSSH's order. Each unit costs one ``exec`` of ``/bin/sh -s`` with the
collection script on stdin (``commands.py``): no interactive shell, no pty, nothing that depends on
rc files. ProxyJump hops are chained through ``direct-tcpip`` channels.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from driftwatch.collect.commands import MAX_ENV_FILE_BYTES, build_command, parse_output
from driftwatch.collect.hostkeys import KnownHosts, host_lookup_name
from driftwatch.collect.interface import (
    AUTH_FAILED,
    ERROR,
    READ_STATUSES,
    TIMEOUT,
    UNREACHABLE,
    CollectOptions,
    Collector,
    CollectTarget,
    HostError,
)
from driftwatch.collect.probe import probe_unit
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.reader import UnitReader
from driftwatch.collect.sshconfig import Endpoint
from driftwatch.collect.sshoptions import SSHOptions
from driftwatch.fileio import MAX_TEXT_BYTES
from driftwatch.resolver import ResolveTimeout, resolve
from driftwatch.timestamps import utc_now

if TYPE_CHECKING:  # paramiko is imported when a connection is opened (it is slow to import)
    from paramiko import Channel, PKey, Transport

# What one unit's round trip may send back: the unit (at most MAX_TEXT_BYTES, however it is read) twice
# over (systemctl cat, or the files on disk), the EnvironmentFile= files (32 x 64 KiB) and 2 MiB for the
# rest (systemctl show, process command lines, the journal lines). More is refused, never parsed.
MAX_OUTPUT_BYTES = 2 * MAX_TEXT_BYTES + 32 * MAX_ENV_FILE_BYTES + (2 << 20)

DEFAULT_KEYS = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")

# paramiko logs a traceback to stderr when a server never sends its banner; each host already ends
# with a status and one error line, so cron must not get 20 lines of paramiko internals too.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


class SSHConnection:
    """A connected, authenticated paramiko Transport (plus the transports of its jump hosts)."""

    def __init__(self, endpoint: Endpoint, known_hosts: KnownHosts, *, connect_timeout: float = 10,
                 password: str | None = None, allow_agent: bool = True, look_for_keys: bool = True):
        self.endpoint = endpoint
        self.known_hosts = known_hosts
        self.connect_timeout = connect_timeout
        self.password = password
        self.allow_agent = allow_agent
        self.look_for_keys = look_for_keys
        self.transports: list[Transport] = []  # jump hosts first, target last
        self._closed = threading.Event()
        self._sock: socket.socket | None = None
        self.truncated = False  # the last run() stopped at MAX_OUTPUT_BYTES

    # -- connecting ---------------------------------------------------------------------------
    def open(self) -> SSHConnection:
        deadline = time.monotonic() + self.connect_timeout * (1 + len(self.endpoint.jumps))
        hops = list(self.endpoint.jumps) + [self.endpoint]
        channel = None
        for hop in hops:
            if self._closed.is_set():
                raise HostError(f"{self.endpoint.display}: aborted", TIMEOUT)
            sock: socket.socket | Channel = self._tcp(hop) if channel is None else self._through(hop, deadline)
            transport = self._handshake(hop, sock)
            self._authenticate(hop, transport)
            channel = transport
        return self

    def _tcp(self, hop: Endpoint) -> socket.socket:
        """A TCP connection to ``hop``: resolving its name and connecting share the connect timeout."""
        start = time.monotonic()
        try:
            infos = resolve(hop.hostname, hop.port, self.connect_timeout)
        except ResolveTimeout:
            raise HostError(f"{hop.display}: name resolution timed out after {self.connect_timeout:g}s "
                            f"(the DNS server did not answer for {hop.hostname})", TIMEOUT) from None
        except socket.gaierror as exc:
            raise HostError(f"{hop.display}: cannot resolve {hop.hostname}: {exc.strerror}", UNREACHABLE) from None
        last: OSError | None = None
        for family, stype, proto, _, addr in infos:
            remaining = self.connect_timeout - (time.monotonic() - start)
            if remaining <= 0:
                break
            sock = socket.socket(family, stype, proto)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(remaining)
                sock.connect(addr)
                self._sock = sock
                return sock
            except OSError as exc:
                sock.close()
                last = exc
        if isinstance(last, socket.timeout) or last is None:
            raise HostError(f"{hop.display}: connect timed out after {self.connect_timeout:g}s", TIMEOUT)
        reason = last.strerror or str(last)
        raise HostError(f"{hop.display}: cannot connect: {reason}", UNREACHABLE)

    def _through(self, hop: Endpoint, deadline: float) -> Channel:
        import paramiko

        via = self.transports[-1]
        try:
            return via.open_channel("direct-tcpip", (hop.hostname, hop.port), ("127.0.0.1", 0),
                                    timeout=max(0.1, deadline - time.monotonic()))
        except paramiko.ChannelException as exc:
            raise HostError(f"{hop.display}: jump host could not connect: {exc.text}", UNREACHABLE) from None
        except (paramiko.SSHException, OSError) as exc:
            raise HostError(f"{hop.display}: via jump host: {exc or 'timed out'}", TIMEOUT) from None

    def _names(self, hop: Endpoint) -> list[str]:
        return [host_lookup_name(hop.host_key_alias or hop.hostname, hop.port)]

    def _handshake(self, hop: Endpoint, sock: socket.socket | Channel) -> Transport:
        import paramiko

        t = paramiko.Transport(sock)
        self.transports.append(t)
        t.banner_timeout = self.connect_timeout
        t.handshake_timeout = self.connect_timeout
        t.auth_timeout = self.connect_timeout
        names = self._names(hop)
        preferred = self.known_hosts.preferred_algorithms(names)
        if preferred:
            opts = t.get_security_options()
            offered = list(opts.key_types)
            first = [k for k in preferred if k in offered]
            opts.key_types = tuple(first + [k for k in offered if k not in first])
        start = time.monotonic()
        try:
            t.start_client(timeout=self.connect_timeout)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            elapsed = time.monotonic() - start
            text = str(exc) or type(exc).__name__
            if self._closed.is_set() or elapsed >= self.connect_timeout * 0.9:
                raise HostError(f"{hop.display}: no SSH handshake within {self.connect_timeout:g}s "
                                f"(the port accepts connections but does not answer)", TIMEOUT) from None
            raise HostError(f"{hop.display}: SSH handshake failed: {text}", ERROR) from None
        if not t.is_active() or getattr(t, "host_key", None) is None:
            # paramiko's start_client() returns silently when its own timeout passes
            raise HostError(f"{hop.display}: no SSH handshake within {self.connect_timeout:g}s "
                            f"(the port accepts connections but does not answer)", TIMEOUT)
        key = t.get_remote_server_key()
        self.known_hosts.check(hop.display, names, key.get_name(), key.get_base64())
        return t

    def _authenticate(self, hop: Endpoint, t: Transport) -> None:
        import paramiko

        errors: list[str] = []
        user = hop.user
        if self.password is not None:
            try:
                t.auth_password(user, self.password)
                return
            except paramiko.AuthenticationException as exc:
                errors.append(f"password: {exc}")
            except (paramiko.SSHException, OSError) as exc:
                raise self._auth_io_error(hop, exc) from None
        tried: set[bytes] = set()  # key fingerprints (MD5 digests)
        for key, label in self._keys(hop, errors):
            fp = key.get_fingerprint()
            if fp in tried:
                continue
            tried.add(fp)
            try:
                t.auth_publickey(user, key)
                return
            except paramiko.AuthenticationException:
                errors.append(f"{label}: refused")
            except (paramiko.SSHException, OSError) as exc:
                raise self._auth_io_error(hop, exc) from None
            if not t.is_active():
                break
        detail = "; ".join(errors) if errors else "no key to offer (no identity file, no ssh-agent key)"
        raise HostError(f"{hop.display}: authentication failed for {user}: {detail}", AUTH_FAILED)

    def _auth_io_error(self, hop: Endpoint, exc: Exception) -> HostError:
        if self._closed.is_set() or "timeout" in str(exc).lower():
            return HostError(f"{hop.display}: authentication timed out", TIMEOUT)
        return HostError(f"{hop.display}: connection lost during authentication: {exc}", ERROR)

    def _keys(self, hop: Endpoint, errors: list[str]) -> Iterator[tuple[PKey, str]]:
        """(pkey, label) in OpenSSH's order: identity files, agent keys, default key files."""
        import paramiko

        files = list(hop.identities)
        for path in files:
            key = _load_key(path, errors)
            if key is not None:
                yield key, path
        if self.allow_agent and not hop.identities_only:
            try:
                agent_keys = paramiko.Agent().get_keys()
            except Exception:  # noqa: BLE001 - no agent / broken socket: just no agent keys
                agent_keys = ()
            for k in agent_keys:
                yield k, f"agent key {k.get_name()}"
        if self.look_for_keys and not hop.identities_only:
            for path in DEFAULT_KEYS:
                path = os.path.expanduser(path)
                if path not in files and os.path.exists(path):
                    key = _load_key(path, errors)
                    if key is not None:
                        yield key, path

    # -- running ------------------------------------------------------------------------------
    def run(self, command: str, stdin: bytes, timeout: float) -> tuple[bytes, bool]:
        """(output, timed_out): stdout+stderr of ``command`` fed ``stdin``, bounded by ``timeout``."""
        import paramiko

        t = self.transports[-1]
        deadline = time.monotonic() + timeout
        self.truncated = False
        try:
            chan = t.open_session(timeout=timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if time.monotonic() >= deadline or self._closed.is_set():
                return b"", True
            raise HostError(f"{self.endpoint.display}: cannot open a session: {exc}", ERROR) from None
        out = bytearray()
        try:
            chan.set_combine_stderr(True)
            chan.settimeout(max(0.1, deadline - time.monotonic()))
            chan.exec_command(command)
            chan.sendall(stdin)
            chan.shutdown_write()
            while len(out) < MAX_OUTPUT_BYTES:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return bytes(out), True
                chan.settimeout(remaining)
                data = chan.recv(65536)
                if not data:
                    return bytes(out), False
                out += data
            self.truncated = True  # more than a unit's worth: refused by the caller, never parsed
            return bytes(out), False
        except TimeoutError:
            return bytes(out), True
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if self._closed.is_set() or time.monotonic() >= deadline:
                return bytes(out), True
            raise HostError(f"{self.endpoint.display}: command failed: {exc}", ERROR) from None
        finally:
            chan.close()

    def open_loopback(self, port: int, timeout: float) -> Channel:
        """A ``direct-tcpip`` channel to 127.0.0.1:port *on the host* (what ``ssh -L`` opens), for
        --probe; the address is fixed here, never taken from the unit or the server."""
        return self.transports[-1].open_channel("direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0),
                                                timeout=timeout)

    @property
    def aborted(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """Close every transport (safe from another thread: unblocks a hung read)."""
        self._closed.set()
        for t in reversed(self.transports):
            try:
                t.close()
            except Exception:  # noqa: BLE001
                pass
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass


def _load_key(path: str, errors: list[str]) -> PKey | None:
    import paramiko

    try:
        return paramiko.PKey.from_path(path)
    except FileNotFoundError:
        errors.append(f"{path}: no such identity file")
    except paramiko.PasswordRequiredException:
        errors.append(f"{path}: encrypted (load it into ssh-agent)")
    except (paramiko.SSHException, ValueError, OSError) as exc:
        errors.append(f"{path}: unusable key: {exc}")
    return None


class SSHCollector(Collector):
    """Collects units of one host over one SSH connection (opened on first use). ``reader`` reads
    command lines and gives the engines' markers: which processes to look for, whose version to read,
    which journal and start-up lines to keep, which process is the unit's, where ``--probe`` asks."""

    kind = "ssh"
    remote = True

    @classmethod
    def prepare(cls, options: CollectOptions) -> tuple:
        """The ssh config and known_hosts every host of the run shares (InputError: unreadable)."""
        from driftwatch.collect.hostkeys import DEFAULT_KNOWN_HOSTS, GLOBAL_KNOWN_HOSTS
        from driftwatch.collect.sshconfig import default_ssh_config, load_ssh_config

        o = options.ssh
        cfg_path = o.ssh_config
        if cfg_path is None:
            cfg_path = default_ssh_config()
        elif cfg_path.lower() in ("", "none"):
            cfg_path = None
        config = load_ssh_config(cfg_path)
        if o.known_hosts:
            known = KnownHosts(o.known_hosts, o.accept_new)
        else:
            extra = (GLOBAL_KNOWN_HOSTS,) if os.path.exists(GLOBAL_KNOWN_HOSTS) else ()
            known = KnownHosts(DEFAULT_KNOWN_HOSTS, o.accept_new, extra)
        return config, known

    @classmethod
    def open(cls, target: CollectTarget, options: CollectOptions, prepared: tuple) -> SSHCollector:
        from driftwatch.collect.inventory import HostTarget
        from driftwatch.collect.sshconfig import resolve as resolve_endpoint

        config, known = prepared
        address = target.address or HostTarget(name=target.host or "")
        o = options.ssh
        endpoint = resolve_endpoint(address, config, o.identity)
        return cls(endpoint, known, o, reader=options.reader)

    @classmethod
    def group_key(cls, target: CollectTarget) -> tuple:
        a = target.address
        return (target.kind, target.host) + ((a.name, a.address, a.user, a.port, a.identity) if a else ())

    def budget(self, units: int) -> float:
        """Its connection (and each jump's), then each unit's command and probe."""
        return (self.connect_timeout * (1 + len(self.endpoint.jumps)) + self.command_timeout * units
                + (3 * self.probe_timeout * units if self.probe else 0))

    def __init__(self, endpoint: Endpoint, known_hosts: KnownHosts, options: SSHOptions, *, reader: UnitReader,
                 host: str | None = None):
        """``options``: the run's SSH settings (timeouts, authentication, --probe); its known_hosts,
        identity and ssh config are already read into ``endpoint`` and ``known_hosts``."""
        self.endpoint = endpoint
        self.host = host or endpoint.name
        self.reader = reader
        self.connect_timeout = options.connect_timeout
        self.command_timeout = options.command_timeout
        self.probe = options.probe  # --probe: also ask the engine's HTTP endpoint on the host's loopback
        self.probe_timeout = options.probe_timeout
        self.connection = SSHConnection(endpoint, known_hosts, connect_timeout=options.connect_timeout,
                                        password=options.password, allow_agent=options.allow_agent,
                                        look_for_keys=options.look_for_keys)
        self._opened = False
        self._gpus_done = False
        self._gpus: tuple[list[dict] | None, str | None] = (None, None)  # read once per host
        self._failure: tuple[str, str] | None = None

    def connect(self) -> None:
        if not self._opened:
            self.connection.open()
            self._opened = True

    def collect(self, unit: str, interpreter: str | None = None) -> RawUnit:
        """One round trip for ``unit``; ``interpreter`` overrides the guessed Python of the unit.

        Never raises for the host's failure: a RawUnit with status unreachable / auth failed /
        host key refused / timeout / error comes back instead, and once the host has failed every
        later unit gets the same answer without reconnecting. Raises InputError for an invalid
        unit name (before anything is sent).
        """
        step = max(1.0, min(10.0, self.command_timeout / 3))
        cmd = build_command(unit, gpus=not self._gpus_done, interpreter=interpreter, step_timeout=step,
                            deadline=self.command_timeout + 2, markers=self.reader.startup_markers,
                            engines=tuple(self.reader.engine_markers))
        if self._failure is not None:
            status, error = self._failure
            return RawUnit(host=self.host, unit=cmd.unit, source="", status=status, error=error,
                           collected_at=utc_now())
        try:
            started = time.monotonic()
            first = not self._opened
            self.connect()
            connected = time.monotonic()
            output, timed_out = self.connection.run(cmd.command, cmd.script.encode(),
                                                    self.command_timeout)
            answered = time.monotonic()
        except HostError as exc:
            status = exc.status
            if self.connection.aborted and status == ERROR:
                status = TIMEOUT  # the fleet watchdog closed the connection
            self._failure = (status, str(exc))
            return self.collect(unit, interpreter)
        if self.connection.truncated:
            return RawUnit(host=self.host, unit=cmd.unit, source="", status=ERROR, collected_at=utc_now(),
                           error=f"{self.endpoint.display}: {cmd.unit}: the remote output exceeded "
                                 f"{MAX_OUTPUT_BYTES} bytes (a unit is at most {MAX_TEXT_BYTES} bytes): not read")
        raw = parse_output(self.host, cmd.unit, cmd.nonce, output, self.reader, timed_out=timed_out,
                           skipped=cmd.skipped)
        raw.step_seconds = {**({"connect": round(connected - started, 3)} if first else {}),
                            "round trip": round(answered - connected, 3), **raw.step_seconds}
        if raw.text is not None and len(raw.text.encode("utf-8", "surrogateescape")) > MAX_TEXT_BYTES:
            size = len(raw.text.encode("utf-8", "surrogateescape"))
            return RawUnit(host=self.host, unit=cmd.unit, source=raw.source, status=ERROR, collected_at=utc_now(),
                           paths=raw.paths, error=f"{self.endpoint.display}: {cmd.unit}: the unit is larger than "
                           f"the limit ({size} bytes; the limit is {MAX_TEXT_BYTES} bytes): not read")
        if raw.status in (TIMEOUT, ERROR) and not raw.text:
            raw.error = f"{self.endpoint.display}: {raw.error} ({self.command_timeout:g}s)"
        if self.probe and raw.status in READ_STATUSES and not self.connection.aborted:
            asked = time.monotonic()
            probe_unit(raw, self.connection.open_loopback, self.reader, self.probe_timeout)
            raw.step_seconds["probe"] = round(time.monotonic() - asked, 3)
        if not self._gpus_done:
            self._gpus_done, self._gpus = True, (raw.gpus, raw.interconnect)
        else:
            raw.gpus, raw.interconnect = self._gpus
        raw.collected_at = utc_now()
        return raw

    def close(self) -> None:
        self.connection.close()
