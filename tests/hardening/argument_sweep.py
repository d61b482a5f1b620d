"""A garbage-argument sweep of every command (issue 34 item 5): each option that takes a value and
each positional argument, given values that are not finite numbers, out of range, too long for a
path, not UTF-8 or holding a NUL, must end in one line on stderr and exit 2 (or an ordinary 0/1):
never a traceback, never "internal error".

    python tests/hardening/argument_sweep.py            # every command, every parameter (minutes)

Runs `driftwatch.cli.main` in this process on local files only (no option that names a host, a
mail server or a command to run is swept), in a temporary directory with HOME pointed into it.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]
U70 = str(ROOT / "examples" / "sglang-qwen-70toks.service")
B70 = str(ROOT / "baselines" / "70toks.yaml")

NUMBERS = ["nan", "inf", "-inf", "1e308", "0", "-5", "", "1e-400", "99999999999999999999999"]
PATHS = ["a" * 300, "/tmp/" + "b" * 256 + "/x", "c/" * 2100, "\udcff\udcfe", "d\x00e"]
# never swept: they name a host to contact, a mail server or recipient, or a command to run
UNSAFE = {"--host", "--host-name", "--smtp-host", "--email", "--reload-command", "--restart-command", "HOSTS"}


def _bases(tmp: str) -> dict[str, list[str]]:
    """The arguments that let each command get as far as using the swept one."""
    return {
        "show": ["--unit-file", U70], "check": ["--unit-file", U70],
        "snapshot": ["--unit-file", U70, "--store", f"{tmp}/store"],
        "prune": ["--store", f"{tmp}/store", "--keep", "3"], "history": ["--store", f"{tmp}/store"],
        "store import": [f"{tmp}/old", "--store", f"{tmp}/store2"],
        "store export": ["--store", f"{tmp}/store", "-o", f"{tmp}/out"], "store check": ["--store", f"{tmp}/store"],
        "baseline save": ["n1", "--unit-file", U70, "--baselines-dir", f"{tmp}/b"],
        "baseline accept": ["70toks", "--unit-file", U70, "--baselines-dir", f"{tmp}/b"],
        "baseline list": ["--baselines-dir", f"{tmp}/b"], "baseline show": ["70toks", "--baselines-dir", f"{tmp}/b"],
        "compare": ["--baseline", B70, "--unit-file", U70],
        "report": ["--unit-file", U70, "--baseline", B70, "--store", f"{tmp}/store"],
        "cron-example": [], "rules list": [], "rules show": ["DW101"],
        "restore": ["--baseline", B70, "--unit-file", U70],
    }


def commands() -> list[tuple[str, click.Command]]:
    from driftwatch.cli import cli
    out = []

    def walk(group, path):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                walk(command, path + (name,))
            else:
                out.append((" ".join(path + (name,)), command))
    walk(cli, ())
    return out


def _numeric(param: click.Parameter) -> bool:
    return isinstance(param.type, (click.types._NumberParamTypeBase,)) or param.type in (click.INT, click.FLOAT)


@dataclass
class Sweep:
    runs: int = 0
    internal: list[tuple[list[str], str]] = field(default_factory=list)  # (argv, stderr)
    exits: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0


def run_one(argv: list[str]) -> tuple[int, str]:
    from driftwatch.cli import main
    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except BaseException as exc:  # noqa: BLE001 - a traceback is what the sweep looks for
            return -1, f"{type(exc).__name__}: {exc}"
    return code, err.getvalue()


def cases(only: set[str] | None = None, numbers=NUMBERS, paths=PATHS):
    """(command name, argv) for every swept parameter and value."""
    for name, command in commands():
        if only is not None and name not in only:
            continue
        for param in command.params:
            if getattr(param, "is_flag", False) or getattr(param, "count", False):
                continue
            label = param.opts[0] if isinstance(param, click.Option) else param.name.upper()
            if label in UNSAFE or (isinstance(param, click.Option) and param.hidden):
                continue
            values = numbers if _numeric(param) else paths
            for value in values:
                yield name, label, param, value


def sweep(only: set[str] | None = None, numbers=NUMBERS, paths=PATHS) -> Sweep:
    result = Sweep()
    start = time.monotonic()
    home = tempfile.mkdtemp(prefix="dw-sweep-")
    old_cwd, old_env = os.getcwd(), dict(os.environ)
    try:
        os.environ.update(HOME=home, NO_COLOR="1")
        for k in [k for k in os.environ if k.startswith("DRIFTWATCH_")]:
            del os.environ[k]
        os.chdir(home)
        Path(home, "b").mkdir()
        shutil.copy(B70, Path(home, "b", "70toks.yaml"))
        bases = _bases(home)
        for name, label, param, value in cases(only, numbers, paths):
            base = list(bases.get(name, []))
            if isinstance(param, click.Argument):
                positional = [w for w in base if not w.startswith("-")][:1]
                argv = name.split() + ([value] + base[1:] if positional and base and base[0] == positional[0]
                                       else [value] + base)
            else:
                if label in base:
                    i = base.index(label)
                    base[i + 1:i + 2] = [value]
                    argv = name.split() + base
                else:
                    argv = name.split() + base + [label, value]
            code, err = run_one(argv)
            result.runs += 1
            result.exits[code] = result.exits.get(code, 0) + 1
            if code == -1 or "internal error" in err or "Traceback" in err or err.count("\n") > 1 and code == 2 \
                    and not err.startswith("driftwatch: "):
                result.internal.append((argv, err.strip()[:300]))
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
        shutil.rmtree(home, ignore_errors=True)
    result.seconds = time.monotonic() - start
    return result


CONFIG_NUMBERS = [".nan", ".inf", "-.inf", "1e308", "0", "-5", "true", "'nan'", "99999999999999999999999"]


def config_sweep(only: set[str] | None = None) -> Sweep:
    """The same numbers as config-file keys: every numeric option's key, each value, each command."""
    from driftwatch.cli.config import key_of
    result = Sweep()
    start = time.monotonic()
    home = tempfile.mkdtemp(prefix="dw-sweep-")
    try:
        bases = _bases(home)
        seen = set()
        for name, label, param, value in cases(only, CONFIG_NUMBERS, []):
            if not isinstance(param, click.Option) or (name, label, value) in seen:
                continue
            seen.add((name, label, value))
            config = Path(home, "config.yaml")
            config.write_text(f"{key_of(param)}: {value}\n")
            code, err = run_one(["--config", str(config), *name.split(), *bases.get(name, [])])
            result.runs += 1
            result.exits[code] = result.exits.get(code, 0) + 1
            if code == -1 or "internal error" in err or "Traceback" in err:
                result.internal.append(([name, key_of(param), value], err.strip()[:300]))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result.seconds = time.monotonic() - start
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    done = sweep(set(sys.argv[1:]) or None)
    for argv, err in done.internal:
        print("INTERNAL", [a[:40] for a in argv], err, sep="\n  ")
    print(f"{done.runs} runs of {len(commands())} commands in {done.seconds:.0f} s; exit codes {done.exits}; "
          f"internal errors {len(done.internal)}")
    keys = config_sweep(set(sys.argv[1:]) or None)
    for argv, err in keys.internal:
        print("INTERNAL (config)", argv, err, sep="\n  ")
    print(f"config keys: {keys.runs} runs in {keys.seconds:.0f} s; exit codes {keys.exits}; "
          f"internal errors {len(keys.internal)}")
