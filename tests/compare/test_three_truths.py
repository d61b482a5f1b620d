"""Disk vs loaded vs running: a pending daemon-reload or restart is reported as a finding."""
from pathlib import Path

from driftwatch.collect.raw import RawUnit
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.report.wording import explain
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.snapshot import build_snapshot

ROOT = Path(__file__).resolve().parents[2]
UNIT_70 = ROOT / "examples" / "sglang-qwen-70toks.service"
UNIT_40 = ROOT / "examples" / "sglang-qwen-40toks.service"


def _current(**runtime) -> object:
    raw = RawUnit(host="ct129", unit="sglang-qwen.service", text=UNIT_70.read_text(), source="systemctl cat",
                  paths=["/etc/systemd/system/sglang-qwen.service"], **runtime)
    return build_snapshot(raw)


def _run(current):
    base = Baseline(name="70toks", snapshot=snapshot_from_unit_file(str(UNIT_70), host="ct129"),
                    metrics={"throughput": 70.0})
    return compare(base, current, load_rules())


def _argv(path: Path) -> list[str]:
    return snapshot_from_unit_file(str(path)).expanded_argv


def test_same_everywhere_is_clean():
    result = _run(_current(running_argv=_argv(UNIT_70), need_daemon_reload=False))
    assert not result.drift


def test_running_process_started_with_other_flags_is_restart_pending():
    result = _run(_current(running_argv=_argv(UNIT_40)))
    [finding] = [f for f in result.findings if f.key == "process.argv"]
    assert finding.rule.id == "DW601"
    assert "--speculative-num-steps" in explain(finding)
    assert finding.difference.details["speculative_num_steps"] == {"running": 1, "unit": 3}


def test_need_daemon_reload_is_reported():
    result = _run(_current(need_daemon_reload=True))
    assert [f.rule.id for f in result.findings] == ["DW602"]


def test_loaded_exec_start_differing_from_disk_means_reload_pending():
    loaded_argv = " ".join(_argv(UNIT_40))
    show = (f"{{ path=/root/ml-env/bin/python3 ; argv[]={loaded_argv} ; ignore_errors=no ; "
            "start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }")
    result = _run(_current(loaded_exec_start=show))
    assert "systemd.loaded" in [f.key for f in result.findings]
    same = show.replace(loaded_argv, " ".join(_argv(UNIT_70)))
    assert not _run(_current(loaded_exec_start=same)).drift


VLLM_UNIT = """[Service]
ExecStart=/opt/venv/bin/vllm serve Qwen/Qwen3-8B --config /etc/vllm/serve.yaml --port 8000
"""
VLLM_CONFIG = {"/etc/vllm/serve.yaml": "max-num-seqs: 64\ngpu-memory-utilization: 0.9\nenforce-eager: true\n"}
VLLM_ARGV = ["/opt/venv/bin/vllm", "serve", "Qwen/Qwen3-8B", "--config", "/etc/vllm/serve.yaml", "--port", "8000"]


def _vllm(running_argv, **runtime):
    raw = RawUnit(host="h1", unit="vllm.service", text=VLLM_UNIT, source="systemctl cat",
                  paths=["/etc/systemd/system/vllm.service"], engine_files=dict(VLLM_CONFIG),
                  running_argv=running_argv, active_state="active", **runtime)
    return build_snapshot(raw)


def _vllm_compare(current):
    base = Baseline(name="vl", snapshot=_vllm(list(VLLM_ARGV)), metrics={})
    return compare(base, current, load_rules())


def test_a_running_vllm_with_its_config_file_is_not_a_pending_restart():
    """The running argv names `--config FILE` too: the file's settings it started with are the ones
    the unit's snapshot carries, so reading it without them must not report every one as changed."""
    result = _vllm_compare(_vllm(list(VLLM_ARGV)))
    assert "process.argv" not in [f.key for f in result.findings]
    assert not result.drift


def test_a_running_vllm_started_with_another_flag_beside_its_config_is_still_a_pending_restart():
    result = _vllm_compare(_vllm(VLLM_ARGV[:-1] + ["8001"]))
    [finding] = [f for f in result.findings if f.key == "process.argv"]
    assert list(finding.difference.details) == ["port"]
