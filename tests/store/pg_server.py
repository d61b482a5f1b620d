"""A real PostgreSQL server for the tests: Debian's postgresql (initdb, pg_ctl), a cluster in a temp
dir on a free loopback port, run as an unprivileged user (``nobody`` when the tests run as root),
stopped and removed when the session ends, whatever happened. `start()` returns None and a reason
where it cannot start (no binaries, no psycopg, initdb refused): the tests skip with that reason."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for path in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return path
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    url: str  # postgresql://driftwatch:PASSWORD@127.0.0.1:PORT/driftwatch
    password: str
    port: int
    tmp: Path
    prefix: list[str]
    pg_ctl: str
    data: Path

    def stop(self) -> None:
        subprocess.run(self.prefix + [self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def database(self, name: str) -> str:
        """A fresh database on the server; its URL."""
        import psycopg
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + "/" + name


def start() -> tuple[PgServer | None, str]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg 3 is not installed (pip install -e '.[postgres]')"
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        return None, "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"
    tmp = Path(tempfile.mkdtemp(prefix="dw-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"
        if not os.path.exists(runuser):
            shutil.rmtree(tmp, ignore_errors=True)
            return None, "running as root without runuser: cannot start PostgreSQL unprivileged"
        os.chown(tmp, 65534, 65534)
        os.chmod(tmp, 0o700)
        prefix = [runuser, "-u", "nobody", "--"]
    data, password, port = tmp / "data", "s3cr3t-" + os.urandom(4).hex(), _free_port()
    pwfile = tmp / "pw"
    pwfile.write_text(password + "\n")
    if prefix:
        os.chown(pwfile, 65534, 65534)
    env = dict(os.environ, LC_ALL="C", LANG="C", HOME=str(tmp))
    steps = [
        [initdb, "-D", str(data), "-U", "driftwatch", "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8"],
        [pg_ctl, "-D", str(data), "-l", str(tmp / "log"), "-w", "-t", "60", "-o",
         f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50", "start"],
    ]
    for step in steps:
        r = subprocess.run(prefix + step, capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
        if r.returncode != 0:
            log = (tmp / "log").read_text(errors="replace")[-500:] if (tmp / "log").exists() else ""
            subprocess.run(prefix + [pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True,
                           timeout=60)
            shutil.rmtree(tmp, ignore_errors=True)
            return None, f"PostgreSQL did not start: {(r.stderr or r.stdout).strip()[-300:]} {log}"
    url = f"postgresql://driftwatch:{password}@127.0.0.1:{port}/postgres"
    server = PgServer(url, password, port, tmp, prefix, pg_ctl, data)
    return server, ""
