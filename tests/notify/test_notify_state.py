"""--only-changes state: fingerprint, atomic state file, should_send."""

from __future__ import annotations

import copy
import json
import os

import pytest

from driftwatch.errors import InputError
from driftwatch.notify import state as st
from driftwatch.notify.state import fingerprint, load_state, save_state, should_send, state_for


def _no_unreadable(report):
    report["hosts"] = [h for h in report["hosts"] if h["status"] != "error"]
    report["summary"]["unreadable"] = 0
    return report


def test_fingerprint_ignores_time_order_rank_wording(report):
    fp = fingerprint(report)
    r = copy.deepcopy(report)
    r["generated_at"] = "2027-01-01T00:00:00Z"
    r["hosts"].reverse()
    for h in r["hosts"]:
        if h["comparison"]:
            h["comparison"]["findings"].reverse()
            for f in h["comparison"]["findings"]:
                f["rank"] = 99
                f["explanation"] = "reworded"
                f["impact"]["confidence"] = "high"
    err = next(h for h in r["hosts"] if h["status"] == "error")
    err["error"] = "connection refused"
    assert fingerprint(r) == fp
    assert fp.startswith("sha256:") and len(fp) == 7 + 64


@pytest.mark.parametrize("change", ["current", "baseline", "rule", "key", "host", "unit", "new", "gone", "readable"])
def test_fingerprint_changes_with_findings(report, change):
    fp = fingerprint(report)
    r = copy.deepcopy(report)
    h = r["hosts"][1]
    f = h["comparison"]["findings"][0]
    if change in ("current", "baseline", "rule", "key"):
        f[change] = "other"
    elif change in ("host", "unit"):
        h[change] = "other"
    elif change == "new":
        h["comparison"]["findings"].append(dict(f, key="tp_size", flag="--tp-size"))
    elif change == "gone":
        h["comparison"]["findings"].pop()
    elif change == "readable":
        r["hosts"] = [x for x in r["hosts"] if x["status"] != "error"]
    assert fingerprint(r) != fp


def test_fingerprint_value_types_matter(report):
    r1, r2 = copy.deepcopy(report), copy.deepcopy(report)
    r2["hosts"][1]["comparison"]["findings"][0]["current"] = "1"  # was the int 1
    assert fingerprint(r1) != fingerprint(r2)


def test_should_send_rules(report, clean_report):
    assert should_send(clean_report, None, only_changes=False, always=False)[0] is False
    assert should_send(clean_report, None, only_changes=True, always=True) == (True, "--always")
    send, reason = should_send(report, None, only_changes=False, always=False)
    assert send and "unreadable" in reason
    r = _no_unreadable(copy.deepcopy(report))
    assert should_send(r, None, only_changes=False, always=False) == (True, "2 of 13 host(s) drifted")
    saved = state_for(r)
    # same drift: only_changes suppresses it, without only_changes it is mailed again
    assert should_send(r, saved, only_changes=True, always=False)[0] is False
    assert should_send(r, saved, only_changes=False, always=False)[0] is True
    # unreadable hosts are reported without --only-changes; with it, only when the problems change
    assert should_send(report, state_for(report), only_changes=False, always=False)[0] is True
    send, reason = should_send(report, state_for(report), only_changes=True, always=False)
    assert send is False and "same problems" in reason
    assert should_send(report, state_for(r), only_changes=True, always=False)[0] is True  # a host went down


def test_unreadable_only_is_sent(report):
    report["hosts"] = [h for h in report["hosts"] if h["status"] != "drift"]
    send, reason = should_send(report, None, only_changes=False, always=False)
    assert send and "1 host(s) unreadable" in reason


def test_save_and_load_roundtrip(tmp_path, report):
    p = tmp_path / "sub" / "dir" / "state.json"
    assert load_state(str(p)) is None
    data = state_for(report, sent=True)
    save_state(str(p), data)
    assert load_state(str(p)) == json.loads(json.dumps(data))
    assert sorted(os.listdir(p.parent)) == ["state.json"]  # no temp files left behind


def test_save_is_atomic(tmp_path, report, monkeypatch):
    p = tmp_path / "state.json"
    save_state(str(p), state_for(report))
    before = p.read_bytes()

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(st.os, "replace", boom)
    with pytest.raises(InputError, match="No space left"):
        save_state(str(p), {"schema": st.STATE_SCHEMA, "fingerprint": "x"})
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["state.json"]


def test_save_uses_fsync_and_replace(tmp_path, report, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(st.os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(st.os, "replace", lambda a, b: (calls.append(("replace", os.path.dirname(a))), real_replace(a, b))[1])
    save_state(str(tmp_path / "s.json"), state_for(report))
    assert calls[0] == "fsync" and calls[1] == ("replace", str(tmp_path))


def test_corrupt_state_is_input_error(tmp_path):
    p = tmp_path / "state.json"
    p.write_text("{not json")
    with pytest.raises(InputError, match="delete it"):
        load_state(str(p))
    p.write_text('{"some": "other file"}')
    with pytest.raises(InputError, match="not a driftwatch state file"):
        load_state(str(p))


def test_unwritable_state_dir(tmp_path, report):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(InputError, match="cannot write"):
        save_state(str(blocker / "state.json"), state_for(report))
