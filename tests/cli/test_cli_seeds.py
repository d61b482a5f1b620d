"""Seed regressions end to end through the CLI, the JSON schema (driftwatch.compare/v1) and the formats."""
from __future__ import annotations

import pytest
from cli_helpers import BASELINES, EXAMPLES

SEED000_40 = EXAMPLES / "sglang-qwen-40toks.service"
SEED000_70 = EXAMPLES / "sglang-qwen-70toks.service"
MTP1 = EXAMPLES / "sglang-qwen35-122b-mtp1.service"
MTP2 = EXAMPLES / "sglang-qwen35-122b-mtp2.service"
DDTREE_TEMPLATE = EXAMPLES / "ddtree" / "sglang-qwen.service"
DDTREE_LIVE = EXAMPLES / "ddtree" / "sglang-qwen-current.service"


def within(value, measured, tolerance=0.25):
    return value is not None and abs(value - measured) <= tolerance * measured


NUMBER = (int, float)


def _check_type(obj, key, types, where):
    assert key in obj, f"{where}: missing {key!r}"
    assert isinstance(obj[key], types), f"{where}.{key}: {obj[key]!r} is not {types}"


def validate_compare_v1(doc: dict) -> None:
    """The binding schema of design.md: required keys and their types."""
    assert doc["schema"] == "driftwatch.compare/v1"
    _check_type(doc, "baseline", dict, "$")
    for key in ("name", "host", "unit"):
        _check_type(doc["baseline"], key, (str, type(None)), "baseline")
    _check_type(doc["baseline"], "metrics", dict, "baseline")
    assert all(isinstance(v, NUMBER) for v in doc["baseline"]["metrics"].values())
    _check_type(doc, "target", dict, "$")
    for key in ("host", "unit", "source"):
        _check_type(doc["target"], key, (str, type(None)), "target")
    _check_type(doc, "drift", bool, "$")
    _check_type(doc, "predicted_throughput_ratio", (int, float, type(None)), "$")
    _check_type(doc, "predicted_throughput", (int, float, type(None)), "$")
    _check_type(doc, "findings", list, "$")
    assert doc["drift"] == bool(doc["findings"])
    for i, f in enumerate(doc["findings"], start=1):
        where = f"findings[{i - 1}]"
        assert f["rank"] == i, where
        for key in ("key", "flag", "rule", "severity", "explanation"):
            _check_type(f, key, str, where)
        for key in ("baseline", "current"):
            assert key in f, f"{where}: missing {key}"
        for key in ("baseline_source", "current_source"):
            _check_type(f, key, (str, type(None)), where)
        assert f["severity"] in ("high", "medium", "low", "info"), where
        _check_type(f, "impact", dict, where)
        assert f["impact"]["dimension"] in ("single-stream", "aggregate", "capacity", "stability", "none"), where
        _check_type(f["impact"], "throughput_ratio", (int, float, type(None)), f"{where}.impact")
        _check_type(f["impact"], "confidence", str, f"{where}.impact")
        _check_interval(f["impact"]["throughput_ratio"], f["impact"].get("interval"), f"{where}.impact")
        assert f["impact"]["direction"] in ("faster", "slower", "unchanged", "unknown"), where
    _check_interval(doc["predicted_throughput_ratio"], doc.get("predicted_throughput_interval"), "$")
    assert doc["predicted_direction"] in ("faster", "slower", "unchanged", "unknown")


def _check_interval(ratio, interval, where):
    """issue 24: every ratio carries its 80 % interval [lo, hi] with lo ≤ ratio ≤ hi; no ratio, none."""
    if ratio is None:
        assert interval is None, where
        return
    assert isinstance(interval, list) and len(interval) == 2, f"{where}: interval {interval!r}"
    assert all(isinstance(v, NUMBER) for v in interval) and 0 < interval[0] <= ratio <= interval[1], where


# ----------------------------------------------------------------------------------------------- seed 000

def test_seed000_text_exit1_steps_first_and_prediction(dw):
    run = dw("compare", "--baseline", "70toks", "--unit-file", SEED000_40, "--baselines-dir", BASELINES)
    assert run.code == 1, run
    rows = [line for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert rows and "--speculative-num-steps" in rows[0], run
    assert "tok/s" in run.stdout


def test_seed000_runs_from_repo_root_with_default_baselines_dir(dw):
    run = dw("compare", "--baseline", "70toks", "--unit-file", "examples/sglang-qwen-40toks.service",
             "--format", "json", cwd=BASELINES.parent)
    assert run.code == 1, run
    doc = run.json()
    assert doc["findings"][0]["key"] == "speculative_num_steps"


@pytest.mark.parametrize("extra", [[], ["--current-metric", "accept_length=1.75"]], ids=["prior", "accept1.75"])
def test_seed000_json(dw, extra):
    run = dw("compare", "--baseline", "70toks", "--unit-file", SEED000_40, "--baselines-dir", BASELINES,
             "--format", "json", *extra)
    assert run.code == 1, run
    doc = run.json()
    validate_compare_v1(doc)
    top = doc["findings"][0]
    assert (top["key"], top["flag"], top["rule"]) == ("speculative_num_steps", "--speculative-num-steps", "DW101")
    assert (top["baseline"], top["current"]) == (3, 1)
    assert (top["baseline_source"], top["current_source"]) == ("explicit", "explicit")
    assert doc["baseline"]["name"] == "70toks" and doc["baseline"]["metrics"]["throughput"] == 70
    assert doc["baseline"]["host"] == "ct129"
    assert within(doc["predicted_throughput"], 40), doc["predicted_throughput"]
    assert doc["predicted_throughput"] == pytest.approx(70 * doc["predicted_throughput_ratio"], abs=0.2)
    # the seed's measured 40 tok/s lies inside the 80 % interval, which says "slower"
    lo, hi = doc["predicted_throughput_interval"]
    assert lo <= 40 / 70 <= hi < 1.0 and doc["predicted_direction"] == "slower"
    keys = {f["key"] for f in doc["findings"]}
    assert {"context_length", "max_running_requests"} <= keys  # dropped flags are drift too
    if extra:
        assert doc["target"].get("metrics", {}).get("accept_length") == 1.75


def test_seed000_json_flag_values_are_typed(dw):
    doc = dw("compare", "--baseline", "70toks", "--unit-file", SEED000_40, "--baselines-dir", BASELINES,
             "--format", "json").json()
    ctx = next(f for f in doc["findings"] if f["key"] == "context_length")
    assert ctx["baseline"] == 131072  # human_readable_int is an int, not the string "131072"
    mrr = next(f for f in doc["findings"] if f["key"] == "max_running_requests")
    # computed at start-up: at most 48 under EAGLE-family speculative decoding (NEXTN is EAGLE), fewer if
    # the KV pool holds fewer
    assert mrr["baseline"] == 16 and mrr["current"] is None and mrr["current_source"] == "runtime"


def test_seed000_markdown_has_table(invoke):
    run = invoke("compare", "--baseline", "70toks", "--unit-file", SEED000_40, "--baselines-dir", BASELINES,
                 "--format", "markdown")
    assert run.code == 1, run
    lines = run.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("|") and "flag" in line)
    assert set(lines[header + 1].replace("|", "").replace(":", "").strip()) <= {"-", " "}
    first_row = lines[header + 2]
    assert first_row.startswith("|") and "--speculative-num-steps" in first_row


def test_seed000_output_file_written(invoke, tmp_path):
    out = tmp_path / "report.json"
    run = invoke("compare", "--baseline", "70toks", "--unit-file", SEED000_40, "--baselines-dir", BASELINES,
                 "--format", "json", "-o", out)
    assert run.code == 1
    assert run.stdout == ""
    import json
    validate_compare_v1(json.loads(out.read_text()))


def test_seed000_baseline_unit_vs_itself_no_drift(invoke):
    run = invoke("compare", "--baseline", "70toks", "--unit-file", SEED000_70, "--baselines-dir", BASELINES)
    assert run.code == 0, run
    assert "No drift" in run.stdout


# ------------------------------------------------------------------------------------------ seeds 001/004

@pytest.mark.parametrize("concurrency,baseline_tps,measured", [(1, 122, 182), (64, 1566, 1844)],
                         ids=["seed001-1stream", "seed004-64streams"])
def test_seed001_004_mtp_1_to_2_steps(invoke, concurrency, baseline_tps, measured):
    run = invoke("compare", "--baseline", MTP1, "--unit-file", MTP2, "--baseline-metric",
                 f"throughput={baseline_tps}", "--concurrency", concurrency, "--format", "json")
    assert run.code == 1, run
    import json
    doc = json.loads(run.stdout)
    validate_compare_v1(doc)
    assert [f["key"] for f in doc["findings"]] == ["speculative_num_steps"]
    assert doc["predicted_throughput_ratio"] > 1
    assert within(doc["predicted_throughput"], measured), (doc["predicted_throughput"], measured)
    lo, hi = doc["predicted_throughput_interval"]
    assert lo <= measured / baseline_tps <= hi, (lo, hi, measured / baseline_tps)


# ----------------------------------------------------------------------------------------------- seed 003

def test_seed003_template_vs_live_dropin(invoke):
    run = invoke("compare", "--baseline", DDTREE_TEMPLATE, "--unit-file", DDTREE_LIVE, "--format", "json")
    assert run.code == 1, run
    import json
    doc = json.loads(run.stdout)
    validate_compare_v1(doc)
    by_key = {f["key"]: f for f in doc["findings"]}
    assert set(by_key) == {"env.CUDA_HOME", "env.PATH", "env.CUDA_VISIBLE_DEVICES", "mem_fraction_static"}
    assert by_key["env.CUDA_HOME"]["baseline"] == "/usr/local/cuda-13.0" and by_key["env.CUDA_HOME"]["current"] is None
    assert by_key["env.PATH"]["current"] is None
    assert by_key["env.CUDA_VISIBLE_DEVICES"]["baseline"] is None
    assert by_key["env.CUDA_VISIBLE_DEVICES"]["current"] == "0,2"
    assert float(by_key["mem_fraction_static"]["baseline"]) == 0.88
    assert float(by_key["mem_fraction_static"]["current"]) == 0.85
    assert by_key["env.CUDA_VISIBLE_DEVICES"]["rule"] == "DW504"
    assert by_key["env.CUDA_HOME"]["rule"] == "DW506"


def test_seed003_text_names_the_env_changes(invoke):
    run = invoke("compare", "--baseline", DDTREE_TEMPLATE, "--unit-file", DDTREE_LIVE)
    assert run.code == 1
    for needle in ("CUDA_HOME", "PATH", "CUDA_VISIBLE_DEVICES", "--mem-fraction-static", "0.88", "0.85"):
        assert needle in run.stdout


@pytest.mark.parametrize("unit", [SEED000_70, MTP2, DDTREE_LIVE], ids=lambda p: p.name)
def test_same_unit_vs_itself_exit0(invoke, unit):
    run = invoke("compare", "--baseline", unit, "--unit-file", unit)
    assert run.code == 0, run
    assert "No drift" in run.stdout
    doc = __import__("json").loads(invoke("compare", "--baseline", unit, "--unit-file", unit,
                                          "--format", "json").stdout)
    validate_compare_v1(doc)
    assert doc["drift"] is False and doc["findings"] == [] and doc["predicted_throughput_ratio"] == 1.0
