"""Helpers for the history tests: a store built by real `driftwatch snapshot --unit-file` runs of a
unit that changes (a drop-in added, a flag changed, reverted and changed again), written as
`systemctl cat` prints a unit with its drop-ins."""
from __future__ import annotations

import json
import os
from pathlib import Path

from cli_helpers import Run, run_in_process

ROOT = Path(__file__).resolve().parents[2]
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
U40 = ROOT / "examples" / "sglang-qwen-40toks.service"
UNIT = "sglang-qwen.service"
DROPIN = "/etc/systemd/system/sglang-qwen.service.d/override.conf"


def run(*args, cwd=ROOT, check=True) -> Run:
    """`driftwatch ARGS` in-process (the console script's entry point), in `cwd` with its own HOME."""
    r = run_in_process(*args, cwd=cwd, env=_env(cwd))
    assert "Traceback" not in r.stderr, r.stderr
    if check:
        assert r.returncode in (0, 1), r.stdout + r.stderr
    return r


def _env(cwd) -> dict[str, str | None]:
    """What the run's environment changes: no DRIFTWATCH_* setting of the caller, HOME in `cwd`, wide text."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DRIFTWATCH_")}
    env["HOME"] = str(Path(cwd) / ".home") if Path(cwd) != ROOT else os.environ.get("HOME", "/nonexistent")
    env["COLUMNS"] = "200"
    return env


def with_dropin(unit_text: str, body: str) -> str:
    """`systemctl cat` output: the fragment, then a drop-in under its own `# /path` header."""
    return unit_text.rstrip("\n") + f"\n\n# {DROPIN}\n{body.strip()}\n"


def steps_text(n: int, base: Path = U70) -> str:
    text = base.read_text()
    return text.replace("--speculative-num-steps 3", f"--speculative-num-steps {n}")


class Replay:
    """Writes each state to a file and snapshots it with the real console script."""

    def __init__(self, tmp: Path):
        self.tmp, self.store, self.n = tmp, tmp / "store", 0
        self.saved: list[Path] = []

    def snapshot(self, text: str, host: str = "ct129") -> Path:
        self.n += 1
        path = self.tmp / f"state{self.n}.service"
        path.write_text(text)
        r = run("snapshot", "--unit-file", path, "--host-name", host, "--store", self.store, cwd=self.tmp)
        saved = Path(r.stdout.strip().split("\t")[3])
        self.saved.append(saved)
        return saved

    def history(self, *args, fmt="json", check=True):
        r = run("history", "--store", self.store, "--format", fmt, *args, cwd=self.tmp, check=check)
        return (json.loads(r.stdout) if fmt == "json" and r.returncode == 0 else r.stdout), r


