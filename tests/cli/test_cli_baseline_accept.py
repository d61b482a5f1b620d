"""`baseline accept`: today's accepted drift becomes the baseline, with the reason kept."""
import shutil
from pathlib import Path

import yaml
from cli_helpers import run_in_process

ROOT = Path(__file__).resolve().parents[2]
U40 = ROOT / "examples" / "sglang-qwen-40toks.service"


def _dw(*args, cwd):
    return run_in_process(*args, cwd=cwd)


def test_accept_replaces_baseline_and_clears_drift(tmp_path):
    shutil.copy(ROOT / "baselines" / "70toks.yaml", tmp_path / "70toks.yaml")
    before = _dw("compare", "--baseline", "70toks", "--baselines-dir", tmp_path, "--unit-file", U40, cwd=tmp_path)
    assert before.returncode == 1
    run = _dw("baseline", "accept", "70toks", "--baselines-dir", tmp_path, "--unit-file", U40,
              "--reason", "MTP 1 step on purpose while GPU1 is out", "--metric", "throughput=40", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    saved = yaml.safe_load((tmp_path / "70toks.yaml").read_text())
    assert saved["metrics"] == {"throughput": 40.0}
    assert "GPU1 is out" in saved["note"] and "was:" in saved["note"]
    assert saved["host"] == "ct129"  # kept from the old baseline
    after = _dw("compare", "--baseline", "70toks", "--baselines-dir", tmp_path, "--unit-file", U40, cwd=tmp_path)
    assert after.returncode == 0, after.stdout
    assert list(tmp_path.glob(".*.tmp")) == []


def test_accept_needs_a_reason_and_an_existing_baseline(tmp_path):
    no_reason = _dw("baseline", "accept", "70toks", "--baselines-dir", ROOT / "baselines", "--unit-file", U40,
                    cwd=tmp_path)
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr
    unknown = _dw("baseline", "accept", "nope", "--baselines-dir", tmp_path, "--unit-file", U40, "--reason", "x",
                  cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1 and "unknown baseline" in unknown.stderr


def test_accept_from_a_local_copy_keeps_the_units_name(tmp_path):
    shutil.copy(ROOT / "baselines" / "70toks.yaml", tmp_path / "70toks.yaml")
    copy = tmp_path / "fixed-unit.service"
    copy.write_text("\n".join(line for line in U40.read_text().splitlines() if not line.startswith("#")) + "\n")
    run = _dw("baseline", "accept", "70toks", "--baselines-dir", tmp_path, "--unit-file", copy, "--reason", "x",
              cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    saved = yaml.safe_load((tmp_path / "70toks.yaml").read_text())
    assert (saved["host"], saved["unit"]) == ("ct129", "sglang-qwen.service")
