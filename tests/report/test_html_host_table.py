"""The HTML host table a new user saw on a six-host fleet (issue 34 item 8), looked at in a real
headless Chromium (chromium_lab, as test_html_report.py does): at 1 280 px its timestamps and unit
names broke over two lines (the page is capped at 1 100 px); at 390 px it scrolled inside its box with
nothing showing that more of it was hidden. Now timestamps, host and unit names stay whole, and the
box shows a shadow on the edge where columns are hidden — measured on screenshot pixels."""
from __future__ import annotations

import base64
import zlib

import chromium_lab
import pytest
from test_html_report import _mixed

from driftwatch.report import get_format

WHOLE = """(() => {
  const re = /\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ|[A-Za-z0-9@._-]+\\.service/g, out = [];
  const lines = (node, a, b) => { const r = document.createRange(); r.setStart(node, a); r.setEnd(node, b);
    return new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top))).size; };
  const walk = document.createTreeWalker(document.querySelector('table'), NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode());) {
    for (const m of n.data.matchAll(re)) out.push([m[0], lines(n, m.index, m.index + m[0].length)]);
    if (n.parentElement.closest('td:first-child strong')) out.push([n.data, lines(n, 0, n.data.length)]);
  }
  return out;
})()"""
BOX = """(() => { const b = document.querySelector('table').parentElement, r = b.getBoundingClientRect();
  const row = document.querySelectorAll('table tr')[1].getBoundingClientRect();
  return {left: r.left, right: r.right, top: row.top, bottom: r.bottom, client: b.clientWidth,
          scroll: b.scrollWidth}; })()"""


@pytest.fixture(scope="module")
def browser():
    if chromium_lab.CHROMIUM is None:
        pytest.skip(chromium_lab.MISSING)
    with chromium_lab.chromium() as b:
        yield b


@pytest.fixture
def fleet_file(rules, tmp_path):
    """The mixed fleet of test_html_report.py, every drifted host with a known start (a timestamp in
    its since cell)."""
    doc = _mixed(rules)
    for i, h in enumerate(doc["hosts"]):
        for f in (h.get("comparison") or {}).get("findings") or []:
            f["since"] = {"at": f"2026-11-2{i % 9}T0{i % 9}:15:00Z", "snapshot": "s.yaml"}
    path = tmp_path / "fleet.html"
    path.write_text(get_format("html").render_fleet(doc))
    return path


@pytest.mark.parametrize("width", [1280, 1024, 390])
def test_timestamps_host_and_unit_names_stay_on_one_line(browser, fleet_file, width):
    browser.open(fleet_file, width)
    whole = browser.evaluate(WHOLE)
    assert sum(1 for text, _ in whole if "T" in text and text.endswith("Z")) >= 5, whole
    assert sum(1 for text, _ in whole if text.endswith(".service")) >= 8, whole
    broken = [text for text, lines in whole if lines != 1]
    assert not broken, (width, broken)
    box = browser.evaluate(BOX)
    assert box["scroll"] <= box["client"] or width < 1000, box  # fits the capped page on a desktop
    assert browser.evaluate("document.documentElement.scrollWidth") <= width  # the page never scrolls


def _pixels(png: bytes) -> list[list[tuple[int, ...]]]:
    """RGB rows of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium's screenshots are)."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pos, data, header = 8, b"", b""
    while pos < len(png):
        length, kind = int.from_bytes(png[pos:pos + 4], "big"), png[pos + 4:pos + 8]
        body = png[pos + 8:pos + 8 + length]
        header = body if kind == b"IHDR" else header
        data += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    depth, colour, interlace = header[8], header[9], header[12]
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    n = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(data), width * n, [], bytearray(width * n)
    for y in range(height):
        filt, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - n] if i >= n else 0
            b, c = prev[i], prev[i - n] if i >= n else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * n:x * n + 3]) for x in range(width)])
        prev = line
    return rows


def _shaded(browser, x: float, box: dict) -> float:
    """Share of the pixels in the 1-px column at `x`, over the table's body rows, that are
    grey (a shadow: not white, not a text colour)."""
    clip = {"x": x, "y": box["top"], "width": 1, "height": box["bottom"] - box["top"], "scale": 1}
    png = browser.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})["data"]
    column = [row[0] for row in _pixels(base64.b64decode(png))]
    return sum(1 for r, g, b in column if 150 < min(r, g, b) < 250 and max(r, g, b) - min(r, g, b) < 12) / len(column)


def test_a_phone_sees_that_the_table_scrolls(browser, fleet_file):
    browser.open(fleet_file, 390, height=3000)  # the whole page in the viewport: page = viewport coordinates
    box = browser.evaluate(BOX)
    assert box["scroll"] > box["client"] + 100, box  # columns are hidden to the right
    right, left = box["right"] - 3, box["left"] + 2
    at_start = _shaded(browser, right, box), _shaded(browser, left, box)
    assert at_start[0] > 0.6 and at_start[1] < 0.2, at_start  # a shadow on the right edge only
    browser.evaluate("(() => { const b = document.querySelector('table').parentElement;"
                     " b.scrollLeft = b.scrollWidth; return b.scrollLeft; })()")
    at_end = _shaded(browser, right, box), _shaded(browser, left, box)
    assert at_end[0] < 0.2 and at_end[1] > 0.6, at_end  # scrolled to its end: the shadow moved left
    browser.evaluate("document.querySelector('table').parentElement.scrollLeft = 150")
    middle = _shaded(browser, right, box), _shaded(browser, left, box)
    assert middle[0] > 0.6 and middle[1] > 0.6, middle  # both sides hidden: both shadows
