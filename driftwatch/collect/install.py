"""Install one drop-in file on a host over SSH (`driftwatch restore --apply`), atomically.

One `sh` script per step, over the same connection recipe as the collector (ssh.py): the file's
content travels on stdin, never in a command line. The script first makes sure it may write
(root, or `sudo -n` without a password) and refuses before touching anything otherwise; it writes a
temporary file in the drop-in directory, then renames it over the target (a reader sees the old
file or the new one, never half of one). `systemctl daemon-reload` (and `restart` when asked) run
only where systemd runs (`/run/systemd/system` exists: sd_booted); elsewhere the result says so and
nothing is started. The commands are injectable for tests and unusual hosts.
"""
from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass

from driftwatch.collect.hostkeys import KnownHosts
from driftwatch.collect.inventory import HostTarget
from driftwatch.collect.sshoptions import SSHOptions
from driftwatch.errors import CollectError

RELOAD = "systemctl daemon-reload"
RESTART = "systemctl restart {unit}"  # {unit}: the unit's name, shell-quoted

# Markers of the script's answer: "<nonce> STATUS detail". Written durably: the temporary file is
# fsynced before the rename and the directory after it (`sync FILE` fsyncs that file; where `sync`
# takes no file, a global sync). A directory or symlink at the target path is refused, never
# replaced or written into. `remove` (mode "-") takes the file away (a rollback where none was).
_WRITE = r"""
set -u
nonce=$1; target=$2; mode=$3
dir=${target%/*}; base=${target##*/}
say() { printf '%s %s\n' "$nonce" "$*"; }
if [ "$(id -u)" = 0 ]; then run() { "$@"; }
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then run() { sudo -n "$@"; }
else say no-root "$(id -un 2>/dev/null || id -u)"; exit 0; fi
if [ -L "$dir" ]; then say refused "$dir is a symlink"; exit 0; fi
if [ -L "$target" ]; then say refused "$target is a symlink"; exit 0; fi
if [ -e "$target" ] && [ ! -f "$target" ]; then say refused "$target is not a regular file"; exit 0; fi
durable() { run sync "$1" 2>/dev/null || run sync; }
if [ "$mode" = - ]; then
  run rm -f "$target" || { say failed remove; exit 0; }
  durable "$dir"; say removed "$target"; exit 0
fi
run mkdir -p "$dir" || { say failed mkdir; exit 0; }
tmp=$(run mktemp "$dir/.$base.XXXXXX") || { say failed mktemp; exit 0; }
if ! run sh -c 'cat > "$1"' sh "$tmp"; then run rm -f "$tmp"; say failed write; exit 0; fi
run chmod "$mode" "$tmp" || { run rm -f "$tmp"; say failed chmod; exit 0; }
durable "$tmp"
if [ -L "$target" ] || { [ -e "$target" ] && [ ! -f "$target" ]; }; then
  run rm -f "$tmp"; say refused "$target is not a regular file"; exit 0
fi
if ! run mv -f "$tmp" "$target"; then run rm -f "$tmp"; say failed rename; exit 0; fi
durable "$dir"
say written "$target"
"""

_READ = r"""
nonce=$1; target=$2
if [ -L "$target" ]; then printf '%s symlink\n' "$nonce"
elif [ -f "$target" ]; then
  printf '%s present %s\n' "$nonce" "$(stat -c %a "$target" 2>/dev/null || echo 644)"; cat "$target"
elif [ -e "$target" ]; then printf '%s other\n' "$nonce"
else printf '%s absent\n' "$nonce"; fi
"""

_SYSTEMD = r"""
set -u
nonce=$1; shift
say() { printf '%s %s\n' "$nonce" "$*"; }
if [ "$(id -u)" = 0 ]; then run() { "$@"; }
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then run() { sudo -n "$@"; }
else say no-root; exit 0; fi
if [ "${DW_SYSTEMD_CHECK:-1}" = 1 ] && [ ! -d /run/systemd/system ]; then say no-systemd; exit 0; fi
out=$(run sh -c "$1" 2>&1); rc=$?
printf '%s rc=%s\n%s\n' "$nonce" "$rc" "$out"
"""


def restart_command(template: str, unit: str) -> str:
    """The restart command with `{unit}` as one shell word (`sg\\x2dlang.service` keeps its backslash)."""
    return template.replace("{unit}", shlex.quote(unit))


@dataclass
class OldFile:
    """What was at the drop-in's path before the install (`kind`: absent | present | symlink | other)."""

    kind: str
    text: str | None = None
    mode: str = "0644"


@dataclass
class Step:
    status: str  # written | no-root | failed | no-systemd | ok | error
    detail: str = ""


class Installer:
    """One SSH connection to one host, for reading, writing and reloading its drop-ins."""

    def __init__(self, target: HostTarget, options: SSHOptions, timeout: float | None = None):
        import os

        from driftwatch.collect.fleet import DEFAULT_KNOWN_HOSTS, GLOBAL_KNOWN_HOSTS
        from driftwatch.collect.ssh import SSHConnection
        from driftwatch.collect.sshconfig import default_ssh_config, load_ssh_config, resolve
        cfg_path = options.ssh_config
        if cfg_path is None:
            cfg_path = default_ssh_config()
        elif cfg_path.lower() in ("", "none"):
            cfg_path = None
        if options.known_hosts:
            known = KnownHosts(options.known_hosts, options.accept_new)
        else:
            extra = (GLOBAL_KNOWN_HOSTS,) if os.path.exists(GLOBAL_KNOWN_HOSTS) else ()
            known = KnownHosts(DEFAULT_KNOWN_HOSTS, options.accept_new, extra)
        endpoint = resolve(target, load_ssh_config(cfg_path), options.identity)
        self.display = endpoint.display
        self.timeout = timeout or options.command_timeout
        self.connection = SSHConnection(endpoint, known, connect_timeout=options.connect_timeout,
                                        password=options.password, allow_agent=options.allow_agent,
                                        look_for_keys=options.look_for_keys)
        self._open = False

    def _run(self, script: str, args: list[str], stdin: bytes = b"", env: dict | None = None) -> tuple[str, str]:
        from driftwatch.collect.interface import HostError
        if not self._open:
            try:
                self.connection.open()
            except HostError as exc:
                raise CollectError(str(exc)) from None
            self._open = True
        nonce = secrets.token_hex(8)
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        command = f"{prefix} sh -c {shlex.quote(script)} sh {shlex.quote(nonce)} " + " ".join(
            shlex.quote(a) for a in args)
        try:
            out, timed_out = self.connection.run(command.strip(), stdin, self.timeout)
        except HostError as exc:
            raise CollectError(str(exc)) from None
        if timed_out:
            raise CollectError(f"{self.display}: no answer within {self.timeout:g}s")
        text = out.decode("utf-8", "replace")
        head, sep, rest = text.partition(nonce + " ")
        if not sep:
            raise CollectError(f"{self.display}: unexpected answer: {text.strip()[:200]}")
        return head, rest

    def read(self, path: str) -> str | None:
        """The file's content now (None when there is none)."""
        return self.old(path).text

    def old(self, path: str) -> OldFile:
        """What is at `path` now, to show the diff and to put it back if the install fails."""
        _, rest = self._run(_READ, [path])
        status, _, content = rest.partition("\n")
        kind, _, mode = status.strip().partition(" ")
        if kind == "present":
            return OldFile("present", content, "0" + mode.strip()[-3:] if mode.strip() else "0644")
        return OldFile(kind or "absent")

    def put_back(self, path: str, old: OldFile) -> Step:
        """The file as it was before (removed when there was none)."""
        if old.kind == "present" and old.text is not None:
            return self.write(path, old.text, old.mode)
        return self.write(path, "", "-")

    def write(self, path: str, text: str, mode: str = "0644") -> Step:
        _, rest = self._run(_WRITE, [path, mode], text.encode("utf-8"))
        status, _, detail = rest.strip().partition(" ")
        return Step(status, detail)

    def systemd(self, command: str, check_systemd: bool = True) -> Step:
        """Run `command` (daemon-reload, restart) where systemd runs; `no-systemd` where it does not."""
        _, rest = self._run(_SYSTEMD, [command], env={"DW_SYSTEMD_CHECK": "1" if check_systemd else "0"})
        first, _, out = rest.partition("\n")
        first = first.strip()
        if first.startswith("rc="):
            rc = first[3:]
            return Step("ok" if rc == "0" else "error", out.strip() if rc == "0" else f"exit {rc}: {out.strip()}")
        return Step(first or "error", out.strip())

    def close(self) -> None:
        self.connection.close()
