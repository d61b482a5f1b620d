"""Live containers: `podman inspect` / `docker inspect` of named containers over the same SSH
connection a unit is read with (the host's own runtime, the user's account; nothing is started).
What comes back is text; parse/inspect.py reads it."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import InputError
from .interface import ERROR, TIMEOUT, HostError
from .inventory import HostTarget
from .sshoptions import SSHOptions
from .unitname import CONTAINER_NAME, validate_container_name

if TYPE_CHECKING:
    from .ssh import SSHConnection

RUNTIMES = ("podman", "docker")


@dataclass
class InspectAnswer:
    """One container's `inspect` output (`text`), or why there is none (`error`, `status`)."""

    host: str
    name: str
    runtime: str
    text: str | None = None
    error: str | None = None
    status: str = "ok"


def _open(target: HostTarget, ssh: SSHOptions) -> SSHConnection:
    """An open SSHConnection to `target` with the command line's SSH settings (HostError/InputError
    when it cannot be opened)."""
    from .fleet import DEFAULT_KNOWN_HOSTS, GLOBAL_KNOWN_HOSTS
    from .hostkeys import KnownHosts
    from .ssh import SSHConnection
    from .sshconfig import default_ssh_config, load_ssh_config, resolve
    cfg = default_ssh_config() if ssh.ssh_config is None else (None if ssh.ssh_config.lower() in ("", "none")
                                                               else ssh.ssh_config)
    config = load_ssh_config(cfg)
    if ssh.known_hosts:
        known = KnownHosts(ssh.known_hosts, ssh.accept_new)
    else:
        known = KnownHosts(DEFAULT_KNOWN_HOSTS, ssh.accept_new,
                           (GLOBAL_KNOWN_HOSTS,) if os.path.exists(GLOBAL_KNOWN_HOSTS) else ())
    endpoint = resolve(target, config, ssh.identity)
    return SSHConnection(endpoint, known, connect_timeout=ssh.connect_timeout, password=ssh.password,
                         allow_agent=ssh.allow_agent, look_for_keys=ssh.look_for_keys).open()


def _run(connection: SSHConnection, command: str, ssh: SSHOptions) -> tuple[str, int | None, bool]:
    """(output, exit status or None when not said, timed out) of one command (stderr combined)."""
    data, timed_out = connection.run(command + '; echo "driftwatch-exit $?"', b"", ssh.command_timeout)
    text = data.decode("utf-8", "replace")
    body, _, status = text.rstrip("\n").rpartition("\n")  # no output: ("", "", "driftwatch-exit N")
    if status.startswith("driftwatch-exit "):
        code = status.split()[-1]
        return body, int(code) if code.isdigit() else None, timed_out
    return text, None, timed_out


def _inspect(connection: SSHConnection, host: str, name: str, runtime: str, ssh: SSHOptions) -> InspectAnswer:
    """One container's `RUNTIME inspect` over an open connection (its failure said, never raised)."""
    # LC_ALL=C: the runtime's own words (stderr is combined by the channel); its exit status last
    try:
        text, code, timed_out = _run(connection, f"LC_ALL=C {runtime} inspect --type container -- {name}", ssh)
    except HostError as exc:
        return InspectAnswer(host, name, runtime, error=str(exc), status=exc.status)
    if timed_out:
        return InspectAnswer(host, name, runtime, error=f"{runtime} inspect took more than "
                             f"{ssh.command_timeout:g} s", status=TIMEOUT)
    if code != 0 or not text.lstrip().startswith("["):
        last = (text.strip().splitlines() or ["no output"])[-1][:300]
        return InspectAnswer(host, name, runtime, error=f"{runtime} inspect {name}: {last}",
                             status="container not found" if "no such" in text.lower() else ERROR)
    return InspectAnswer(host, name, runtime, text=text)


def inspect_containers(target: HostTarget, names: list[str], ssh: SSHOptions, runtime: str = "podman",
                       label: str | None = None) -> list[InspectAnswer]:
    """`RUNTIME inspect --type container NAME` on `target` for each name, over one SSH connection.
    Never raises for the host's failure: each answer says it (status, error); InputError for a bad
    name or runtime, before anything is sent."""
    if runtime not in RUNTIMES:
        raise InputError(f"container runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
    names = [validate_container_name(n) for n in names]
    host = label or target.name
    try:
        connection = _open(target, ssh)
    except HostError as exc:
        return [InspectAnswer(host, n, runtime, error=str(exc), status=exc.status) for n in names]
    except InputError as exc:
        return [InspectAnswer(host, n, runtime, error=str(exc), status=ERROR) for n in names]
    try:
        return [_inspect(connection, host, name, runtime, ssh) for name in names]
    finally:
        connection.close()


@dataclass
class HostContainers:
    """What one host answered for its `containers:` entry: the runtime found, an answer per container
    (`auto`: every running container, the caller keeping those that start an engine), or why the host
    gave none (`error`, `status`)."""

    host: str
    runtime: str | None = None
    answers: list[InspectAnswer] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)  # `auto`: the running containers `ps` listed
    error: str | None = None
    status: str = "ok"


def read_host_containers(target: HostTarget, names: list[str], ssh: SSHOptions,
                         label: str | None = None) -> HostContainers:
    """The named containers of one host (`auto` among them: every running container), over ONE SSH
    connection: the runtime is podman when the host has it, else docker (`command -v`); `auto` lists
    the running containers with `RUNTIME ps --format '{{.Names}}'` and inspects each. Never raises
    for the host's failure (HostContainers says it); InputError for a bad name, before anything is sent."""
    from .inventory import AUTO_CONTAINERS
    names = [n if n == AUTO_CONTAINERS else validate_container_name(n) for n in names]
    out = HostContainers(label or target.name)
    try:
        connection = _open(target, ssh)
    except (HostError, InputError) as exc:
        out.error, out.status = str(exc), getattr(exc, "status", ERROR)
        return out
    try:
        found, code, timed_out = _run(connection, "command -v podman; command -v docker", ssh)
        runtime = next((os.path.basename(line.strip()) for line in found.splitlines()
                        if os.path.basename(line.strip()) in RUNTIMES), None)
        if runtime is None:
            out.error = "no container runtime on the host (neither podman nor docker is on its PATH)"
            out.status = TIMEOUT if timed_out else ERROR
            return out
        out.runtime = runtime
        wanted = [n for n in names if n != AUTO_CONTAINERS]
        if AUTO_CONTAINERS in names:
            listed, code, timed_out = _run(connection, f"LC_ALL=C {runtime} ps --format '{{{{.Names}}}}'", ssh)
            if timed_out or code != 0:
                last = (listed.strip().splitlines() or ["no output"])[-1][:300]
                out.error = f"{runtime} ps: " + (f"took more than {ssh.command_timeout:g} s" if timed_out else last)
                out.status = TIMEOUT if timed_out else ERROR
                return out
            out.listed = [n.strip() for n in listed.splitlines() if CONTAINER_NAME.match(n.strip())]
            wanted += [n for n in out.listed if n not in wanted]
        out.answers = [_inspect(connection, out.host, name, runtime, ssh) for name in wanted]
    except HostError as exc:
        out.error, out.status = str(exc), exc.status
    finally:
        connection.close()
    return out
