"""Helpers of the restore tests: the console script, a unit with its drop-in laid over it, and
`systemd-analyze verify` as an oracle (parse only: it loads the unit in a temporary root with stub
targets and executables; no systemd manager runs)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from cli_helpers import Run, run_in_process

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BASELINES = ROOT / "baselines"
DW = Path(sys.executable).parent / "driftwatch"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
_STUB_UNITS = ("sysinit.target", "basic.target", "shutdown.target", "network.target", "network-online.target",
               "multi-user.target", "docker.service", "paths.target", "sockets.target", "timers.target")


def dw(*args, cwd=None, env=None) -> Run:
    """`driftwatch ARGS` in-process (the console script's entry point; stdin is no terminal, as with
    /dev/null): exit code, stdout and stderr as the script gives them."""
    return run_in_process(*args, cwd=cwd, env=env)


def no_traceback(r: Run) -> None:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr


def on_disk(text: str) -> str:
    """An example (a `systemctl cat` copy) as the file on disk: without its `# /path` first line."""
    return text.split("\n", 1)[1] if text.startswith("# /") else text


def laid_over(unit_text: str, unit: str, dropins: dict[str, str]) -> str:
    """`systemctl cat` of `unit` with `dropins` (file name -> text) in systemd's order."""
    parts = [f"# /etc/systemd/system/{unit}\n" + on_disk(unit_text).rstrip("\n")]
    for name in sorted(dropins):
        parts.append(f"# /etc/systemd/system/{unit}.d/{name}\n" + dropins[name].rstrip("\n"))
    return "\n\n".join(parts) + "\n"


def systemd_accepts(tmp: Path, unit: str, unit_text: str, dropins: dict[str, str]) -> tuple[bool, str]:
    """(accepted, what systemd-analyze said) for the unit with its drop-ins, in a root of its own."""
    import re
    root = tmp / "sa-root"
    etc = root / "etc/systemd/system"
    (etc / f"{unit}.d").mkdir(parents=True, exist_ok=True)
    (etc / unit).write_text(on_disk(unit_text))
    for name, text in dropins.items():
        (etc / f"{unit}.d" / name).write_text(text)
    lib = root / "usr/lib/systemd/system"
    lib.mkdir(parents=True, exist_ok=True)
    for stub in _STUB_UNITS:
        body = "[Service]\nExecStart=/bin/true\n" if stub.endswith(".service") else ""
        (lib / stub).write_text("[Unit]\nDescription=stub\n" + body)
    every = unit_text + "\n".join(dropins.values()) + "\nExecStart=/bin/true\n"
    for program in set(re.findall(r"^Exec\w*=[-@+!:]*(/\S+)", every, re.M)):
        path = root / program.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    r = subprocess.run([SYSTEMD_ANALYZE, "verify", f"--root={root}", "--man=no", unit], capture_output=True,
                       text=True, timeout=120, check=False)
    said = (r.stdout + r.stderr).strip()
    return r.returncode == 0 and not said, said
