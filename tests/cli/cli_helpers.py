"""Shared constants and assertions for the CLI tests (imported by name; conftest holds the fixtures)."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BASELINES = REPO / "baselines"
DRIFTWATCH = Path(sys.executable).with_name("driftwatch")
UNIT_70 = EXAMPLES / "sglang-qwen-70toks.service"


def unit_70(*replacements: tuple[str, str]) -> str:
    """The shipped 70 tok/s unit (seed 000) with some of its text replaced (each must be there)."""
    text = UNIT_70.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    return text


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class Run:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr

    @property
    def returncode(self) -> int:
        """The exit code under subprocess.CompletedProcess's name (tests written against subprocess)."""
        return self.code

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return f"<exit {self.code}\nstdout: {self.stdout[:2000]}\nstderr: {self.stderr[:2000]}>"


def assert_one_line_error(run: Run, *needles: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line starting `driftwatch:`, no traceback."""
    assert run.code == 2, run
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run
    lines = run.stderr.strip("\n").splitlines()
    assert len(lines) == 1, run
    assert lines[0].startswith("driftwatch: "), run
    assert "internal error" not in lines[0], run
    for needle in needles:
        assert needle in lines[0], (needle, run)


# --------------------------------------------------------------------------- running the CLI

_FORGET_ENV = ("DRIFTWATCH_BASELINES", "DRIFTWATCH_DEBUG")  # the caller's settings never reach a test run
# process-wide state of driftwatch.redact (or of its submodules): what one run learnt of the fingerprint key
_REDACT_STATE = ("_key_cache", "key_problem", "_config_key_file")


class _Entry:
    """The console script's entry point (`driftwatch.cli.main`) shaped as CliRunner calls a command."""

    name = "driftwatch"

    def main(self, args, prog_name=None, **_):
        from driftwatch.cli import main
        main(list(args))


def _runner() -> CliRunner:
    """A CliRunner keeping stderr apart from stdout (click 8.2+ always does; 8.1 needs `mix_stderr=False`)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def _forget_process_state() -> None:
    """What a run leaves in this process and a new process would not have: redact's key, gc settings."""
    for name, module in list(sys.modules.items()):
        if name == "driftwatch.redact" or name.startswith("driftwatch.redact."):
            for attribute in _REDACT_STATE:
                value = getattr(module, attribute, None)
                if isinstance(value, (dict, list)):
                    value.clear()


def run_in_process(*args, cwd=None, env=None, input=None) -> Run:
    """`driftwatch ARGS` through the same entry point as the installed script, in this process.

    Same exit code, stdout and stderr as the script (one `driftwatch:` line for bad input, never a
    traceback) for ~1/25 of the CPU (`compare` on the shipped example: 9 ms against 250 ms in a new process). `cwd` is the working directory, `env` what is
    added to the environment (None removes a variable); stdin is `input` or empty, never a terminal.
    sys.stdout and sys.stderr are swapped for the run, so what any other thread of the test process
    prints meanwhile lands there too: a test's helper thread (a fake server) must not print."""
    environment: dict[str, str | None] = dict.fromkeys(_FORGET_ENV)
    environment.update(env or {})
    thresholds, here = gc.get_threshold(), os.getcwd()
    _forget_process_state()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = _runner().invoke(_Entry(), [str(a) for a in args], input=input, env=environment,  # type: ignore[arg-type]
                                  catch_exceptions=False, prog_name="driftwatch")
    finally:
        os.chdir(here)
        gc.unfreeze()  # main() freezes the start-up heap and raises the thresholds for its one run
        gc.set_threshold(*thresholds)
        _forget_process_state()
    return Run(result.exit_code, result.stdout, result.stderr)


def run_script(*args, cwd=None, env=None, input=None, timeout=60) -> Run:
    """`driftwatch ARGS` as the installed console script in a new process: what a user runs.

    For the few tests whose subject is the process itself (stdin, a terminal, signals, the shebang, the
    README's commands); everything else uses `run_in_process`."""
    environment = {k: v for k, v in os.environ.items() if k not in _FORGET_ENV}
    for key, value in (env or {}).items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    proc = subprocess.run([str(DRIFTWATCH), *map(str, args)], cwd=None if cwd is None else str(cwd), env=environment,
                          input=input, capture_output=True, text=True, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr)
