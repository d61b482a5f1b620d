"""report/data.py builds the documents: driftwatch.compare/v1 (additive changes only) and driftwatch.report/v1."""
from __future__ import annotations

import json

from driftwatch.report.data import REPORT_SCHEMA, finding_to_dict


def test_compare_v1_keys_additive(seed_doc):
    # every field design.md names is still there, in the same shape
    assert seed_doc["schema"] == "driftwatch.compare/v1"
    assert {"name", "host", "unit", "metrics"} <= set(seed_doc["baseline"])
    assert {"host", "unit", "source"} <= set(seed_doc["target"])
    for key in ("drift", "predicted_throughput_ratio", "predicted_throughput", "findings"):
        assert key in seed_doc
    top = seed_doc["findings"][0]
    assert (top["rank"], top["key"], top["flag"], top["baseline"], top["current"]) == \
        (1, "speculative_num_steps", "--speculative-num-steps", 3, 1)
    assert {"rule", "severity", "impact", "explanation", "baseline_source", "current_source"} <= set(top)


def test_concept_right_after_key(seed_doc):
    for f in seed_doc["findings"]:
        keys = list(f)
        assert keys[keys.index("key") + 1] == "concept"
        assert f["concept"] is None or isinstance(f["concept"], str)


def test_summary_and_header_facts_are_in_the_document(seed_doc):
    lo, hi = seed_doc["predicted_throughput_interval"]
    assert lo <= seed_doc["predicted_throughput_ratio"] <= hi < 1.0 and seed_doc["predicted_direction"] == "slower"
    assert seed_doc["summary"] == ("3 differences from baseline 70toks: predicted 42.5 tok/s vs 70 baseline "
                                   f"(\u00d7{lo:.2f}\u2013{hi:.2f}, most likely \u00d70.61) at concurrency 1; "
                                   "most of it from --speculative-num-steps 3 \u2192 1.")
    assert seed_doc["baseline"]["engine"] == "sglang" and seed_doc["baseline"]["engine_label"] == "SGLang"
    assert seed_doc["baseline"]["engine_version"] == "0.5.19"  # the last release with their --mamba-scheduler-strategy
    assert seed_doc["target"]["engine_version_reason"].startswith("inferred")
    json.dumps(seed_doc, allow_nan=False)  # plain JSON all the way down


def test_secret_findings_carry_placeholders_and_a_flag(seed_comparison):
    f = seed_comparison.findings[0]
    d = f.difference
    saved = d.secret, d.baseline, d.current
    try:
        d.secret, d.baseline, d.current = True, "<redacted:sha256:abc>", None
        out = finding_to_dict(f)
    finally:
        d.secret, d.baseline, d.current = saved
    assert out["secret"] is True and out["baseline"] == "(redacted)" and out["current"] is None


def test_fleet_document(fleet_doc):
    assert fleet_doc["schema"] == REPORT_SCHEMA
    assert fleet_doc["summary"] == {"hosts": 3, "drifted": 1, "clean": 1, "unreadable": 1, "no_baseline": 0,
                                    "units": {"total": 3, "drifted": 1, "clean": 1, "unreadable": 1,
                                              "no_baseline": 0}}
    drifted = fleet_doc["hosts"][0]
    assert drifted["status"] == "drift" and drifted["comparison"]["schema"] == "driftwatch.compare/v1"
    assert drifted["comparison"]["summary"].startswith("3 differences from baseline 70toks")
    assert fleet_doc["hosts"][2] == {"host": "ct200", "unit": "sglang-qwen.service", "status": "error",
                                     "error": "timeout after 10 s", "comparison": None, "failure": "error"}
