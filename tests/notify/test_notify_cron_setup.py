"""Item 17: the cron/systemd set-up works as generated.

- `driftwatch cron-example` writes absolute paths (executable, inventory, baselines directory) and
  warns when the executable is under /tmp or in a home directory User= cannot read;
- what it prints passes `systemd-analyze verify` (parsing only, in a tmp dir; never a manager);
- `report` looks baseline names up in --baselines-dir, $DRIFTWATCH_BASELINES or next to the config
  file, and an unknown name says which directories were searched;
- under --only-changes, drift going back to clean sends one "resolved" mail (real aiosmtpd server).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.config import baseline_search_dirs, resolve_baselines_dir
from driftwatch.errors import BaselineError, InputError
from driftwatch.notify import cron as ce

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
DRIFT_UNIT = ROOT / "examples/sglang-qwen-40toks.service"
CLEAN_UNIT = ROOT / "examples/sglang-qwen-70toks.service"

needs_dw = pytest.mark.skipif(not DW.exists(), reason=f"console script {DW} not installed")


def run_dw(args, cwd, home, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_") and k != "XDG_CONFIG_HOME"}
    env["HOME"] = str(home)
    env.update(env_extra or {})
    return subprocess.run([str(DW), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def _sections(out: str) -> dict[str, str]:
    parts = re.split(r"^# ---- (\S+)\n", out, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _job_argv(cron_text: str) -> list[str]:
    job = [ln for ln in cron_text.splitlines() if re.match(r"^\S+ \S+ \S+ \S+ \S+ \S+ flock ", ln)][0]
    cmd = job.split(None, 6)[6].split(" >/dev/null")[0].replace("\\%", "%")
    return shlex.split(cmd)[5:]  # after "flock -n -E 75 LOCK"


# --------------------------------------------------------------------------- absolute paths


def test_generator_refuses_relative_paths():
    for kw in ({"inventory": "inv.yaml"}, {"baselines_dir": "baselines"}, {"baseline": "baselines/x.yaml"}):
        with pytest.raises(InputError, match="absolute"):
            ce.cron_example(**kw)


@needs_dw
def test_cli_makes_every_path_absolute(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    r = run_dw(["cron-example", "--inventory", "inv.yaml", "--baselines-dir", "bl", "--driftwatch", "bin/dw"],
               work, tmp_path)
    assert r.returncode == 0, r.stderr
    s = _sections(r.stdout)
    argv = _job_argv(s[ce.FILES["cron"]])
    assert argv[0] == str(work / "bin/dw")
    assert argv[argv.index("--inventory") + 1] == str(work / "inv.yaml")
    assert argv[argv.index("--baselines-dir") + 1] == str(work / "bl")
    assert "--baseline" not in argv  # each unit's own baseline, from the inventory
    assert argv[argv.index("--store") + 1] == "/var/lib/driftwatch/store"  # the report feeds the store
    assert f"--baselines-dir {work / 'bl'}" in s[ce.FILES["service"]]
    assert all(a.startswith("/") for a in argv if "/" in a)


@needs_dw
def test_cli_default_executable_is_the_running_one(tmp_path):
    r = run_dw(["cron-example"], tmp_path, tmp_path)
    assert r.returncode == 0, r.stderr
    argv = _job_argv(_sections(r.stdout)[ce.FILES["cron"]])
    assert argv[0] == str(DW) and os.path.isabs(argv[0])


# --------------------------------------------------------------------------- warnings


def test_warns_for_an_executable_under_tmp():
    w = ce.path_warnings("/tmp/venv/bin/driftwatch", "driftwatch")
    assert len(w) == 1 and "under /tmp" in w[0] and "PrivateTmp" in w[0]
    assert ce.path_warnings("/usr/local/bin/driftwatch", "driftwatch") == []


def test_warns_for_a_home_directory_the_user_cannot_read(monkeypatch):
    import tempfile
    top = Path(tempfile.mkdtemp(prefix="dw-homes-"))  # not under pytest's 0700 basetemp
    top.chmod(0o755)
    tmp_path = top
    home = tmp_path / "home" / "alice"
    exe = home / ".venv" / "bin" / "driftwatch"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setattr(ce, "_home_dirs", lambda: [str(tmp_path / "home")])  # pretend: home directories
    home.chmod(0o700)
    try:
        w = [m for m in ce.path_warnings(str(exe), "nobody") if "home directory" in m]
        assert len(w) == 1 and str(home) in w[0] and "nobody" in w[0], w
        home.chmod(0o755)
        assert [m for m in ce.path_warnings(str(exe), "nobody") if "home directory" in m] == []
    finally:
        home.chmod(0o755)
        shutil.rmtree(top)


@needs_dw
def test_cli_warning_goes_to_stderr_not_into_the_files(tmp_path):
    fake = tmp_path / "dw"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    r = run_dw(["cron-example", "--driftwatch", fake], tmp_path, tmp_path)
    assert r.returncode == 0
    assert "warning" in r.stderr and "under /tmp" in r.stderr
    assert "driftwatch: warning" not in r.stdout


# --------------------------------------------------------------------------- systemd-analyze verify


def _verify(folder: Path, names: list[str]):
    exe = shutil.which("systemd-analyze")
    if not exe:
        pytest.skip("systemd-analyze not installed")
    r = subprocess.run([exe, "verify", "--man=no", *names], cwd=folder, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    if r.returncode != 0 and re.search(r"/run/systemd|Failed to (initialize|allocate|create) manager|cgroup|"
                                       r"Operation not permitted", r.stderr):
        pytest.skip(f"systemd-analyze cannot run here (environment): {r.stderr.strip()[:200]}")
    return r


@needs_dw
def test_generated_units_pass_systemd_analyze_verify(tmp_path):
    """What the command prints, saved as it is, verifies cleanly (ExecStart must exist: point it at
    a real executable; the files go to a tmp copy, never to /etc)."""
    exe = tmp_path / "opt" / "driftwatch"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    r = run_dw(["cron-example", "--driftwatch", exe, "--inventory", tmp_path / "inv.yaml",
                "--baselines-dir", tmp_path / "baselines"], tmp_path, tmp_path)
    assert r.returncode == 0, r.stderr
    s = _sections(r.stdout)
    units = tmp_path / "units"
    units.mkdir()
    for key in ("service", "timer"):
        (units / Path(ce.FILES[key]).name).write_text(s[ce.FILES[key]])
    v = _verify(units, ["driftwatch-report.service", "driftwatch-report.timer"])
    assert v.returncode == 0, v.stderr
    assert "driftwatch-report" not in v.stderr, v.stderr


# --------------------------------------------------------------------------- baseline directory


def test_search_dirs_order(tmp_path):
    cfg = tmp_path / "etc" / "config.yaml"
    assert baseline_search_dirs("/x", {}, {})[0] == (Path("/x"), "--baselines-dir")
    assert baseline_search_dirs("/x", {"DRIFTWATCH_BASELINES": "/x"}, {})[0][1] == "$DRIFTWATCH_BASELINES"
    assert baseline_search_dirs(None, {}, {"config_file": str(cfg)})[0][0] == (tmp_path / "etc" / "baselines").resolve()
    assert baseline_search_dirs(None, {}, {"config_file": str(cfg), "baselines_dir": "/b"})[0][0] == Path("/b")
    (d, why), = baseline_search_dirs(None, {}, {})
    assert d == Path(os.getcwd()) / "baselines" and "working directory" in why


def test_unknown_name_says_where_it_looked(tmp_path):
    (tmp_path / "bl").mkdir()
    (tmp_path / "bl" / "other.yaml").write_text("x: 1\n")
    with pytest.raises(BaselineError) as e:
        resolve_baselines_dir("70toks", str(tmp_path / "bl"), {}, {})
    msg = str(e.value)
    assert f"{tmp_path / 'bl'}/" in msg and "--baselines-dir" in msg and "other" in msg
    with pytest.raises(BaselineError, match="missing"):
        resolve_baselines_dir("70toks", str(tmp_path / "nope"), {}, {})


def test_config_relative_baselines_dir(tmp_path):
    from driftwatch.config import load_report_settings
    cfg = tmp_path / "config.yaml"
    cfg.write_text("baselines_dir: bl\nbaseline: 70toks\n")
    settings = load_report_settings(str(cfg), {})
    assert settings["baselines_dir"] == str(tmp_path / "bl")


@needs_dw
def test_report_from_another_directory_uses_the_config_files_baselines(tmp_path):
    """cron runs in $HOME: a bare name must come from next to the config file, not from ./baselines."""
    etc = tmp_path / "etc"
    (etc / "baselines").mkdir(parents=True)
    shutil.copy(ROOT / "baselines" / "70toks.yaml", etc / "baselines" / "70toks.yaml")
    (etc / "config.yaml").write_text("baseline: 70toks\n")
    cwd = tmp_path / "home"
    (cwd / "baselines").mkdir(parents=True)  # a decoy in the working directory: must not be used
    (cwd / "baselines" / "70toks.yaml").write_text("not: a baseline\n")
    r = run_dw(["report", "--config", etc / "config.yaml", "--unit-file", CLEAN_UNIT, "--quiet"], cwd, cwd)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    (etc / "baselines" / "70toks.yaml").unlink()
    r = run_dw(["report", "--config", etc / "config.yaml", "--unit-file", CLEAN_UNIT, "--quiet"], cwd, cwd)
    assert r.returncode == 2 and str(etc / "baselines") in r.stderr and "next to the config file" in r.stderr, r.stderr


@needs_dw
def test_report_in_the_working_directory_says_so(tmp_path):
    r = run_dw(["report", "--baseline", "70toks", "--unit-file", CLEAN_UNIT], ROOT, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "note: baseline 70toks is" in r.stderr and "--baselines-dir" in r.stderr
    r = run_dw(["report", "--baseline", "70toks", "--unit-file", CLEAN_UNIT], tmp_path, tmp_path)
    assert r.returncode == 2 and f"{tmp_path}/baselines/" in r.stderr and "working directory" in r.stderr
    r = run_dw(["report", "--baseline", "70toks", "--unit-file", CLEAN_UNIT], tmp_path, tmp_path,
               {"DRIFTWATCH_BASELINES": str(ROOT / "baselines")})
    assert r.returncode == 0 and "note" not in r.stderr, r.stderr


# --------------------------------------------------------------------------- resolved mail


@needs_dw
def test_resolved_mail_when_drift_goes_back_to_clean(smtp_server, tls_files, tmp_path):
    state = tmp_path / "state.json"
    env = {"DRIFTWATCH_SMTP_PASSWORD": "s3cret-smtp-pass"}

    def step(unit):
        return run_dw(["report", "--unit-file", unit, "--baseline", "70toks", "--baselines-dir", ROOT / "baselines",
                       "--email", "ops@example.com", "--from", "dw@example.com", "--smtp-host", "127.0.0.1",
                       "--smtp-port", smtp_server.port, "--smtp-user", "alerts", "--smtp-ca-file", tls_files.ca_file,
                       "--state", state, "--only-changes", "--quiet"], tmp_path, tmp_path, env)

    assert step(CLEAN_UNIT).returncode == 0 and smtp_server.received == []  # clean from the start: silence
    assert step(DRIFT_UNIT).returncode == 1 and len(smtp_server.received) == 1
    r = step(CLEAN_UNIT)
    assert (r.returncode, r.stderr) == (0, "") and len(smtp_server.received) == 2
    m = smtp_server.received[1].message
    assert str(m["Subject"]).strip().startswith("[driftwatch] resolved: ") and "70toks" in str(m["Subject"])
    assert m["X-Driftwatch-Status"] == "resolved"
    assert step(CLEAN_UNIT).returncode == 0 and len(smtp_server.received) == 2  # once, not every clean run


def test_no_resolved_mail_without_only_changes(clean_report, report):
    from driftwatch.notify.state import is_resolved, should_send, state_for
    prev = state_for(report, sent=True)
    assert is_resolved(clean_report, prev, True)
    assert not is_resolved(clean_report, prev, False)
    assert should_send(clean_report, prev, only_changes=False, always=False)[0] is False
    assert not is_resolved(clean_report, state_for(clean_report), True)
    assert not is_resolved(clean_report, None, True)
