"""Issue 34 item 5: every numeric option and config key is a finite number in its documented range,
and every path too long or not text is one line and exit 2, never "internal error: OSError: File name
too long" or "timed out after -5s". The whole sweep (every command, every parameter) is
argument_sweep.py; here each kind of garbage once per parameter kind, and the numbers in full."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import argument_sweep
import click
import pytest
from cli_helpers import run_in_process

from driftwatch.cli.params import CheckedPath, FiniteFloat, path_error_line, path_problem

DW = os.path.join(os.path.dirname(sys.executable), "driftwatch")
ROOT = Path(__file__).resolve().parents[2]
U70 = str(ROOT / "examples" / "sglang-qwen-70toks.service")


def _dw(*args, cwd=None):
    return run_in_process(*args, cwd=cwd, env={k: None for k in os.environ if k.startswith("DRIFTWATCH_")})


@pytest.mark.parametrize("option", ["--connect-timeout", "--command-timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "0", "-5", "", "NaN", "1e-400"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_one_line_exit_2(option, value):
    r = _dw("check", "--unit-file", U70, option, value)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"driftwatch: Invalid value for '{option}'"), r.stderr


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1e308", "0", "-5", "'nan'", "true", "[1]"])
@pytest.mark.parametrize("key", ["connect_timeout", "command_timeout", "parallel", "concurrency"])
def test_the_same_config_keys_are_checked_alike(key, value, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"{key}: {value}\n")
    r = _dw("--config", str(config), "report", "--unit-file", U70, "--no-store")
    assert r.returncode == 2 and "internal error" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and f"{config}: {key}" in r.stderr, r.stderr


def test_within_the_range_a_timeout_is_taken_and_help_documents_the_range():
    r = _dw("check", "--unit-file", U70, "--connect-timeout", "0.5", "--command-timeout", "86400")
    assert r.returncode in (0, 1), r.stderr
    text = _dw("check", "--help").stdout
    assert "0<x<=3600" in " ".join(text.split()) and "0<x<=86400" in " ".join(text.split())


def test_finite_float_refuses_what_floatrange_lets_through():
    with pytest.raises(click.BadParameter):
        FiniteFloat(0, 1).convert("nan", None, None)
    assert click.FloatRange(0, 1).convert("nan", None, None) != click.FloatRange(0, 1).convert("nan", None, None)
    with pytest.raises(click.BadParameter):
        FiniteFloat(0).convert("1e308" + "0", None, None)
    assert FiniteFloat(0, 1).convert("0.25", None, None) == 0.25


@pytest.mark.parametrize("path, why", [
    ("a" * 256, "a file name of 256 bytes"), ("x/" * 2049, "a path of 4098 bytes"),
    ("é" * 128, "a file name of 256 bytes"), ("a\x00b", "NUL"), ("\udcff", "not valid UTF-8")])
def test_path_problems_are_named(path, why):
    assert why in path_problem(path)
    with pytest.raises(click.BadParameter, match="Invalid value|" + why.split()[0]):
        CheckedPath().convert(path, None, None)
    assert path_problem("a" * 255) is None and path_problem("/".join(["a" * 255] * 16)) is None


@pytest.mark.parametrize("argv", [
    ["snapshot", "--unit-file", U70, "--store", "s" * 300],
    ["history", "--store", "/tmp/" + "h" * 300],
    ["compare", "--baseline", "b" * 300, "--unit-file", U70],
    ["compare", "--baseline", str(ROOT / "baselines" / "70toks.yaml"), "--unit-file", U70, "-o", "o" * 300],
    ["check", "--unit-file", "u" * 300],
    ["check", "--unit-file", U70, "--known-hosts", "k" * 300],
    ["report", "--unit-file", U70, "--baseline", "70toks", "--state", "t" * 300, "--no-store"],
    ["baseline", "list", "--baselines-dir", "d" * 300],
    ["store", "import", "i" * 300],
    ["rules", "list", "--rules", "r" * 300],
])
def test_a_path_too_long_is_one_line_exit_2(argv, tmp_path):
    r = _dw(*argv, cwd=tmp_path)
    assert r.returncode == 2 and "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("driftwatch: "), r.stderr


def test_the_error_boundary_names_a_refused_path():
    try:
        open("z" * 300)
    except OSError as exc:
        line = path_error_line(exc)
    assert line.startswith("zzzz") and "file name too long" in line and len(line) < 200
    assert path_error_line(ValueError("embedded null byte")) == "a path cannot hold a NUL character"
    assert path_error_line(OSError(2, "No such file")) is None


def test_every_numeric_parameter_of_every_command_refuses_garbage_in_one_line():
    """The sweep's numbers on every command (paths: argument_sweep.py runs them all)."""
    done = argument_sweep.sweep(numbers=argument_sweep.NUMBERS, paths=[])
    assert done.runs > 150 and not done.internal, done.internal[:5]
    keys = argument_sweep.config_sweep()
    assert keys.runs > 100 and not keys.internal and set(keys.exits) == {2}, (keys.internal[:5], keys.exits)


@pytest.mark.parametrize("argv", [
    [b"compare", b"--baseline", str(ROOT / "baselines" / "70toks.yaml").encode(), b"--unit-file", U70.encode(),
     b"-o", b"out\xff.txt"],
    [b"check", b"--unit-file", b"\xfe\xff.service"],
    [b"history", b"--store", b"st\xffore"],
])
def test_an_argument_that_is_not_utf8_is_one_line_exit_2_and_writes_nothing(argv, tmp_path):
    r = subprocess.run([DW.encode(), *argv], capture_output=True, timeout=120, cwd=tmp_path,
                       env={k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")})
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2 and err.count("\n") == 1 and "not valid UTF-8" in err, err
    assert list(tmp_path.iterdir()) == []
