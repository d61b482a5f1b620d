"""Drift told once (issue 22): 20 hosts with the same drift make one group per finding, every
format leads with the groups, and a mail above its size limit carries the summary and attaches
the full report. Built from the shipped seed example (the 40 tok/s unit against 70toks)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from driftwatch.findings.judging import Judging
from driftwatch.notify.email import build_message
from driftwatch.report import get_format
from driftwatch.report.data import build_report
from driftwatch.run.fleet import Judge
from driftwatch.run.reading import snapshot_from_unit_file

REPO = Path(__file__).resolve().parents[2]
UNIT_40 = REPO / "examples/sglang-qwen-40toks.service"
UNIT_70 = REPO / "examples/sglang-qwen-70toks.service"


def twenty(baseline, rules):
    judge = Judge(baseline, Judging(rules))
    drifted = snapshot_from_unit_file(str(UNIT_40))
    entries = [judge.snapshot(replace(drifted, host=f"gpu{i:02d}")) for i in range(20)]
    entries.append(judge.snapshot(replace(snapshot_from_unit_file(str(UNIT_70)), host="odd")))
    return build_report(baseline, entries)


def test_identical_findings_are_one_group_each(baseline, rules):
    doc = twenty(baseline, rules)
    findings = doc["hosts"][0]["comparison"]["findings"]
    shared = [g for g in doc["drift_groups"] if len(g["hosts"]) > 1]
    assert len(shared) == len(findings) and len(doc["drift_groups"]) == len(findings)
    top = shared[0]
    assert [h["host"] for h in top["hosts"]] == [f"gpu{i:02d}" for i in range(20)]
    assert {"rule", "key", "concept", "baseline", "current", "origin", "impact", "hosts"} <= set(top)
    assert top["baseline_name"] == "70toks" and top["key"] == findings[0]["key"]
    assert json.loads(get_format("json").render_fleet(doc))["drift_groups"][0]["hosts"][19] == \
        {"host": "gpu19", "unit": top["hosts"][0]["unit"]}


def test_every_format_leads_with_the_groups_and_points_to_them(baseline, rules):
    doc = twenty(baseline, rules)
    text = get_format("text").render_fleet(doc)
    assert text.index("Drift shared by several units") < text.index("== 20 units with the same findings")
    assert text.count("20 hosts: ") == len(doc["drift_groups"])
    shared_section = text.split("== 20 units with the same findings", 1)[1]
    assert "gpu07" in shared_section and shared_section.count("(group 1, told once above)") == 1
    md = get_format("markdown").render_fleet(doc)
    assert md.index("## Drift shared by several units") < md.index("## 20 units with the same findings")
    assert md.count("no accept length measured") == 1  # a group's details: once, with the group
    html = get_format("html").render_fleet(doc)
    assert html.index("Drift shared by several units") < html.index('id="host-gpu00--') < html.index('id="host-gpu19--')
    assert html.count('href="#host-gpu07--sglang-qwen.service"') == len(doc["drift_groups"]) + 1  # each group, its row
    # each group's explanation is written once, not once per host
    lead = doc["drift_groups"][0]["explanation"].split(".")[0]
    assert " ".join(text.split()).count(lead) == 1


def test_a_large_mail_carries_the_summary_and_attaches_the_full_report(baseline, rules):
    doc = twenty(baseline, rules)
    small = build_message(doc, "dw@example.com", ["ops@example.com"])
    assert not list(small.iter_attachments())
    big = build_message(doc, "dw@example.com", ["ops@example.com"], limit=10_000)
    attached = {a.get_filename(): a.get_content() for a in big.iter_attachments()}
    assert set(attached) == {"report.html", "report.txt"}
    assert attached["report.txt"] == get_format("text").render_fleet(doc)
    summary = big.get_body(("plain",)).get_content()
    assert "the full report is attached" in summary and "== gpu00" not in summary
    assert "Drift shared by several units" in summary and "gpu19" in summary  # the groups, the host table


def test_show_json_names_its_schema():
    from driftwatch.report.show import SHOW_SCHEMA, render_show
    snap = snapshot_from_unit_file(str(UNIT_40))
    assert json.loads(render_show(snap, "json", False))["schema"] == SHOW_SCHEMA == "driftwatch.show/v1"


def test_each_group_names_the_restore_command_for_its_hosts(baseline, rules, tmp_path):
    """The loop from finding to fix: each group points at `driftwatch restore` for exactly its hosts,
    and that command line is one the CLI accepts (its --limit selects those hosts of the inventory)."""
    from click.testing import CliRunner

    from driftwatch.cli import cli
    from driftwatch.report import wording
    from driftwatch.run.targets import TargetRequest, resolve_targets
    doc = twenty(baseline, rules)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n" + "".join(f"  gpu{i:02d}: {{}}\n" for i in range(20)) + "  odd: {}\n"
                         "defaults:\n  units: [sglang-qwen.service]\n")
    assert all(wording.restore_command(g, doc) is None for g in doc["drift_groups"])  # no inventory: no guess
    doc = dict(doc, inventory=str(inventory))
    group = doc["drift_groups"][0]
    command = wording.restore_command(group, doc)
    import shlex
    words = shlex.split(command)
    assert words[:4] == ["driftwatch", "restore", "--baseline", "70toks"]
    limit = words[words.index("--limit") + 1]
    selected = [t.host for t in resolve_targets(TargetRequest(inventory=str(inventory), limit=limit))]
    assert selected == [f"gpu{i:02d}" for i in range(20)]  # the group's hosts, not `odd`
    assert len(limit) < len(":".join(selected))  # numbered hosts: one exact pattern, not each name
    for fmt in ("text", "markdown", "html"):
        assert command.split(" --limit")[0] in " ".join(get_format(fmt).render_fleet(doc).split()), fmt
    bad = CliRunner().invoke(cli, ["restore", "--baseline", "70toks", "--limit", "gpu00"])
    assert bad.exit_code != 0 and "--inventory" in str(bad.exception or bad.output)


def test_hosts_whose_sections_read_the_same_share_one_and_a_different_host_keeps_its_own(baseline, rules):
    """20 identical sections are one section naming all 20 units; a host with one more finding is
    told apart, under its own heading, with the finding that makes it different."""
    judge = Judge(baseline, Judging(rules))
    drifted = snapshot_from_unit_file(str(UNIT_40))
    entries = [judge.snapshot(replace(drifted, host=f"gpu{i:02d}")) for i in range(20)]
    odd_text = UNIT_40.read_text(encoding="utf-8").replace("--mem-fraction-static", "--chunked-prefill-size 4096 --mem-fraction-static")
    assert odd_text != UNIT_40.read_text(encoding="utf-8")
    from driftwatch.collect.raw import RawUnit
    from driftwatch.snapshots.snapshot import build_snapshot
    odd = build_snapshot(RawUnit(host="gpu99", unit=drifted.unit, text=odd_text, source="file"))
    entries.append(judge.snapshot(odd))
    doc = build_report(baseline, entries)
    text = get_format("text").render_fleet(doc)
    assert text.count("\n== ") == 3, text  # the groups, the 20 alike, gpu99
    shared = text.split("== 20 units with the same findings", 1)[1].split("\n== ", 1)[0]
    assert all(f"gpu{i:02d}" in shared for i in range(20)) and "gpu99" not in shared
    own = text.split("== gpu99 ", 1)[1]
    assert "--chunked-prefill-size" in own and "told once above" in own
    md = get_format("markdown").render_fleet(doc)
    assert md.count("\n## ") == 3 and "## 20 units with the same findings" in md and "## gpu99 " in md, md
    assert "gpu07" in md.split("## 20 units with the same findings", 1)[1].split("\n## ", 1)[0]
    # every drifted host is still named in a section (grep for a host finds its findings)
    sections = text.split("\n== ")[2:]
    assert sum(" ".join(sec.split()).count("gpu") for sec in sections) == 21
