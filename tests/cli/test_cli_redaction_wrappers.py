"""Secrets hidden in less obvious places never reach a snapshot, a baseline or a report.

Abbreviated flags (`--api-k`), values passed through `${VAR}`, `docker run -e`, `env NAME=…`,
`bash -c` scripts and Environment= lines a drop-in overrides.
"""

import pytest
from cli_helpers import run_in_process

PLANTED = ["oldpart1", "oldpart2", "leak333abbr", "leak two 222", "sk-viaenv-777", "hf_dock_999",
           "pw_dock_888", "envtok_444", "newtok_555"]

UNITS = {
    "bash.service": """\
[Service]
Environment="HF_TOKEN=oldpart1 oldpart2"
ExecStart=/bin/bash -c 'exec /v/bin/python -m sglang.launch_server --model-path /m --api-k leak333abbr --admin-api-key "leak two 222"'

# /etc/systemd/system/bash.service.d/override.conf
[Service]
Environment=HF_TOKEN=newtok_555
""",
    "docker.service": """\
[Service]
Environment=APIK=sk-viaenv-777
ExecStart=/usr/bin/docker run -e HF_TOKEN=hf_dock_999 --env MY_PASSWORD=pw_dock_888 img python3 -m sglang.launch_server --model-path /m --api-key ${APIK}
""",
    "env.service": """\
[Service]
ExecStart=/usr/bin/env GITHUB_TOKEN=envtok_444 /v/bin/python -m sglang.launch_server --model-path /m
""",
}


def _dw(*args, cwd):
    return run_in_process(*args, cwd=cwd)


@pytest.fixture
def units(tmp_path):
    paths = {}
    for name, text in UNITS.items():
        path = tmp_path / name
        path.write_text(("# /etc/systemd/system/" + name + "\n" if "override" in text else "") + text)
        paths[name] = path
    return paths


def _assert_clean(text: str, where: str):
    for secret in PLANTED:
        assert secret not in text, f"{secret!r} leaked into {where}"


@pytest.mark.parametrize("name", sorted(UNITS))
def test_snapshot_show_and_baseline_never_hold_secrets(tmp_path, units, name):
    store = tmp_path / "store"
    assert _dw("snapshot", "--unit-file", units[name], "--store", store, cwd=tmp_path).returncode == 0
    for fmt in ("json", "text"):
        run = _dw("show", "--unit-file", units[name], "--format", fmt, "--all", cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        _assert_clean(run.stdout, f"show --format {fmt}")
    assert _dw("baseline", "save", "b", "--unit-file", units[name], "--baselines-dir", tmp_path / "bl",
               cwd=tmp_path).returncode == 0
    # the store is a database: what it holds, as `store export` writes it
    assert _dw("store", "export", "--store", store, "-o", tmp_path / "exported", cwd=tmp_path).returncode == 0
    exported = list((tmp_path / "exported").rglob("*.yaml"))
    assert exported
    for saved in exported + list((tmp_path / "bl").glob("*.yaml")):
        _assert_clean(saved.read_text(), str(saved))


def test_changed_wrapper_secret_is_reported_redacted(tmp_path, units):
    other = tmp_path / "docker2.service"
    other.write_text(UNITS["docker.service"].replace("hf_dock_999", "hf_dock_000"))
    for fmt in ("text", "json", "markdown"):
        run = _dw("compare", "--baseline", units["docker.service"], "--unit-file", other, "--format", fmt,
                  cwd=tmp_path)
        assert run.returncode == 1, run.stderr
        _assert_clean(run.stdout, f"compare --format {fmt}")
        assert "hf_dock_000" not in run.stdout
        assert "changed (redacted)" in run.stdout


def test_environment_files_and_running_argv_are_scrubbed():
    """EnvironmentFile= contents (URL passwords, *_AUTH) and the running process's argv, as collected
    from a live host, never reach the stored snapshot in clear."""
    from driftwatch.collect.raw import RawUnit
    from driftwatch.fileio import dump_yaml
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict

    raw = RawUnit(host="h", unit="u.service",
                  text="[Service]\nEnvironmentFile=/root/sglang.env\n"
                       "ExecStart=/v/bin/python -m sglang.launch_server --model-path /m\n",
                  environment_files={"/root/sglang.env": "DATABASE_URL=postgres://u:hunter2pw@db/x\n"
                                                         "HF_AUTH=hf_auth_secret\n"},
                  running_argv=["/bin/bash", "-c", "exec /v/bin/python -m sglang.launch_server --model-path /m "
                                                   "--api-k sk-running-1"])
    saved = dump_yaml(snapshot_to_dict(build_snapshot(raw)))
    for secret in ("hunter2pw", "hf_auth_secret", "sk-running-1"):
        assert secret not in saved
    assert "postgres://u:<redacted:" in saved
