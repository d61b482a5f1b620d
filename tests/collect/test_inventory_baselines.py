"""Baselines in the inventory and --limit (issue 22): `baseline:` at defaults, group and host level,
`units: {unit: NAME}`, Ansible's `driftwatch_baseline`; Ansible host patterns."""
import os
import subprocess
import sys
import textwrap

import pytest

from driftwatch.collect.inventory import load_inventory, select_hosts
from driftwatch.errors import InputError


def inv(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def plan(path):
    return {(t.name, u): t.baseline_for(u) for t in load_inventory(path) for u in t.units}


def test_driftwatch_yaml_precedence_host_over_groups_over_defaults(tmp_path):
    path = inv(tmp_path, "fleet.yaml", """\
        defaults: {baseline: base-default, units: [sglang.service]}
        groups:
          sglang: {hosts: [a, b, c], baseline: sg-qwen27b}
          late:   {hosts: [c], baseline: sg-late}
          vllm:   {hosts: [v], units: {vllm.service: vl-32b, sidecar.service: null}}
        hosts:
          a:
          b: {baseline: sg-canary}
          c:
          v:
          lone:
        """)
    assert plan(path) == {("a", "sglang.service"): "sg-qwen27b", ("b", "sglang.service"): "sg-canary",
                          ("c", "sglang.service"): "sg-late", ("v", "vllm.service"): "vl-32b",
                          ("v", "sidecar.service"): None,  # null opts the unit out (issue 32), never inherits
                          ("lone", "sglang.service"): "base-default"}


def test_a_unit_with_no_baseline_anywhere_is_none(tmp_path):
    path = inv(tmp_path, "fleet.yaml", """\
        hosts:
          a: {units: [x.service]}
        """)
    assert plan(path) == {("a", "x.service"): None}


def test_a_units_own_baseline_wins_over_the_hosts(tmp_path):
    path = inv(tmp_path, "fleet.yaml", """\
        hosts:
          a: {baseline: sg, units: {vllm.service: vl, sglang.service: null}}
        """)
    assert plan(path) == {("a", "vllm.service"): "vl", ("a", "sglang.service"): None}  # null: opted out


def test_ansible_ini_driftwatch_baseline(tmp_path):
    path = inv(tmp_path, "hosts.ini", """\
        [sglang]
        sg1
        sg2 driftwatch_baseline=sg-canary
        [vllm]
        vl1 driftwatch_units="{'vllm.service': 'vl-32b'}"
        [sglang:vars]
        driftwatch_baseline=sg-qwen27b
        driftwatch_units=sglang.service
        [all:vars]
        driftwatch_baseline=fallback
        """)
    assert plan(path) == {("sg1", "sglang.service"): "sg-qwen27b", ("sg2", "sglang.service"): "sg-canary",
                          ("vl1", "vllm.service"): "vl-32b"}


def test_ansible_yaml_driftwatch_baseline_child_over_parent(tmp_path):
    path = inv(tmp_path, "inv.yml", """\
        all:
          vars: {driftwatch_baseline: everyone, driftwatch_units: [sglang.service]}
          children:
            gpus:
              vars: {driftwatch_baseline: gpus}
              children:
                a6000:
                  vars: {driftwatch_baseline: a6000}
                  hosts: {ct129: {}, ct200: {driftwatch_baseline: mine}}
            other:
              hosts: {n1: {}}
        """)
    assert plan(path) == {("ct129", "sglang.service"): "a6000", ("ct200", "sglang.service"): "mine",
                          ("n1", "sglang.service"): "everyone"}


@pytest.mark.parametrize("text, message", [
    ("hosts:\n  a: {units: {x.service: 3}}\n", "the baseline must be a name"),
    ("hosts:\n  a: {baseline: [x]}\n", "baseline must be a string"),
])
def test_bad_baselines_are_one_line_naming_the_file(tmp_path, text, message):
    path = inv(tmp_path, "bad.yaml", text)
    with pytest.raises(InputError) as exc:
        load_inventory(path)
    assert message in str(exc.value) and "bad.yaml:2" in str(exc.value)


@pytest.fixture
def fleet(tmp_path):
    return load_inventory(inv(tmp_path, "hosts.ini", """\
        [sglang]
        sg[1:3]
        [vllm]
        vl[1:2]
        [canary]
        sg1
        vl1
        [gpus:children]
        sglang
        vllm
        """))


@pytest.mark.parametrize("pattern, hosts", [
    ("sglang", ["sg1", "sg2", "sg3"]),
    ("sg2", ["sg2"]),
    ("vl*", ["vl1", "vl2"]),
    ("sglang:vllm", ["sg1", "sg2", "sg3", "vl1", "vl2"]),
    ("sglang,vl2", ["sg1", "sg2", "sg3", "vl2"]),
    ("gpus:&canary", ["sg1", "vl1"]),
    ("gpus:!canary", ["sg2", "sg3", "vl2"]),
    ("all:!sglang", ["vl1", "vl2"]),
    ("*", ["sg1", "sg2", "sg3", "vl1", "vl2"]),
    ("~sg[12]", ["sg1", "sg2"]),
    ("sglang:vllm:&canary:!vl*", ["sg1"]),
])
def test_limit_speaks_ansibles_pattern_language(fleet, pattern, hosts):
    assert [t.name for t in select_hosts(fleet, pattern)] == hosts


@pytest.mark.parametrize("pattern, message", [("nosuch", "matches no host"), ("", "empty host pattern"),
                                              ("~(", "bad regular expression")])
def test_a_limit_that_selects_nothing_is_an_input_error(fleet, pattern, message):
    with pytest.raises(InputError) as exc:
        select_hosts(fleet, pattern)
    assert message in str(exc.value)


def test_report_with_an_unknown_limit_is_one_line_exit_2(tmp_path):
    path = inv(tmp_path, "fleet.yaml", "hosts:\n  a: {units: [x.service], baseline: b}\n")
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "driftwatch"), "report", "--inventory", path, "--limit", "zz",
                        "--no-store"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == ["driftwatch: --limit 'zz' matches no host in the inventory"]
