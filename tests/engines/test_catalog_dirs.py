"""A user catalog directory (--catalog-dir) comes and goes with its command: removing it leaves
every engine reading its shipped catalogs again, nothing remembered from the user's (each engine
keeps caches of its own: vLLM's option words and preprocessed argv too)."""
from __future__ import annotations

import json

import pytest

from driftwatch.engines.registry import ENGINES


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_a_removed_catalog_directory_leaves_nothing_behind(name, tmp_path):
    catalogs = ENGINES[name].catalogs
    release = catalogs.versions[-1]
    doc = json.loads(catalogs.shipped_text(release))  # a full file, or rebuilt from its delta
    template = next(o for o in doc["options"] if o.get("action") == "store" and o.get("type") == "int")
    doc["options"].append({**template, "field": "patched_budget", "dest": "patched_budget",
                           "option_strings": ["--patched-budget"], "primary": "--patched-budget"})
    (tmp_path / f"{name}-{release}.json").write_text(json.dumps(doc))  # replaces the shipped release
    argv = ["--model-path" if name == "sglang" else "--model", "m", "--patched-budget", "16"]

    def knows() -> bool:
        values, _, problems = catalogs.parse(list(argv), release)[:3]
        return not any("--patched-budget" in str(p) for p in problems)

    assert not knows()  # shipped: an unknown flag (and now remembered)
    catalogs.add_dir(tmp_path)
    try:
        assert knows()
    finally:
        catalogs.remove_dir(tmp_path)
    assert not knows()
