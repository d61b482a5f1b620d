"""Cron and systemd examples: shipped files == cron_example() defaults; quoting; systemd-analyze verify."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from driftwatch.errors import InputError
from driftwatch.notify.cron import FILES, cron_example

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("key", sorted(FILES))
def test_shipped_examples_match_the_generator(key):
    assert (ROOT / FILES[key]).read_text() == cron_example()[key], \
        f"{FILES[key]} is out of date: regenerate it from driftwatch.notify.cron.cron_example()"


def _cron_job(text):
    jobs = [ln for ln in text.splitlines() if ln and not ln.startswith("#") and not re.match(r"^[A-Z]+=", ln)]
    assert len(jobs) == 1
    return jobs[0]


def test_cron_line():
    t = cron_example(driftwatch="/opt/dw/bin/driftwatch", inventory="/etc/dw/inv.yaml", baseline="70toks",
                     email="ops@example.com,oncall@example.com", user="dwuser")
    assert "\nMAILTO=ops@example.com,oncall@example.com\n" in t["cron"]
    job = _cron_job(t["cron"])
    fields = job.split(None, 6)
    assert fields[:5] == ["17", "6", "*", "*", "*"] and fields[5] == "dwuser"
    cmd = fields[6]
    assert cmd.startswith("flock -n -E 75 /var/lib/driftwatch/report.lock /opt/dw/bin/driftwatch report ")
    argv = shlex.split(cmd.split(" >/dev/null")[0])
    assert argv[6:] == ["report", "--quiet", "--inventory", "/etc/dw/inv.yaml", "--baseline", "70toks",
                        "--baselines-dir", "/etc/driftwatch/baselines", "--store", "/var/lib/driftwatch/store",
                        "--email", "ops@example.com", "--email", "oncall@example.com",
                        "--output", "/var/lib/driftwatch/last-report.txt"]
    assert "password" not in cmd.lower()


def test_cron_quoting_of_odd_paths(tmp_path):
    t = cron_example(inventory="/srv/my inv/50% fleet.yaml", baseline="/srv/it's.yaml")
    job = _cron_job(t["cron"])
    assert "%" not in job.replace("\\%", "")  # an unescaped % would be a newline to cron
    cmd = job.split(None, 6)[6].replace("\\%", "%")
    argv = shlex.split(cmd.split(" >/dev/null")[0])
    assert "/srv/my inv/50% fleet.yaml" in argv and "/srv/it's.yaml" in argv


def test_cron_runs_under_sh_and_reports_a_skipped_run(tmp_path):
    """Run the job's command with /bin/sh: a held lock gives one stderr line, nothing else."""
    if not shutil.which("flock"):
        pytest.skip("flock not installed")
    fake = tmp_path / "driftwatch"
    fake.write_text("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args\"\nexit 1\n")
    fake.chmod(0o755)
    job = _cron_job(cron_example(driftwatch=str(fake))["cron"])
    cmd = job.split(None, 6)[6].replace("/var/lib/driftwatch/report.lock", str(tmp_path / "report.lock"))
    r = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=20)
    assert r.stdout == "" and r.stderr == ""       # exit 1 (drift) is not "skipped"
    assert (tmp_path / "args").read_text().startswith("report --quiet --inventory")
    with open(tmp_path / "report.lock", "w") as lock:
        import fcntl
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=20)
    assert r.stdout == "" and "skipped" in r.stderr and r.stderr.count("\n") == 1


def test_service_and_timer_content():
    t = cron_example()
    svc, timer = t["service"], t["timer"]
    for line in ["Type=oneshot", "User=driftwatch", "ProtectSystem=strict", "ProtectHome=read-only",
                 "PrivateTmp=yes", "NoNewPrivileges=yes", "StateDirectory=driftwatch",
                 "ReadWritePaths=/var/lib/driftwatch", "SuccessExitStatus=1"]:
        assert f"\n{line}\n" in svc, line
    assert re.findall(r"^ReadWritePaths=.*$", svc, re.M) == ["ReadWritePaths=/var/lib/driftwatch"]
    for line in ["Persistent=true", "RandomizedDelaySec=30min", "OnCalendar=*-*-* 06:00:00",
                 "Unit=driftwatch-report.service", "WantedBy=timers.target"]:
        assert f"\n{line}\n" in timer, line
    assert "password" not in re.search(r"ExecStart=(.*?)\n[A-Z]", svc, re.S).group(1).lower()


def test_systemd_quoting():
    svc = cron_example(inventory="/srv/my inv/50% $HOME.yaml")["service"]
    assert '"/srv/my inv/50%% $$HOME.yaml"' in svc


@pytest.mark.parametrize("kw", [{"user": "root; rm -rf /"}, {"email": "a@b.c\nMAILTO=evil"},
                                {"inventory": "/x\n* * * * * root evil"}, {"driftwatch": "driftwatch"},
                                {"email": "not an address"}, {"user": ""}])
def test_refuses_unsafe_values(kw):
    with pytest.raises(InputError):
        cron_example(**kw)


def _verify_possible():
    exe = shutil.which("systemd-analyze")
    return exe if exe and Path("/usr/lib/systemd").exists() else None


@pytest.mark.skipif(not _verify_possible(), reason="systemd-analyze not available")
def test_systemd_analyze_verify(tmp_path):
    """`systemd-analyze verify` loads the units in a test-mode manager inside this process only:
    it starts nothing and talks to no running systemd. ExecStart must exist, so point it at a real file."""
    exe = tmp_path / "driftwatch"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    t = cron_example(driftwatch=str(exe))
    (tmp_path / "driftwatch-report.service").write_text(t["service"])
    (tmp_path / "driftwatch-report.timer").write_text(t["timer"])
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", "driftwatch-report.service", "driftwatch-report.timer"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    if r.returncode != 0 and re.search(r"/run/systemd|Failed to (initialize|allocate) manager|"
                                       r"Failed to (set up|setup) (the )?(test|environment)|cgroup", r.stderr):
        pytest.skip(f"systemd-analyze cannot run here (environment): {r.stderr.strip()[:200]}")
    assert r.returncode == 0, r.stderr
    assert "driftwatch-report" not in r.stderr, r.stderr


def test_templates_are_files_filled_by_one_function():
    from driftwatch.notify.cron import TEMPLATES, fill_template
    folder = ROOT / "driftwatch" / "data" / "templates"
    assert sorted(TEMPLATES.values()) == sorted(p.name for p in folder.glob("*.in"))
    assert fill_template(TEMPLATES["timer"]) == (folder / TEMPLATES["timer"]).read_text()
    with pytest.raises(ValueError, match="placeholders"):
        fill_template(TEMPLATES["service"], user="x")  # state_dir and exec_start missing
    with pytest.raises(ValueError, match="placeholders"):
        fill_template(TEMPLATES["timer"], user="x")  # nothing to put it in
    svc = cron_example(inventory="/srv/{user}.yaml")["service"]
    assert "/srv/{user}.yaml" in svc  # a value is inserted as it is, never filled in again


def test_templates_ship_in_the_wheel():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["driftwatch.data"]
    shipped = {p for g in globs for p in (ROOT / "driftwatch" / "data").glob(g)}
    assert set((ROOT / "driftwatch" / "data" / "templates").glob("*.in")) <= shipped
