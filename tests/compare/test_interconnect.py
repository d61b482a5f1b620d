"""The GPUs' link read on the host (`nvidia-smi topo -m`, issue 13 item 2) end to end: a RawUnit's
interconnect -> the snapshot (saved, read back, validated) -> the roofline's all-reduce cost and the
words of a tensor-parallel finding. The SSH side (the remote script asks `nvidia-smi topo -m` only
where two or more GPUs answer) is tests/collect/test_collect_fleet.py."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cli_helpers import run_in_process

from driftwatch.collect.raw import RawUnit
from driftwatch.errors import InputError
from driftwatch.fileio import dump_yaml
from driftwatch.findings.compare import compare
from driftwatch.report.show import render_show
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.snapshot import build_snapshot, snapshot_from_dict, snapshot_to_dict

REPO = Path(__file__).resolve().parents[2]
CONFIG = (REPO / "tools" / "calibration_models" / "Qwen--Qwen3-32B.json").read_text()
UNIT = """[Service]
ExecStart=/opt/venv/bin/python3 -m sglang.launch_server --model-path /models/Qwen3-32B --tp-size {tp} --port 30000
"""
A6000X4 = [{"index": i, "name": "NVIDIA RTX A6000", "memory_total": "49140 MiB"} for i in range(4)]


def snapshot(tp: int, link: str | None):
    raw = RawUnit(host="gpu7", unit="sglang.service", text=UNIT.format(tp=tp), source="systemctl cat",
                  paths=["/etc/systemd/system/sglang.service"], engine_version="0.5.23", gpus=copy.deepcopy(A6000X4),
                  interconnect=link, model_configs={"/models/Qwen3-32B": CONFIG})
    return build_snapshot(raw)


def tp_finding(rules, link: str | None):
    base = Baseline(name="tp2", snapshot=snapshot(2, link), metrics={"throughput": 30.0, "concurrency": 1})
    result = compare(base, snapshot(4, link), rules)
    return next(f for f in result.findings if f.difference.concept == "parallel.tensor")


def test_the_link_is_recorded_and_read_back():
    snap = snapshot(4, "nvlink")
    assert snap.runtime["interconnect"] == "nvlink"
    again = snapshot_from_dict(snapshot_to_dict(snap), "test")
    assert again.runtime["interconnect"] == "nvlink"
    assert "linked by nvlink (nvidia-smi topo -m)" in render_show(again, "text", False)
    assert "interconnect" not in snapshot(4, None).runtime  # unread stays unknown, not a default


def test_a_link_no_reader_wrote_is_refused():
    doc = snapshot_to_dict(snapshot(4, "pcie"))
    doc["runtime"]["interconnect"] = "carrier pigeon"
    with pytest.raises(InputError, match="interconnect"):
        snapshot_from_dict(doc, "test")


def test_the_measured_link_prices_the_all_reduces(shipped_rules):
    nvlink, pcie, unread = (tp_finding(shipped_rules, link) for link in ("nvlink", "pcie", None))
    assert "nvlink (nvidia-smi topo -m on the host)" in nvlink.detail and "pcie (nvidia-smi topo -m on the host)" in pcie.detail
    assert "the host's topology was not read" in unread.detail  # the table's usual link, said so
    # tp 2 -> 4 halves the weights each GPU reads; over NVLink the extra all-reduces cost less
    assert nvlink.throughput_ratio is not None and pcie.throughput_ratio is not None
    assert nvlink.throughput_ratio > pcie.throughput_ratio


def test_gpu_option_drops_the_hosts_link(tmp_path):
    # `--gpu` names other hardware: the link matrix read on the host belongs to the host's GPUs
    current = tmp_path / "current.yaml"
    current.write_text(dump_yaml(snapshot_to_dict(snapshot(4, "nvlink"))), encoding="utf-8")
    baseline = tmp_path / "tp2.service"
    baseline.write_text(UNIT.format(tp=2), encoding="utf-8")
    def tp_detail(*extra):
        run = run_in_process("compare", "--baseline", baseline, "--snapshot", current,
                             "--model-config", REPO / "tools" / "calibration_models" / "Qwen--Qwen3-32B.json",
                             "--format", "json", *extra)
        assert run.returncode == 1, run.stderr
        return next(f for f in json.loads(run.stdout)["findings"] if f["key"] == "tp_size")["explanation"]

    assert "nvlink (nvidia-smi topo -m on the host)" in tp_detail()
    other = tp_detail("--gpu", "H200x4")
    assert "topo -m on the host" not in other and "(assumed: the NVIDIA H200 SXM's usual link" in other
