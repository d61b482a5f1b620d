"""`report.json_.indented` writes what ``json.dumps(doc, indent=2, ensure_ascii=False, default=str,
allow_nan=False)`` writes, byte for byte (it only does it faster), on every kind of value a
document holds, and a stored history document."""
from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from driftwatch.report.json_ import dump, indented


class Named:
    def __str__(self):
        return "named (str)"


CASES = [
    {}, [], (), "text", 0, -7, 10 ** 40, 1.5, -0.0, 1e300, 2.5e-308, True, False, None,
    {"a": [], "b": {}, "c": [[]], "d": [{}]},
    {"é": "ü\n\t\"\\ \u2028 \x00 \x7f 😀", "nested": {"list": [1, [2, [3, {"k": None}]]]}},
    {"when": dt.datetime(2026, 12, 2, 3, 0), "path": Path("/etc/x"), "obj": Named(), "tuple": (1, (2,))},
    [{"key": "speculative_num_steps", "old": 1, "new": 2, "secret": True, "at": "2026-12-02T03:00:00Z"}] * 3,
    {1: "int key", None: "none key", 2.5: "float key"}, {True: "bool key"},  # keys the json module converts
    # lists of strings only are written in one join (an argv of thousands of words): escapes, empty words
    ["--tp", "1", "", "é\n\"\\", "\x00\u2028😀", " "],
    {"argv": [f"--unknown-flag-{i}" for i in range(5000)], "mixed": ["a", 1, None, ["b", "c"], [], ("d",)]},
    [["x"], [["y", "z"]], [Named()], ["s", Named()]],
    # flat mappings and lists of scalars are written in one join too
    {f"flag_{i}": {"baseline": None, "current": i, "ratio": i / 7, "on": i % 2 == 0, "s": f"é{i}"} for i in range(300)},
    [1, 2.5, None, True, False, "x", -0.0, 10 ** 30], [True, 1], {"a": 1, "b": {"c": 2}}, {"a": Named()},
    {"a": 1, 2: "b"}, {"f": 1e300, "g": 5e-324},
    # mappings of flat mappings (a folded finding's details) in one join: an empty one, and ones that are not
    {"x": {"a": {}, "b": {"c": 1, "d": "é"}}, "y": {"a": {"k": [1]}, "b": {"c": 2}}, "z": {"a": {1: 2}, "b": {"c": 3}},
     "w": {"a": {"n": Named()}}, "v": {"a": {"c": 1}, "b": 2}},
]


@pytest.mark.parametrize("doc", CASES, ids=range(len(CASES)))
def test_same_bytes_as_the_json_module(doc):
    assert indented(doc) == json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False)


def test_a_non_finite_float_is_refused_like_json_and_dump_writes_it_as_text():
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            indented({"x": [bad]})
        with pytest.raises(ValueError):
            indented({"x": {"baseline": 1, "current": bad}})
    assert json.loads(dump({"x": [1.0, math.nan]})) == {"x": [1.0, "nan"]}


def test_a_history_document_from_the_store(tmp_path):
    from dataclasses import replace

    from driftwatch.diff.changes import changes_between
    from driftwatch.run.history_document import history_document
    from driftwatch.run.reading import snapshot_from_unit_file
    from driftwatch.snapshots.store import SnapshotStore
    root = Path(__file__).resolve().parents[2]
    store = SnapshotStore(tmp_path / "store", changes=changes_between)
    for day, (old, new) in enumerate([("3", "3"), ("3", "1"), ("3", "2"), ("3", "1")]):
        unit = tmp_path / "sglang-qwen.service"
        unit.write_text((root / "examples" / "sglang-qwen-70toks.service").read_text().replace(
            f"--speculative-num-steps {old}", f"--speculative-num-steps {new}"))
        store.save(replace(snapshot_from_unit_file(str(unit), host="ct129"),
                           collected_at=f"2026-11-0{day + 1}T03:00:00Z"))
    doc = history_document(store)
    assert doc["units"][0]["changes"]
    assert dump(doc) == json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"


def test_history_records_one_per_line_read_back_the_same(tmp_path):
    """`--format json` history: each change/finding on one line, the rest indented; json.loads gives
    back the document, and a non-finite float or a key that is not a string still writes valid JSON."""
    from driftwatch.report.json_ import HISTORY_RECORDS, JsonFormat
    change = {"at": "2026-12-02T03:00:00Z", "key": "k", "old": 1, "new": "é\n", "origin": {"old": "a", "new": "b"}}
    doc = {"schema": "driftwatch.history/v1", "units": [{"host": "h", "changes": [change, dict(change, old=2)],
                                                         "findings": [], "first": {"snapshot": "s"}}]}
    text = JsonFormat().render_history(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    records = [line for line in lines if line.lstrip().startswith('{"at"')]
    assert len(records) == 2 and all(json.loads(r.strip().rstrip(",")) in (change, dict(change, old=2))
                                     for r in records)
    assert '      "first": {' in lines and '        "snapshot": "s"' in lines  # outside the records: indented
    assert json.loads(dump(dict(doc, x=math.nan), HISTORY_RECORDS))["x"] == "nan"
    odd = {"units": [{"changes": [{1: math.inf}]}]}
    assert json.loads(dump(odd, HISTORY_RECORDS)) == {"units": [{"changes": [{"1": "inf"}]}]}
