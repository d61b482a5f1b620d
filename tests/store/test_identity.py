"""A finding's identity (host, unit, key) lives in one place; the --only-changes fingerprint uses it."""
from __future__ import annotations

from driftwatch.identity import FindingId, finding_id
from driftwatch.notify.state import fingerprint


def report(host, key="speculative_num_steps", current=1):
    finding = {"rank": 1, "key": key, "flag": "--speculative-num-steps", "baseline": 3, "current": current,
               "rule": "DW101", "explanation": "…"}
    return {"schema": "driftwatch.report/v1", "generated_at": "2026-11-28T03:00:00Z",
            "hosts": [{"host": host, "unit": "sglang-qwen.service", "status": "drift", "error": None,
                       "comparison": {"findings": [finding]}},
                      {"host": "ct200", "unit": "sglang-qwen.service", "status": "error",
                       "error": "timeout", "comparison": None}]}


def test_finding_id():
    fid = finding_id("ct129", "sglang-qwen.service", "speculative_num_steps")
    assert fid == FindingId("ct129", "sglang-qwen.service", "speculative_num_steps")
    assert str(fid) == "ct129/sglang-qwen.service/speculative_num_steps"
    assert finding_id(None, None, None) == ("local", "", "")  # a unit file read here: "local", as reports say
    assert finding_id("h", "u", 5) == finding_id("h", "u", "5")


def test_fingerprint_keys_findings_by_identity():
    assert fingerprint(report(None)) == fingerprint(report("local"))  # one identity, however it is spelled
    assert fingerprint(report("ct129")) != fingerprint(report("local"))
    assert fingerprint(report("ct129", key="tp_size")) != fingerprint(report("ct129"))


def test_fingerprint_unchanged_for_state_files_written_before():
    # What the previous release computed for this report: state files already on disk still match.
    assert fingerprint(report("ct129")) == OLD_FINGERPRINT


OLD_FINGERPRINT = "sha256:8af879b37fe5aab9e3afbdd030f80ca29f604dc7cef898fd0e7f13cf6ae699f7"


def test_a_host_with_a_slash_never_reads_as_another_host_and_unit():
    assert str(finding_id("gpu/01", "x.service", "k")) == "gpu%2F01/x.service/k"
    assert str(finding_id("gpu/01", "x", "k")) != str(finding_id("gpu", "01/x", "k"))
    assert str(finding_id("gpu_01", "x", "k")) != str(finding_id("gpu/01", "x", "k"))
    assert str(finding_id("a%2Fb", "x", "k")) != str(finding_id("a/b", "x", "k"))
    assert str(finding_id("ct129", "sglang-qwen.service", "a/b")) == "ct129/sglang-qwen.service/a/b"  # as ever
