"""Set-up examples for scheduled reports: a cron.d file and a systemd service + timer.

`cron_example(...)` returns the three texts filled in with the given paths, baseline, e-mail and
user; with the defaults it returns exactly the files shipped in ``examples/`` (a test checks that),
so the examples and the ``driftwatch cron-example`` command cannot drift apart.

The texts are templates in ``driftwatch/data/templates/*.in`` (shipped as package data), filled
by `fill_template`. Values are quoted for where they land: the shell (cron runs the command with
/bin/sh; ``%`` is special to cron) and systemd's ExecStart= (its own quoting, ``%`` specifiers,
``$`` expansion).
"""

from __future__ import annotations

import os
import re
import shlex
from importlib import resources
from typing import TypedDict

from driftwatch.errors import InputError


class CronDefaults(TypedDict):
    """What `cron_example` fills in for a value it is not given."""

    driftwatch: str
    inventory: str
    baseline: str | None
    baselines_dir: str
    email: str
    user: str


DEFAULTS: CronDefaults = {
    "driftwatch": "/usr/local/bin/driftwatch",
    "inventory": "/etc/driftwatch/inventory.yaml",
    "baseline": None,  # each unit's own, from the inventory
    "baselines_dir": "/etc/driftwatch/baselines",
    "email": "ops@example.com",
    "user": "driftwatch",
}

FILES = {
    "cron": "examples/cron/driftwatch",
    "service": "examples/systemd/driftwatch-report.service",
    "timer": "examples/systemd/driftwatch-report.timer",
}

STATE_DIR = "/var/lib/driftwatch"

TEMPLATES = {  # in driftwatch/data/templates/ (package data)
    "cron": "driftwatch.cron.in",
    "service": "driftwatch-report.service.in",
    "timer": "driftwatch-report.timer.in",
}
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill_template(name: str, **values: str) -> str:
    """The template `name` (a file in driftwatch/data/templates/) with each ``{key}`` replaced by
    ``values[key]``. Only ``{lowercase_name}`` is a placeholder; a placeholder without a value, or a
    value without a placeholder, is a programming error (ValueError)."""
    # one name per joinpath: Python 3.10's Traversable takes one
    text = resources.files("driftwatch.data").joinpath("templates").joinpath(name).read_text(encoding="utf-8")
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(values):
        raise ValueError(f"template {name}: placeholders {sorted(wanted)} but values for {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


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


VAR_LIB = "/var/lib"
_SYSTEMD_PATH_UNSAFE = re.compile(r"[\s\"'\\;]")  # split or unquoted by ReadWritePaths=, Environment=


def _systemd_path(name: str, value: str) -> str:
    """A path as it is written in a [Service] setting that takes paths (WorkingDirectory=,
    ReadWritePaths=, Environment=HOME=): `%` doubled (specifiers); whitespace, quotes, backslashes and
    `;` refused (each setting splits or unquotes them its own way)."""
    if _SYSTEMD_PATH_UNSAFE.search(value):
        raise InputError(f"cron-example: the {name} {value!r} has a space, quote, backslash or ';', which "
                         "systemd's path settings would split or unquote: choose a plainer path")
    return value.replace("%", "%%")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def writable_paths(state_dir: str, prometheus: str | None) -> list[str]:
    """Every directory the job writes in, as ReadWritePaths= must list them: the state directory
    (store, lock, --output, --state, the SSH client's home) and the Prometheus file's directory (its
    temp file is renamed there), unless inside the state directory."""
    paths = [state_dir]
    if prometheus:
        folder = os.path.dirname(prometheus) or "/"
        if not _inside(folder, state_dir):
            paths.append(folder)
    return paths


def _service_sandbox(state_dir: str, user: str, prometheus: str | None) -> dict[str, str]:
    """The service's {install} comment lines and {writable} settings: StateDirectory= only for a state
    directory under /var/lib (systemd creates it there, owned by the user), ReadWritePaths= for every
    directory the job writes (ProtectSystem=strict leaves everything else read-only), and a home
    created by useradd (the SSH client keeps its known_hosts and keys there)."""
    paths = writable_paths(state_dir, prometheus)
    # settings get `%` doubled (specifiers); comments, which systemd and cron leave alone, the paths as they are
    quoted = [_systemd_path("state dir" if i == 0 else "Prometheus file's directory", p) for i, p in enumerate(paths)]
    install = [f"#   useradd --system --home-dir {paths[0]} --create-home --shell /usr/sbin/nologin {user}"]
    for folder in paths[1:]:
        install.append(f"#   install -d -m 0755 {folder} && setfacl -m u:{user}:rwx {folder}  "
                       f"# {user} writes the Prometheus file here")
    lines = [f"# Writable under ProtectSystem=strict: only what the job writes. {paths[0]}: the store, the",
             "# lock, the last report (--output) and the SSH client's home."]
    if len(paths) > 1:
        lines.append(f"# {paths[1]}: the Prometheus file (--prometheus; its temp file is renamed there).")
    lines.append("# Add a ReadWritePaths= line if you point --output or --state elsewhere.")
    if _inside(state_dir, VAR_LIB) and state_dir.rstrip("/") != VAR_LIB:
        lines.append(f"# StateDirectory= creates {paths[0]} owned by {user} before the job starts.")
        lines += [f"StateDirectory={quoted[0][len(VAR_LIB) + 1:]}", "StateDirectoryMode=0700"]
    else:
        lines.append(f"# {paths[0]} is outside {VAR_LIB}, so no StateDirectory=: useradd --create-home makes it.")
    lines += [f"ReadWritePaths={p}" for p in quoted]
    return {"install": "\n".join(install), "writable": "\n".join(lines)}


def _argv(driftwatch: str, inventory: str, baseline: str | None, email: str, state_dir: str, baselines_dir: str,
          quiet: bool = False, prometheus: str | None = None) -> list[str]:
    """The one report job: every unit against its own baseline (or --baseline for all), the store
    fed (history, "since", "new since last run"), the mail, the report kept, the Prometheus file."""
    argv = [driftwatch, "report"] + (["--quiet"] if quiet else []) + ["--inventory", inventory]
    argv += (["--baseline", baseline] if baseline else []) + ["--baselines-dir", baselines_dir,
                                                             "--store", f"{state_dir}/store"]
    for addr in [a.strip() for a in email.split(",") if a.strip()]:
        argv += ["--email", addr]
    argv += ["--output", f"{state_dir}/last-report.txt"]
    if prometheus:
        argv += ["--prometheus", prometheus]
    return argv


def cron_example(driftwatch: str = DEFAULTS["driftwatch"], inventory: str = DEFAULTS["inventory"],
                 baseline: str | None = DEFAULTS["baseline"], email: str = DEFAULTS["email"],
                 user: str = DEFAULTS["user"], baselines_dir: str = DEFAULTS["baselines_dir"],
                 state_dir: str = STATE_DIR, prometheus: str | None = None) -> dict[str, str]:
    """{"cron": text, "service": text, "timer": text} (see FILES for where each is shipped).

    `email`: one address or several, comma-separated (used for MAILTO and for --email).
    `baseline`: None judges each unit against its own baseline from the inventory. `state_dir`: where
    the job runs and keeps its store and last report; `prometheus`: the textfile to write (omitted
    when None).
    `driftwatch`, `inventory`, `baselines_dir`, `state_dir`, `prometheus` and a `baseline` given as a
    path must be absolute: cron and systemd run the job from another working directory (the state directory).
    Raises InputError for values that cannot be written safely (newlines, a bad user name, ...).
    """
    for name, value in (("driftwatch", driftwatch), ("inventory", inventory), ("email", email), ("user", user),
                        ("baselines_dir", baselines_dir), ("state_dir", state_dir)) + \
            ((("baseline", baseline),) if baseline is not None else ()) + \
            ((("prometheus", prometheus),) if prometheus is not None else ()):
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
    for name, value in (("inventory", inventory), ("baselines dir", baselines_dir), ("state dir", state_dir)) + \
            ((("baseline", baseline),) if baseline and "/" in baseline else ()) + \
            ((("prometheus file", prometheus),) if prometheus else ()):
        if not value.startswith("/"):
            raise InputError(f"cron-example: give the {name} as an absolute path, not {value!r} "
                             f"(the job runs in {STATE_DIR}, not in this directory)")

    # cron: --quiet (the report is mailed and kept in --output; anything printed would become a cron mail)
    cron_argv = _argv(driftwatch, inventory, baseline, email, state_dir, baselines_dir, quiet=True,
                      prometheus=prometheus)
    lock = f"{state_dir}/report.lock"
    sandbox = _service_sandbox(state_dir, user, prometheus)  # the same user, home and directories for both
    cron = fill_template(TEMPLATES["cron"], state_dir=state_dir, user=user, mailto=",".join(addrs),
                         install=sandbox["install"],
                         lock=_cron_word(lock), lock_msg=lock, command=" ".join(_cron_word(a) for a in cron_argv))
    # systemd: the report printed on stdout goes to the journal
    argv = _argv(driftwatch, inventory, baseline, email, state_dir, baselines_dir, prometheus=prometheus)
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
    service = fill_template(TEMPLATES["service"], state_dir=_systemd_path("state dir", state_dir), user=user,
                            exec_start=exec_start, **sandbox)
    return {"cron": cron, "service": service, "timer": fill_template(TEMPLATES["timer"])}


def _home_dirs() -> list[str]:
    import pwd
    homes = {"/root", "/home"}
    try:
        homes.update(p.pw_dir for p in pwd.getpwall() if p.pw_uid >= 1000 or p.pw_uid == 0)
    except OSError:
        pass
    return sorted(h.rstrip("/") for h in homes if h and h.rstrip("/") not in ("", "/", "/nonexistent"))


def _readable_by(path: str, user: str) -> str | None:
    """None when `user` can reach and run `path` (by its mode bits); else the first directory or file
    that stops them. A user that does not exist yet counts as "others"."""
    import grp
    import pwd
    import stat
    try:
        pw = pwd.getpwnam(user)
        uid, gids = pw.pw_uid, {pw.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    except (KeyError, OSError):
        uid, gids = None, set()
    if uid == 0:
        return None
    parts = os.path.abspath(path).split("/")
    for i in range(2, len(parts) + 1):
        p = "/".join(parts[:i])
        try:
            st = os.stat(p)
        except OSError:
            return p
        need = stat.S_IXOTH if i < len(parts) else stat.S_IROTH | stat.S_IXOTH
        if st.st_uid == uid:
            have = (st.st_mode >> 6) & 7
        elif st.st_gid in gids:
            have = (st.st_mode >> 3) & 7
        else:
            have = st.st_mode & 7
        if have & need != need:
            return p
    return None


def path_warnings(driftwatch: str, user: str, paths: dict[str, str] | None = None) -> list[str]:
    """Warnings (one line each) about where the generated job would look for things: an executable
    under /tmp (PrivateTmp=yes hides it from the service, and tmp cleaners delete it) or under a
    home directory `user` cannot read; the same for the other `paths` ({"inventory": p, ...})."""
    out = []
    for name, p in {"driftwatch": driftwatch, **(paths or {})}.items():
        if not p or not p.startswith("/"):
            continue
        real = os.path.realpath(p)
        tmp = next((t for t in ("/tmp", "/var/tmp", "/dev/shm") for w in (p, real) if w == t or w.startswith(t + "/")),
                   None)
        if tmp:
            out.append(f"{name} {p} is under {tmp}: the service runs with PrivateTmp=yes (it will not see it) "
                       "and tmp cleaners delete it; put it somewhere permanent "
                       "(e.g. /opt/driftwatch, /etc/driftwatch)")
        home = next((h for h in _home_dirs() if real == h or real.startswith(h + "/")), None)
        if home:
            stop = _readable_by(real, user)
            if stop:
                out.append(f"{name} {p} is in a home directory that user {user} cannot read "
                               f"({stop} is not readable/searchable by {user}); put it outside home "
                               f"directories (e.g. /opt/driftwatch, /etc/driftwatch) or pick another --user")
    return out


__all__ = ["cron_example", "path_warnings", "writable_paths", "fill_template", "DEFAULTS", "FILES", "STATE_DIR",
           "TEMPLATES"]
