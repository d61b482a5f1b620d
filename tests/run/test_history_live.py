"""An inventory-wide history lists what the inventory's `containers:` and `kubernetes:` entries
stored (their names are known only once read), each with its entry's baseline, and nothing else of
that host: a systemd unit is listed only where the inventory names it."""
from __future__ import annotations

from test_store_db import snap

from driftwatch.run.history import stored_live_pairs
from driftwatch.run.targets import Target
from driftwatch.snapshots.store import FileStore

STORED = [("gpu1", "sglang-qwen.service"), ("gpu1", "container/sg/sg"), ("gpu1", "container/other/other"),
          ("gpu1", "container/sg2/sg2"), ("k8s", "inference/Deployment/sg/sglang"),
          ("k8s", "inference/Pod/sg-1/sglang"), ("gpu2", "container/sg/sg")]


def _store(tmp_path):
    store = FileStore(tmp_path / "store")
    for host, unit in STORED:
        store.save(snap(host=host, unit=unit))
    return store


def target(kind: str, host: str, unit: str | None, baseline: str | None = "b1") -> Target:
    return Target(kind, unit, host, None, None, baseline, "host")


def test_a_named_container_lists_only_its_own_snapshots(tmp_path):
    got = stored_live_pairs(_store(tmp_path), [target("container", "gpu1", "sg")])
    assert got == [("gpu1", "container/sg/sg", "b1")]


def test_auto_lists_every_container_of_the_host_and_no_unit(tmp_path):
    got = stored_live_pairs(_store(tmp_path), [target("container", "gpu1", None, "b2")])
    assert sorted(u for _, u, _ in got) == ["container/other/other", "container/sg/sg", "container/sg2/sg2"]
    assert {h for h, _, _ in got} == {"gpu1"} and {b for _, _, b in got} == {"b2"}


def test_a_kubernetes_entry_lists_its_workloads_and_pods(tmp_path):
    got = stored_live_pairs(_store(tmp_path), [target("kubernetes", "k8s", None), target("ssh", "gpu1", "x.service")])
    assert got == [("k8s", "inference/Deployment/sg/sglang", "b1"), ("k8s", "inference/Pod/sg-1/sglang", "b1")]
