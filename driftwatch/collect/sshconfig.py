"""Where to connect for a HostTarget: the inventory's values, then ~/.ssh/config, then defaults.

Honoured ssh_config keys: HostName, User, Port, IdentityFile, ProxyJump, HostKeyAlias,
IdentitiesOnly. Inventory values win over ssh_config (like command-line options over the file);
ssh_config is looked up by the target's *name* (as ``ssh NAME`` would). paramiko's SSHConfig does
the parsing; it is imported here, lazily, and this module is only imported by SSH code.
"""
from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from driftwatch.collect.inventory import HostTarget, parse_target
from driftwatch.errors import InputError

if TYPE_CHECKING:  # paramiko is imported when a config is read (it is slow to import)
    from paramiko import SSHConfig


@dataclass
class Endpoint:
    name: str  # as the user wrote it (inventory name / positional host)
    hostname: str  # what is connected to
    port: int
    user: str
    identities: list[str] = field(default_factory=list)  # explicit first, then ssh_config's
    identities_only: bool = False
    host_key_alias: str | None = None
    jumps: list[Endpoint] = field(default_factory=list)  # ProxyJump chain, first hop first

    @property
    def display(self) -> str:
        where = f"{self.hostname}:{self.port}"
        return self.name if self.name == self.hostname and self.port == 22 else f"{self.name} ({where})"


def default_ssh_config() -> str | None:
    path = os.path.expanduser("~/.ssh/config")
    return path if os.path.exists(path) else None


def load_ssh_config(path: str | None) -> SSHConfig:
    """paramiko.SSHConfig for ``path`` (None: an empty config). InputError when unreadable."""
    import paramiko

    if not path:
        return paramiko.SSHConfig()
    try:
        return paramiko.SSHConfig.from_path(os.path.expanduser(path))
    except FileNotFoundError:
        raise InputError(f"{path}: no such ssh config file") from None
    except Exception as exc:  # paramiko raises ConfigParseError and friends
        raise InputError(f"{path}: cannot read ssh config: {exc}") from None


def resolve(target: HostTarget, config: SSHConfig, identity: str | None = None, _depth: int = 0) -> Endpoint:
    """The effective endpoint of ``target`` under ssh ``config`` (a paramiko.SSHConfig).

    ``identity`` (-i) is offered to ProxyJump hosts too, before their own IdentityFile.
    """
    if _depth > 8:
        raise InputError(f"{target.name}: ProxyJump chain too long (loop?)")
    cfg = config.lookup(target.name)
    hostname = target.address or cfg.get("hostname") or target.name
    port = target.port or _port(cfg.get("port"), target.name) or 22
    user = target.user or cfg.get("user") or getpass.getuser()
    identities = [p for p in (identity, target.identity) if p]
    identities += [p for p in cfg.get("identityfile", []) if p not in identities]
    identities = [os.path.expanduser(p) for p in identities]
    ep = Endpoint(
        name=target.name, hostname=hostname, port=port, user=user, identities=identities,
        identities_only=str(cfg.get("identitiesonly", "no")).lower() == "yes",
        host_key_alias=cfg.get("hostkeyalias"),
    )
    jump = cfg.get("proxyjump")
    if jump and jump.lower() != "none":
        for hop in jump.split(","):
            hop_target = parse_target(hop.strip())
            ep.jumps.extend(_flatten(resolve(hop_target, config, identity, _depth + 1)))
    return ep


def _flatten(ep: Endpoint) -> list[Endpoint]:
    """A hop that itself has a ProxyJump: its own jumps come first."""
    jumps, ep.jumps = ep.jumps, []
    return jumps + [ep]


def _port(value: Any, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise InputError(f"ssh config: bad Port {value!r} for {name}") from None
