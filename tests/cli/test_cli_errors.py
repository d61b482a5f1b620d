"""Exit codes and bad input through the real entry point: exit 2, one `driftwatch:` line, no traceback."""
from __future__ import annotations

import pytest
from cli_helpers import BASELINES, EXAMPLES, assert_one_line_error

U40 = EXAMPLES / "sglang-qwen-40toks.service"
U70 = EXAMPLES / "sglang-qwen-70toks.service"


def compare_args(unit, baseline="70toks"):
    return ("compare", "--baseline", baseline, "--unit-file", unit, "--baselines-dir", BASELINES)


def test_exit1_on_drift_and_exit0_without(dw):
    assert dw(*compare_args(U40)).code == 1
    assert dw(*compare_args(U70)).code == 0


def test_unknown_baseline_name_lists_known(dw):
    assert_one_line_error(dw(*compare_args(U40, baseline="nope")), "nope", "70toks")


def test_baselines_dir_from_environment(dw):
    run = dw("compare", "--baseline", "70toks", "--unit-file", U40, env={"DRIFTWATCH_BASELINES": str(BASELINES)})
    assert run.code == 1, run


def test_corrupted_baseline_yaml_names_line(dw, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("schema: driftwatch.baseline/v1\nname: broken\nmetrics: {throughput: 70\n  oops: [\n")
    assert_one_line_error(dw(*compare_args(U40, baseline=broken)), "broken.yaml", "line 4")


def test_hand_broken_baseline_metrics(dw, tmp_path):
    text = (BASELINES / "70toks.yaml").read_text().replace("throughput: 70.0", "throughput: fast")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert_one_line_error(dw(*compare_args(U40, baseline=bad)), "bad.yaml", "metrics")


def test_baseline_from_newer_schema(dw, tmp_path):
    newer = tmp_path / "newer.yaml"
    newer.write_text((BASELINES / "70toks.yaml").read_text().replace("driftwatch.baseline/v1",
                                                                     "driftwatch.baseline/v9"))
    assert_one_line_error(dw(*compare_args(U40, baseline=newer)), "newer.yaml", "v9")


def test_yaml_that_is_not_a_baseline(dw, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("- just\n- a list\n")
    assert_one_line_error(dw(*compare_args(U40, baseline=other)), "other.yaml")


def _bad_units(tmp_path):
    (tmp_path / "dir.service").mkdir()
    (tmp_path / "binary.service").write_bytes(b"[Service]\nExecStart=/bin/true\x00\x01\n")
    (tmp_path / "empty.service").write_bytes(b"")
    (tmp_path / "latin1.service").write_bytes(
        b"[Service]\nExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /m/caf\xe9\n")
    (tmp_path / "noexec.service").write_text("[Unit]\nDescription=x\n\n[Service]\nType=simple\n")
    (tmp_path / "nginx.service").write_text("[Service]\nExecStart=/usr/sbin/nginx -g 'daemon off;'\n")
    (tmp_path / "quotes.service").write_text(
        '[Service]\nExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path "/root/models/x\n')
    with open(tmp_path / "huge.service", "wb") as fh:  # 50 MB, sparse: refused from its size
        fh.write(b"[Service]\nExecStart=/bin/true\n")
        fh.truncate(50 * 1024 * 1024)


@pytest.mark.parametrize("name,needle", [
    ("missing.service", "no such file"),
    ("dir.service", "directory"),
    ("binary.service", "binary"),
    ("empty.service", "empty"),
    ("latin1.service", "UTF-8"),
    ("noexec.service", "ExecStart"),
    ("quotes.service", "quot"),
    ("huge.service", "too large"),
])
def test_bad_unit_file(dw, tmp_path, name, needle):
    _bad_units(tmp_path)
    run = dw(*compare_args(tmp_path / name))
    assert_one_line_error(run, name, needle)


@pytest.mark.parametrize("name", ["binary.service", "noexec.service"])
def test_bad_unit_as_adhoc_baseline(dw, tmp_path, name):
    _bad_units(tmp_path)
    assert_one_line_error(dw("compare", "--baseline", tmp_path / name, "--unit-file", U40), name)


def test_unit_without_engine_is_read_not_refused(dw, tmp_path):
    # Issue 8: a unit that runs no known engine is still a readable unit (engine: none).
    _bad_units(tmp_path)
    shown = dw("show", "--unit-file", tmp_path / "nginx.service")
    assert shown.code == 0 and "engine:      none" in shown.stdout, shown
    run = dw("compare", "--baseline", tmp_path / "nginx.service", "--unit-file", U40, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert doc["predicted_throughput_ratio"] is None
    assert "launcher.engine" in [f["key"] for f in doc["findings"]]


@pytest.mark.parametrize("args,needle", [
    (("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES,
      "--current-metric", "bogus"), "bogus"),
    (("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES,
      "--baseline-metric", "throughput=fast"), "fast"),
    (("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES,
      "--format", "xml"), "xml"),
    (("compare", "--baseline", "70toks", "--unit-file", U40, "--baselines-dir", BASELINES,
      "--concurrency", "0"), "concurrency"),
    (("compare", "--unit-file", U40), "baseline"),
    (("compare", "--baseline", "70toks", "--baselines-dir", BASELINES, "--unit-file", U40, "--snapshot",
      U40), "one of"),
    (("bogus-command",), "bogus-command"),
])
def test_bad_usage_exit2(dw, args, needle):
    assert_one_line_error(dw(*args), needle)


def test_baseline_save_metric_bogus(dw, tmp_path):
    run = dw("baseline", "save", "b", "--unit-file", U70, "--baselines-dir", tmp_path / "bl", "--metric", "bogus")
    assert_one_line_error(run, "bogus")
    assert not (tmp_path / "bl" / "b.yaml").exists()


def test_baseline_save_never_overwrites_without_force(dw, tmp_path):
    bl = tmp_path / "bl"
    first = dw("baseline", "save", "prod", "--unit-file", U70, "--baselines-dir", bl, "--metric", "throughput=70")
    assert first.code == 0, first
    path = bl / "prod.yaml"
    original = path.read_bytes()
    second = dw("baseline", "save", "prod", "--unit-file", U40, "--baselines-dir", bl, "--metric", "throughput=40")
    assert_one_line_error(second, "prod.yaml", "--force")
    assert path.read_bytes() == original
    assert sorted(p.name for p in bl.iterdir()) == ["prod.yaml"]  # no temp files left behind
    forced = dw("baseline", "save", "prod", "--unit-file", U40, "--baselines-dir", bl, "--metric",
                "throughput=40", "--force")
    assert forced.code == 0, forced
    replaced = path.read_bytes()
    assert replaced != original and b"throughput: 40.0" in replaced
    assert sorted(p.name for p in bl.iterdir()) == ["prod.yaml"]


def test_saved_baseline_round_trips(dw, tmp_path):
    bl = tmp_path / "bl"
    assert dw("baseline", "save", "good", "--unit-file", U70, "--baselines-dir", bl, "--metric",
              "throughput=70", "--host-name", "ct129").code == 0
    assert dw("compare", "--baseline", "good", "--unit-file", U70, "--baselines-dir", bl).code == 0
    drift = dw("compare", "--baseline", "good", "--unit-file", U40, "--baselines-dir", bl, "--format", "json")
    assert drift.code == 1
    doc = drift.json()
    assert doc["baseline"]["host"] == "ct129" and doc["findings"][0]["key"] == "speculative_num_steps"
    listing = dw("baseline", "list", "--baselines-dir", bl)
    assert listing.code == 0 and "good" in listing.stdout and "throughput=70" in listing.stdout


def test_bad_baseline_name_on_save(dw, tmp_path):
    assert_one_line_error(dw("baseline", "save", "../escape", "--unit-file", U70, "--baselines-dir",
                             tmp_path / "bl"), "escape")
    assert not (tmp_path / "escape.yaml").exists()


def test_baseline_show_unknown(dw):
    assert_one_line_error(dw("baseline", "show", "nope", "--baselines-dir", BASELINES), "nope", "70toks")


@pytest.mark.parametrize("name", ["noexec.service", "quotes.service"])
def test_unit_error_names_the_file_not_a_placeholder(dw, tmp_path, name):
    _bad_units(tmp_path)
    run = dw(*compare_args(tmp_path / name))
    assert run.code == 2
    assert "<unit>" not in run.stderr, run.stderr
    assert_one_line_error(run, name)


def test_quiet_report_still_names_unreadable_hosts(dw, tmp_path):
    """cron mails only output: a quiet run that exits 2 must say why, in one line per host."""
    run = dw("report", "--baseline", BASELINES / "70toks.yaml", "--unit-file", U40,
             "--unit-file", tmp_path / "gone.service", "--quiet")
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and "gone.service" in run.stderr and "Traceback" not in run.stderr
