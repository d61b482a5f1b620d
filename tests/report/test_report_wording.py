"""One wording: a finding reads the same in compare (every format), in the fleet report and in mail."""
from __future__ import annotations

import re

import pytest

from driftwatch.notify.email import build_message
from driftwatch.report import get_format, wording as w


@pytest.mark.parametrize("value,source,expected", [
    (3, "explicit", "3"),
    (0.85, "default", "0.85 (default)"),
    (True, "explicit", "on"),
    (False, "default", "off (default)"),
    (None, None, "unset"),
    (None, "absent", "unset"),
    (None, "explicit", "unset"),
    (None, "default", "default (none)"),
    (None, "runtime", "computed at start-up"),
    ("", None, '""'),
    ("line1\nline2", None, "line1\\nline2"),
    ({"steps": 3, "algorithm": "EAGLE"}, "explicit", '{"algorithm": "EAGLE", "steps": 3}'),
    ([1, 2, 4], "explicit", "[1, 2, 4]"),
])
def test_value_text(value, source, expected):
    assert w.value_text(value, source) == expected


def test_secrets_never_show():
    assert w.pair_text("hunter2", "explicit", "hunter3", "explicit", secret=True) == ("(redacted)", "changed (redacted)")
    assert w.pair_text(None, "default", "x", "explicit", secret=True) == ("unset", "changed (redacted)")
    # a finding dict carries the placeholders and `secret`: the same words come out
    f = {"baseline": "(redacted)", "current": None, "current_source": "default", "secret": True}
    assert w.finding_pair(f) == ("(redacted)", "unset")


@pytest.mark.parametrize("impact,expected", [
    ({"dimension": "single-stream", "throughput_ratio": 0.6134, "confidence": "low"},
     "\u00d70.61 single-stream, low confidence"),
    ({"dimension": "capacity", "throughput_ratio": 1.0, "confidence": "high"},
     "capacity; speed unchanged (high confidence)"),
    ({"dimension": "stability", "throughput_ratio": None, "confidence": "low"}, "stability, not quantified"),
    ({"dimension": "none", "throughput_ratio": 1.0, "confidence": "high"}, "no throughput impact"),
    ({"dimension": "none", "throughput_ratio": None, "confidence": "high"}, "unknown impact"),
    ({}, "unknown impact"),
    ({"dimension": "aggregate", "throughput_ratio": "fast"}, "aggregate, not quantified"),
])
def test_impact_text(impact, expected):
    assert w.impact_text({"impact": impact}) == expected


def test_numbers():
    assert (w.tps_text(42.5), w.tps_text(42.0), w.tps_text(1566), w.tps_text(7.25)) == ("42.5", "42", "1566", "7.2")
    assert w.ratio_text(0.6134) == "\u00d70.61" and w.ratio_text(None) == ""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"\s{2,}", line.strip())]


def test_same_finding_same_words_in_compare_and_report(seed_doc, fleet_doc):
    """The top finding's change and impact read identically in compare text, the fleet text, markdown,
    HTML and the mail, because they all come from wording.py over the same fields."""
    f = seed_doc["findings"][0]
    change = "3 \u2192 1"
    lo, hi = f["impact"]["interval"]
    assert lo <= f["impact"]["throughput_ratio"] <= hi < 1.0 and f["impact"]["direction"] == "slower"
    impact = (f"\u00d7{lo:.2f}\u2013{hi:.2f} single-stream, most likely \u00d70.61, "
              f"{f['impact']['confidence']} confidence")
    assert w.finding_change(f) == change and w.impact_text(f) == impact
    assert w.finding_line(f) == "--speculative-num-steps 3 \u2192 1"

    compare_text = get_format("text").render_comparison(seed_doc)
    row = next(ln for ln in compare_text.splitlines() if ln.lstrip().startswith("1  --speculative-num-steps"))
    assert _cells(row)[2:4] == ["3", "1"]
    assert "most of it from --speculative-num-steps 3 \u2192 1." in compare_text
    lines = compare_text.splitlines()
    start, end = lines[3].index("impact"), lines[3].index("explanation")
    # the impact column of row 1, over all its wrapped lines (a word broken after a hyphen rejoins)
    row_lines = [lines[5]]
    for ln in lines[6:]:
        if not ln.strip() or ln[:start].strip():
            break
        row_lines.append(ln)
    wrapped = ""
    for piece in (ln[start:end].strip() for ln in row_lines):
        wrapped += piece if (not wrapped or wrapped.endswith("-")) else " " + piece
    assert wrapped.startswith(impact)

    fleet_text = get_format("text").render_fleet(fleet_doc)
    assert "1. --speculative-num-steps: 3 \u2192 1" in fleet_text
    assert f"impact: {impact}  [DW101 high]" in fleet_text
    assert "--speculative-num-steps 3 \u2192 1" in fleet_text.split("\n\n")[1]  # the host table's top finding
    assert seed_doc["summary"].split(";")[0] in fleet_text.replace("\n   ", " ")

    for name in ("markdown", "html"):
        assert impact in get_format(name).render_comparison(seed_doc)
        assert impact in get_format(name).render_fleet(fleet_doc)

    msg = build_message(fleet_doc, "driftwatch@example.com", ["oncall@example.com"])
    body = msg.get_body(preferencelist=("plain",)).get_content()
    assert f"impact: {impact}" in body and "1. --speculative-num-steps: 3 \u2192 1" in body
    assert impact in msg.get_body(preferencelist=("html",)).get_content()
    assert msg["Subject"] == "[driftwatch] 1 of 3 hosts drifted from 70toks: ct129 predicted 42.5 tok/s, 1 unreadable"


def test_runtime_value_reads_the_same_everywhere(seed_doc, fleet_doc):
    ctx = next(f for f in seed_doc["findings"] if f["key"] == "context_length")
    assert w.finding_pair(ctx) == ("131072", "computed at start-up")
    assert "--context-length: 131072 \u2192 computed at start-up" in get_format("text").render_fleet(fleet_doc)
    assert ctx["explanation"].startswith("--context-length 131072 \u2192 computed at start-up:")  # compare.py's words


def test_header_for_a_unit_without_engine():
    doc = {"baseline": {"name": "b", "unit": "x.service", "host": None, "engine": "sglang", "engine_label": "SGLang",
                        "engine_version": "0.5.12"},
           "target": {"unit": "nginx.service", "host": "web1", "source": "systemctl cat", "engine": "none",
                      "engine_label": "", "engine_version": "", "engine_version_reason": "no engine detected"}}
    assert w.comparison_header(doc) == [
        "baseline: b (x.service on no host; SGLang 0.5.12)",
        "current:  nginx.service on web1 read by systemctl cat; no known engine (no engine detected)"]
