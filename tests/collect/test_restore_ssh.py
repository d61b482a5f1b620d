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

from dw_restore import BASELINES, EXAMPLES, dw, no_traceback, on_disk  # noqa: E402

UNIT = "sglang-qwen.service"
DROPIN = "zzzz-driftwatch-restore.conf"
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
    assert r.returncode == 0, r.stdout + r.stderr  # applied, no drift left
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


def _plan(env: Lab, plan: Path, *args) -> dict:
    r = env.run("restore", "--baselines-dir", BASELINES, *args, "--plan-out", plan, "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert plan.stat().st_mode & 0o777 == 0o600
    doc = json.loads(plan.read_text())
    assert doc["schema"] == "driftwatch.restore-plan/v1"
    return doc


def test_a_unit_changed_after_review_is_refused(tmp_path, lab):
    """`--plan-out PLAN`, reviewed; the unit is edited; `--apply PLAN` re-reads it after the
    confirmation, finds its state hash moved and refuses with nothing written or reloaded."""
    env = Lab(tmp_path, lab, "dwrs-moved")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    plan = tmp_path / "restore.plan"
    doc = _plan(env, plan, "--baseline", "70toks", "--host", env.name, "--unit", UNIT)
    [t] = doc["targets"]
    assert t["host"] == env.name and t["unit"] == UNIT and t["state_hash"].startswith("sha256:")
    assert t["path"] == f"/etc/systemd/system/{UNIT}.d/{DROPIN}" and "--speculative-num-steps 3" in t["dropin"]
    assert t["baseline"] == "70toks" and t["baseline_sha256"].startswith("sha256:")
    # someone edits the unit between the review and the apply
    env.server.write(f"/etc/systemd/system/{UNIT}", U40.replace("--mem-fraction-static 0.88",
                                                                "--mem-fraction-static 0.80"))
    r = env.run("restore", "--apply", plan, "--yes", "--reload-command", "touch /root/reloaded")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refused: the unit changed since it was compared" in r.stdout
    assert not env.dropin_dir(UNIT).exists() or not list(env.dropin_dir(UNIT).iterdir())
    assert not os.path.exists(env.server.local_path("/root/reloaded"))
    # planned again in the state it is in now, it applies exactly what the plan holds
    doc = _plan(env, plan, "--baseline", "70toks", "--host", env.name, "--unit", UNIT)
    ok = env.run("restore", "--apply", plan, "--yes", "--reload-command", "true")
    assert ok.returncode == 0 and "no drift from baseline 70toks" in ok.stdout, ok.stdout + ok.stderr
    assert (env.dropin_dir(UNIT) / DROPIN).read_text() == doc["targets"][0]["dropin"]


def test_a_baseline_changed_after_review_is_refused(tmp_path, lab):
    """The baseline file is edited after the plan was reviewed (here: `User=root` slipped in): the
    plan is refused, never the unreviewed drop-in installed."""
    env = Lab(tmp_path, lab, "dwrs-base")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    bdir = tmp_path / "b"
    bdir.mkdir()
    (bdir / "70toks.yaml").write_text((BASELINES / "70toks.yaml").read_text())
    plan = tmp_path / "restore.plan"
    r = env.run("restore", "--baselines-dir", bdir, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
                "--plan-out", plan)
    assert r.returncode == 1, r.stdout + r.stderr
    text = (bdir / "70toks.yaml").read_text()
    assert "    Service.Type: simple\n" in text
    (bdir / "70toks.yaml").write_text(text.replace("    Service.Type: simple\n",
                                                   "    Service.Type: simple\n    Service.User: root\n"))
    r = env.run("restore", "--apply", plan, "--yes", "--reload-command", "touch /root/reloaded", "--format", "json")
    assert r.returncode == 2, r.stdout + r.stderr
    [u] = json.loads(r.stdout)["units"]
    assert u["refused"] and "the baseline 70toks changed since the plan was reviewed" in u["applied"], u
    assert not env.dropin_dir(UNIT).exists()
    assert not os.path.exists(env.server.local_path("/root/reloaded"))


def test_a_plan_edited_after_review_is_refused(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-edit")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    plan = tmp_path / "restore.plan"
    doc = _plan(env, plan, "--baseline", "70toks", "--host", env.name, "--unit", UNIT)
    doc["targets"][0]["dropin"] += "ExecStartPre=+/bin/sh -c 'id > /root/pwned'\n"
    plan.write_text(json.dumps(doc))
    r = env.run("restore", "--apply", plan, "--yes", "--reload-command", "true")
    assert r.returncode == 2 and "does not match its sha256" in r.stderr and r.stdout == "", r.stdout + r.stderr
    assert not env.dropin_dir(UNIT).exists()


def test_a_failed_reload_puts_the_previous_file_back_and_exits_2(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-rollback")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    previous = "# an earlier restore, kept by hand\n[Service]\nNice=1\n"
    env.server.write(f"/etc/systemd/system/{UNIT}.d/{DROPIN}", previous)
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
                "--apply", "--yes", "--reload-command", "echo reload broke >&2; exit 3", "--format", "json")
    assert r.returncode == 2, r.stdout + r.stderr
    [u] = json.loads(r.stdout)["units"]
    assert "reload broke" in u["error"] and "exit 3" in u["error"], u
    assert u["applied"].startswith("rolled back: the previous file put back"), u
    assert (env.dropin_dir(UNIT) / DROPIN).read_text() == previous
    # none before: the drop-in is removed again; a failed restart is the same
    env.server.write(f"/etc/systemd/system/{UNIT}.d/{DROPIN}", "")
    os.remove(env.dropin_dir(UNIT) / DROPIN)
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
                "--apply", "--yes", "--reload-command", "true", "--restart", "--restart-command", "false",
                "--format", "json")
    assert r.returncode == 2, r.stdout + r.stderr
    [u] = json.loads(r.stdout)["units"]
    assert "`false` failed" in u["error"] and "the drop-in removed" in u["applied"], u
    assert not (env.dropin_dir(UNIT) / DROPIN).exists()
    assert [p.name for p in env.dropin_dir(UNIT).iterdir()] == []  # no temporary file left


def test_a_directory_or_symlink_at_the_target_is_refused(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-dir")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    target = env.dropin_dir(UNIT) / DROPIN
    target.mkdir(parents=True)
    args = ("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", UNIT,
            "--apply", "--yes", "--reload-command", "touch /root/reloaded")
    r = env.run(*args)
    assert r.returncode == 2 and "refused" in r.stdout and "is a directory" in r.stdout, r.stdout + r.stderr
    assert target.is_dir() and list(target.iterdir()) == []
    target.rmdir()
    (env.dropin_dir(UNIT) / "elsewhere.txt").write_text("x\n")
    target.symlink_to("elsewhere.txt")
    r = env.run(*args)
    assert r.returncode == 2 and "symlink" in r.stdout, r.stdout + r.stderr
    assert target.is_symlink() and (env.dropin_dir(UNIT) / "elsewhere.txt").read_text() == "x\n"
    assert not os.path.exists(env.server.local_path("/root/reloaded"))


def test_restart_gets_the_unit_name_quoted(tmp_path, lab):
    env = Lab(tmp_path, lab, "dwrs-quote")
    unit = "sg\\x2dlang.service"
    env.server.write(f"/etc/systemd/system/{unit}", U40)
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name, "--unit", unit,
                "--apply", "--yes", "--reload-command", "true", "--restart",
                "--restart-command", "printf '%s\\n' {unit} > /root/restarted", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert Path(env.server.local_path("/root/restarted")).read_text() == unit + "\n"


API_ENV = "API_KEY=sk-live-Zq8v3N1c7T0x5L2m\n"


def test_a_variable_reference_survives_over_ssh(tmp_path, lab):
    """`--api-key ${API_KEY}` with API_KEY in a readable EnvironmentFile=: the drop-in keeps the
    reference; the key is neither copied into ExecStart= nor shown."""
    env = Lab(tmp_path, lab, "dwrs-ref")
    with_ref = U40.replace("  --port 30000 \\", "  --port 30000 \\\n  --api-key ${API_KEY} \\").replace(
        "Type=simple\n", "Type=simple\nEnvironmentFile=/root/llm.env\n")
    assert "${API_KEY}" in with_ref
    env.server.write("/root/llm.env", API_ENV, 0o600)
    env.server.write(f"/etc/systemd/system/{UNIT}", with_ref)
    base = tmp_path / "base.service"
    base.write_text(with_ref.replace("--speculative-num-steps 1", "--speculative-num-steps 3"))
    r = env.run("restore", "--baseline", base, "--host", env.name, "--unit", UNIT, "--apply", "--yes",
                "--reload-command", "true", "--format", "json")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "sk-live-Zq8v3N1c7T0x5L2m" not in r.stdout + r.stderr
    installed = (env.dropin_dir(UNIT) / DROPIN).read_text()
    assert "  --api-key ${API_KEY} \\" in installed.splitlines(), installed
    assert "sk-live" not in installed and "$${" not in installed
    assert "--speculative-num-steps 3" in installed


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
        program = str(Path(sys.executable).parent / "driftwatch")
        proc = subprocess.Popen([program, *map(str, args), *map(str, env.ssh())],
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
    assert rc == 0 and "no drift from baseline 70toks" in out, out + err
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
    assert r.returncode == 0, r.stdout + r.stderr
    units = {u["host"]: u for u in json.loads(r.stdout)["units"]}
    assert units["dwrs-inv70"]["status"] == "nothing-to-restore" and "applied" not in units["dwrs-inv70"]
    assert units["dwrs-inv40"]["after"].startswith("no drift"), units["dwrs-inv40"]
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.conf")] == [f"dwrs-inv40/{UNIT}.d/{DROPIN}"]
    assert (out / "dwrs-inv40" / f"{UNIT}.d" / DROPIN).read_text() == (env.dropin_dir(UNIT) / DROPIN).read_text()
    assert not Path(other.local_path(f"/etc/systemd/system/{UNIT}.d")).exists()


VLLM_UNIT = "vllm-qwen.service"
VLLM_MTP1 = on_disk((EXAMPLES / "vllm-qwen-mtp1-eager.service").read_text())


def _mixed_fleet(tmp_path, lab) -> tuple[Lab, Path]:
    """An SGLang host and a vLLM host, each unit with its group's baseline in the inventory; the vLLM
    host's address is only in the inventory (not in ssh_config)."""
    env = Lab(tmp_path, lab, "dwmix-sg")
    vl = lab.start_sshd("dwmix-vl")
    env.server.write(f"/etc/systemd/system/{UNIT}", U40)
    vl.write(f"/etc/systemd/system/{VLLM_UNIT}", VLLM_MTP1)
    env.kh.write_text(env.kh.read_text() + vl.known_hosts_line())
    inv = tmp_path / "inventory.yaml"
    inv.write_text("groups:\n"
                   f"  sglang: {{hosts: [dwmix-sg], baseline: 70toks}}\n"
                   f"  vllm: {{hosts: [dwmix-vl], units: {{{VLLM_UNIT}: vllm-qwen-mtp3}}}}\n"
                   "hosts:\n"
                   f"  dwmix-sg: {{units: [{UNIT}]}}\n"
                   f"  dwmix-vl: {{address: {vl.address}, port: {vl.port}, user: root}}\n")
    env.vl = vl  # type: ignore[attr-defined]
    return env, inv


def test_mixed_fleet_each_unit_against_its_own_baseline_and_no_engine_change(tmp_path, lab):
    env, inv = _mixed_fleet(tmp_path, lab)
    # one typed SGLang baseline for the whole fleet: the vLLM unit is refused, never rewritten to SGLang
    r = env.run("restore", "--baselines-dir", BASELINES, "--baseline", "70toks", "--inventory", inv,
                "--format", "json")
    assert r.returncode == 2, r.stdout + r.stderr
    # the override is said once: the typed baseline replaces the inventory's for the vLLM unit
    assert [line for line in r.stderr.splitlines() if "note:" in line] == [
        f"driftwatch: note: --baseline 70toks replaces the inventory's baseline of 1 unit(s): dwmix-vl {VLLM_UNIT} "
        "(vllm-qwen-mtp3)"], r.stderr
    units = {u["host"]: u for u in json.loads(r.stdout)["units"]}
    vl = units["dwmix-vl"]
    assert vl["status"] == "cannot-restore" and vl["dropin"] is None, vl
    assert any("engine change" in p and "vllm -> sglang" in p for p in vl["problems"]), vl["problems"]
    assert units["dwmix-sg"]["status"] == "restorable"
    # without --baseline: each unit against the inventory's own baseline for it
    r = env.run("restore", "--baselines-dir", BASELINES, "--inventory", inv, "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    units = {u["host"]: u for u in json.loads(r.stdout)["units"]}
    assert units["dwmix-sg"]["baseline"] == "70toks" and units["dwmix-sg"]["status"] == "restorable"
    assert units["dwmix-vl"]["baseline"] == "vllm-qwen-mtp3" and units["dwmix-vl"]["status"] == "restorable"
    assert "sglang" not in units["dwmix-vl"]["dropin"].split("[Service]")[1]
    assert "--speculative-config" in units["dwmix-vl"]["dropin"]


def test_apply_acts_only_on_typed_targets(tmp_path, lab):
    """With `inventory:` in the config file, a bare `restore --apply` is refused naming what to type;
    `--host dwmix-vl` is looked up in that inventory (address, unit, baseline) and restored alone."""
    env, inv = _mixed_fleet(tmp_path, lab)
    config = tmp_path / "config.yaml"
    config.write_text(f"inventory: {inv}\nbaselines_dir: {BASELINES}\n")
    r = env.run("restore", "--config", config, "--apply", "--yes", "--reload-command", "true")
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and f"--inventory {inv}" in r.stderr, r.stderr
    assert not env.dropin_dir(UNIT).exists()
    assert not Path(env.vl.local_path(f"/etc/systemd/system/{VLLM_UNIT}.d")).exists()
    r = env.run("restore", "--config", config, "--host", "dwmix-vl", "--apply", "--yes", "--reload-command", "true",
                "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    [u] = json.loads(r.stdout)["units"]
    assert u["host"] == "dwmix-vl" and u["unit"] == VLLM_UNIT and u["baseline"] == "vllm-qwen-mtp3", u
    assert u["after"] == "no drift from baseline vllm-qwen-mtp3", u
    assert (Path(env.vl.local_path(f"/etc/systemd/system/{VLLM_UNIT}.d")) / DROPIN).is_file()
    assert not env.dropin_dir(UNIT).exists()  # the other host of the config's inventory: untouched


def test_apply_the_seed_story_with_its_override_conf(tmp_path, lab):
    """The seed story's shape on a host: `systemctl edit` wrote override.conf resetting ExecStart= (and
    pinning CUDA_VISIBLE_DEVICES); the restore drop-in sorts after it and wins: no drift left."""
    env = Lab(tmp_path, lab, "dwrs-override")
    seed = (EXAMPLES / "ddtree" / "sglang-qwen-current.service").read_text()
    fragment, override = seed.split("\n\n# /etc/systemd/system/sglang-qwen.service.d/override.conf\n")
    env.server.write(f"/etc/systemd/system/{UNIT}", on_disk(fragment) + "\n")
    env.server.write(f"/etc/systemd/system/{UNIT}.d/override.conf",
                     override.replace("--speculative-num-steps 3", "--speculative-num-steps 1"))
    before = env.run("compare", "--baselines-dir", BASELINES, "--baseline", "70toks", "--host", env.name,
                     "--unit", UNIT)
    assert before.returncode == 1, before.stdout + before.stderr
    _apply_and_compare(env, UNIT, ["--baseline", "70toks"], "--reload-command", "true")
    assert sorted(p.name for p in env.dropin_dir(UNIT).iterdir()) == ["override.conf", DROPIN]


HF = "hf_Zx81kQpLmN04vTrsUw92aBcD"


def test_an_installed_file_holding_a_secret_is_0600_and_never_shown(tmp_path, lab):
    """`bash -c 'export HF_TOKEN=…'`: the secret is masked in the output, the plan file is 0600 and the
    installed drop-in holding it is 0600."""
    env = Lab(tmp_path, lab, "dwrs-secret")
    script = ("[Unit]\nDescription=SGLang under bash -c\n\n[Service]\n"
              f"ExecStart=/bin/bash -c 'export HF_TOKEN={HF} && exec python3 -m sglang.launch_server "
              "--model-path /root/models/m --port 30000 --speculative-algorithm NEXTN --speculative-num-steps {steps} "
              "--speculative-eagle-topk 1'\n")
    env.server.write(f"/etc/systemd/system/{UNIT}", script.replace("{steps}", "1"))
    base = tmp_path / "base.service"
    base.write_text(script.replace("{steps}", "3"))
    plan = tmp_path / "restore.plan"
    r = env.run("restore", "--baseline", base, "--host", env.name, "--unit", UNIT, "--plan-out", plan)
    assert r.returncode == 1 and HF not in r.stdout + r.stderr, r.stdout + r.stderr
    assert plan.stat().st_mode & 0o777 == 0o600 and HF in plan.read_text()
    rc, out, err = _answered(env, "n", "restore", "--apply", plan, "--reload-command", "true")
    assert rc == 1 and "not applied (not confirmed)" in out, out + err
    assert "+ExecStart=/bin/bash -c" in err and "(redacted)" in err and HF not in out + err, err
    r = env.run("restore", "--apply", plan, "--yes", "--reload-command", "true", "--format", "json")
    assert r.returncode == 0 and HF not in r.stdout + r.stderr, r.stdout + r.stderr
    installed = env.dropin_dir(UNIT) / DROPIN
    assert HF in installed.read_text() and installed.stat().st_mode & 0o777 == 0o600
