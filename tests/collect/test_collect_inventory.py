import textwrap

import pytest

from driftwatch.collect.inventory import HostTarget, load_inventory, parse_target
from driftwatch.collect.sshconfig import load_ssh_config, resolve
from driftwatch.errors import InputError


@pytest.mark.parametrize("spec,want", [
    ("ct129", ("ct129", None, None)),
    ("root@ct129:2222", ("ct129", "root", 2222)),
    ("[::1]:2222", ("::1", None, 2222)),
    ("ops@[fe80::1%eth0]", ("fe80::1%eth0", "ops", None)),
    ("::1", ("::1", None, None)),
    ("10.0.0.5:22", ("10.0.0.5", None, 22)),
])
def test_parse_target(spec, want):
    t = parse_target(spec)
    assert (t.name, t.user, t.port) == want


@pytest.mark.parametrize("spec", ["", "host:0", "host:99999", "host:x", "-oProxyCommand=x", "a b",
                                  "@host", "[::1", "h;id"])
def test_parse_target_rejects(spec):
    with pytest.raises(InputError):
        parse_target(spec)


def inv(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return load_inventory(p)


def test_driftwatch_yaml_precedence(tmp_path):
    hosts = inv(tmp_path, "inv.yaml", """\
        defaults: {user: root, units: [a.service]}
        groups:
          g1: {hosts: [h1, h2], port: 2200, units: [b.service]}
        hosts:
          h1: {address: 10.0.0.1}
          h2: {port: 22, units: [c.service, d]}
          h3:
        """)
    assert hosts == [
        HostTarget("h1", "10.0.0.1", "root", 2200, ["b.service"]),
        HostTarget("h2", None, "root", 22, ["c.service", "d"]),
        HostTarget("h3", None, "root", None, ["a.service"]),
    ]


@pytest.mark.parametrize("text,where,msg", [
    ("hosts:\n  h1: {port: nope}\n", ":2", "port 'nope' is not a number"),
    ("hosts:\n  h1:\n    adress: x\n", ":3", "unknown key 'adress'"),
    ("hosts:\n  h1: [\n", ":3", "not valid YAML"),
    ("hosts:\n  h1: {}\ngroups:\n  g: {hosts: [zz]}\n", ":4", "unknown host 'zz'"),
    ("hosts:\n  h1: {units: 5}\n", ":2", "units must be a list"),
])
def test_driftwatch_yaml_errors_name_file_and_line(tmp_path, text, where, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load_inventory(p)
    assert str(err.value).startswith(f"{p}{where}:") and msg in str(err.value)


def test_ansible_ini(tmp_path):
    hosts = inv(tmp_path, "hosts", """\
        # comment
        lonely ansible_host=10.0.0.9

        [a6000]
        ct129 ansible_host=192.0.2.10 ansible_user=ops
        ct200:2222 driftwatch_units=x.service,y.service
        gpu[01:02] ansible_port=2200

        [gpu:children]
        a6000

        [gpu:vars]
        ansible_user=root
        driftwatch_units=['sglang-qwen.service']
        """)
    by = {h.name: h for h in hosts}
    assert list(by) == ["lonely", "ct129", "ct200", "gpu01", "gpu02"]
    assert by["ct129"] == HostTarget("ct129", "192.0.2.10", "ops", None, ["sglang-qwen.service"])
    assert by["ct200"] == HostTarget("ct200", None, "root", 2222, ["x.service", "y.service"])
    assert by["gpu02"].port == 2200 and by["lonely"].units == []


def test_ansible_ini_error_line(tmp_path):
    p = tmp_path / "hosts.ini"
    p.write_text("[g]\nh1 ansible_port=abc\n")
    with pytest.raises(InputError, match=r"hosts.ini:2: port 'abc'"):
        load_inventory(p)


def test_ansible_yaml(tmp_path):
    hosts = inv(tmp_path, "inv.yml", """\
        all:
          vars: {ansible_user: root, driftwatch_units: [sglang-qwen.service]}
          children:
            a6000:
              vars: {ansible_port: 2222}
              hosts:
                ct129: {ansible_host: 192.0.2.10, ansible_ssh_private_key_file: ~/.ssh/k}
                ct200: {driftwatch_units: "a.service, b.service"}
            other:
              hosts:
                n[a:b]:
        """)
    assert hosts == [
        HostTarget("ct129", "192.0.2.10", "root", 2222, ["sglang-qwen.service"], "~/.ssh/k"),
        HostTarget("ct200", None, "root", 2222, ["a.service", "b.service"]),
        HostTarget("na", None, "root", None, ["sglang-qwen.service"]),
        HostTarget("nb", None, "root", None, ["sglang-qwen.service"]),
    ]


def test_ansible_yaml_error_line(tmp_path):
    p = tmp_path / "inv.yaml"
    p.write_text("all:\n  hostz:\n    h1:\n")
    with pytest.raises(InputError, match=r"inv.yaml:2: unknown key 'hostz'"):
        load_inventory(p)


def test_missing_and_binary_inventory(tmp_path):
    with pytest.raises(InputError, match="no such file .inventory file not found"):
        load_inventory(tmp_path / "nope.yaml")
    (tmp_path / "b.yaml").write_bytes(b"\0\0")
    with pytest.raises(InputError, match="binary"):
        load_inventory(tmp_path / "b.yaml")


def test_ssh_config_resolution(tmp_path):
    cfg = tmp_path / "config"
    cfg.write_text(textwrap.dedent("""\
        Host ct129
            HostName 192.0.2.129
            User ops
            Port 2222
            IdentityFile ~/.ssh/ct_key
            ProxyJump bastion
        Host bastion
            HostName 192.0.2.1
            User jump
        Host *
            User fallback
        """))
    config = load_ssh_config(str(cfg))
    ep = resolve(HostTarget("ct129"), config, identity="/keys/id")
    assert (ep.hostname, ep.port, ep.user) == ("192.0.2.129", 2222, "ops")
    assert ep.identities[0] == "/keys/id" and ep.identities[1].endswith("/.ssh/ct_key")
    assert [(j.name, j.hostname, j.user, j.port) for j in ep.jumps] == [("bastion", "192.0.2.1", "jump", 22)]
    # inventory values win over ssh_config
    ep = resolve(HostTarget("ct129", address="10.0.0.1", user="root", port=22), config)
    assert (ep.hostname, ep.port, ep.user) == ("10.0.0.1", 22, "root")
    assert resolve(HostTarget("other"), config).user == "fallback"
    with pytest.raises(InputError, match="no such ssh config"):
        load_ssh_config(str(tmp_path / "missing"))


@pytest.mark.slow  # a scale test: 100 000 hosts written and read
def test_an_inventory_of_100000_hosts_with_addresses_is_read(tmp_path):
    """Over the old 8 MiB bound (issue 23: a 10^5-host inventory with addresses is ~8.4 MB)."""
    from driftwatch.collect.inventory import load_inventory
    path = tmp_path / "fleet.ini"
    with open(path, "w") as fh:
        fh.write("[fleet]\n")
        fh.writelines(f"gpu{i:06d}.rack{i // 40:04d}.fleet-a.example.internal ansible_host=10.{i // 65536}."
                      f"{i // 256 % 256}.{i % 256} ansible_port=22\n" for i in range(100_000))
        fh.write("[fleet:vars]\ndriftwatch_units=sglang-qwen.service\nansible_user=root\n")
    assert path.stat().st_size > 8 << 20
    hosts = load_inventory(path)
    assert len(hosts) == 100_000 and len({h.name for h in hosts}) == 100_000
    last = hosts[-1]
    assert (last.name, last.address, last.port, last.user, last.units) == (
        "gpu099999.rack2499.fleet-a.example.internal", "10.1.134.159", 22, "root", ["sglang-qwen.service"])
