"""Keyed fingerprints (docs/secrets.md, "Fingerprints"): HMAC-SHA256 under a per-installation key,
equal values equal, another key or an older release's fingerprint "unknown", never "no drift"."""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch import redact
from driftwatch.collect.raw import RawUnit
from driftwatch.errors import InputError
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.redact import fingerprints
from driftwatch.report import get_format
from driftwatch.report.data import comparison_to_dict
from driftwatch.report.show import render_show
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.snapshot import build_snapshot

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /m --tp-size 2"
ROOT = Path(__file__).resolve().parents[2]
DRIFTWATCH = Path(sys.executable).parent / "driftwatch"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh installation: no key yet, none given."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv(redact.KEY_ENV, raising=False)
    monkeypatch.delenv(redact.KEY_FILE_ENV, raising=False)
    fingerprints._key_cache.clear()
    yield tmp_path
    fingerprints._key_cache.clear()


def snap(body: str):
    return build_snapshot(RawUnit(host="h", unit="t.service", text=f"[Service]\n{body}\n", source="file"))


def test_the_key_is_created_once_0600_beside_the_config(home):
    fp = redact.fingerprint("Summer2024!")
    path = home / ".config" / "driftwatch" / "fingerprint.key"
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not [p for p in path.parent.iterdir() if p.name != "fingerprint.key"]  # no temp file left
    fingerprints._key_cache.clear()
    assert redact.fingerprint("Summer2024!") == fp  # read back, not replaced
    assert redact.fingerprint("Summer2024?") != fp


def test_a_fingerprint_is_not_the_unkeyed_hash_and_cannot_be_tested_without_the_key(home):
    fp = redact.fingerprint("1234")
    unkeyed = hashlib.sha256(b"driftwatch-redact:1234").hexdigest()
    assert unkeyed[:12] not in fp and unkeyed[:16] not in fp
    assert redact.is_redacted(fp) and redact.fingerprint_schemes(fp) == {fp[10:16]}


def test_two_installations_differ_and_a_shared_key_agrees(home, monkeypatch, tmp_path):
    mine = redact.fingerprint("hunter2")
    monkeypatch.setenv("HOME", str(tmp_path / "other"))
    fingerprints._key_cache.clear()
    assert redact.fingerprint("hunter2") != mine
    monkeypatch.setenv(redact.KEY_ENV, "a-key-shared-by-every-runner-0123456789")
    fingerprints._key_cache.clear()
    shared = redact.fingerprint("hunter2")
    key_file = tmp_path / "shared.key"
    key_file.write_text("a-key-shared-by-every-runner-0123456789\n")
    key_file.chmod(0o600)
    monkeypatch.delenv(redact.KEY_ENV)
    monkeypatch.setenv(redact.KEY_FILE_ENV, str(key_file))
    fingerprints._key_cache.clear()
    assert redact.fingerprint("hunter2") == shared


def test_a_key_readable_by_others_or_too_short_is_one_clear_error(home, monkeypatch, tmp_path):
    key_file = tmp_path / "k"
    key_file.write_text("0123456789abcdef0123\n")
    key_file.chmod(0o644)
    monkeypatch.setenv(redact.KEY_FILE_ENV, str(key_file))
    with pytest.raises(InputError, match="readable by others"):
        redact.fingerprint("x")
    monkeypatch.delenv(redact.KEY_FILE_ENV)
    monkeypatch.setenv(redact.KEY_ENV, "short")
    fingerprints._key_cache.clear()
    with pytest.raises(InputError, match="too short"):
        redact.fingerprint("x")


def test_show_prints_redacted_without_the_fingerprint(home):
    s = snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY} --api-key Summer2024!")
    for fmt in ("text", "json"):
        out = render_show(s, fmt, True)
        assert "<redacted>" in out and "<redacted:" not in out and "Summer2024" not in out, fmt


def test_equal_secrets_compare_equal_and_changes_are_seen(home):
    rules = load_rules(None)
    a = snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY}")
    assert not compare(Baseline(name="b", snapshot=a), snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY}"),
                       rules).drift
    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=a),
                                     snap(f"Environment=DB_PASS=Summer2025!\nExecStart={PY}"), rules))
    assert [f["current"] for f in doc["findings"] if f["key"] == "env.DB_PASS"] == ["changed (redacted)"]


@pytest.mark.parametrize("old", ["<redacted:0123456789ab>", "<redacted:fedcba.0123456789abcdef>"])
def test_an_old_or_foreign_fingerprint_is_unknown_never_no_drift(home, old):
    """A baseline saved by an older release (unkeyed) or under another key: the secret may or may not
    have changed; compare says so and asks for the baseline to be saved again."""
    rules = load_rules(None)
    base = snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY}")
    base.environment["DB_PASS"] = old
    doc = comparison_to_dict(compare(Baseline(name="b", snapshot=base),
                                     snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY}"), rules))
    finding = next(f for f in doc["findings"] if f["key"] == "env.DB_PASS")
    assert finding["current"].startswith("unknown") and finding["details"]["fingerprints"] == "unknown"
    assert "re-save the baseline" in finding["explanation"]
    text = get_format("text").render_comparison(doc)
    assert "re-save the baseline" in text and "<redacted:" not in text


def test_an_old_baseline_file_reads_and_compares_through_the_cli(home, tmp_path):
    """End to end: a baseline YAML with the unkeyed fingerprints of older releases still loads; the
    secret it holds compares as unknown (exit 1, drift reported with the reason)."""
    env = {**os.environ, "HOME": str(home)}
    env.pop(redact.KEY_ENV, None)
    env.pop(redact.KEY_FILE_ENV, None)
    unit = tmp_path / "t.service"
    unit.write_text(f"[Service]\nEnvironment=DB_PASS=Summer2024!\nExecStart={PY}\n")
    bl = tmp_path / "bl"
    run = subprocess.run([str(DRIFTWATCH), "baseline", "save", "p", "--unit-file", str(unit),
                          "--baselines-dir", str(bl)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    saved = (bl / "p.yaml").read_text()
    import re
    legacy = re.sub(r"<redacted:[0-9a-f]{6}\.([0-9a-f]{16})>", lambda m: f"<redacted:{m.group(1)[:12]}>", saved)
    assert legacy != saved
    (bl / "p.yaml").write_text(legacy)
    run = subprocess.run([str(DRIFTWATCH), "compare", "--baseline", "p", "--unit-file",
                          str(unit), "--baselines-dir", str(bl), "--format", "json"],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    finding = next(f for f in doc["findings"] if f["key"] == "env.DB_PASS")
    assert finding["current"].startswith("unknown")
    assert "Summer2024" not in run.stdout + run.stderr


def test_history_says_unknown_for_a_snapshot_of_an_older_release(home):
    from driftwatch.diff.changes import changes_between
    old = snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY}")
    old.environment["DB_PASS"] = "<redacted:0123456789ab>"
    change = next(c for c in changes_between(old, snap(f"Environment=DB_PASS=Summer2024!\nExecStart={PY}"))
                  if c["key"] == "env.DB_PASS")
    assert change["new"].startswith("unknown") and "re-save the baseline" in change["note"]
