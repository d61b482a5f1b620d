"""Catalogs shipped as deltas from the release before (driftwatch/engines/catalog_delta.py) rebuild the
generated full catalog exactly, and load like full ones.

Every shipped delta is rebuilt through its chain and its text compared with the sha256 of the full file the
generator wrote (recorded by `python -m tools.catalog compact`). Where the generated full files are still on
this machine (`/work/oracles/out/<engine>`, root overridable with DRIFTWATCH_ORACLE_ROOT) they are compared
byte for byte as well.
"""
from __future__ import annotations

import json
import os
import shutil
from importlib import resources
from pathlib import Path

import pytest

from driftwatch.engines import catalog_delta as cd
from driftwatch.engines.registry import ENGINES
from tools.catalog import compact

ORACLE_OUT = Path(os.environ.get("DRIFTWATCH_ORACLE_ROOT", "/work/oracles")) / "out"


def _folder(engine: str):
    return resources.files(ENGINES[engine].catalogs.package).joinpath("catalogs")


def _deltas(engine: str) -> list[str]:
    return sorted(v for p in _folder(engine).iterdir()
                  if p.name.endswith(cd.DELTA_SUFFIX) and (v := cd.release_of(p.name, engine)))


SHIPPED_DELTAS = [(e, v) for e in ("vllm", "sglang") for v in _deltas(e)]


@pytest.mark.parametrize("engine,version", SHIPPED_DELTAS)
def test_every_shipped_delta_rebuilds_the_generated_file(engine, version):
    folder = _folder(engine)
    delta = json.loads(folder.joinpath(f"{engine}-{version}{cd.DELTA_SUFFIX}").read_text(encoding="utf-8"))
    assert delta["version"] == version and delta["engine"] == engine
    base_names = tuple(cd.base_file_name(n, version, delta["base"]) for n in delta["files"])
    rebuilt = cd.rebuild(delta, cd.read_docs(folder, engine, delta["base"], base_names), check=True)
    catalog = rebuilt[f"{engine}-{version}.json"]
    assert catalog["version"] == version and catalog["schema"] == "driftwatch.catalog/v1"
    if catalog.get("envs_file"):
        assert catalog["envs_file"] in rebuilt  # vLLM: the envs file travels with it
    generated = ORACLE_OUT / engine
    for name, doc in rebuilt.items():
        if (generated / name).is_file():
            assert cd.render(doc) == (generated / name).read_text(encoding="utf-8")


def test_shipped_deltas_exist_and_are_listed_and_loaded():
    assert SHIPPED_DELTAS, "no catalog is shipped as a delta"
    for engine, version in SHIPPED_DELTAS:
        catalogs = ENGINES[engine].catalogs
        assert version in catalogs.versions
        assert catalogs.load(version).options
        assert catalogs.nearest(version) == (version, "exact catalog")


def test_the_delta_is_much_smaller_than_the_full_file():
    for engine, version in SHIPPED_DELTAS:
        text = _folder(engine).joinpath(f"{engine}-{version}{cd.DELTA_SUFFIX}").read_text(encoding="utf-8")
        names = tuple(json.loads(text)["files"])  # what the delta stands for: the catalog (+ vLLM's envs)
        full = sum(len(cd.render(d).encode()) for d in cd.read_docs(_folder(engine), engine, version, names).values())
        assert len(text.encode()) < full / 2, (engine, version, len(text.encode()), full)


def test_round_trip_between_real_releases_keeps_types_and_order():
    folder = _folder("vllm")
    old = cd.read_docs(folder, "vllm", "0.30.0")["vllm-0.30.0.json"]
    new = cd.read_docs(folder, "vllm", "0.33.0")["vllm-0.33.0.json"]
    patch = cd.diff(old, new)
    assert cd.render(cd.apply(old, patch)) == cd.render(new)
    assert cd.render(old) == cd.render(cd.read_docs(folder, "vllm", "0.30.0")["vllm-0.30.0.json"])  # untouched
    # a bool that becomes an int, records that move, one removed and one added
    a = {"x": [{"name": "a", "v": True}, {"name": "b", "v": 1}, {"name": "c"}], "k": 1}
    b = {"x": [{"name": "b", "v": 1}, {"name": "a", "v": 1}, {"name": "d"}], "k": 1.0}
    assert cd.render(cd.apply(a, cd.diff(a, b))) == cd.render(b)
    assert cd.diff(a, json.loads(json.dumps(a))) is None


def test_a_corrupt_delta_is_refused(tmp_path):
    folder = tmp_path / "catalogs"
    shutil.copytree(Path(str(_folder("sglang"))), folder)
    releases = ENGINES["sglang"].catalogs.versions
    plan = compact.compact("sglang", folder, [], keep_full={releases[0]})  # every other release a delta
    assert plan == {releases[0]: "full", **{v: releases[i] for i, v in enumerate(releases[1:])}}
    assert not (folder / "sglang-0.5.23.json").exists()
    for version in releases:
        text = cd.catalog_text(folder, "sglang", version)
        assert text == ENGINES["sglang"].catalogs.shipped_text(version)
    path = folder / "sglang-0.5.23.delta.json"
    delta = json.loads(path.read_text())
    delta["files"]["sglang-0.5.23.json"]["patch"]["$dict"].setdefault("patch", {})["version"] = {"$set": "0.5.24"}
    with pytest.raises(cd.DeltaError, match="sha256"):
        cd.rebuild(delta, cd.read_docs(folder, "sglang", plan["0.5.23"]), check=True)
