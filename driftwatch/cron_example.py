"""Set-up examples for scheduled reports: a cron.d file and a systemd service + timer.

`cron_example(...)` returns the three texts filled in with the given paths, baseline, e-mail and
user; with the defaults it returns exactly the files shipped in ``examples/`` (a test checks that),
so the examples and the ``driftwatch cron-example`` command cannot drift apart.

Values are quoted for where they land: the shell (cron runs the command with /bin/sh; ``%`` is
special to cron) and systemd's ExecStart= (its own quoting, ``%`` specifiers, ``$`` expansion).
"""

from __future__ import annotations

import re
import shlex

from driftwatch.errors import InputError

DEFAULTS = {
    "driftwatch": "/usr/local/bin/driftwatch",
    "inventory": "/etc/driftwatch/inventory.yaml",
    "baseline": "/etc/driftwatch/baselines/70toks.yaml",
    "email": "ops@example.com",
    "user": "driftwatch",
}

FILES = {
    "cron": "examples/cron/driftwatch",
    "service": "examples/systemd/driftwatch-report.service",
    "timer": "examples/systemd/driftwatch-report.timer",
}

STATE_DIR = "/var/lib/driftwatch"

_CRON = """\
# /etc/cron.d/driftwatch: mail a driftwatch drift report every morning.
# Install: copy to /etc/cron.d/driftwatch (root:root, mode 0644) and create the user first:
#   useradd --system --home-dir {state_dir} --create-home --shell /usr/sbin/nologin {user}
# SMTP server, sender and password: /etc/driftwatch/config.yaml (smtp.password_file, mode 0600,
# owned by {user}) or DRIFTWATCH_SMTP_* variables; never put the password on the command line.
#
# driftwatch mails the report itself and keeps a copy in --output. cron mails whatever the job
# writes to stderr to MAILTO: a report that could not be delivered (exit 2, one line naming the
# SMTP server and the reason) or a skipped run lands there instead of going nowhere.
# flock -n: a run still going (slow hosts) makes the next one skip, never overlap; -E 75 lets us
# tell "skipped" apart from driftwatch's own exit codes (0 clean, 1 drift reported, 2 trouble).
# Add --state {state_dir}/report-state.json --only-changes to mail only when the findings change.
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
MAILTO={mailto}
# m  h  dom mon dow  user  command
17 6 * * * {user} flock -n -E 75 {lock} {command} >/dev/null; [ $? -ne 75 ] || echo "driftwatch report skipped: a previous run still holds {lock_msg}" >&2
"""

_SERVICE = """\
# driftwatch-report.service: one drift report for the fleet, mailed; started by driftwatch-report.timer.
# Install: copy both files to /etc/systemd/system/, then
#   useradd --system --home-dir {state_dir} --shell /usr/sbin/nologin {user}
#   systemctl daemon-reload && systemctl enable --now driftwatch-report.timer
# SMTP settings: /etc/driftwatch/config.yaml; the password in /etc/driftwatch/smtp.env
# (root:root, mode 0600: DRIFTWATCH_SMTP_PASSWORD=...), read by systemd before it drops privileges.
# SSH keys for the hosts: {state_dir}/.ssh (the user's home, inside the state directory).
# Exit 1 (drift found and mailed) counts as success; exit 2 (a host unreadable, or the mail could not
# be delivered) marks the unit failed: see `systemctl --failed`, `journalctl -u driftwatch-report`.

[Unit]
Description=driftwatch drift report for the inference fleet
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
User={user}
Group={user}
ExecStart={exec_start}
SuccessExitStatus=1
TimeoutStartSec=30min
EnvironmentFile=-/etc/driftwatch/smtp.env
Environment=HOME={state_dir}
WorkingDirectory={state_dir}
# The only writable path: {state_dir} (state, lock, the last report written by --output, and the
# SSH client's home). StateDirectory= creates it owned by {user}; ReadWritePaths= says it explicitly.
# Add a path here only if --output or --state point elsewhere.
StateDirectory=driftwatch
StateDirectoryMode=0700
ReadWritePaths={state_dir}
UMask=0077
# Hardening
ProtectSystem=strict
ProtectHome=read-only
PrivateTmp=yes
PrivateDevices=yes
PrivateMounts=yes
RemoveIPC=yes
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
ProtectProc=invisible
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
"""

_TIMER = """\
# driftwatch-report.timer: run driftwatch-report.service once a day.
# Persistent=true: a run missed while the machine was off happens at the next boot.
# RandomizedDelaySec spreads the SSH load when many machines use the same schedule.

[Unit]
Description=Daily driftwatch drift report

[Timer]
OnCalendar=*-*-* 06:00:00
RandomizedDelaySec=30min
Persistent=true
AccuracySec=1min
Unit=driftwatch-report.service

[Install]
WantedBy=timers.target
"""

_USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#&'*+/=?^_`{|}~-]+@[A-Za-z0-9.-]+$|^[a-z_][a-z0-9_-]*$")


def _check(name: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"cron-example: {name} must not be empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError(f"cron-example: {name} contains a control character (newline?)")
    return value


def _cron_word(value: str) -> str:
    """Quote for /bin/sh, then protect % from cron (which turns an unescaped % into a newline)."""
    return shlex.quote(value).replace("%", "\\%")


def _systemd_word(value: str) -> str:
    """Quote one ExecStart= argument: %% for specifiers, $$ for variables, C-style escapes in quotes."""
    value = value.replace("%", "%%").replace("$", "$$")
    if value and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _argv(driftwatch: str, inventory: str, baseline: str, email: str, state_dir: str,
          quiet: bool = False) -> list[str]:
    argv = [driftwatch, "report"] + (["--quiet"] if quiet else []) + ["--inventory", inventory, "--baseline", baseline]
    for addr in [a.strip() for a in email.split(",") if a.strip()]:
        argv += ["--email", addr]
    argv += ["--output", f"{state_dir}/last-report.txt"]
    return argv


def cron_example(driftwatch: str = DEFAULTS["driftwatch"], inventory: str = DEFAULTS["inventory"],
                 baseline: str = DEFAULTS["baseline"], email: str = DEFAULTS["email"],
                 user: str = DEFAULTS["user"]) -> dict[str, str]:
    """{"cron": text, "service": text, "timer": text} (see FILES for where each is shipped).

    `email`: one address or several, comma-separated (used for MAILTO and for --email).
    Raises InputError for values that cannot be written safely (newlines, a bad user name, ...).
    """
    for name, value in (("driftwatch", driftwatch), ("inventory", inventory), ("baseline", baseline),
                        ("email", email), ("user", user)):
        _check(name, value)
    if not _USER_RE.match(user):
        raise InputError(f"cron-example: {user!r} is not a valid system user name")
    addrs = [a.strip() for a in email.split(",") if a.strip()]
    bad = [a for a in addrs if not _EMAIL_RE.match(a)]
    if bad or not addrs:
        raise InputError(f"cron-example: invalid e-mail address {', '.join(bad) or email!r}")
    if not driftwatch.startswith("/"):
        raise InputError(f"cron-example: give driftwatch as an absolute path, not {driftwatch!r} "
                         f"(cron and systemd do not use your shell's PATH)")

    # cron: --quiet (the report is mailed and kept in --output; anything printed would become a cron mail)
    cron_argv = _argv(driftwatch, inventory, baseline, email, STATE_DIR, quiet=True)
    lock = f"{STATE_DIR}/report.lock"
    cron = _CRON.format(state_dir=STATE_DIR, user=user, mailto=",".join(addrs), lock=_cron_word(lock),
                        lock_msg=lock, command=" ".join(_cron_word(a) for a in cron_argv))
    # systemd: the report printed on stdout goes to the journal
    argv = _argv(driftwatch, inventory, baseline, email, STATE_DIR)
    words = [_systemd_word(a) for a in argv]
    # one option (and its value) per continuation line, for readability
    lines, i = [" ".join(words[:2])], 2
    while i < len(words):
        if words[i].startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            lines.append(f"{words[i]} {words[i + 1]}")
            i += 2
        else:
            lines.append(words[i])
            i += 1
    exec_start = " \\\n    ".join(lines)
    service = _SERVICE.format(state_dir=STATE_DIR, user=user, exec_start=exec_start)
    return {"cron": cron, "service": service, "timer": _TIMER}


__all__ = ["cron_example", "DEFAULTS", "FILES", "STATE_DIR"]
