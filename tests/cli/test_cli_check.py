"""Issue 9 item 14: `driftwatch check` (exit 1 when the engine would refuse to start) and
`--catalog-dir` (catalogs for a patched build, in the generator's format).

Before: there was no `check` command (exit 2, "No such command"), and a unit using a patched
build's flags could only ever be reported as unknown flags.
"""
from __future__ import annotations

import json
import os
import subprocess

from cli_helpers import DRIFTWATCH, EXAMPLES, REPO, UNIT_70, Run, assert_one_line_error

UNIT_40 = EXAMPLES / "sglang-qwen-40toks.service"
SHADOW = EXAMPLES / "ddtree" / "sglang-qwen-ddtree-shadow.service"  # flags of a patched SGLang (DDTree)
DDTREE_FLAGS = ["--speculative-ddtree-budget", "--speculative-ddtree-topk-cap", "--speculative-ddtree-shadow-linear"]


def patched_catalog(directory, release: str = "0.5.12.post1") -> None:
    """What `python -m tools.catalog sglang --python PATCHED/bin/python --out DIR` writes for a build
    with the DDTree flags: the 0.5.12 catalog plus three options, in the generator's own layout."""
    from tools.catalog.argparse_dump import render
    shipped = REPO / "driftwatch" / "engines" / "sglang" / "catalogs" / "sglang-0.5.12.json"
    doc = json.loads(shipped.read_text(encoding="utf-8"))
    doc["version"] = release
    template = {k: None for k in doc["options"][0]}
    for flag, action, typ in (("--speculative-ddtree-budget", "store", "int"),
                              ("--speculative-ddtree-topk-cap", "store", "int"),
                              ("--speculative-ddtree-shadow-linear", "store_true", None)):
        dest = flag[2:].replace("-", "_")
        doc["options"].append({**template, "action": action, "dest": dest, "field": dest, "option_strings": [flag],
                               "primary": flag, "type": typ, "help": "DDTree (patched build)", "required": False,
                               "default": False if action == "store_true" else None,
                               "nargs": 0 if action == "store_true" else None,
                               "const": True if action == "store_true" else None})
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"sglang-{release}.json").write_text(render(doc), encoding="utf-8")


def test_a_unit_that_starts_is_exit_0(dw):
    run = dw("check", "--unit-file", UNIT_40)
    assert run.code == 0, run
    # inferred 0.5.19, the last release with its --mamba-scheduler-strategy, which deprecates that spelling
    warning = f"{UNIT_40}: warning: --mamba-scheduler-strategy is deprecated in SGLang 0.5.19: use " \
              "--mamba-radix-cache-strategy"
    assert run.stdout.strip().splitlines() == [warning, f"{UNIT_40}: ok: SGLang 0.5.19 accepts every flag (inferred: "
                                               "newest shipped catalog under which every flag parses)"]
    assert dw("check", "--unit-file", UNIT_40, "-q").stdout == warning + "\n"  # the problem, not the verdict
    assert dw("check", "--unit-file", UNIT_40, "-q", "--engine-version", "0.5.13").stdout == ""


def test_unknown_flags_are_exit_1_one_line_each(dw):
    run = dw("check", "--unit-file", SHADOW)
    assert run.code == 1, run
    lines = run.stdout.strip().splitlines()
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 3 and all(flag in line for flag, line in zip(DDTREE_FLAGS, errors, strict=False)), lines
    assert "would refuse to start" in lines[-1]
    doc = dw("check", "--unit-file", SHADOW, "--format", "json").json()
    assert doc["schema"] == "driftwatch.check/v1" and doc["starts"] is False
    assert [e["flag"] for e in doc["errors"]] == DDTREE_FLAGS


def test_a_bad_value_or_a_known_crash_is_exit_1(dw, tmp_path):
    bad = tmp_path / "bad.service"
    bad.write_text(UNIT_70.read_text(encoding="utf-8").replace("--tp-size 2", "--tp-size two"), encoding="utf-8")
    run = dw("check", "--unit-file", bad)
    assert run.code == 1 and "--tp-size two: not a valid int for SGLang 0.5.19" in run.stdout, run
    crash = tmp_path / "crash.service"  # steps without topk: SGLang 0.5.12 and later raise TypeError at start-up
    crash.write_text(UNIT_70.read_text(encoding="utf-8").replace(" \\\n  --speculative-eagle-topk 1", ""),
                     encoding="utf-8")
    assert "eagle-topk" not in crash.read_text(encoding="utf-8")
    run = dw("check", "--unit-file", crash)
    assert run.code == 1 and "raises TypeError at start-up" in run.stdout, run
    removed = dw("check", "--unit-file", UNIT_70, "--engine-version", "0.4.10.post2")
    assert removed.code == 1 and ": error: " in removed.stdout, removed
    assert dw("show", "--unit-file", crash).code == 0  # show stays informational


def test_a_unit_systemd_refuses_is_exit_1(dw, tmp_path):
    unit = tmp_path / "x.service"
    unit.write_text("[Service]\nUser=x\n", encoding="utf-8")
    run = dw("check", "--unit-file", unit)
    assert run.code == 1, run
    assert run.stdout.startswith(f"{unit}: error: systemd would refuse this unit"), run


def test_no_unit_is_trouble(dw, tmp_path):
    assert_one_line_error(dw("check", "--unit-file", tmp_path / "missing.service"), "missing.service")
    assert_one_line_error(dw("check"), "--unit-file")


def test_standard_input(tmp_path):
    proc = subprocess.run([str(DRIFTWATCH), "check", "--unit-file", "-"], input=SHADOW.read_text(encoding="utf-8"),
                          capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "DRIFTWATCH_DEBUG"})
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert run.code == 1 and run.stdout.startswith("sglang-qwen-ddtree-shadow.service: error:"), run


def test_catalog_dir_teaches_a_patched_build(dw, tmp_path):
    patched_catalog(tmp_path / "catalogs")
    run = dw("check", "--unit-file", SHADOW, "--catalog-dir", tmp_path / "catalogs")
    assert run.code == 0, run
    assert "SGLang 0.5.12.post1 accepts every flag" in run.stdout, run
    env = dw("check", "--unit-file", SHADOW, env={"DRIFTWATCH_CATALOG_DIR": str(tmp_path / "catalogs")})
    assert env.code == 0, env
    show = dw("show", "--unit-file", SHADOW, "--catalog-dir", tmp_path / "catalogs", "--format", "json").json()
    assert show["engine"]["flags"]["speculative_ddtree_budget"]["value"] == 16
    same = dw("compare", "--baseline", SHADOW, "--unit-file", SHADOW, "--catalog-dir", tmp_path / "catalogs")
    assert same.code == 0, same


def test_catalog_dir_release_of_the_same_number_replaces_the_shipped_one(dw, tmp_path):
    patched_catalog(tmp_path / "catalogs", release="0.5.12")
    run = dw("check", "--unit-file", SHADOW, "--catalog-dir", tmp_path / "catalogs", "--engine-version", "0.5.12")
    assert run.code == 0, run


def test_catalog_dir_without_catalogs_is_trouble(dw, tmp_path):
    assert_one_line_error(dw("check", "--unit-file", UNIT_40, "--catalog-dir", tmp_path), "no catalogs",
                          "sglang-RELEASE.json")
    assert_one_line_error(dw("check", "--unit-file", UNIT_40, "--catalog-dir", tmp_path / "nope"), "nope")


def test_catalog_dir_ends_with_its_command(invoke, tmp_path):
    """A `--catalog-dir` teaches the command it was given to, not the process: a second command in
    the same process (a test, a tool embedding driftwatch) reads with the shipped catalogs again."""
    patched_catalog(tmp_path / "catalogs")
    taught = invoke("check", "--unit-file", SHADOW, "--catalog-dir", tmp_path / "catalogs")
    assert taught.code == 0 and "0.5.12.post1 accepts every flag" in taught.stdout, taught
    after = invoke("check", "--unit-file", SHADOW)
    assert after.code == 1, after
    assert "--speculative-ddtree-budget" in after.stdout and "0.5.12.post1" not in after.stdout, after
