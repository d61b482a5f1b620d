"""Live containers: `podman inspect` / `docker inspect` of named containers over the same SSH
connection a unit is read with (the host's own runtime, the user's account; nothing is started).
What comes back is text; parse/inspect.py reads it."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import InputError
from .interface import ERROR, TIMEOUT, HostError
from .inventory import HostTarget
from .sshoptions import SSHOptions

RUNTIMES = ("podman", "docker")
# Docker's and podman's container names: [a-zA-Z0-9][a-zA-Z0-9_.-]* (a container ID is hex of the same set).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,253}$")


@dataclass
class InspectAnswer:
    """One container's `inspect` output (`text`), or why there is none (`error`, `status`)."""

    host: str
    name: str
    runtime: str
    text: str | None = None
    error: str | None = None
    status: str = "ok"


def validate_container_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"container name {name!r}: not a container name (letters, digits, _ . -)")
    return name


def inspect_containers(target: HostTarget, names: list[str], ssh: SSHOptions, runtime: str = "podman",
                       label: str | None = None) -> list[InspectAnswer]:
    """`RUNTIME inspect --type container NAME` on `target` for each name, over one SSH connection.
    Never raises for the host's failure: each answer says it (status, error); InputError for a bad
    name or runtime, before anything is sent."""
    from .fleet import DEFAULT_KNOWN_HOSTS, GLOBAL_KNOWN_HOSTS
    from .hostkeys import KnownHosts
    from .ssh import SSHConnection
    from .sshconfig import default_ssh_config, load_ssh_config, resolve
    if runtime not in RUNTIMES:
        raise InputError(f"container runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
    names = [validate_container_name(n) for n in names]
    host = label or target.name
    cfg = default_ssh_config() if ssh.ssh_config is None else (None if ssh.ssh_config.lower() in ("", "none")
                                                               else ssh.ssh_config)
    config = load_ssh_config(cfg)
    if ssh.known_hosts:
        known = KnownHosts(ssh.known_hosts, ssh.accept_new)
    else:
        known = KnownHosts(DEFAULT_KNOWN_HOSTS, ssh.accept_new,
                           (GLOBAL_KNOWN_HOSTS,) if os.path.exists(GLOBAL_KNOWN_HOSTS) else ())
    try:
        endpoint = resolve(target, config, ssh.identity)
        connection = SSHConnection(endpoint, known, connect_timeout=ssh.connect_timeout, password=ssh.password,
                                   allow_agent=ssh.allow_agent, look_for_keys=ssh.look_for_keys).open()
    except HostError as exc:
        return [InspectAnswer(host, n, runtime, error=str(exc), status=exc.status) for n in names]
    except InputError as exc:
        return [InspectAnswer(host, n, runtime, error=str(exc), status=ERROR) for n in names]
    out = []
    try:
        for name in names:
            # LC_ALL=C: the runtime's own words (stderr is combined by the channel); its exit status last
            command = f"LC_ALL=C {runtime} inspect --type container -- {name}; echo \"driftwatch-exit $?\""
            try:
                data, timed_out = connection.run(command, b"", ssh.command_timeout)
            except HostError as exc:
                out.append(InspectAnswer(host, name, runtime, error=str(exc), status=exc.status))
                continue
            text = data.decode("utf-8", "replace")
            body, _, status = text.rstrip("\n").rpartition("\n")
            failed = not status.startswith("driftwatch-exit ") or status != "driftwatch-exit 0"
            text = body if status.startswith("driftwatch-exit ") else text
            if timed_out:
                out.append(InspectAnswer(host, name, runtime, error=f"{runtime} inspect took more than "
                                         f"{ssh.command_timeout:g} s", status=TIMEOUT))
            elif failed or not text.lstrip().startswith("["):
                last = (text.strip().splitlines() or ["no output"])[-1][:300]
                out.append(InspectAnswer(host, name, runtime, error=f"{runtime} inspect {name}: {last}",
                                         status="container not found" if "no such" in text.lower() else ERROR))
            else:
                out.append(InspectAnswer(host, name, runtime, text=text))
    finally:
        connection.close()
    return out
