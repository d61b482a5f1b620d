"""One resolution of targets and baselines for every command (issue 32 items 1, 2): what a command
acts on and the baseline each unit is judged against, from what was typed and the config file's
inventory/limit/baseline (never merged). The rules are docs/config.md's "What a command acts on"."""
from __future__ import annotations

import textwrap

import pytest

from driftwatch.errors import InputError
from driftwatch.run.targets import TargetRequest, baseline_override_note, judged_pair, resolve_targets

INVENTORY = """\
    defaults: {baseline: base-default}
    groups:
      sglang: {hosts: [h1, h2, h3], units: [sglang-qwen.service], baseline: sg70}
      vllm:   {hosts: [v1, v2], units: {vllm-qwen.service: vl-mtp3, proxy.service: null}, baseline: vl-group}
      canary: {hosts: [h3], baseline: none}
    hosts:
      h1: {address: 10.0.0.1}
      h2: {address: 10.0.0.2, baseline: sg-canary}
      h3:
      v1: {address: 10.0.0.11, user: svc, port: 2222}
      v2:
    """


@pytest.fixture
def inv(tmp_path):
    path = tmp_path / "inventory.yaml"
    path.write_text(textwrap.dedent(INVENTORY))
    return str(path)


def pairs(targets):
    return [(t.kind, t.host or t.path, t.unit, t.baseline, t.baseline_from) for t in targets]


def test_named_unit_files_are_the_whole_set_whatever_the_config_inventory_and_limit(inv):
    request = TargetRequest(unit_files=("a.service", "b.service"), baseline="sg70", config_inventory=inv,
                            config_limit="vllm")
    assert pairs(resolve_targets(request)) == [("unit-file", "a.service", None, "sg70", "typed"),
                                               ("unit-file", "b.service", None, "sg70", "typed")]


def test_a_run_on_unit_files_never_reads_the_config_inventory(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("hosts: [\n")
    request = TargetRequest(unit_files=("a.service",), snapshots=("s.yaml",), config_inventory=str(broken))
    assert [t.kind for t in resolve_targets(request)] == ["unit-file", "snapshot"]
    with pytest.raises(InputError, match="broken.yaml"):
        resolve_targets(TargetRequest(hosts=("h1",), config_inventory=str(broken)))


def test_a_named_host_is_described_by_the_config_inventory_never_widened(inv):
    targets = resolve_targets(TargetRequest(hosts=("v1",), config_inventory=inv, config_limit="sglang"))
    assert pairs(targets) == [("ssh", "v1", "vllm-qwen.service", "vl-mtp3", "unit"),
                              ("ssh", "v1", "proxy.service", None, "none")]  # null opts the unit out
    assert (targets[0].address.address, targets[0].address.user, targets[0].address.port) == ("10.0.0.11", "svc", 2222)


def test_a_host_unknown_to_the_inventory_is_read_as_typed(inv):
    [target] = resolve_targets(TargetRequest(hosts=("root@10.9.9.9:2200",), unit="x.service", config_inventory=inv,
                                             config_baseline="cfg"))
    assert (target.host, target.unit, target.baseline, target.baseline_from) == ("10.9.9.9:2200", "x.service", "cfg",
                                                                                  "config")
    assert target.address.user == "root"


def test_the_config_inventory_is_the_set_only_when_nothing_is_named_and_its_limit_narrows_it(inv):
    bare = resolve_targets(TargetRequest(config_inventory=inv, config_limit="sglang"))
    assert [(t.host, t.baseline, t.baseline_from) for t in bare] == [
        ("h1", "sg70", "group"), ("h2", "sg-canary", "host"), ("h3", None, "none")]  # canary: `none` opts out
    assert resolve_targets(TargetRequest(config_inventory=inv, changes_hosts=True)) == []  # apply: never alone
    typed_limit = resolve_targets(TargetRequest(config_inventory=inv, limit="h1", changes_hosts=True))
    assert [t.host for t in typed_limit] == ["h1"]


def test_a_typed_inventory_is_the_set_beside_unit_files_and_limit_narrows_it(inv):
    targets = resolve_targets(TargetRequest(unit_files=("a.service",), inventory=inv, limit="vllm",
                                            baseline="sg70"))
    assert [(t.kind, t.host, t.unit) for t in targets] == [
        ("unit-file", None, None), ("ssh", "v1", "vllm-qwen.service"), ("ssh", "v1", "proxy.service"),
        ("ssh", "v2", "vllm-qwen.service"), ("ssh", "v2", "proxy.service")]
    assert {t.baseline for t in targets} == {"sg70"}  # typed wins everywhere


@pytest.mark.parametrize("named", [dict(hosts=("h1",)), dict(unit_files=("a.service",)), dict(snapshots=("s.yaml",))])
def test_a_typed_limit_with_named_targets_is_an_error_a_config_limit_is_ignored(inv, named):
    with pytest.raises(InputError, match="--limit chooses among an inventory's hosts"):
        resolve_targets(TargetRequest(limit="sglang", config_inventory=inv, **named))
    assert resolve_targets(TargetRequest(config_limit="sglang", config_inventory=inv, unit="u.service", **named))


def test_baseline_precedence_typed_unit_host_group_defaults_config(tmp_path, inv):
    request = TargetRequest(config_inventory=inv, config_baseline="cfg")
    assert judged_pair(request, "h1", "sglang-qwen.service")[0] == "sg70"          # group
    assert judged_pair(request, "h2", "sglang-qwen.service")[0] == "sg-canary"     # host over group
    assert judged_pair(request, "v1", "vllm-qwen.service")[0] == "vl-mtp3"         # unit over group
    assert judged_pair(request, "v1", "other.service")[0] == "vl-group"            # the group's for an unlisted unit
    assert judged_pair(request, "h3", "sglang-qwen.service")[0] is None            # `none`: no config fallback
    assert judged_pair(request, "v1", "proxy.service")[0] is None                  # null: opted out
    assert judged_pair(request, "stranger", "x.service")[0] == "cfg"               # not in the inventory
    bare = tmp_path / "bare.yaml"
    bare.write_text("defaults: {baseline: d}\nhosts:\n  x:\n")
    assert judged_pair(TargetRequest(config_inventory=str(bare)), "x", "u")[1].baseline_from == "defaults"
    typed = TargetRequest(config_inventory=inv, baseline="forced")
    assert judged_pair(typed, "v1", "proxy.service")[0] == "forced"


def test_a_typed_baseline_differing_from_the_inventorys_is_said_in_one_line(inv):
    targets = resolve_targets(TargetRequest(inventory=inv, baseline="sg70"))
    note = baseline_override_note(targets)
    assert note is not None and "\n" not in note
    assert "h2 sglang-qwen.service (sg-canary)" in note and "v1 vllm-qwen.service (vl-mtp3)" in note
    assert "h1 " not in note  # h1's inventory baseline is sg70 itself
    assert baseline_override_note(resolve_targets(TargetRequest(inventory=inv))) is None


def test_ansible_null_and_none_opt_out(tmp_path):
    path = tmp_path / "hosts.ini"
    path.write_text("[gpu]\ng1\ng2 driftwatch_baseline=none\n[gpu:vars]\ndriftwatch_baseline=sg70\n"
                    "driftwatch_units=\"{'a.service': None, 'b.service': 'own'}\"\n")
    targets = resolve_targets(TargetRequest(inventory=str(path), config_baseline="cfg"))
    assert [(t.host, t.unit, t.baseline, t.baseline_from) for t in targets] == [
        ("g1", "a.service", None, "none"), ("g1", "b.service", "own", "unit"),
        ("g2", "a.service", None, "none"), ("g2", "b.service", "own", "unit")]
    assert judged_pair(TargetRequest(inventory=str(path)), "g1", "c.service")[1].baseline_from == "group"
