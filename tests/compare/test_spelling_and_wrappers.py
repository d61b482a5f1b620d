"""Drift hidden in wrappers is found; equivalent spellings of the same launch are not drift."""
from pathlib import Path

import pytest
from cli_helpers import run_in_process

from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import Baseline

PY = "/venv/bin/python -m sglang.launch_server --model-path /m --tp-size 1"


def _compare(tmp_path, base_text: str, cur_text: str, **kw):
    (tmp_path / "b.service").write_text(base_text)
    (tmp_path / "c.service").write_text(cur_text)
    base = Baseline(name="b", snapshot=snapshot_from_unit_file(str(tmp_path / "b.service"), **kw))
    return compare(base, snapshot_from_unit_file(str(tmp_path / "c.service"), **kw), load_rules())


def _unit(exec_start: str, extra: str = "") -> str:
    return f"[Service]\n{extra}ExecStart={exec_start}\n"


@pytest.mark.parametrize("base,cur", [
    (f"/usr/bin/env CUDA_VISIBLE_DEVICES=0,1 {PY}", f"/usr/bin/env CUDA_VISIBLE_DEVICES=2,3 {PY}"),
    (f"/usr/bin/docker run -e CUDA_VISIBLE_DEVICES=0,1 img {PY}", f"/usr/bin/docker run -e CUDA_VISIBLE_DEVICES=0 img {PY}"),
    (f"/bin/bash -c 'export CUDA_VISIBLE_DEVICES=0; exec {PY}'", f"/bin/bash -c 'export CUDA_VISIBLE_DEVICES=1; exec {PY}'"),
])
def test_wrapper_environment_drift_is_found(tmp_path, base, cur):
    result = _compare(tmp_path, _unit(base), _unit(cur))
    assert [f.key for f in result.findings] == ["env.CUDA_VISIBLE_DEVICES"]
    assert result.findings[0].rule.id == "DW504"


@pytest.mark.parametrize("base,cur", [
    (f"/usr/bin/numactl --cpunodebind=0 {PY}", f"/usr/bin/numactl --cpunodebind=1 {PY}"),
    (f"/usr/bin/docker run --shm-size 32g img {PY}", f"/usr/bin/docker run --shm-size 1g img {PY}"),
])
def test_wrapper_option_drift_is_found(tmp_path, base, cur):
    result = _compare(tmp_path, _unit(base), _unit(cur))
    assert [f.key for f in result.findings] == ["launcher.wrappers"]


def test_environment_file_drift_is_found(tmp_path):
    result = _compare(tmp_path, _unit(PY, "EnvironmentFile=-/etc/default/sglang\n"), _unit(PY))
    assert [f.key for f in result.findings] == ["unit.Service.EnvironmentFile"]


@pytest.mark.parametrize("base,cur", [
    (_unit("@/venv/bin/python sglang-server -m sglang.launch_server --model-path /m"),
     _unit("/venv/bin/python -m sglang.launch_server --model-path /m")),
    (_unit("/venv/bin/python -m sglang.launch_server --model-path /m"),
     _unit("/venv/bin/python3 -m sglang.launch_server --model-path /m")),
    (_unit("/venv/bin/python -m sglang.launch_server --model-path /m"),
     _unit("/venv/bin/sglang serve --model-path /m")),
    (_unit("/venv/bin/python -m sglang.launch_server --model-path /m/"),
     _unit("/venv/bin/python -m sglang.launch_server --model-path /m")),
    (_unit("/venv/bin/python -m sglang.launch_server --model-path /m "
           "--json-model-override-args '{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0}}'"),
     _unit("/venv/bin/python -m sglang.launch_server --model-path /m "
           "--json-model-override-args '{\"rope_scaling\":{\"factor\":4,\"type\":\"yarn\"}}'")),
    (_unit("/venv/bin/python -m sglang.launch_server $OPTS", 'Environment="OPTS=--model-path /m --tp 2"\n'),
     _unit("/venv/bin/python -m sglang.launch_server --model-path /m --tp-size 2")),
])
def test_equivalent_launches_are_not_drift(tmp_path, base, cur):
    result = _compare(tmp_path, base, cur)
    assert not result.findings, [(f.key, f.difference.baseline, f.difference.current) for f in result.findings]


def test_release_defaults_are_not_drift_but_listed_under_the_version(tmp_path):
    text = _unit(PY + " --context-length 8192")
    (tmp_path / "b.service").write_text(text)
    base = snapshot_from_unit_file(str(tmp_path / "b.service"), engine_version="0.5.12")
    cur = snapshot_from_unit_file(str(tmp_path / "b.service"), engine_version="0.5.23")
    base.engine_version, cur.engine_version = "0.5.12", "0.5.23"
    result = compare(Baseline(name="b", snapshot=base), cur, load_rules())
    assert [f.key for f in result.findings] == ["engine.version"]
    assert result.findings[0].difference.details["defaults_changed"]


def test_topk_and_draft_tokens_are_counted_once(tmp_path):
    spec = "--speculative-algorithm EAGLE --speculative-num-steps 3"
    result = _compare(tmp_path, _unit(f"{PY} {spec} --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"),
                      _unit(f"{PY} {spec} --speculative-eagle-topk 4 --speculative-num-draft-tokens 8"))
    ratios = {f.key: f.throughput_ratio for f in result.findings}
    assert ratios["speculative_num_draft_tokens"] == 1.0
    assert result.predicted_throughput_ratio == pytest.approx(ratios["speculative_eagle_topk"], abs=1e-3)


def test_overridden_draft_tokens_follow_the_steps_finding(tmp_path):
    spec = "--speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
    result = _compare(tmp_path, _unit(f"{PY} {spec} --speculative-num-steps 3"),
                      _unit(f"{PY} {spec} --speculative-num-steps 5"))
    assert [f.key for f in result.findings] == ["speculative_num_steps"]
    assert result.findings[0].difference.details["speculative_num_draft_tokens"] == {"baseline": 4, "current": 6}


def _dw(*args, cwd):
    return run_in_process(*args, cwd=cwd)


def test_two_snapshots_in_one_second_both_survive(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.service").write_text(_unit(PY))
    run = _dw("snapshot", "--unit-file", tmp_path / "a/x.service", "--unit-file", tmp_path / "b/x.service",
              "--store", tmp_path / "store", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    saved = [line.split("\t")[-1] for line in run.stdout.splitlines()]
    assert len(set(saved)) == 2
    for reference in saved:  # the store is a database: each saved snapshot is read back by its reference
        shown = _dw("show", "--snapshot", reference, "--format", "json", cwd=tmp_path)
        assert shown.returncode == 0 and '"unit": "x.service"' in shown.stdout, shown.stderr


@pytest.mark.parametrize("args,needle", [
    (["--baseline-metric", "throughput=nan"], "finite"),
    (["--baseline-metric", "throughput=inf"], "finite"),
    (["--engine-version", "abc"], "not an SGLang release"),
    (["-o", "/proc/nope/report.txt"], "cannot write"),
])
def test_bad_numbers_versions_and_paths_are_one_line_errors(tmp_path, args, needle):
    root = Path(__file__).resolve().parents[2]
    run = _dw("compare", "--baseline", root / "baselines/70toks.yaml", "--unit-file",
              root / "examples/sglang-qwen-40toks.service", *args, cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and needle in run.stderr and "Traceback" not in run.stderr


def test_baseline_list_survives_a_broken_file(tmp_path):
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "good.yaml").write_text((root / "baselines/70toks.yaml").read_text())
    (tmp_path / "broken.yaml").write_bytes(b"\0\1binary")
    (tmp_path / "odd.yaml").write_text("metrics: [1, 2]\n")
    run = _dw("baseline", "list", "--baselines-dir", tmp_path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "good" in run.stdout and "ct129" in run.stdout
    assert run.stdout.count("unreadable") == 2
