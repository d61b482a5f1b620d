"""A bare `driftwatch snapshot` and a bare `driftwatch compare --baseline NAME --host h2 --unit U`
against real sshd hosts, where the config file (~/.config/driftwatch/config.yaml, found by default)
names the inventory, the baselines, the store and the SSH settings (issue 22 item 6).

The hosts are the session lab's real OpenSSH servers on loopback (the lab kills them)."""
from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_in_process
from dw_sshlab import UNIT

REPO = Path(__file__).resolve().parents[2]
UNIT70 = (REPO / "examples" / "sglang-qwen-70toks.service").read_text().split("\n", 1)[1]
UNIT40 = (REPO / "examples" / "sglang-qwen-40toks.service").read_text().split("\n", 1)[1]


@pytest.fixture(scope="module")
def servers(lab):
    h1 = lab.start_sshd("dwcfg-h1")
    h1.write(f"/etc/systemd/system/{UNIT}", UNIT70)
    h2 = lab.start_sshd("dwcfg-h2")
    h2.write(f"/etc/systemd/system/{UNIT}", UNIT40)
    return {"h1": h1, "h2": h2}


def test_bare_commands_read_everything_from_the_config_file(tmp_path, lab, servers):
    home = tmp_path / "home"
    conf = home / ".config" / "driftwatch"
    (conf / "baselines").mkdir(parents=True)
    (conf / "ssh_config").write_text("".join(
        f"Host {name}\n    HostName {s.address}\n    Port {s.port}\n    User root\n" for name, s in servers.items()))
    (conf / "known_hosts").write_text("".join(s.known_hosts_line() for s in servers.values()))
    (conf / "inventory.yaml").write_text(f"groups:\n  gpu:\n    hosts: [h1, h2]\n    units: [{UNIT}]\nhosts:\n  h1:\n  h2:\n")
    (conf / "config.yaml").write_text(
        "inventory: inventory.yaml\nbaselines_dir: baselines\nstore: state/store\nknown_hosts: known_hosts\n"
        f"identity: {lab.client_key}\nssh_config: ssh_config\nconnect_timeout: 3\ncommand_timeout: 15\n"
        "parallel: 2\n")
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env: dict[str, str | None] = dict.fromkeys(("SSH_AUTH_SOCK", "DRIFTWATCH_CONFIG", "XDG_CONFIG_HOME"))
    env["HOME"] = str(home)

    def dw(*args):
        return run_in_process(*args, cwd=workdir, env=env)

    unit70 = tmp_path / "70.service"
    unit70.write_text(UNIT70)
    saved = dw("baseline", "save", "good", "--unit-file", unit70, "--unit", UNIT)
    assert saved.returncode == 0, saved.stderr
    assert (conf / "baselines" / "good.yaml").is_file()

    snap = dw("snapshot")
    assert snap.returncode == 0, snap.stderr
    assert "Traceback" not in snap.stderr
    stored = {tuple(line.split("\t")[:3]) for line in snap.stdout.splitlines()}
    assert stored == {("h1", UNIT, "fallback"), ("h2", UNIT, "fallback")}, snap.stdout  # no systemd: read from disk
    assert (conf / "state" / "store").is_dir()

    drifted = dw("compare", "--baseline", "good", "--host", "h2", "--unit", UNIT)
    assert drifted.returncode == 1, drifted.stderr
    assert "speculative" in drifted.stdout
    clean = dw("compare", "--baseline", "good", "--host", "h1", "--unit", UNIT)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    history = dw("history", "h2")  # the hosts named, not the config's whole inventory on top
    assert history.returncode == 0 and "h2" in history.stdout and "h1" not in history.stdout, history.stderr
    fleet = dw("history")  # bare: the config's inventory
    assert fleet.returncode == 0 and "h1" in fleet.stdout and "h2" in fleet.stdout, fleet.stderr
