"""The generated service can do its job (issue 32, item 5): every path the job writes is writable under
ProtectSystem=strict, StateDirectory= matches --state-dir, and useradd creates the home the SSH client uses.

What is checked is systemd's own reading of the unit, not its text: `systemd --test --system` (parse the
units, dump them, exit: no manager is started, nothing is run) and `systemd-analyze verify`, both as the
unprivileged user nobody (setpriv), on copies in a world-readable temp directory found through
$SYSTEMD_UNIT_PATH. The written paths come from the ExecStart= command line as systemd parsed it."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from driftwatch.errors import InputError
from driftwatch.notify.cron import cron_example

DW = Path(sys.executable).parent / "driftwatch"
SYSTEMD = next((p for p in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd") if os.access(p, os.X_OK)), None)
NOBODY = 65534
WRITTEN_FILES = ("--output", "--prometheus", "--state")  # the job writes a file here (temp file + rename)
WRITTEN_DIRS = ("--store",)  # the job writes in this directory

pytestmark = [
    pytest.mark.skipif(SYSTEMD is None, reason="systemd not installed"),
    pytest.mark.skipif(not DW.exists(), reason=f"console script {DW} not installed"),
]


def unprivileged(argv: list[str]) -> list[str]:
    """argv run as nobody: never as root, so nothing `systemd --test` does could touch the host."""
    if os.geteuid() != 0:
        return argv
    if not shutil.which("setpriv"):
        pytest.skip("setpriv not installed (needed to drop root)")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def printed_units(folder: Path, *args: str) -> dict[str, str]:
    """`driftwatch cron-example ARGS` (the installed console script), its service and timer saved in
    `folder` as printed, ExecStart= pointed at an executable nobody can run."""
    exe = folder / "bin" / "driftwatch"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    home = folder / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")} | {"HOME": str(home)}
    run = subprocess.run([str(DW), "cron-example", "--driftwatch", str(exe), *args], capture_output=True,
                         text=True, env=env, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    sections: dict[str, str] = {}
    name = None
    for line in run.stdout.splitlines(keepends=True):
        if line.startswith("# ---- "):
            name = os.path.basename(line[7:].strip())
            sections[name] = ""
        elif name:
            sections[name] += line
    for unit in ("driftwatch-report.service", "driftwatch-report.timer"):
        (folder / unit).write_text(sections[unit])
    return sections


def parsed_service(folder: Path) -> dict[str, list[str]]:
    """The service's settings as systemd's parser dumps them (`systemd --test`), name -> values."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SYSTEMD_UNIT_PATH": f"{folder}:",
           "SYSTEMD_LOG_LEVEL": "err", "LANG": "C.UTF-8"}
    run = subprocess.run(unprivileged([str(SYSTEMD), "--test", "--system", "--unit=driftwatch-report.service",
                                       "--no-pager"]), capture_output=True, text=True, env=env, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    settings: dict[str, list[str]] = {}
    inside = False
    for line in run.stdout.splitlines():
        if line.startswith("\t-> Unit "):
            inside = line.strip() == "-> Unit driftwatch-report.service:"
        elif inside and ": " in line:
            key, _, value = line.strip().partition(": ")
            settings.setdefault(key, []).append(value)
    assert settings.get("Fragment Path") == [str(folder / "driftwatch-report.service")], settings
    return settings


def verify(folder: Path) -> None:
    """`systemd-analyze verify` as nobody: no warning about our units."""
    run = subprocess.run(unprivileged(["systemd-analyze", "verify", "--man=no", "driftwatch-report.service",
                                       "driftwatch-report.timer"]), cwd=folder, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"}, check=False)
    assert run.returncode == 0 and "driftwatch-report" not in run.stderr, run.stderr


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


@pytest.fixture
def folder():
    """A temp directory nobody can read (pytest's own tmp_path is root's, mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix="dw-units-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


CASES = {
    "docs-prometheus": ("/var/lib/driftwatch", "/var/lib/prometheus/node-exporter/driftwatch.prom"),
    "state-dir-outside-var-lib": ("/srv/dw", "/var/lib/prometheus/node-exporter/driftwatch.prom"),
    "nested-state-dir-prometheus-inside": ("/var/lib/ops/driftwatch", "/var/lib/ops/driftwatch/metrics/dw.prom"),
    "no-prometheus": ("/opt/driftwatch/state", None),
    "percent-in-paths": ("/var/lib/dw%n", "/srv/metrics%i/dw.prom"),  # a specifier to systemd unless doubled
}


@pytest.mark.parametrize("state_dir, prometheus", CASES.values(), ids=CASES.keys())
def test_every_written_path_is_writable_in_the_sandbox(folder, state_dir, prometheus):
    args = ["--state-dir", state_dir] + (["--prometheus", prometheus] if prometheus else [])
    sections = printed_units(folder, *args)
    verify(folder)
    unit = parsed_service(folder)
    assert unit["ProtectSystem"] == ["strict"]
    [command] = unit["Command Line"]
    argv = shlex.split(command)
    written = [os.path.dirname(argv[i + 1]) for i, word in enumerate(argv) if word in WRITTEN_FILES]
    written += [argv[i + 1] for i, word in enumerate(argv) if word in WRITTEN_DIRS]
    written += unit["WorkingDirectory"]  # the lock file of the cron job, and the SSH client's home
    assert len(written) >= 3 + (1 if prometheus else 0), argv
    if prometheus:
        assert os.path.dirname(prometheus) in written
    writable = " ".join(unit.get("ReadWritePaths", [])).split()
    state_directories = [f"/var/lib/{d}" for d in " ".join(unit.get("StateDirectory", [])).split()]
    for path in written:
        assert any(inside(path, w) for w in writable + state_directories), (path, writable, state_directories)
    # StateDirectory= is the state dir itself, or absent when the state dir is outside /var/lib
    assert state_directories == ([state_dir] if inside(state_dir, "/var/lib") else [])
    assert unit["WorkingDirectory"] == [state_dir] and f"HOME={state_dir}" in unit["Environment"]
    useradd = next(line for line in sections["driftwatch-report.service"].splitlines() if "useradd" in line)
    words = shlex.split(useradd.lstrip("# "))
    assert "--create-home" in words and words[words.index("--home-dir") + 1] == state_dir
    assert words[-1] == unit["User"][0]


def test_a_path_systemd_would_split_is_refused():
    for field in ({"state_dir": "/srv/my dw"}, {"prometheus": "/srv/prom dir/dw.prom"},
                  {"state_dir": "/srv/dw;x"}):
        with pytest.raises(InputError, match="systemd's path settings"):
            cron_example(**field)
    service = cron_example(state_dir="/srv/dw%n")["service"]
    assert "WorkingDirectory=/srv/dw%%n\n" in service and "ReadWritePaths=/srv/dw%%n\n" in service
