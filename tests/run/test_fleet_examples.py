"""The sharded-fleet examples (examples/fleet/, docs/fleet.md) parse, and driftwatch's CLI accepts
every command in them.

No Kubernetes, AWX or Nomad here: each manifest is read as its engine's text (YAML documents; HCL
blocks with balanced braces and JSON-like `args` lists), the placeholders each engine fills
(`$JOB_COMPLETION_INDEX`, AWX's slice number, Nomad's `${group.value}`) are filled for every slice,
and each driftwatch command is parsed by driftwatch's own click command (options converted and
checked, `--shard` included; nothing run). The N slices must cover 0..N-1, and the merge must name
exactly the files the slices write.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
import yaml

from driftwatch.cli import cli
from driftwatch.run.shard import parse_shard

FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet"
STORE = "postgresql://driftwatch@pg.internal:5432/driftwatch"


def _parse(argv: list[str]) -> dict:
    """driftwatch's click parse of one command line (the subcommand's parameters), nothing run."""
    assert argv[0] == "driftwatch", argv
    with click.Context(cli, info_name="driftwatch", **cli.context_settings) as parent:  # as `driftwatch` makes it
        command = cli.get_command(parent, argv[1])
        assert command is not None, argv
        ctx = command.make_context(argv[1], list(argv[2:]), parent=parent)
    return ctx.params


def _check_slices_and_merge(slices: list[dict], merges: list[dict], count: int) -> None:
    assert sorted(p["shard"].index for p in slices) == list(range(count))
    assert {p["shard"].count for p in slices} == {count}
    outputs = sorted(p["output"] for p in slices)
    assert all(p["fmt"] == "json" for p in slices) and len(set(outputs)) == count
    for p in slices:
        assert p["store"] == STORE
    assert len(merges) == 1 and merges[0]["merge"] and sorted(merges[0]["shard_reports"]) == outputs
    assert merges[0]["email"] and merges[0]["prometheus_file"]


def test_the_kubernetes_indexed_job():
    shards = yaml.safe_load((FLEET / "k8s-indexed-job.yaml").read_text())
    merge = yaml.safe_load((FLEET / "k8s-merge-cronjob.yaml").read_text())
    job = shards["spec"]["jobTemplate"]["spec"]
    assert shards["kind"] == merge["kind"] == "CronJob" and job["completionMode"] == "Indexed"
    count = job["completions"]
    [container] = job["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert container["command"][:2] == ["sh", "-c"]
    script = container["command"][2]
    slices = []
    for index in range(count):  # what each pod's shell runs: its index from the Job controller
        text = script.replace("$JOB_COMPLETION_INDEX", str(index)).replace("$DW_STORE", env["DW_STORE"])
        words = shlex.split(text)
        assert words[0] == "exec" and "$" not in text
        slices.append(_parse(words[1:]))
    [merger] = merge["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    words = shlex.split(merger["command"][2])
    assert words[0] == "exec"
    _check_slices_and_merge(slices, [_parse(words[1:])], count)
    mounts = {m["name"] for m in container["volumeMounts"]} & {m["name"] for m in merger["volumeMounts"]}
    assert "reports" in mounts  # the merge reads what the shards wrote


def _awx(text: str, number: int, count: int) -> str:
    """The Jinja AWX fills in (only the expressions the example uses; any other is an error)."""
    text = text.replace("{{ (awx_job_slice_number | int) - 1 }}", str(number - 1))
    text = text.replace("{{ awx_job_slice_count }}", str(count))
    assert "{{" not in text, text
    return text


def test_the_awx_sliced_job_template():
    plays = yaml.safe_load((FLEET / "awx-sliced-playbook.yml").read_text())
    assert isinstance(plays, list) and len(plays) == 2
    [slice_task] = plays[0]["tasks"]
    [merge_task] = plays[1]["tasks"]
    count = 4  # the template's job_slice_count
    slices = [_parse(shlex.split(_awx(slice_task["ansible.builtin.command"], n, count))) for n in range(1, count + 1)]
    merge = _parse(shlex.split(merge_task["ansible.builtin.command"]))
    _check_slices_and_merge(slices, [merge], count)
    assert "0, 1" in slice_task["failed_when"]  # drift (exit 1) is no failure of the slice


def _hcl(path: Path) -> tuple[str, list[list[str]], list[str]]:
    """The text (braces balanced, outside strings), every `args = [...]` list, and `for_each`'s values."""
    text = path.read_text()
    depth = 0
    for ch in re.sub(r'"(?:[^"\\]|\\.)*"', '""', re.sub(r"(?m)^\s*#.*$", "", text)):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    args = [json.loads(m) for m in re.findall(r"args\s*=\s*(\[[^\]]*\])", text)]
    each = re.search(r"for_each\s*=\s*(\[[^\]]*\])", text)
    return text, args, json.loads(each.group(1)) if each else []


def test_the_nomad_periodic_jobs():
    text, [args], values = _hcl(FLEET / "nomad-shards.nomad.hcl")
    assert 'type = "batch"' in text and "periodic" in text and "prohibit_overlap = true" in text
    slices = [_parse(["driftwatch"] + [a.replace("${group.value}", str(v)) for a in args]) for v in values]
    merge_text, [merge_args], _ = _hcl(FLEET / "nomad-merge.nomad.hcl")
    assert merge_text.count('job "') == 1 and text.count('job "') == 1  # one job a file, as Nomad reads them
    _check_slices_and_merge(slices, [_parse(["driftwatch"] + merge_args)], len(values))


def test_the_docs_show_the_same_commands():
    """docs/fleet.md's examples are these files' (the docs include them by name and show their commands)."""
    doc = (FLEET.parents[1] / "docs" / "fleet.md").read_text()
    for name in ("k8s-indexed-job.yaml", "k8s-merge-cronjob.yaml", "awx-sliced-playbook.yml", "nomad-shards.nomad.hcl", "nomad-merge.nomad.hcl"):
        assert f"examples/fleet/{name}" in doc
    assert 'report --merge' in doc and '--shard "$JOB_COMPLETION_INDEX/4"' in doc


@pytest.mark.parametrize("bad", ["4/4", "$JOB_COMPLETION_INDEX/4"])
def test_an_unfilled_or_wrong_slice_is_refused_by_the_same_parse(bad):
    from driftwatch.errors import InputError
    with pytest.raises(InputError, match="--shard"):
        _parse(["driftwatch", "report", "--inventory", "f.yaml", "--shard", bad])
    assert parse_shard("3/4").index == 3
