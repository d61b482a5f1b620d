"""The shipped live snapshot (examples/snapshots/ct129-relaunched.yaml) shows, offline, what a live
read adds: the values SGLang computed at start-up, with their numbers, laid over the unit."""
from pathlib import Path

from cli_helpers import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "snapshots" / "ct129-relaunched.yaml"


def _run(*args):
    return run_in_process(*args, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": "/nonexistent",
                                                "XDG_CONFIG_HOME": None})


def test_compare_shows_the_numbers_the_engine_computed():
    r = _run("compare", "--baseline", "70toks", "--snapshot", str(SNAPSHOT), "--concurrency", "4", "--format",
             "markdown")
    assert r.returncode == 1, r.stderr  # drift
    assert "19456 (computed at start-up)" in r.stdout and "1 (computed at start-up)" in r.stdout
    assert "--context-length 131072 → 19456 (computed at start-up)" in r.stdout


def test_show_lists_what_the_server_printed():
    r = _run("show", "--snapshot", str(SNAPSHOT))
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("computed at start-up (journal):"))
    assert "context_length=19456" in line and "max_running_requests=1" in line
