"""A collector that does not log in as root (a deploy account, `user: monitor` in the inventory):
over a real sshd whose own /etc/passwd knows an unprivileged account (tests/collect/dw_sshlab.py,
`login_user`), a unit is read as root reads it, a readable EnvironmentFile= is read, and one the account
may not read (0600 root) is one warning — its variables are not guessed, nothing fails."""
from __future__ import annotations

import os
import textwrap
from dataclasses import replace

import dw_sshlab
import pytest
from dw_sshlab import LOGIN_UID

from driftwatch.collect.fleet import collect_fleet
from driftwatch.collect.inventory import HostTarget
from driftwatch.findings.compare import compare
from driftwatch.findings.rulebook import load_rules
from driftwatch.snapshots.baseline import Baseline
from driftwatch.snapshots.reader import EngineReader
from driftwatch.snapshots.snapshot import build_snapshot

UNIT = "sglang-env.service"
READER = EngineReader()


@pytest.fixture(scope="module")
def unprivileged(lab):
    if not dw_sshlab.is_root():
        pytest.skip("needs root (the account is bind-mounted into the server's mount namespace)")
    server = lab.start_sshd("unpriv", login_user="monitor")
    server.write(f"/etc/systemd/system/{UNIT}", textwrap.dedent("""\
        [Unit]
        Description=SGLang with environment files

        [Service]
        EnvironmentFile=/root/public.env
        EnvironmentFile=-/root/private.env
        ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /models/m --tp-size 2
        """))
    server.write("/root/public.env", "SGLANG_DISABLE_CUDNN_CHECK=1\n", 0o644)
    private = server.write("/root/private.env", "HF_TOKEN=hf_notarealtokenbutlongenough0123\nNCCL_DEBUG=INFO\n",
                           0o600)
    os.chown(private, 0, 0)
    return server


def _collect(server, known_hosts, options, user: str):
    opts = options(known_hosts(server))
    target = HostTarget(name="gpu-monitored", address=server.address, user=user, port=server.port, units=[UNIT])
    return collect_fleet([(target, UNIT)], opts, reader=READER)[0]


def test_the_account_is_really_unprivileged(unprivileged, known_hosts, options):
    """The login is uid LOGIN_UID on the server (else the rest proves nothing)."""
    import paramiko
    client = paramiko.SSHClient()
    client.load_host_keys(known_hosts(unprivileged))
    client.connect(unprivileged.address, unprivileged.port, username="monitor",
                   key_filename=options("x").identity, allow_agent=False, look_for_keys=False)
    try:
        _, out, _ = client.exec_command("id -u; cat /root/private.env 2>&1 | head -c 200")
        text = out.read().decode()
    finally:
        client.close()
    assert text.splitlines()[0] == str(LOGIN_UID)
    assert "hf_" not in text and "Permission denied" in text


def test_an_unreadable_environment_file_is_a_warning_and_no_value(unprivileged, known_hosts, options):
    raw = _collect(unprivileged, known_hosts, options, "monitor")
    assert raw.status in ("ok", "fallback"), raw.error
    assert raw.unreadable_environment_files == ["/root/private.env"]
    snap = build_snapshot(raw)
    assert snap.environment["SGLANG_DISABLE_CUDNN_CHECK"] == "1"
    assert "NCCL_DEBUG" not in snap.environment and "HF_TOKEN" not in snap.environment
    assert snap.unreadable_files == ["/root/private.env"]
    [said] = [i for i in snap.issues if i.key == "systemd.environment_files"]
    assert said.severity == "warning" and "EnvironmentFile=/root/private.env not readable" in said.message
    assert snap.engine.flags["tp_size"].value == 2
    # root on the same server reads both files (the difference is the account, not the unit) ...
    as_root = build_snapshot(_collect(unprivileged, known_hosts, options, "root"))
    assert as_root.environment["NCCL_DEBUG"] == "INFO" and not as_root.unreadable_files
    # ... and judged against root's reading, the variables the login could not read are not "removed"
    result = compare(Baseline(name="as-root", snapshot=as_root), snap, load_rules())
    assert not [f.difference.key for f in result.findings if f.difference.key.startswith("env.")]
    # a value both sides have, where one side may be overriding it from the file it could not read
    root_copy = replace(as_root, environment={**as_root.environment, "SGLANG_DISABLE_CUDNN_CHECK": "0"})
    [changed] = [f for f in compare(Baseline(name="as-root", snapshot=root_copy), snap, load_rules()).findings
                 if f.difference.key.startswith("env.")]
    assert changed.difference.key == "env.SGLANG_DISABLE_CUDNN_CHECK"
    assert any("/root/private.env, which could not be read" in n for n in changed.difference.notes)
