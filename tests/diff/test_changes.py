"""The diff of two stored snapshots (diff/changes.py): history's change records, as the store keeps
them at save time, read from the shipped examples."""
from __future__ import annotations

from pathlib import Path

from driftwatch.diff.changes import REDACTED, UNKNOWN_REDACTED, changes_between
from driftwatch.redact import CHANGED_FINGERPRINT
from driftwatch.report import wording
from driftwatch.run.reading import snapshot_from_unit_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_records_hide_secrets_in_the_words_every_format_shows():
    """A kept record is shown as stored: its placeholders are report/'s words."""
    assert (REDACTED, CHANGED_FINGERPRINT, UNKNOWN_REDACTED) == (
        wording.REDACTED, wording.CHANGED_REDACTED, wording.UNKNOWN_REDACTED)


def test_the_seed_story_changes_are_the_three_flags_the_relaunch_changed():
    old = snapshot_from_unit_file(str(EXAMPLES / "sglang-qwen-70toks.service"), host="ct129")
    new = snapshot_from_unit_file(str(EXAMPLES / "sglang-qwen-40toks.service"), host="ct129")
    changes = {c["flag"]: (c["kind"], c["old"], c["new"]) for c in changes_between(old, new)}
    assert changes["--speculative-num-steps"][1:] == (3, 1)
    assert changes["--max-running-requests"][:2] == ("removed", 16)
    assert changes["--context-length"][:2] == ("removed", 131072)
    assert changes_between(old, old) == []


def test_a_changed_secret_is_recorded_without_its_value(tmp_path):
    unit = (EXAMPLES / "sglang-qwen-70toks.service").read_text()
    (tmp_path / "a.service").write_text(unit.replace("[Service]", "[Service]\nEnvironment=HF_TOKEN=hf_aaaaaaaaaaaaaaaaaaaaaaaa"))
    (tmp_path / "b.service").write_text(unit.replace("[Service]", "[Service]\nEnvironment=HF_TOKEN=hf_bbbbbbbbbbbbbbbbbbbbbbbb"))
    old, new = (snapshot_from_unit_file(str(tmp_path / n)) for n in ("a.service", "b.service"))
    [change] = changes_between(old, new)
    assert change["key"] == "env.HF_TOKEN" and change["secret"] is True
    assert (change["old"], change["new"]) == (REDACTED, CHANGED_FINGERPRINT)
    assert "hf_" not in repr(change)
