"""`show` lists the first KEYS_IN_FULL keys of one JSON-valued flag a row each and the rest as one row
(a hostile 20 000-key value made a 20 000-row table: 3.4 s); --format json has every key."""
from __future__ import annotations

import json

from driftwatch.collect.raw import RawUnit
from driftwatch.engines.config import KEYS_IN_FULL
from driftwatch.report.show import render_show
from driftwatch.snapshots.snapshot import build_snapshot


def _snap(keys: int):
    value = json.dumps({"num_speculative_tokens": 3, **{f"k{i:04d}": i for i in range(keys)}})
    text = f"[Service]\nExecStart=/usr/bin/vllm serve /m --speculative-config '{value}' --tensor-parallel-size 2\n"
    return build_snapshot(RawUnit(host="h", unit="v.service", text=text, source="file"))


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if "--speculative-config" in line and not line.startswith("argv:")
            and not line.lstrip().startswith("[")]


def test_a_1000_key_value_shows_its_first_keys_then_one_row_and_json_has_every_one():
    snap = _snap(1000)
    rows = _table_rows(render_show(snap, "text", False))
    assert len(rows) == KEYS_IN_FULL + 2  # the keys in full, the one with a concept, the rest in one row
    folded = [row for row in rows if "more keys" in row]
    assert [row.split()[:5] for row in folded] == [["speculative_config.…", "--speculative-config",
                                                    str(1000 - KEYS_IN_FULL), "more", "keys"]]
    assert [row.split()[0] for row in rows[:2]] == ["speculative_config.k0000", "speculative_config.k0001"]
    text = render_show(snap, "text", False)
    assert "tensor_parallel_size" in text  # other flags are unaffected
    assert "speculative_config.num_speculative_tokens" in text  # a key with a concept is never folded away
    flags = json.loads(render_show(snap, "json", False))["engine"]["flags"]
    assert sum(1 for key in flags if key.startswith("speculative_config.k")) == 1000


def test_a_value_of_few_keys_shows_every_one():
    rows = _table_rows(render_show(_snap(KEYS_IN_FULL - 1), "text", False))
    assert len(rows) == KEYS_IN_FULL and not any("more keys" in row for row in rows)  # k0000-k0030 + num_spec…


def test_a_saved_snapshot_lists_the_first_keys_counts_the_rest_and_reads_every_one_back():
    """The saved `engine` section is derived (never read back: flags are re-read from the argv), so it
    lists what `show` lists and counts the rest; the snapshot read back has every key, and no drift."""
    from driftwatch.fileio import dump_yaml, load_yaml_text
    from driftwatch.findings.compare import compare
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.snapshots.baseline import Baseline
    from driftwatch.snapshots.snapshot import snapshot_from_dict, snapshot_to_dict
    snap = _snap(1000)
    saved = snapshot_to_dict(snap)["engine"]
    listed = [key for key in saved["flags"] if key.startswith("speculative_config.")]
    assert len(listed) == KEYS_IN_FULL + 1 and "speculative_config.num_speculative_tokens" in listed
    assert saved["keys_not_listed"] == {"speculative_config": {"flag": "--speculative-config",
                                                               "keys": 1000 - KEYS_IN_FULL}}
    again = snapshot_from_dict(load_yaml_text(dump_yaml(snapshot_to_dict(snap)), "<test>", "snapshot"), "<test>")
    assert sum(1 for key in again.engine.flags if key.startswith("speculative_config.k")) == 1000
    assert again.engine.flags == snap.engine.flags
    result = compare(Baseline(name="saved", snapshot=again), snap, load_rules(None))
    assert [f for f in result.findings if not f.ignored] == []


def test_one_field_filled_by_two_flags_names_both_and_counts_every_key_not_listed():
    from driftwatch.engines.config import EngineConfig, FlagValue
    from driftwatch.snapshots.snapshot import engine_to_dict
    flags = {f"x.k{i:03d}": FlagValue(i, "explicit", flag="--a") for i in range(KEYS_IN_FULL + 8)}
    flags.update({f"x.m{i:03d}": FlagValue(i, "explicit", flag="--b") for i in range(KEYS_IN_FULL + 8)})
    section = engine_to_dict(EngineConfig(engine="vllm", version="0.33.0", version_reason="", flags=flags),
                             fold_keys=True)
    assert len(section["flags"]) == 2 * KEYS_IN_FULL
    assert section["keys_not_listed"] == {"x": {"flag": "--a, --b", "keys": 16}}
    assert "keys_not_listed" not in engine_to_dict(EngineConfig(engine="vllm", version="0.33.0", version_reason="",
                                                                flags=flags))  # show --format json: every key
