"""`ssh_config: none` in the config file means "no ssh config", exactly as `--ssh-config none` (issue 32, item 6),
on a real sshd of the session lab: the user's ~/.ssh/config here sends the host to a user that does not exist,
so a run that reads it fails, and a run that reads no ssh config connects as root."""
from __future__ import annotations

import os

import pytest
from cli_helpers import run_in_process
from dw_sshlab import UNIT, plain_unit


@pytest.fixture(scope="module")
def server(lab):
    s = lab.start_sshd("dwcfg-none")
    s.write(f"/etc/systemd/system/{UNIT}", plain_unit(30010))
    return s


def test_ssh_config_none_in_the_file_is_the_typed_none(tmp_path, lab, server):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(f"Host {server.address}\n    User dw-no-such-user\n")
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "known_hosts").write_text(server.known_hosts_line())
    common = f"known_hosts: known_hosts\nidentity: {lab.client_key}\nconnect_timeout: 3\ncommand_timeout: 15\n"
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("DRIFTWATCH_")}
    env |= {"SSH_AUTH_SOCK": None, "XDG_CONFIG_HOME": None, "HOME": str(home)}

    def show(config_text: str | None, user: str = "", *typed: str):
        """`show` of the lab's unit; with a config file holding `config_text`, else with every option typed."""
        args = ["show", "--host", f"{user}{server.address}:{server.port}", "--unit", UNIT, *typed]
        if config_text is not None:
            (conf / "config.yaml").write_text(common + config_text)
            args += ["--config", str(conf / "config.yaml")]
        else:
            args += ["--known-hosts", str(conf / "known_hosts"), "-i", lab.client_key, "--connect-timeout", "3"]
        return run_in_process(*args, env=env, cwd=tmp_path)

    # by default ~/.ssh/config is read, and its User sends the host to a user that does not exist: proof it matters
    read = show("")
    assert read.returncode == 2 and "Traceback" not in read.stderr, read.stdout + read.stderr
    assert show("", "root@").returncode == 0  # a typed user wins over the ssh config's
    # no ssh config at all: the file's word and the typed word alike (user: the local one, root)
    for config_text, typed in (("ssh_config: none\n", ()), ('ssh_config: "NONE"\n', ()),
                               (None, ("--ssh-config", "none")), ("", ("--ssh-config", "none"))):
        run = show(config_text, "", *typed)
        assert run.returncode == 0, (config_text, typed, run.stderr)
        assert "no such ssh config file" not in run.stderr and UNIT in run.stdout
