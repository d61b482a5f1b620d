"""Every format renders a real comparison and a real fleet report; HTML is well-formed and escaped;
formats compute nothing (they show what the document says, and only the fields they know)."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from driftwatch.report import format_names, get_format

PLANTED = "PLANTED-not-in-schema-3f9a"
HOSTILE = '<script>alert(1)</script> & "quotes" \'single\' ]]> <img src=x onerror=alert(1)>'


def _xml(doc: str) -> ET.Element:
    assert doc.startswith("<!DOCTYPE html>\n")
    return ET.fromstring(doc.split("\n", 1)[1])


class _Audit(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]

    handle_startendtag = handle_starttag


def _assert_mail_safe(doc: str) -> None:
    audit = _Audit()
    audit.feed(doc)
    forbidden = {"script", "link", "img", "iframe", "object", "embed", "style", "base", "form", "svg"}
    assert not forbidden & set(audit.tags)
    for tag, attr, value in audit.attrs:
        assert attr in {"lang", "charset", "name", "content", "style", "id", "href"}, (tag, attr)
        assert attr != "href" or (tag == "a" and value.startswith("#")), (tag, attr, value)  # in-page links only
        assert "url(" not in value and "http" not in value.lower()


# --------------------------------------------------------------------------- every format, both documents


@pytest.mark.parametrize("name", format_names("comparison"))
def test_renders_the_seed_comparison(name, seed_doc):
    out = get_format(name).render_comparison(seed_doc)
    assert out.endswith("\n")
    for needle in ("--speculative-num-steps", "--context-length", "--max-running-requests"):
        assert needle in out
    if name != "json":
        lo, hi = seed_doc["findings"][0]["impact"]["interval"]
        span = f"\u00d7{lo:.2f}\u2013{hi:.2f}"  # the 80 % interval first, then the point
        assert span in out and "most likely" in out and "\u00d70.61," in out  # (the text table wraps the impact column)
        if name != "text":
            conf = seed_doc["findings"][0]["impact"]["confidence"]
            assert f"{span} single-stream, most likely \u00d70.61, {conf} confidence" in out
        assert "computed at start-up" in out
        assert "predicted 42.5 tok/s vs 70 baseline" in out


@pytest.mark.parametrize("name", [n for n in format_names("fleet") if n != "prometheus"])  # metrics: tests/report/test_prometheus.py
def test_renders_the_fleet_report(name, fleet_doc):
    out = get_format(name).render_fleet(fleet_doc)
    for needle in ("ct129", "ct130", "ct200", "timeout after 10 s", "--speculative-num-steps"):
        assert needle in out
    if name != "json":
        assert "1 of 3 hosts drifted from 70toks, 1 unreadable" in out
        # the predicted cell carries the 80 % interval with the point (issue 24)
        lo, hi = next(h["comparison"]["predicted_throughput_interval"] for h in fleet_doc["hosts"]
                      if (h.get("comparison") or {}).get("predicted_throughput_interval"))
        assert f"42.5 tok/s (\u00d7{lo:.2f}\u2013{hi:.2f}, most likely \u00d70.61)" in out


def test_text_comparison_is_the_readme_layout(seed_doc):
    out = get_format("text").render_comparison(seed_doc)
    lines = out.splitlines()
    assert lines[0] == "baseline: 70toks (sglang-qwen.service on ct129; SGLang 0.5.19)"
    assert lines[1].startswith("current:  sglang-qwen.service (local file); SGLang 0.5.19 (inferred: ")
    assert lines[3].split() == ["#", "flag", "baseline", "current", "impact", "explanation"]
    assert lines[5].split()[:4] == ["1", "--speculative-num-steps", "3", "1"]
    assert "DW101 --speculative-num-steps 3 \u2192 1:" in lines[5]
    assert seed_doc["summary"] in lines


@pytest.mark.parametrize("kind", ["comparison", "fleet"])
def test_json_is_the_document(kind, seed_doc, fleet_doc):
    doc = seed_doc if kind == "comparison" else fleet_doc
    out = getattr(get_format("json"), f"render_{kind}")(doc)
    assert json.loads(out) == json.loads(json.dumps(doc))
    assert "\u2192" in out or kind == "fleet"  # UTF-8, not \u escapes


def test_markdown_comparison(seed_doc):
    md = get_format("markdown").render_comparison(seed_doc)
    lines = md.splitlines()
    assert lines[0] == "## driftwatch: sglang-qwen.service vs baseline 70toks"
    header = next(i for i, line in enumerate(lines) if line.startswith("| # | flag"))
    assert lines[header + 1] == "|---|---|---|---|---|---|"
    lo, hi = seed_doc["findings"][0]["impact"]["interval"]
    assert lines[header + 2].startswith(f"| 1 | `--speculative-num-steps` | 3 | 1 | \u00d7{lo:.2f}\u2013{hi:.2f} "
                                        "single-stream, most likely \u00d70.61")
    seed_doc["findings"][0]["current"] = "a|b*c*"
    row = next(ln for ln in get_format("markdown").render_comparison(seed_doc).splitlines() if ln.startswith("| 1 |"))
    assert "a\\|b\\*c\\*" in row and row.count(" | ") == 5


# --------------------------------------------------------------------------- HTML: well-formed, escaped, mail-safe


@pytest.mark.parametrize("kind", ["comparison", "fleet"])
def test_html_parses_as_xml_and_is_mail_safe(kind, seed_doc, fleet_doc):
    doc = seed_doc if kind == "comparison" else fleet_doc
    out = getattr(get_format("html"), f"render_{kind}")(doc)
    root = _xml(out)
    assert root.tag == "html" and root.find("head/title") is not None
    assert root.find(".//table" if kind == "fleet" else ".//div") is not None
    _assert_mail_safe(out)


def test_html_comparison_escapes_hostile_values(seed_doc):
    f = seed_doc["findings"][0]
    f["current"], f["flag"], f["explanation"] = HOSTILE, HOSTILE, HOSTILE + " http://evil.example/x.png"
    seed_doc["baseline"]["name"] = HOSTILE
    seed_doc["target"]["host"] = HOSTILE
    seed_doc["notes"].append(HOSTILE)
    seed_doc["summary"] = HOSTILE
    seed_doc["ignored"] = [dict(f, ignored_because=HOSTILE)]
    out = get_format("html").render_comparison(seed_doc)
    root = _xml(out)
    assert "<script>" not in out and "<img" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;" in out
    assert HOSTILE in "".join(root.itertext())  # the text survives, as text
    _assert_mail_safe(out)


def test_html_fleet_escapes_hostile_values(fleet_doc):
    fleet_doc["hosts"][0]["host"] = HOSTILE
    fleet_doc["hosts"][0]["comparison"]["findings"][0]["current"] = HOSTILE
    fleet_doc["hosts"][2]["error"] = HOSTILE
    out = get_format("html").render_fleet(fleet_doc)
    _xml(out)
    assert "<script>" not in out and "<img" not in out
    _assert_mail_safe(out)


# --------------------------------------------------------------------------- formats compute nothing


@pytest.mark.parametrize("name", ["text", "markdown", "html"])
def test_comparison_shows_the_documents_words(name, seed_doc):
    """The summary and header facts come from the document, not from a recomputation."""
    seed_doc["summary"] = "SUMMARY-FROM-THE-DOCUMENT"
    seed_doc["target"]["engine_version_reason"] = "REASON-FROM-THE-DOCUMENT"
    seed_doc["findings"][0]["impact"]["throughput_ratio"] = 0.5
    seed_doc["findings"][0]["impact"]["interval"] = [0.45, 0.55]
    out = get_format(name).render_comparison(seed_doc)
    assert "SUMMARY-FROM-THE-DOCUMENT" in out and "REASON-FROM-THE-DOCUMENT" in out
    # the text table wraps the impact column (beside the explanation's lines)
    assert "\u00d70.45\u20130.55" in out and "most likely" in out and "\u00d70.50," in out
    if name != "text":
        assert "\u00d70.45\u20130.55 single-stream, most likely \u00d70.50" in out


@pytest.mark.parametrize("name", ["text", "markdown", "html"])
def test_unknown_fields_never_rendered(name, seed_doc, fleet_doc):
    for doc in (seed_doc, fleet_doc["hosts"][0]["comparison"]):
        doc["secret_field"] = PLANTED
        doc["target"]["password"] = PLANTED
        doc["findings"][0]["raw"] = PLANTED
        doc["findings"][0]["impact"]["notes"] = PLANTED
    fleet_doc["hosts"][0]["token"] = PLANTED
    fmt = get_format(name)
    assert PLANTED not in fmt.render_comparison(seed_doc)
    assert PLANTED not in fmt.render_fleet(fleet_doc)


@pytest.mark.parametrize("name", ["text", "markdown", "html"])
def test_sparse_documents_do_not_break(name):
    fmt = get_format(name)
    assert fmt.render_comparison({"schema": "driftwatch.compare/v1"})
    assert fmt.render_comparison({"schema": "driftwatch.compare/v1", "findings": [{"rank": "x"}, None],
                                  "notes": "not a list", "target": []})
    assert fmt.render_fleet({"schema": "driftwatch.report/v1", "hosts": [None, {"status": "drift"}]})


def test_no_drift_comparison(baseline, rules):
    from driftwatch.findings.compare import compare
    from driftwatch.report.data import comparison_to_dict
    from driftwatch.run.reading import snapshot_from_unit_file
    unit_70 = Path(__file__).resolve().parents[2] / "examples" / "sglang-qwen-70toks.service"
    doc = comparison_to_dict(compare(baseline, snapshot_from_unit_file(str(unit_70)), rules, []))
    for name in ("text", "markdown", "html"):
        out = get_format(name).render_comparison(doc)
        assert "No drift from baseline 70toks." in out and "<table" not in out and "| # |" not in out
    assert re.search(r">clean<", get_format("html").render_comparison(doc))
