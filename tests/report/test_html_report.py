"""The fleet HTML report an operator keeps open (issue 22 item 8), looked at in a real headless
Chromium: no sideways scrolling at phone width (390 px) or at 1280 px, the drift groups before the
first host section, every in-page link landing on its host, severity and status colours that say
their word too, a since column. Built from the shipped examples: two baselines (SGLang 70toks and
vLLM vllm-qwen-mtp3), identical drift on several hosts of each, a unit without a baseline and an
unreadable host; long values planted to prove they wrap."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zlib
from dataclasses import replace
from html import unescape
from pathlib import Path

import chromium_lab
import pytest
from test_drift_groups import twenty

from driftwatch.findings.judging import Judging
from driftwatch.report import get_format
from driftwatch.report.data import build_report, host_entry
from driftwatch.run.fleet import Judge
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.baseline import load_baseline

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
LONG_VALUE = "/models/" + "q" * 300 + "/weights"  # one unbroken word, far wider than a phone
LONG_ERROR = "ssh: connect to host gpu-err: " + "x" * 250


def _mixed(rules) -> dict:
    """3 SGLang hosts drifted alike (70toks), 2 vLLM hosts drifted alike (vllm-qwen-mtp3), one
    clean, one unit without a baseline, one unreadable; the second sglang host's first finding has
    a stored start ('since'), the third's is new since the last snapshot."""
    read = lambda p: snapshot_from_unit_file(p)  # noqa: E731
    sg = load_baseline("70toks", REPO / "baselines", unit_reader=read)
    vl = load_baseline("vllm-qwen-mtp3", REPO / "baselines", unit_reader=read)
    sg_judge, vl_judge = Judge(sg, Judging(rules)), Judge(vl, Judging(rules))
    drifted_sg = snapshot_from_unit_file(str(EXAMPLES / "sglang-qwen-40toks.service"))
    drifted_vl = snapshot_from_unit_file(str(EXAMPLES / "vllm-qwen-mtp1-eager.service"))
    entries = [sg_judge.snapshot(replace(drifted_sg, host=f"sg{i}")) for i in (1, 2, 3)]
    entries += [vl_judge.snapshot(replace(drifted_vl, host=f"vl{i}")) for i in (1, 2)]
    entries.append(sg_judge.snapshot(replace(snapshot_from_unit_file(str(EXAMPLES / "sglang-qwen-70toks.service")),
                                             host="sg-clean")))
    entries.append(host_entry("lone", "other.service", "no_baseline"))
    entries.append(host_entry("gpu-err", "vllm-qwen.service", "error", error=LONG_ERROR))
    doc = build_report(None, entries, baselines=[sg, vl])
    by_host = {h["host"]: h for h in doc["hosts"]}
    by_host["sg2"]["comparison"]["findings"][0]["since"] = {"at": "2026-11-28T03:00:00Z", "snapshot": "s1.yaml"}
    by_host["sg3"]["comparison"]["findings"][0]["since"] = {"at": None, "after": "2026-12-01T03:00:00Z"}
    return doc


def _rows(html: str) -> dict[str, list[str]]:
    """The host table: host name -> its cells' text."""
    body = ET.fromstring(html.split("\n", 1)[1]).find("body")
    table = body.find(".//table")
    headers = ["".join(th.itertext()) for th in table.find("tr")]
    out = {}
    for tr in table.findall("tr")[1:]:
        cells = ["".join(td.itertext()) for td in tr]
        out[cells[0].split()[0]] = dict(zip(headers, cells, strict=False))
    return out


# --------------------------------------------------------------------------- the document itself


def test_summary_per_baseline_groups_first_and_a_since_column(rules):
    doc = _mixed(rules)
    html = get_format("html").render_fleet(doc)
    text = unescape(re.sub(r"<[^>]+>", "", html))
    summary = text.split("Summary per baseline", 1)[1].split("Drift shared", 1)[0]
    # one card per baseline (and the unit without one), each with its units' counts by status
    assert summary.index("70toks") < summary.index("vllm-qwen-mtp3") < summary.index("(no baseline)")
    assert re.search(r"70toks \(ct129.*?\)4 units: drift\xa03 clean\xa01", summary), summary
    assert re.search(r"vllm-qwen-mtp3.*?2 units: drift\xa02", summary), summary
    # groups: each shared finding once, with the hosts it concerns linked to their sections
    shared = [g for g in doc["drift_groups"] if len(g["hosts"]) > 1]
    assert {g["baseline_name"] for g in shared} == {"70toks", "vllm-qwen-mtp3"}
    for g in shared:
        card = html.split(f'id="group-{g["group"]}"', 1)[1].split('<div id="group-', 1)[0].split("<h2", 1)[0]
        for m in g["hosts"]:
            assert f'<a href="#host-{m["host"]}--{m["unit"]}">{m["host"]}</a>' in card
    assert html.index('id="group-1"') < html.index("<table") < html.index('<div id="host-')
    group = next(g for g in shared if g["baseline_name"] == "70toks" and g["key"] == doc["hosts"][0]["comparison"]["findings"][0]["key"])
    card = unescape(re.sub(r"<[^>]+>", "", html.split(f'id="group-{group["group"]}"', 1)[1].split("since:", 1)[1]))
    assert card.startswith(" 2026-11-28T03:00:00Z (the earliest; known for 1 of 3 units)"), card[:80]
    # the since column: a stored start, "new since the last snapshot", unknown (no store), none for clean
    rows = _rows(html)
    assert rows["sg2"]["since"] == "2026-11-28T03:00:00Z"
    assert rows["sg3"]["since"] == "new since the last snapshot"
    assert rows["sg1"]["since"] == "unknown" and rows["sg-clean"]["since"] == "\u2014"
    assert rows["vl1"]["baseline"] == "vllm-qwen-mtp3" and rows["lone"]["status"] == "no baseline"
    # every host has exactly one anchor, and every in-page link has a target
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    assert sorted(i for i in ids if i.startswith("host-")) == sorted(f'host-{h["host"]}--{h["unit"]}'
                                                                     for h in doc["hosts"])
    assert set(re.findall(r'href="#([^"]+)"', html)) <= set(ids)


def test_the_mail_summary_links_only_to_what_it_holds(rules):
    """Brief (the mail when the full report is attached): no host sections, so each host's anchor is
    its table row, and no link dangles."""
    html = get_format("html").render_fleet(_mixed(rules), brief=True)
    ids = set(re.findall(r' id="([^"]+)"', html))
    assert '<div id="host-' not in html and "host-sg1--sglang-qwen.service" in ids
    assert set(re.findall(r'href="#([^"]+)"', html)) <= ids


# --------------------------------------------------------------------------- in a real Chromium

needs_chromium = pytest.mark.skipif(chromium_lab.CHROMIUM is None, reason=chromium_lab.MISSING)

OVERFLOWING = """(() => {
  const width = document.documentElement.clientWidth, out = [];
  for (const el of document.body.querySelectorAll('*')) {
    let box = el.parentElement, clipped = false;
    for (; box && box !== document.body; box = box.parentElement)
      if (getComputedStyle(box).overflowX !== 'visible') { clipped = true; break; }
    if (!clipped && el.getBoundingClientRect().right > width + 0.5) out.push(el.tagName + ':' + el.textContent.slice(0, 40));
  }
  return out;
})()"""


@pytest.fixture(scope="module")
def browser():
    if chromium_lab.CHROMIUM is None:
        pytest.skip(chromium_lab.MISSING)
    with chromium_lab.chromium() as b:
        yield b


@pytest.fixture
def mixed_file(rules, tmp_path):
    doc = _mixed(rules)
    for g in doc["drift_groups"]:
        if len(g["hosts"]) > 1:
            g["current"] = LONG_VALUE  # a long value in a group's title and its change
            break
    doc["hosts"][0]["comparison"]["warnings"] = ["unit line " + "ExecStart=/usr/bin/python" * 12]
    path = tmp_path / "report.html"
    path.write_text(get_format("html").render_fleet(doc))
    return path


@needs_chromium
@pytest.mark.parametrize("width", [390, 1280])
def test_no_sideways_scrolling(browser, mixed_file, width):
    browser.open(mixed_file, width)
    assert browser.evaluate("document.documentElement.clientWidth") == width
    assert browser.evaluate("document.documentElement.scrollWidth") <= width
    assert browser.evaluate(OVERFLOWING) == []  # nothing sticks out, except inside a box that scrolls
    # the host table keeps its words whole: at a phone's width it scrolls inside its own box
    box = browser.evaluate("(() => { const b = document.querySelector('table').parentElement;"
                           " return [getComputedStyle(b).overflowX, b.clientWidth, b.scrollWidth]; })()")
    assert box[0] == "auto" and box[1] <= width
    assert (box[2] > box[1]) == (width == 390)
    # the long value is all there, broken over lines rather than cut
    assert browser.evaluate(f"document.body.innerText.replace(/\\s/g, '').includes({LONG_VALUE!r})")


@needs_chromium
def test_groups_come_first_and_links_land_on_their_host(browser, mixed_file):
    browser.open(mixed_file, 390, height=700)
    top = "(id) => document.getElementById(id).getBoundingClientRect().top + window.scrollY"
    first_section = browser.evaluate("document.querySelector('div[id^=\"host-\"]').id")
    assert browser.evaluate(f"({top})('group-1')") < browser.evaluate(f"({top})({first_section!r})")
    # two links of the groups, then a host without a section (its anchor is its table row), by address
    for target in ("host-vl2--vllm-qwen.service", "host-sg3--sglang-qwen.service", "host-lone--other.service"):
        browser.evaluate("window.scrollTo(0, 0)")
        browser.evaluate(f"document.querySelector('a[href=\"#{target}\"]').click()" if "lone" not in target
                         else f"location.hash = {target!r}")
        landed = browser.evaluate(f"document.getElementById({target!r}).getBoundingClientRect().top")
        at_end = browser.evaluate("Math.abs(window.scrollY + window.innerHeight"
                                  " - document.documentElement.scrollHeight) <= 1")
        # at the top of the screen, or on it when the page cannot scroll further
        assert browser.evaluate("window.scrollY") > 0 and (abs(landed) <= 2 or at_end and 0 <= landed < 700 - 20), \
            (target, landed)
        assert browser.evaluate("location.hash") == f"#{target}"


def _rgb(css: str) -> tuple[float, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


def _contrast(a, b) -> float:
    def lum(c):
        ch = [x / 255 for x in c]
        ch = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@needs_chromium
def test_severity_and_status_colours_with_their_words(browser, mixed_file):
    browser.open(mixed_file, 1280)
    badges = browser.evaluate("""[...document.querySelectorAll('b')].map(b => [b.textContent,
        getComputedStyle(b).color, getComputedStyle(b).backgroundColor])""")
    by_word: dict[str, set] = {}
    for word, fg, bg in badges:
        by_word.setdefault(word, set()).add((_rgb(fg), _rgb(bg)))
    assert {"high", "medium", "drift", "clean", "error", "no baseline"} <= set(by_word), set(by_word)
    for word, colours in by_word.items():
        assert len(colours) == 1, word  # one word, one colour, everywhere
        fg, bg = next(iter(colours))
        assert _contrast(fg, bg) >= 4.5, (word, fg, bg)
    assert by_word["high"] != by_word["medium"] and by_word["drift"] != by_word["clean"]
    # a group card's edge carries its severity's colour
    edge = browser.evaluate("getComputedStyle(document.getElementById('group-1')).borderLeftColor")
    word = browser.evaluate("document.querySelector('#group-1 b').textContent")
    assert _rgb(edge) == next(iter(by_word[word]))[0]


def _png_rows_vary(png: bytes) -> bool:
    """True when the image's pixel data is not one flat colour (decompressed IDAT bytes)."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    data, pos = b"", 8
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        kind = png[pos + 4:pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(data))) > 16


@needs_chromium
def test_twenty_identical_hosts_at_the_top_of_the_page(browser, baseline, rules, tmp_path):
    """The issue's case: what a phone shows first is the headline, the summary and group 1."""
    path = tmp_path / "twenty.html"
    path.write_text(get_format("html").render_fleet(twenty(baseline, rules)))
    browser.open(path, 390, height=844)
    assert browser.evaluate("document.documentElement.scrollWidth") <= 390
    first_screen = browser.evaluate("""[...document.querySelectorAll('h1, h2, #group-1')]
        .filter(e => e.getBoundingClientRect().top < window.innerHeight).map(e => e.id || e.textContent)""")
    assert first_screen[0].startswith("driftwatch: 20 of 21 hosts drifted from 70toks")
    assert "Summary per baseline" in first_screen and "group-1" in first_screen
    assert _png_rows_vary(browser.screenshot())


@needs_chromium
def test_a_single_comparison_fits_a_phone_too(browser, seed_doc, tmp_path):
    """`compare --format html` shares the blocks: a long current value wraps instead of widening."""
    seed_doc["findings"][0]["current"] = LONG_VALUE
    path = tmp_path / "compare.html"
    path.write_text(get_format("html").render_comparison(seed_doc))
    browser.open(path, 390)
    assert browser.evaluate("document.documentElement.scrollWidth") <= 390
    assert browser.evaluate(OVERFLOWING) == []
    assert browser.evaluate("document.querySelectorAll('body > div').length") == len(seed_doc["findings"])
