"""Two flags of one effect are priced once: the second finding names the first by rank ("counted in
#1") in every format, instead of claiming "speed unchanged" with a confidence."""
from __future__ import annotations

import json

import pytest
from cli_helpers import BASELINES, EXAMPLES, run_in_process


@pytest.mark.parametrize("extra,counted", [
    # SGLang's two acceptance thresholds: one acceptance rule, priced on the first
    ("--speculative-accept-threshold-single 0.5 --speculative-accept-threshold-acc 0.5",
     "speculative_accept_threshold_acc"),
    # steps and the tree's width together: the steps estimate holds both
    ("--speculative-eagle-topk 2 --speculative-num-draft-tokens 4", "speculative_eagle_topk"),
])
def test_the_second_flag_of_one_effect_says_which_finding_holds_it(tmp_path, extra, counted):
    unit = tmp_path / "sglang-qwen.service"
    text = (EXAMPLES / "sglang-qwen-70toks.service").read_text()
    if "topk" in extra:
        text = text.replace("--speculative-num-steps 3", "--speculative-num-steps 1")
        text = text.replace("--speculative-eagle-topk 1", extra)
    else:
        text = text.replace("--speculative-num-steps 3", f"--speculative-num-steps 3 {extra}")
    unit.write_text(text)
    run = run_in_process("compare", "--baseline", BASELINES / "70toks.yaml", "--unit-file", unit, "--format", "json")
    assert run.returncode == 1, run.stderr
    findings = {f["key"]: f for f in json.loads(run.stdout)["findings"]}
    held = findings[counted]
    holder = [f for f in findings.values() if f["rank"] == held["impact"].get("counted_in")]
    assert holder and holder[0]["key"] != counted and holder[0]["impact"]["throughput_ratio"] is not None
    assert held["impact"]["throughput_ratio"] == 1.0
    table = run_in_process("compare", "--baseline", BASELINES / "70toks.yaml", "--unit-file", unit,
                           "--format", "markdown")
    [row] = [line for line in table.stdout.splitlines() if line.startswith(f"| {held['rank']} |")]
    assert f"counted in #{holder[0]['rank']}" in row and "speed unchanged" not in row
