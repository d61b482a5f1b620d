"""`driftwatch restore --apply` against real OpenSSH servers (the lab's, on loopback): the drop-in is
installed atomically into the server's bind-mounted /etc/systemd/system, the reload is run or said
not to be possible (no systemd runs there: none is ever started), the unit is read again, and
`compare` then reports no drift. A unit changed since it was compared, or a login without root or
sudo rights, is refused with nothing written."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from dw_restore import BASELINES, EXAMPLES, dw, no_traceback, on_disk

UNIT = "sglang-qwen.service"
DROPIN = "50-driftwatch-restore.conf"
U40 = on_disk((EXAMPLES / "sglang-qwen-40toks.service").read_text())
U70 = on_disk((EXAMPLES / "sglang-qwen-70toks.service").read_text())
DOCKER = EXAMPLES / "vllm-docker-llama.service"


def exec_start_block(text: str) -> str:
    m = re.search(r"^ExecStart=\S.*?(?:\\\n.*?)*$", text, re.MULTILINE)
    assert m, text
    return m.group(0)


class Lab:
    """One server per test, a temporary HOME, ssh_config and known_hosts."""

    def __init__(self, tmp_path: Path, lab, name: str):
        self.tmp = tmp_path
        self.server = lab.start_sshd(name)
        self.name = name
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.cfg = tmp_path / "ssh_config"
        self.cfg.write_text(f"Host {name}\n    HostName {self.server.address}\n    Port {self.server.port}\n"
                            "    User root\n")
        self.kh = tmp_path / "known_hosts"
        self.kh.write_text(self.server.known_hosts_line())
        self.key = lab.client_key

    def ssh(self) -> list[str]:
        return ["--ssh-config", self.cfg, "-i", self.key, "--known-hosts", self.kh, "--connect-timeout", "3",
                "--command-timeout", "15"]

    def run(self, *args):
        r = dw(*args, *self.ssh(), cwd=self.tmp, env={"HOME": str(self.home), "SSH_AUTH_SOCK": ""})
        no_traceback(r)
        return r

    def dropin_dir(self, unit: str) -> Path:
        return Path(self.server.local_path(f"/etc/systemd/system/{unit}.d"))


def _apply_and_compare(env: Lab, unit: str, baseline: list[str], *extra) -> dict:
    r = env.run("restore", "--baselines-dir", BASELINES, *baseline, "--host", env.name, "--unit", unit,
                "--apply", "--yes", "--format", "json", *extra)
    assert r.returncode == 1, r.stdout + r.stderr
    [u] = json.loads(r.stdout)["units"]
    assert u["status"] == "restorable" and u["applied"] == f"installed /etc/systemd/system/{unit}.d/{DROPIN}", u
    assert u["after"].startswith("no drift"), u
    folder = env.dropin_dir(unit)
    installed = folder / DROPIN
    assert installed.is_file()
    assert installed.read_text() == u["dropin"]  # no secret in these units: what is shown is what is written
    assert installed.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []  # no temporary file left
    after = env.run("compare", "--baselines-dir", BASELINES, *baseline, "--host", env.name, "--unit", unit)
    assert after.returncode == 0, after.stdout + after.stderr
    return u


def test_apply_seed_story_then_compare_reports_no_drift(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-seed")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    u = _apply_and_compare(env, UNIT, ["--baseline", "70toks"], "--reload-command", "touch /root/reloaded",
                           "--restart", "--restart-command", "echo {unit} > /root/restarted")
    assert u["reload"] == "ran `touch /root/reloaded`"
    assert os.path.exists(env.server.local_path("/root/reloaded"))
    assert Path(env.server.local_path("/root/restarted")).read_text() == f"{UNIT}\n"
    assert "--speculative-num-steps 3" in (env.dropin_dir(UNIT) / DROPIN).read_text()
    # applied again: nothing left to restore, nothing written
    again = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name,
                    "--unit", UNIT, "--apply", "--yes")
    assert again.returncode == 0 and "nothing to restore" in again.stdout, again.stdout + again.stderr


def test_apply_over_a_dropin_that_reset_exec_start_without_systemd(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-dropin")
    env.server.write(f"/etc/systemd/system/{UNIT}", U70)
    env.server.write(f"/etc/systemd/system/{UNIT}.d/10-mtp1.conf",
                     "[Service]\nExecStart=\n" + exec_start_block(U40) + "\n")
    u = _apply_and_compare(env, UNIT, ["--baseline", "70toks"])
    # the default reload is not run where systemd does not run (never started here): said so
    assert u["reload"].startswith("not run: systemd is not running on the host"), u
    assert "restarted" not in u
    assert sorted(p.name for p in env.dropin_dir(UNIT).iterdir()) == ["10-mtp1.conf", DROPIN]


def test_apply_vllm_speculative_config(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-vllm")
    env.server.write("/etc/systemd/system/vllm-qwen.service",
                     on_disk((EXAMPLES / "vllm-qwen-mtp1-eager.service").read_text()))
    _apply_and_compare(env, "vllm-qwen.service", ["--baseline", "vllm-qwen-mtp3"], "--reload-command", "true")
    text = (env.dropin_dir("vllm-qwen.service") / DROPIN).read_text()
    assert "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'" in text


def test_apply_docker_run_unit(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-docker")
    drifted = on_disk(DOCKER.read_text()).replace("--max-num-seqs 64", "--max-num-seqs 8").replace(
        "-e VLLM_ATTENTION_BACKEND=FLASHINFER", "-e VLLM_ATTENTION_BACKEND=XFORMERS")
    env.server.write("/etc/systemd/system/vllm-llama.service", drifted)
    _apply_and_compare(env, "vllm-llama.service", ["--baseline", str(DOCKER)], "--reload-command", "true")
    text = (env.dropin_dir("vllm-llama.service") / DROPIN).read_text()
    assert "-e VLLM_ATTENTION_BACKEND=FLASHINFER vllm/vllm-openai:v0.15.0 \\" in text


def test_a_unit_changed_since_the_comparison_is_refused(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-moved")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    planned = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name,
                      "--unit", UNIT, "--format", "json")
    assert planned.returncode == 1, planned.stderr
    state = json.loads(planned.stdout)["units"][0]["state_hash"]
    # someone edits the unit between the review and the apply
    env.server.write(f"/etc/systemd/system/{UNIT}", U40.replace("--mem-fraction-static 0.88",
                                                                "--mem-fraction-static 0.80"))
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
                "--apply", "--yes", "--expect-state", state, "--reload-command", "touch /root/reloaded")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refused: the unit changed since it was compared" in r.stdout
    assert not env.dropin_dir(UNIT).exists() or not list(env.dropin_dir(UNIT).iterdir())
    assert not os.path.exists(env.server.local_path("/root/reloaded"))
    # with the state it is in now, it applies
    ok = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
                 "--apply", "--yes", "--reload-command", "true")
    assert ok.returncode == 1 and "no drift from baseline 70toks" in ok.stdout, ok.stdout + ok.stderr


def test_without_root_or_sudo_nothing_is_written(tmp_path, lab):
    """The login is not root (a fake `id` first on PATH) and `sudo -n` is refused: refused before
    anything is written."""
    env = Lab(tmp_path, lab, "dwrs-noroot")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    env.server.write("/usr/local/bin/id", '#!/bin/sh\ncase "$1" in -u) echo 1000 ;; -un) echo llm ;; '
                                          '*) echo "uid=1000(llm)" ;; esac\n', 0o755)
    env.server.write("/usr/local/bin/sudo", "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n", 0o755)
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
                "--apply", "--yes", "--reload-command", "touch /root/reloaded")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refused: logged in as llm, neither root nor allowed `sudo -n`; nothing written" in r.stdout
    assert not env.dropin_dir(UNIT).exists()
    assert not os.path.exists(env.server.local_path("/root/reloaded"))


def _answered(env: Lab, answer: str, *args):
    """The console script on a terminal (a pty as standard input) answering the confirmation."""
    import subprocess
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "driftwatch"), *map(str, args), *map(str, env.ssh())],
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=env.tmp, env={**os.environ, "HOME": str(env.home), "SSH_AUTH_SOCK": ""})
        os.write(master, (answer + "\n").encode())
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
        os.close(slave)
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def test_apply_asks_with_the_diff_unless_yes(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-ask")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    args = ("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
            "--apply", "--reload-command", "true")
    rc, out, err = _answered(env, "n", *args)
    assert rc == 1, out + err
    assert f"+++ /etc/systemd/system/{UNIT}.d/{DROPIN} (restore)" in err and "+  --speculative-num-steps 3 \\" in err
    assert "install this drop-in?" in err and "not applied (not confirmed)" in out
    assert not env.dropin_dir(UNIT).exists()
    rc, out, err = _answered(env, "y", *args)
    assert rc == 1 and "no drift from baseline 70toks" in out, out + err
    assert (env.dropin_dir(UNIT) / DROPIN).is_file()
    # without a terminal, --apply needs --yes
    r = env.run(*args)
    assert r.returncode == 2 and "--yes" in r.stderr and r.stdout == ""


def test_inventory_writes_one_file_per_host_and_applies_where_needed(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-inv40")
    other = lab.start_sshd("dwrs-inv70")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    other.write(f"/etc/systemd/system/{UNIT}", U70)
    env.cfg.write_text(env.cfg.read_text() + f"Host dwrs-inv70\n    HostName {other.address}\n    Port {other.port}\n"
                                             "    User root\n")
    env.kh.write_text(env.kh.read_text() + other.known_hosts_line())
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f"hosts:\n  dwrs-inv40:\n    units: [{UNIT}]\n  dwrs-inv70:\n    units: [{UNIT}]\n")
    out = tmp_path / "review"
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--inventory", inv,
                "--write", out, "--apply", "--yes", "--reload-command", "true", "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    units = {u["host"]: u for u in json.loads(r.stdout)["units"]}
    assert units["dwrs-inv70"]["status"] == "nothing-to-restore" and "applied" not in units["dwrs-inv70"]
    assert units["dwrs-inv40"]["after"].startswith("no drift"), units["dwrs-inv40"]
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.conf")] == [f"dwrs-inv40/{UNIT}.d/{DROPIN}"]
    assert (out / "dwrs-inv40" / f"{UNIT}.d" / DROPIN).read_text() == (env.dropin_dir(UNIT) / DROPIN).read_text()
    assert not Path(other.local_path(f"/etc/systemd/system/{UNIT}.d")).exists()
