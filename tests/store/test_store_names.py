"""Issue 34 item 3: host and unit names are stored without lossy folding. ``gpu/01`` and ``gpu_01``
were both ``gpu_01`` in the store, so one history showed the other host's changes; now a name of
``[A-Za-z0-9@._:-]`` is stored as it always was (old stores read as before) and any other character
is escaped reversibly (``gpu%2F01``), on SQLite, PostgreSQL and the YAML-file layout."""
from __future__ import annotations

import json
import os
import random
import string
import sys
from pathlib import Path

import pytest
from cli_helpers import run_in_process
from test_store_db import U70, UNIT, at, snap

from driftwatch.snapshots.store import FileStore, SnapshotStore
from driftwatch.snapshots.store_records import component_name, safe_component

DW = Path(sys.executable).with_name("driftwatch")
TWINS = ["gpu/01", "gpu_01", "gpu 01", "gpu%2F01", "gpu\\01", "..", "__", "é01", "e01"]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "files"])
def test_names_that_folded_alike_keep_their_own_histories(kind, request, tmp_path):
    if kind == "files":
        store = FileStore(tmp_path / "files")
    else:
        store = SnapshotStore(str(tmp_path / "db") if kind == "sqlite" else request.getfixturevalue("pg_url"))
    for i, host in enumerate(TWINS):  # each host its own story: host i changes i % 3 times
        for step in range(1 + i % 3):
            store.save(snap(1 + step, host=host, at=at(step + 10 * i)))
    assert sorted(store.groups()) == sorted((h, UNIT) for h in TWINS)
    for i, host in enumerate(TWINS):
        records = store.records(host, UNIT)
        assert len(records) == 1 + i % 3, host
        assert all(r.read().host == host for r in records), host
        assert store.latest(host, UNIT).read().host == host
    components = {safe_component(h) for h in TWINS}
    assert len(components) == len(TWINS)
    assert not any(c.startswith(".") or "/" in c for c in components)


def test_history_of_one_of_two_twin_hosts_shows_only_its_own_change(tmp_path):
    store = str(tmp_path / "store")
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DRIFTWATCH_")}
    changed = tmp_path / "changed.service"
    changed.write_text(U70.read_text().replace("--speculative-num-steps 3", "--speculative-num-steps 1"))
    for host, unit_file in (("gpu/01", U70), ("gpu_01", U70), ("gpu/01", changed)):
        r = run_in_process("snapshot", "--unit-file", unit_file, "--host-name", host, "--store", store, env=env)
        assert r.returncode == 0, r.stderr
    docs = {}
    for host in ("gpu/01", "gpu_01"):
        r = run_in_process("history", host, "--store", store, "--format", "json", env=env)
        assert r.returncode in (0, 1), r.stderr
        docs[host] = json.loads(r.stdout)["units"]
    text = {h: json.dumps(d) for h, d in docs.items()}
    assert "speculative" in text["gpu/01"] and "speculative" not in text["gpu_01"], text


def test_plain_names_keep_their_old_store_names_and_every_name_comes_back():
    rng = random.Random(5)
    plain = string.ascii_letters + string.digits + "@._:-"
    for _ in range(3000):
        name = "".join(rng.choice(plain) for _ in range(rng.randint(1, 60)))
        if set(name) != {"."}:
            assert safe_component(name) == name  # what every release before stored: old stores read as before
    anything = plain + "/ %\\\t\né€\U0001f600"
    seen: dict[str, str] = {}
    for _ in range(3000):
        name = "".join(rng.choice(anything) for _ in range(rng.randint(1, 40)))
        c = safe_component(name)
        assert component_name(c) == name and safe_component(component_name(c)) == c
        assert seen.setdefault(c, name) == name  # injective
        assert "/" not in c and c not in (".", "..") and len(c) <= 128
    long = safe_component("x/" * 100)
    assert len(long) == 117 and safe_component(component_name(long)) == long


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_history_names_a_unit_by_its_name_not_its_store_key(kind, request, tmp_path):
    """The batched history of a database store named escaped units by their store key
    (`inference%2FPod%2F…`); it names them as they were recorded."""
    location = str(tmp_path / "db") if kind == "sqlite" else request.getfixturevalue("pg_url")
    store = SnapshotStore(location)
    names = [("k8s/prod", "inference/Pod/sg-1/sglang"), ("k8s/prod", "plain.service")]
    for host, unit in names:
        store.save(snap(host=host, unit=unit, at=at(1)))
        store.save(snap(2, host=host, unit=unit, at=at(2)))
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DRIFTWATCH_")}
    for asked in (["k8s/prod"], []):
        r = run_in_process("history", *asked, "--store", location, "--format", "json", env=env)
        assert r.returncode == 0, r.stderr
        units = json.loads(r.stdout)["units"]
        assert sorted((u["host"], u["unit"]) for u in units) == sorted(names), units
        assert all(u["changes"] for u in units)
