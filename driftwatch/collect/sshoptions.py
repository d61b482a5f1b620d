"""How to reach hosts over SSH: one settings value from the command line down to the collectors.

The CLI fills it from its SSH options (--known-hosts, --identity, --parallel, --probe, ...), the
use cases in run/ hand it on unchanged and collect/fleet.py reads it. It lives apart from fleet.py
so that a command reading only local files can build it without loading the SSH machinery.
"""
from __future__ import annotations

from dataclasses import dataclass

from driftwatch.collect.probe import PROBE_TIMEOUT


@dataclass
class SSHOptions:
    known_hosts: str | None = None  # None: ~/.ssh/known_hosts (+ /etc/ssh/ssh_known_hosts, read-only)
    accept_new: bool = False
    identity: str | None = None
    ssh_config: str | None = None  # None: ~/.ssh/config when present; "" or "none": no ssh config
    connect_timeout: float = 10
    command_timeout: float = 30
    parallel: int = 32  # hosts read at once (--parallel)
    password: str | None = None  # tests only; not a CLI option
    allow_agent: bool = True
    look_for_keys: bool = True  # try ~/.ssh/id_ed25519, id_ecdsa, id_rsa after explicit identities
    probe: bool = False  # --probe: ask each engine's HTTP endpoint on its host's loopback
    probe_timeout: float = PROBE_TIMEOUT  # seconds a path (three times that a unit)
