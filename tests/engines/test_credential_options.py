"""The shipped credential-options.json of each engine says what its catalogs say (tools/catalog
writes it beside them; a run reads it instead of every release's catalog)."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from driftwatch.engines.argparse_catalog import CREDENTIALS_FILE, credential_options_of
from driftwatch.engines.registry import ENGINES
from driftwatch.snapshots.snapshot import credential_options


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_shipped_file_matches_the_catalogs(name):
    catalogs = ENGINES[name].catalogs
    shipped = json.loads(resources.files(catalogs.package).joinpath("catalogs", CREDENTIALS_FILE).read_text())
    computed = credential_options_of(catalogs.load(v) for v in catalogs.versions)
    assert shipped["options"] == computed, "regenerate: python -m tools.catalog ENGINE … (or write_credential_options)"
    assert "--api-key" in computed


def test_a_user_catalog_directory_adds_its_credential_flags(tmp_path):
    catalogs = ENGINES["sglang"].catalogs
    doc = json.loads(resources.files(catalogs.package).joinpath("catalogs", "sglang-0.5.23.json").read_text())
    option = next(o for o in doc["options"] if o["field"] == "api_key")
    doc["options"].append({**option, "field": "site_api_key", "dest": "site_api_key", "option_strings": ["--site-api-key"], "primary": "--site-api-key"})
    doc["version"] = "9.9.9"
    (tmp_path / "sglang-9.9.9.json").write_text(json.dumps(doc))
    before = credential_options()
    try:
        catalogs.add_dir(tmp_path)
        assert "--site-api-key" in credential_options() and "--site-api-key" not in before
    finally:
        catalogs.extra_dirs.remove(tmp_path)
        catalogs.__dict__.pop("versions", None)
        catalogs.__dict__.pop("credential_options", None)
        for cached in (type(catalogs).load, type(catalogs).parser, type(catalogs)._count_problems,
                       type(catalogs)._problems_at_least):
            cached.cache_clear()
