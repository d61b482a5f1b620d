"""Issue 22 item 7: secrets, logging and other settings with no throughput effect rank below every
performance finding and never ask to re-measure."""
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.report.data import comparison_to_dict
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import Baseline

VLLM = "ExecStart=/root/ml-env/bin/vllm serve /root/models/m --port 8000 --max-num-seqs {}\n"


def test_secret_and_logging_rank_below_a_capacity_change(tmp_path):
    base, cur = tmp_path / "base.service", tmp_path / "cur.service"
    base.write_text("[Service]\nEnvironment=VLLM_API_KEY=sk-aaaaaaaaaaaaaaaaaaaaaaaa\n" + VLLM.format(64))
    cur.write_text("[Service]\nEnvironment=VLLM_API_KEY=sk-bbbbbbbbbbbbbbbbbbbbbbbb\nEnvironment=NCCL_DEBUG=INFO\n"
                   + VLLM.format(16))
    read = lambda p: snapshot_from_unit_file(str(p), engine_version="0.11.0")  # noqa: E731
    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=read(base), path=str(base)), read(cur), load_rules(), []))
    assert [f["key"] for f in doc["findings"]][0] == "max_num_seqs"
    assert {f["key"] for f in doc["findings"][1:]} == {"env.VLLM_API_KEY", "env.NCCL_DEBUG"}
    assert all(f["impact"]["dimension"] == "none" for f in doc["findings"][1:])
    assert "re-measure" not in doc["summary"]
