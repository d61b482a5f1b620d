"""Fleet report renderers: text, Markdown, HTML and the subject line."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from driftwatch.report import get_format
from driftwatch.report.wording import subject

render_text = get_format("text").render_fleet
render_markdown = get_format("markdown").render_fleet
render_html = get_format("html").render_fleet

PLANTED = "PLANTED-not-in-schema-7c1e"


# --------------------------------------------------------------------------- subject


def test_subject_drift(report):
    assert subject(report) == ("[driftwatch] 2 of 14 hosts drifted from 70toks: ct129 predicted 42 tok/s, "
                               "1 unreadable")


def test_subject_drift_without_unreadable(report):
    report["hosts"] = [h for h in report["hosts"] if h["status"] != "error"]
    report["summary"] = {"hosts": 13, "drifted": 2, "clean": 11, "unreadable": 0}
    assert subject(report) == "[driftwatch] 2 of 13 hosts drifted from 70toks: ct129 predicted 42 tok/s"


def test_subject_clean(clean_report):
    assert subject(clean_report) == "[driftwatch] 11 hosts match 70toks"
    assert subject(clean_report, prefix="[gpu]") == "[gpu] 11 hosts match 70toks"
    assert subject(clean_report, prefix="") == "11 hosts match 70toks"


def test_subject_clean_with_unreadable(report):
    report["hosts"] = [h for h in report["hosts"] if h["status"] != "drift"]
    report["summary"] = {"hosts": 12, "drifted": 0, "clean": 11, "unreadable": 1}
    assert subject(report) == "[driftwatch] 11 of 12 hosts match 70toks, 1 unreadable"


def test_subject_worst_host_by_ratio_then_fallbacks(report):
    # ct131 now worse than ct129
    report["hosts"][0]["comparison"]["predicted_throughput_ratio"] = 0.3
    report["hosts"][0]["comparison"]["predicted_throughput"] = 21.0
    assert "ct131 predicted 21 tok/s" in subject(report)
    # ratio only
    report["hosts"][0]["comparison"]["predicted_throughput"] = None
    assert "ct131 predicted 30% of baseline throughput" in subject(report)
    # no model at all: drifted hosts without ratios sort after those with one
    for h in report["hosts"][:2]:
        h["comparison"]["predicted_throughput"] = h["comparison"]["predicted_throughput_ratio"] = None
    s = subject(report)
    assert re.search(r": ct129 --speculative-num-steps 3 \u2192 1, 1 unreadable$", s), s


def test_subject_is_one_line(report):
    report["baseline"]["name"] = "evil\r\nBcc: someone@example.com"
    s = subject(report)
    assert "\n" not in s and "\r" not in s


def test_counts_fall_back_to_hosts_without_summary(report):
    del report["summary"]
    assert subject(report).startswith("[driftwatch] 2 of 14 hosts drifted from 70toks")


# --------------------------------------------------------------------------- text


def test_text_summary_and_findings(report):
    t = render_text(report)
    lines = t.splitlines()
    assert lines[0] == "driftwatch report: 2 of 14 hosts drifted from 70toks, 1 unreadable"
    header = next(i for i, l in enumerate(lines) if l.startswith("host "))
    assert lines[header].split() == ["host", "unit", "status", "top", "finding", "predicted"]
    rows = lines[header + 2: header + 2 + 14]
    assert [r.split()[0] for r in rows[:3]] == ["ct129", "ct131", "ct200"]  # worst first, then unreadable
    assert "--speculative-num-steps 3 \u2192 1" in rows[0] and "42 tok/s (\u00d70.60)" in rows[0]
    assert "timeout after 10 s" in rows[2]
    # per-host ranked findings
    sec = t.index("== ct129 sglang-qwen.service: drift")
    assert t.index("1. --speculative-num-steps: 3 \u2192 1", sec) < t.index("2. --cuda-graph-max-bs: 8 \u2192 <none>", sec)
    assert "impact: \u00d70.60 single-stream, medium confidence  [DW101 high]" in t  # compare's wording
    assert "single-stream decoding falls from about 70 to about 42 tok/s." in t.replace("\n     ", " ")
    assert "== Unreadable hosts (1)" in t and "ct200 sglang-qwen.service: timeout after 10 s" in t
    assert "env.HF_TOKEN: changed (redacted) \u2192 changed (redacted)" in t


def test_text_clean(clean_report):
    t = render_text(clean_report)
    assert "11 hosts match 70toks" in t and "==" not in t


def test_text_empty_report():
    t = render_text({"schema": "driftwatch.report/v1", "hosts": [], "baseline": {"name": "b"}})
    assert "(no hosts in this report)" in t


def test_values_formatting(report):
    f = report["hosts"][1]["comparison"]["findings"][0]
    f["baseline"], f["current"] = None, {"algorithm": "EAGLE", "steps": 3}
    f2 = report["hosts"][1]["comparison"]["findings"][1]
    f2["baseline"], f2["current"] = True, "line1\nline2"
    t = render_text(report)
    assert 'unset \u2192 {"algorithm": "EAGLE", "steps": 3}' in t  # compare's wording: unset, on/off
    assert "on \u2192 line1\\nline2" in t


# --------------------------------------------------------------------------- never render what is not in the schema


def _plant(report):
    r = copy.deepcopy(report)
    r["secret"] = PLANTED
    r["hosts"][0]["token"] = PLANTED
    r["hosts"][0]["comparison"]["target"]["password"] = PLANTED
    r["hosts"][0]["comparison"]["findings"][0]["raw"] = PLANTED
    r["hosts"][0]["comparison"]["findings"][0]["impact"]["notes"] = PLANTED
    r["baseline"]["saved_by_token"] = PLANTED
    return r


@pytest.mark.parametrize("render", [render_text, render_markdown, render_html, subject])
def test_unknown_fields_never_rendered(report, render):
    assert PLANTED not in render(_plant(report))


# --------------------------------------------------------------------------- markdown


def test_markdown(report):
    md = render_markdown(report)
    assert md.startswith("# driftwatch: 2 of 14 hosts drifted from 70toks, 1 unreadable\n")
    assert "| host | unit | status | top finding | predicted |" in md
    assert "## ct129 sglang\\-qwen.service" not in md  # '-' is not escaped
    assert "## ct129 sglang-qwen.service: drift, predicted 42 tok/s (\u00d70.60)" in md
    # markup in values is escaped, pipes cannot break the table
    assert "Value with \\<b\\>markup\\</b\\> \\& ampersand." in md
    report["hosts"][1]["comparison"]["findings"][0]["current"] = "a|b"  # ct129
    md = render_markdown(report)
    row = next(l for l in md.splitlines() if l.startswith("| 1 | --speculative-num-steps"))
    assert "a\\|b" in row and row.count(" | ") == 5
    assert "## Unreadable hosts (1)" in md and "- ct200 sglang-qwen.service: timeout after 10 s" in md


# --------------------------------------------------------------------------- HTML


class _Audit(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_a_complete_safe_document(report):
    h = render_html(report)
    assert h.startswith("<!DOCTYPE html>\n<html")
    assert h.rstrip().endswith("</html>")
    # well-formed: parses as XML (every tag closed, every & escaped)
    root = ET.fromstring(h.split("\n", 1)[1])
    assert root.tag == "html" and root.find("head/title") is not None and root.find("body") is not None
    audit = _Audit()
    audit.feed(h)
    forbidden = {"script", "link", "img", "iframe", "object", "embed", "style", "base", "form", "svg"}
    assert not forbidden & set(audit.tags)
    for tag, attr, value in audit.attrs:
        assert not attr.startswith("on"), (tag, attr)
        assert attr in {"lang", "charset", "name", "content", "style", "id", "href"}, (tag, attr)
        assert attr != "href" or (tag == "a" and value.startswith("#")), (tag, attr, value)  # in-page links only
        assert "url(" not in value and "http" not in value.lower() and "@import" not in value
    assert not re.search(r"https?://", h)
    assert "<table" in h and "<th " in h and 'style="' in h


def test_html_escapes_values(report):
    report["hosts"][0]["comparison"]["findings"][0]["current"] = "<script>alert(1)</script>"
    report["hosts"][0]["host"] = 'ct129"><img src=x onerror=alert(1)>'
    report["hosts"][0]["comparison"]["findings"][0]["explanation"] = "see http://evil.example/x.png"
    h = render_html(report)
    assert "<script>" not in h and "<img" not in h
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in h
    assert "ct129&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in h
    assert "&lt;b&gt;markup&lt;/b&gt; &amp; ampersand." in h
    # a URL inside a value stays text, never a link or an image source
    audit = _Audit()
    audit.feed(h)
    assert all("http" not in v for _, _, v in audit.attrs)
    ET.fromstring(h.split("\n", 1)[1])


def test_html_content(report):
    h = render_html(report)
    text = re.sub(r"<[^>]+>", "", h)
    assert "driftwatch: 2 of 14 hosts drifted from 70toks, 1 unreadable" in text
    assert "--speculative-num-steps" in text and "42 tok/s (\u00d70.60)" in text
    assert "Unreadable hosts (1)" in text and "timeout after 10 s" in text
    assert "(not read)1 unit: error&#160;1not read: ct200 sglang-qwen.service" in text  # the card names it (issue 32)
    table = text[text.index("Hosts (14)"):]
    assert table.index("ct129") < table.index("ct131") < table.index("ct200") < table.index("ct140")
