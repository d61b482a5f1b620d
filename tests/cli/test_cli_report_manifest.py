"""`report --manifest`: a manifest's engine container in the fleet report, judged against the
baseline named (typed or the config file's), with the Prometheus `namespace`/`workload`/`container`
labels on its series only; a manifest that cannot be read is its entry's one-line error."""
from __future__ import annotations

from cli_helpers import BASELINES, EXAMPLES, REPO

MANIFESTS = REPO / "tests" / "fixtures" / "manifests"
BASE = MANIFESTS / "seed-000" / "base" / "deployment.yaml"


def test_report_over_a_manifest_and_a_unit_file(dw, tmp_path):
    assert dw("baseline", "save", "template", "--manifest", BASE, "--baselines-dir", tmp_path).code == 0
    steps1 = tmp_path / "deployment-1.yaml"
    steps1.write_text(BASE.read_text().replace('- --speculative-num-steps\n            - "3"',
                                               '- --speculative-num-steps\n            - "1"'))
    prom = tmp_path / "dw.prom"
    done = dw("report", "--baseline", "template", "--baselines-dir", tmp_path, "--manifest", steps1,
              "--unit-file", EXAMPLES / "sglang-qwen-70toks.service", "--format", "json", "--prometheus", prom,
              "--no-store")
    assert done.code == 1, done
    by_file = {e["file"]: e for e in done.json()["hosts"]}
    manifest, unit = by_file[str(steps1)], by_file[str(EXAMPLES / "sglang-qwen-70toks.service")]
    assert manifest["unit"] == "inference/Deployment/sglang-qwen/sglang" and manifest["status"] == "drift"
    assert [f["key"] for f in manifest["comparison"]["findings"] if f["key"] == "speculative_num_steps"] \
        == ["speculative_num_steps"]
    assert (manifest["namespace"], manifest["workload"], manifest["container"]) == \
        ("inference", "Deployment/sglang-qwen", "sglang")
    assert "container" not in unit and "namespace" not in unit
    text = prom.read_text()
    assert 'namespace="inference",workload="Deployment/sglang-qwen",container="sglang"} 1' in text
    unit_series = [line for line in text.splitlines() if "sglang-qwen-70toks.service" in line]
    assert unit_series and not any("container=" in line for line in unit_series)


def test_report_manifest_needs_a_baseline_and_a_bad_file_is_one_line(dw, tmp_path):
    missing = dw("report", "--manifest", BASE, "--no-store")
    assert missing.code == 2 and "--manifest needs --baseline" in missing.stderr, missing
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nspec: {containers: 5}\n")
    done = dw("report", "--baseline", BASELINES / "70toks.yaml", "--manifest", bad, "--format", "json", "--no-store")
    assert done.code == 2 and "Traceback" not in done.stderr, done
    [entry] = done.json()["hosts"]
    assert entry["status"] == "error" and entry["file"] == str(bad)
    assert len([line for line in done.stderr.splitlines() if str(bad) in line]) == 1
