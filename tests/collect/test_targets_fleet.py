"""Issue 32 (items 1, 2, 8; "no command widens a typed target"): every command resolves its targets
and baselines once, on a mixed fleet of real sshd hosts (the session lab: real OpenSSH servers on
loopback, removed even on failure) with baselines per group and a config file naming `inventory:`,
`limit:`, mail and the store. In-process through click's runner (driftwatch.cli.cli), mail to a real
aiosmtpd server on loopback.

The fleet: sg1 (clean) and sg2 (drifted) in group `sglang` (baseline sg-a); vl1 (clean) and vl2
(drifted) in group `vllm`, whose vLLM unit names its own baseline vl-b while the group names sg-a
and `proxy.service: null` opts the proxy out; `down`, an inventory host nothing listens for. The
config file's `limit: sglang` narrows only runs over the inventory."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from dw_sshlab import free_port, plain_unit  # noqa: E402
from mail_lab import smtp  # noqa: E402,F401 - the fixture

from driftwatch.cli import cli  # noqa: E402
from driftwatch.errors import DriftwatchError  # noqa: E402

SG, VL, PROXY = "sglang-qwen.service", "vllm-qwen.service", "proxy.service"


def vllm_unit(extra: str = "") -> str:
    return ("[Unit]\nDescription=vLLM test server\n\n[Service]\n"
            f"ExecStart=/root/ml-env/bin/vllm serve /root/models/m --port 8000 --max-num-seqs 64{extra}\n")


@pytest.fixture(scope="module")
def fleet(lab):
    hosts = {name: lab.start_sshd(f"t32-{name}") for name in ("sg1", "sg2", "vl1", "vl2")}
    hosts["sg1"].write(f"/etc/systemd/system/{SG}", plain_unit(30000))
    hosts["sg2"].write(f"/etc/systemd/system/{SG}", plain_unit(30000, " --mem-fraction-static 0.7"))
    hosts["vl1"].write(f"/etc/systemd/system/{VL}", vllm_unit())
    hosts["vl2"].write(f"/etc/systemd/system/{VL}", vllm_unit(" --enforce-eager"))
    for name in ("vl1", "vl2"):
        hosts[name].write(f"/etc/systemd/system/{PROXY}", plain_unit(30009))
    return hosts


@pytest.fixture
def site(fleet, lab, tmp_path, smtp):  # noqa: F811 - the fixture
    """(dw(*args) -> (exit, stdout, stderr, doc or None), paths, mailbox) with the config file in place."""
    port, box = smtp
    bl = tmp_path / "baselines"
    bl.mkdir()
    (tmp_path / "known_hosts").write_text("".join(s.known_hosts_line() for s in fleet.values()))
    (tmp_path / "ssh_config").write_text("")
    hosts = "\n".join(f"  {n}: {{port: {s.port}}}" for n, s in fleet.items()) + f"\n  down: {{port: {free_port()}}}"
    (tmp_path / "fleet.yaml").write_text(f"""\
defaults: {{address: 127.0.0.1, user: root, identity: {lab.client_key}}}
groups:
  sglang: {{hosts: [sg1, sg2, down], units: [{SG}], baseline: sg-a}}
  vllm: {{hosts: [vl1, vl2], units: {{{VL}: vl-b, {PROXY}: null}}, baseline: sg-a}}
hosts:
{hosts}
""")
    (tmp_path / "config.yaml").write_text(
        "inventory: fleet.yaml\nlimit: sglang\nbaselines_dir: baselines\nstore: store\nknown_hosts: known_hosts\n"
        "ssh_config: ssh_config\nconnect_timeout: 3\ncommand_timeout: 15\n"
        f"email: [ops@example.com]\nfrom: driftwatch@test.invalid\nsmtp: {{host: 127.0.0.1, port: {port}, "
        "security: plain}\n")
    (tmp_path / "sg.service").write_text(plain_unit(30000))
    (tmp_path / "sg-drifted.service").write_text(plain_unit(30000, " --mem-fraction-static 0.7"))
    (tmp_path / "vl.service").write_text(vllm_unit())
    config = str(tmp_path / "config.yaml")

    def dw(*args):
        """The command in-process; an error as `driftwatch` says it (main: one line, its exit code)."""
        result = CliRunner().invoke(cli, ["--config", config, *map(str, args)])
        if isinstance(result.exception, DriftwatchError):
            return result.exception.exit_code, result.stdout, f"{result.stderr}driftwatch: {result.exception}\n", None
        assert not result.exception or isinstance(result.exception, SystemExit), result.exception
        try:
            doc = json.loads(result.stdout)
        except ValueError:
            doc = None
        return result.exit_code, result.stdout, result.stderr, doc

    for name, unit, path in (("sg-a", SG, "sg.service"), ("vl-b", VL, "vl.service")):
        code, _, err, _ = dw("baseline", "save", name, "--unit-file", tmp_path / path, "--unit", unit)
        assert code == 0, err
    return dw, tmp_path, box


def test_report_on_unit_files_reads_mails_and_writes_only_them(site):
    dw, tmp, box = site
    prom = tmp / "fleet.prom"
    code, out, err, doc = dw("report", "--unit-file", tmp / "sg.service", "--unit-file", tmp / "sg-drifted.service",
                             "--baseline", "sg-a", "--format", "json", "--prometheus", prom)
    assert code == 1, err  # one file drifted; no host of the config's inventory read
    assert [h["host"] for h in doc["hosts"]] == [str(tmp / "sg.service"), str(tmp / "sg-drifted.service")]
    assert doc["summary"]["hosts"] == 2 and doc["inventory"] is None
    text = prom.read_text()
    assert 'host="sg-drifted.service"' in text or str(tmp / "sg-drifted.service") in text
    for host in ("sg1", "sg2", "vl1", "vl2", "down"):
        assert f'host="{host}"' not in text
    [mail] = box.messages
    body = mail.get_body(("plain",)).get_content()
    assert "sg-drifted.service" in body
    for host in ("sg1", "sg2", "vl1", "vl2", "down"):
        assert f" {host} " not in body and f"\n{host} " not in body and f"{host}:" not in body


def test_a_bare_report_is_the_config_inventory_narrowed_by_its_limit_and_a_down_host_keeps_its_baseline(site):
    dw, tmp, box = site
    prom, html = tmp / "fleet.prom", tmp / "fleet.html"
    code, _, err, doc = dw("report", "--format", "json", "--prometheus", prom, "--no-store")
    assert code == 2, err  # `down` could not be read
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert set(by_host) == {"sg1", "sg2", "down"}  # limit: sglang
    assert by_host["sg1"]["status"] == "clean" and by_host["sg2"]["status"] == "drift"
    assert by_host["down"]["status"] == "error" and by_host["down"]["baseline"] == "sg-a"
    assert doc["baseline"]["name"] == "sg-a"
    assert 'host="down",unit="sglang-qwen.service",baseline="sg-a",status="unreachable"' in prom.read_text()
    code, out, _, _ = dw("report", "--format", "text", "--no-store")
    row = [line for line in out.splitlines() if line.startswith("down ") or " down " in line]
    assert row, out
    code, _, _, _ = dw("report", "--format", "html", "-o", html, "--no-store", "--quiet")
    import re
    page = re.sub(r"<[^>]+>", "", html.read_text())
    assert "(not read)" not in page, page  # counted on sg-a's card, not on a card of its own without a baseline
    assert "Unreadable hosts (1)" in page and "down sglang-qwen.service" in page, page


def test_a_named_host_is_judged_against_its_own_inventory_baseline_by_every_command(site):
    dw, tmp, box = site
    # report --host: the config's limit (sglang) neither refuses nor narrows it; no --baseline needed
    code, _, err, doc = dw("report", "--host", "vl2", "--format", "json", "--no-store")
    assert code == 1, err
    units = {h["unit"]: h for h in doc["hosts"]}
    assert set(units) == {VL, PROXY} and {h["host"] for h in doc["hosts"]} == {"vl2"}
    assert units[VL]["comparison"]["baseline"]["name"] == "vl-b" and units[VL]["status"] == "drift"
    assert units[PROXY]["status"] == "no_baseline"  # null opts out of the group's sg-a
    # compare --host without --baseline: the inventory's for that unit
    code, out, err, doc = dw("compare", "--host", "vl1", "--unit", VL, "--format", "json")
    assert code == 0 and doc["baseline"]["name"] == "vl-b", (out, err)
    code, out, err, doc = dw("compare", "--host", "vl2", "--unit", VL, "--format", "json")
    assert code == 1 and doc["baseline"]["name"] == "vl-b", err
    code, out, err, _ = dw("compare", "--host", "vl1", "--unit", PROXY)
    assert code == 2 and "opts it out" in err and "Traceback" not in err
    # a typed --baseline wins, and says once that it differs from the inventory's
    code, out, err, doc = dw("compare", "--host", "vl1", "--unit", VL, "--baseline", "sg-a", "--format", "json")
    notes = [line for line in err.splitlines() if "replaces the inventory's baseline" in line]
    assert len(notes) == 1 and "vl1 vllm-qwen.service (vl-b)" in notes[0], err
    assert doc["baseline"]["name"] == "sg-a"
    code, out, err, doc = dw("report", "--host", "vl1", "--unit", VL, "--baseline", "sg-a", "--format", "json",
                             "--no-store")
    notes = [line for line in err.splitlines() if "replaces the inventory's baseline" in line]
    assert len(notes) == 1 and "vl1 vllm-qwen.service (vl-b)" in notes[0], err
    assert doc["hosts"][0]["comparison"]["baseline"]["name"] == "sg-a"
    # show and baseline save look the host up in the config's inventory too
    code, out, err, _ = dw("show", "--host", "vl1", "--unit", VL)
    assert code == 0 and "max-num-seqs" in out, err
    code, _, err, _ = dw("baseline", "save", "from-vl1", "--host", "vl1", "--unit", VL)
    assert code == 0 and (tmp / "baselines" / "from-vl1.yaml").is_file(), err
    first = box.messages[0]  # report --host vl2 mailed its drift, about vl2 alone
    body = first.get_body(("plain",)).get_content()
    assert "vl2" in body and not any(h in body for h in ("sg1", "sg2", "vl1", "down "))


def test_snapshot_and_history_resolve_alike(site):
    dw, tmp, _ = site
    code, out, err, _ = dw("snapshot", "--unit-file", tmp / "sg.service", "--host-name", "ref")
    assert code == 0 and [line.split("\t")[0] for line in out.splitlines()] == ["ref"], out  # no inventory host
    code, out, err, _ = dw("snapshot", "vl2")  # a host named: its inventory units, the limit ignored
    assert code == 0 and sorted(line.split("\t")[1] for line in out.splitlines()) == [PROXY, VL], (out, err)
    code, out, err, _ = dw("snapshot", "--inventory", tmp / "fleet.yaml", "--limit", "vllm")
    assert code == 0 and {line.split("\t")[0] for line in out.splitlines()} == {"vl1", "vl2"}, err
    code, _, err, _ = dw("snapshot", "--limit", "vllm", "vl1")
    assert code == 2 and "--limit chooses among an inventory's hosts" in err
    # history over the typed inventory: each unit's findings against its own baseline, no --baseline
    code, out, err, doc = dw("history", "--inventory", tmp / "fleet.yaml", "--limit", "vllm", "--format", "json")
    assert code == 0, err
    units = {(u["host"], u["unit"]): u for u in doc["units"]}
    assert units[("vl2", VL)]["baseline"]["name"] == "vl-b"
    assert any(f["key"] == "enforce_eager" for f in units[("vl2", VL)]["findings"]), units[("vl2", VL)]
    assert units[("vl1", VL)]["findings"] == []
    assert units[("vl1", PROXY)]["baseline"] is None and "findings" not in units[("vl1", PROXY)]
    code, out, err, doc = dw("history", "vl2", "--unit", VL, "--format", "json")  # a named host: the config's
    assert code == 0 and [u["host"] for u in doc["units"]] == ["vl2"], err           # inventory names its baseline
    assert doc["baseline"]["name"] == "vl-b" and doc["units"][0]["findings"]
