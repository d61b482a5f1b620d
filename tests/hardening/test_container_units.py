"""Issue 21, item 6: docker and podman units. The container's environment is what -e/--env give it
(`-e NAME` passes the client's NAME); the unit's Environment= reaches only the client (compared as the
unit key Service.Environment); `check` and `compare` agree on visible GPUs."""
from __future__ import annotations

import json
import os
import sys

import pytest
from cli_helpers import run_in_process

from driftwatch.collect.raw import RawUnit
from driftwatch.snapshots.snapshot import build_snapshot

DW = os.path.join(os.path.dirname(sys.executable), "driftwatch")
SERVER = "lmsysorg/sglang:v0.5.5 python3 -m sglang.launch_server --model-path /m --tp 2"


def unit(run_line: str, environment: str = "") -> str:
    return f"[Service]\n{environment}ExecStart={run_line} {SERVER}\n"


def snap(text: str):
    return build_snapshot(RawUnit(host=None, unit="s.service", text=text))


def dw(*args):
    proc = run_in_process(*args)
    assert "Traceback" not in proc.stderr
    return proc


@pytest.mark.parametrize("runner", ["/usr/bin/docker run --rm", "/usr/bin/podman run --rm",
                                    "/usr/bin/docker container run"])
def test_the_container_environment_is_what_the_run_options_give(runner):
    s = snap(unit(f"{runner} -e A=1 --env B=2 --env=C=3 -eD=4 -e FROM_CLIENT -e UNSET --env-file /etc/x.env",
                  "Environment=FROM_CLIENT=yes CLIENT_ONLY=1\n"))
    assert s.environment == {"A": "1", "B": "2", "C": "3", "D": "4", "FROM_CLIENT": "yes"}
    assert "CLIENT_ONLY" not in s.environment
    assert "CLIENT_ONLY=1" in s.unit_keys["Service.Environment"]
    assert "--env-file /etc/x.env" in " ".join(s.launcher.wrapper_args)


def test_a_plain_unit_keeps_its_environment():
    s = snap("[Service]\nEnvironment=A=1\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n")
    assert s.environment == {"A": "1"} and "Service.Environment" not in s.unit_keys


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case, starts", [
    (unit("/usr/bin/docker run --rm --gpus all", "Environment=CUDA_VISIBLE_DEVICES=0\n"), True),  # client only
    (unit("/usr/bin/docker run --rm --gpus all -e CUDA_VISIBLE_DEVICES", "Environment=CUDA_VISIBLE_DEVICES=0\n"),
     False),
    (unit("/usr/bin/podman run --rm --env=CUDA_VISIBLE_DEVICES=3"), False),
    (unit("/usr/bin/docker run --rm -e CUDA_VISIBLE_DEVICES=0,1"), True),
    ("[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0\n"
     "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --tp 2\n", False),
])
def test_check_and_compare_agree_on_visible_gpus(tmp_path, case, starts):
    baseline = _write(tmp_path, "b.service", unit("/usr/bin/docker run --rm --gpus all"))
    current = _write(tmp_path, "c.service", case)
    check = dw("check", "--unit-file", current, "--format", "json")
    assert json.loads(check.stdout)["starts"] is starts, check.stdout
    compare = dw("compare", "--baseline", baseline, "--unit-file", current, "--format", "json")
    said = " ".join(f.get("explanation") or "" for f in json.loads(compare.stdout)["findings"])
    assert ("will not start" not in said) is starts, said
