"""Explanations in operators' words (issue 13 item 5): the findings table carries what the change
does and the number; α, E(k) and the roofline terms go below the table (text, Markdown) or under the
sentence in a quieter style (HTML); JSON keeps the whole explanation. What the operator must act on
(an assumed GPU, what to measure) stays in the sentence, not in the details."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from driftwatch.facts import load_model_config
from driftwatch.findings.compare import compare
from driftwatch.report import get_format
from driftwatch.report.data import comparison_to_dict
from driftwatch.run.reading import snapshot_from_unit_file

REPO = Path(__file__).resolve().parents[2]
UNIT_40 = REPO / "examples" / "sglang-qwen-40toks.service"

QWEN36 = REPO / "tools" / "calibration_models" / "Qwen--Qwen3.6-27B.json"
A6000X2 = [{"index": i, "name": "NVIDIA RTX A6000", "memory_total": "49140 MiB"} for i in range(2)]


def _doc(baseline, rules, gpus):
    current = snapshot_from_unit_file(str(UNIT_40))
    current.runtime["model_facts"] = load_model_config(str(QWEN36)).to_dict()
    if gpus:
        current.runtime["gpus"] = copy.deepcopy(gpus)
    return comparison_to_dict(compare(baseline, current, rules, []))


@pytest.fixture(scope="module")
def physical_doc(baseline, rules):
    return _doc(baseline, rules, A6000X2)


def _steps(doc):
    return next(f for f in doc["findings"] if f["key"] == "speculative_num_steps")


def test_the_table_leads_with_the_sentence_and_the_terms_follow_it(physical_doc):
    f = _steps(physical_doc)
    lead, terms = f["explanation"].split(" Details: ", 1)
    assert "a step takes" in lead and "roofline" not in lead and "E(3)=" not in lead
    assert "roofline baseline" in terms and "E(1)=" in terms
    text = get_format("text").render_comparison(physical_doc)
    table, after = text.split(f"#{f['rank']} details: ", 1)
    flat = " ".join(table.split())  # table cells wrap: words, not phrases, survive
    assert "takes" in flat and "yields" in flat and "roofline" not in flat
    assert "roofline baseline" in " ".join(after.split())
    md = get_format("markdown").render_comparison(physical_doc)
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert not any("roofline baseline" in r for r in rows)
    assert any(line.startswith(f"- #{f['rank']} details: ") and "roofline baseline" in line for line in md.splitlines())
    html = get_format("html").render_comparison(physical_doc)
    assert "font-size:12px\">Details: " in html and "roofline baseline" in html


def test_json_keeps_the_whole_explanation(physical_doc):
    doc = get_format("json").render_comparison(physical_doc)
    assert "Details: " in doc and "roofline baseline" in doc


def test_what_to_act_on_stays_in_the_sentence(baseline, rules):
    # no GPU known: the reference GPU is assumed, which the operator must see without the details
    doc = _doc(baseline, rules, None)
    lead = _steps(doc)["explanation"].split(" Details: ", 1)[0]
    assert "GPU unknown" in lead and "--gpu" in lead


def test_without_model_facts_the_sentence_leads_too(seed_doc):
    # the prior path (no config.json): what the drafting change does to a step's tokens and cost,
    # then the number; α and E(k) below the table
    f = _steps(seed_doc)
    lead, terms = f["explanation"].split(" Details: ", 1)
    assert "3 → 1 drafted tokens per step: a step yields 3.19 → 1.85 tokens per request" in lead
    assert "E(3)=" not in lead and "E(3)=3.19" in terms and "α prior 0.85" in terms
    assert "--model-config" in lead  # what would sharpen it stays in the sentence


def test_an_explanation_without_details_is_shown_whole(seed_doc):
    ctx_len = next(f for f in seed_doc["findings"] if f["key"] == "context_length")
    assert " Details: " not in ctx_len["explanation"]
    text = get_format("text").render_comparison(seed_doc)
    listed = [line for line in text.splitlines() if " details: " in line]
    assert [line.split(" ")[0] for line in listed] == [f"#{_steps(seed_doc)['rank']}"]
    flat = " ".join(text.split())
    assert "requests longer than the smaller limit are rejected" in flat  # the whole sentence, in the table


def test_the_impact_column_and_the_sentence_give_the_same_figure(seed_comparison):
    # A model's sentence rounds its ratio once (f"{r:.2f}"); the document keeps the ratio whole so
    # the impact column rounds the same value once too: 0.57504 read ×0.57 in the column (stored as
    # 0.575, then rounded again) beside ×0.58 in the sentence. Any fixed number of stored decimals
    # leaves such a boundary (2.0450001 at 6).
    import copy as _copy

    from driftwatch.report import wording
    from driftwatch.report.data import finding_to_dict
    f = _copy.copy(seed_comparison.findings[0])
    for raw in (0.57504, 1.23496, 0.99951, 2.0450001):
        f.throughput_ratio = raw
        shown = wording.ratio_text(finding_to_dict(f)["impact"]["throughput_ratio"])
        assert shown == f"×{raw:.2f}", (raw, shown)
