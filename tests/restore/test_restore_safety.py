"""`driftwatch restore` writes only what it checked (issue 32): references kept, shell meaning kept,
keys in their own sections, every written key checked, no input adds a directive, unit names
validated, launcher secrets masked, no engine change, unit files only with a baseline."""
from __future__ import annotations

import json

from dw_restore import BASELINES, EXAMPLES, SYSTEMD_ANALYZE, dw, laid_over, no_traceback, systemd_accepts  # noqa: E402

UNIT = "sglang-qwen.service"
DROPIN = "zzzz-driftwatch-restore.conf"
U40 = EXAMPLES / "sglang-qwen-40toks.service"
U70 = EXAMPLES / "sglang-qwen-70toks.service"
BASE = ("--baselines-dir", BASELINES)


def restore_json(tmp_path, *args):
    r = dw("restore", *BASE, *args, "--format", "json", cwd=tmp_path)
    no_traceback(r)
    return json.loads(r.stdout), r


def compare_clean(tmp_path, unit_text: str, unit: str, dropin: str, baseline) -> None:
    combined = tmp_path / "after.service"
    combined.write_text(laid_over(unit_text, unit, {DROPIN: dropin}))
    r = dw("compare", *BASE, "--baseline", baseline, "--unit-file", combined, cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 0, r.stdout + r.stderr
    if SYSTEMD_ANALYZE:
        ok, said = systemd_accepts(tmp_path, unit, unit_text, {DROPIN: dropin})
        assert ok, said


def with_api_key_reference(text: str) -> str:
    return text.replace("  --port 30000 \\", "  --port 30000 \\\n  --api-key ${API_KEY} \\").replace(
        "Type=simple\n", "Type=simple\nEnvironmentFile=/etc/llm.env\n")


def test_a_variable_reference_is_kept_offline(tmp_path):
    """`--api-key ${API_KEY}` from an EnvironmentFile= this machine cannot read: the drop-in keeps the
    reference (never `--api-key ''`: the server would start without authentication)."""
    cur = tmp_path / "cur.service"
    cur.write_text(with_api_key_reference(U40.read_text()))
    base = tmp_path / "base.service"
    base.write_text(with_api_key_reference(U70.read_text()))
    doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", cur)
    assert r.returncode == 1, r.stdout + r.stderr
    [u] = doc["units"]
    assert u["status"] == "restorable", u
    lines = u["dropin"].splitlines()
    assert "  --api-key ${API_KEY} \\" in lines, u["dropin"]
    assert "''" not in u["dropin"] and "$$" not in u["dropin"]
    compare_clean(tmp_path, cur.read_text(), UNIT, u["dropin"], base)


BASH_C = ("[Unit]\nDescription=SGLang under bash -c\n\n[Service]\n"
          "ExecStart=/bin/bash -c 'cd ~ && exec python3 -m sglang.launch_server --model-path ~/models/m "
          "--download-dir /data/{{a,b}} --port 30000 --speculative-algorithm NEXTN --speculative-num-steps {steps} "
          "--speculative-eagle-topk 1{extra}'\n")


def test_a_bash_c_script_keeps_its_shell_meaning(tmp_path):
    """`~/models` and `/data/{a,b}` stay unquoted (the shell expands them as before): never
    `'~/models'`, which the check alone would not tell apart."""
    base = tmp_path / "base.service"
    base.write_text(BASH_C.format(steps=3, extra=" --max-running-requests 16"))
    cur = tmp_path / "cur.service"
    cur.write_text(BASH_C.format(steps=1, extra=""))
    doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", cur, "--unit", UNIT)
    assert r.returncode == 1, r.stdout + r.stderr
    [u] = doc["units"]
    exec_line = next(line for line in u["dropin"].splitlines() if line.startswith("ExecStart=/bin/bash"))
    assert "--model-path ~/models/m --download-dir /data/{a,b} --port 30000" in exec_line, exec_line
    assert "--speculative-num-steps 3 --speculative-eagle-topk 1 --max-running-requests 16'" in exec_line
    compare_clean(tmp_path, cur.read_text(), UNIT, u["dropin"], base)


def test_a_new_word_whose_shell_meaning_quoting_would_change_is_not_offered():
    """A word no script spells (`~/cache`): quoted it would not be the home directory any more, bare
    it is not what was checked; the script is not rewritten and the reason is said."""
    from driftwatch.findings.restore import Clear, _shell_script
    script = "cd /srv && exec python3 -m sglang.launch_server --model-path /m --port 30000"
    clear = Clear(["/bin/bash", "-c", script], ["/bin/bash", "-c", script],
                  ["--model-path", "/m", "--port", "30000"], "", {})
    assert _shell_script(clear, ["--model-path", "/m", "--download-dir", "~/cache"]) == "shell-meaning:~/cache"
    spelt = {"~/cache": "~/cache"}  # the baseline's own script spells it bare: its meaning, kept
    words, head = _shell_script(clear, ["--model-path", "/m", "--download-dir", "~/cache"], spelt)
    assert words[-1] == "cd /srv && exec python3 -m sglang.launch_server --model-path /m --download-dir ~/cache"
    assert _shell_script(clear, ["--model-path", "/m", "--served-model-name", "a b"], {})[0][-1].endswith(
        "--served-model-name 'a b'")


def test_every_key_lands_in_its_own_section(tmp_path):
    """[Unit] Description=/After= and [Install] WantedBy= are written under their own sections (under
    [Service] systemd ignores them); systemd loads it and compare finds no drift."""
    base = EXAMPLES / "vllm-docker-llama.service"
    cur = tmp_path / "vllm-llama.service"
    cur.write_text(base.read_text().replace("Description=vLLM Llama 3.1 8B (docker)", "Description=test box")
                   .replace("After=docker.service\n", "").replace("WantedBy=multi-user.target\n", ""))
    doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", cur)
    assert r.returncode == 1, r.stdout + r.stderr
    [u] = doc["units"]
    assert u["status"] == "restorable", u
    text = u["dropin"]
    body = text[text.index("[Unit]"):]
    unit_part, rest = body.split("[Install]") if "[Install]" in body else (body, "")
    assert "Description=vLLM Llama 3.1 8B (docker)" in unit_part.split("[Service]")[0]
    assert "\nAfter=docker.service\n" in unit_part.split("[Service]")[0]
    assert rest.strip() == "WantedBy=multi-user.target"
    compare_clean(tmp_path, cur.read_text(), "vllm-llama.service", text, base)
    # a dependency the baseline does not have cannot be taken away by a drop-in: said, not written
    cur.write_text(base.read_text().replace("After=docker.service", "After=docker.service network-online.target"))
    doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", cur)
    [u] = doc["units"]
    assert [(x["label"], x["reason"]) for x in u["left"]] == [("Unit.After=", "dependency")], u
    assert u["status"] == "by-hand" and u["dropin"] is None


def _hostile_baseline(tmp_path, name: str, user: str) -> str:
    bdir = tmp_path / "b"
    bdir.mkdir(exist_ok=True)
    text = (BASELINES / "70toks.yaml").read_text()
    text = text.replace("name: 70toks\n", f"name: {json.dumps(name)}\n").replace(
        "    Service.Type: simple\n", f"    Service.Type: simple\n    Service.User: {json.dumps(user)}\n")
    (bdir / "hostile.yaml").write_text(text)
    return str(bdir / "hostile.yaml")


def test_no_input_adds_a_directive(tmp_path):
    """A newline in a baseline's `name:` stays in its comment; a unit key value holding a newline
    (`root\\nExecStartPre=+/bin/sh -c …`, run as root) is never written."""
    cur = tmp_path / "cur.service"
    cur.write_text(U40.read_text().replace("Type=simple\n", "Type=simple\nUser=llm\n"))
    spec = _hostile_baseline(tmp_path, "70toks\nExecStartPre=+/bin/sh -c 'id > /tmp/pwned'", "root")
    doc, r = restore_json(tmp_path, "--baseline", spec, "--unit-file", cur)
    [u] = doc["units"]
    assert u["status"] == "restorable", u
    assert not any(line.startswith("ExecStartPre") for line in u["dropin"].splitlines()), u["dropin"]
    assert "\\nExecStartPre=+/bin/sh" in u["dropin"].splitlines()[0]
    assert "[Service]\nExecStart=" in u["dropin"] and "User=root" in u["dropin"]
    spec = _hostile_baseline(tmp_path, "70toks", "root\nExecStartPre=+/bin/sh -c 'id > /tmp/pwned'")
    doc, r = restore_json(tmp_path, "--baseline", spec, "--unit-file", cur, "--write", tmp_path / "out")
    [u] = doc["units"]
    assert u["status"] == "cannot-restore" and r.returncode == 2, u
    assert any("cannot be written as one assignment" in p for p in u["problems"]), u["problems"]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.conf"))


def test_an_exec_hook_the_baseline_has_is_checked_whatever_all_unit_keys_says(tmp_path):
    """A baseline saved without every unit key (the shipped ones) does not make the drop-in's own
    keys unchecked: each key written reads back as the baseline records it."""
    from driftwatch.findings.restore import RestorePlan, written_keys
    plan_text = "[Unit]\nAfter=\n[Service]\nExecStartPre=+/bin/sh -c 'id'\nUser=root\n"
    assert written_keys(plan_text) == {"Unit.After", "Service.ExecStartPre", "Service.User"}
    from pathlib import Path

    from driftwatch.findings.restore import _check_every_key
    from driftwatch.run.reading import named_baseline
    base = named_baseline("70toks", Path(BASELINES))
    assert base.snapshot.all_unit_keys is False
    plan = RestorePlan(host=None, unit=UNIT, baseline="70toks", path="/x", unit_keys={"Service.User": "root"})
    _check_every_key(plan, plan_text, base.snapshot, base)
    assert "unplanned:Service.ExecStartPre" in plan.problems and "unplanned:Unit.After" in plan.problems
    assert "unchecked:Service.User" in plan.problems


def test_unit_names_are_validated_for_unit_files(tmp_path):
    """`--unit-file F --write DIR` with an absolute or `../` unit name never writes outside DIR."""
    for name in ("../../escape.service", "/tmp/abs.service"):
        r = dw("restore", *BASE, "--baseline", "70toks", "--unit-file", U40, "--unit", name,
               "--write", tmp_path / "out", cwd=tmp_path)
        no_traceback(r)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "out").exists()
    hdr = tmp_path / "hdr.service"
    hdr.write_text(U40.read_text().replace("# /etc/systemd/system/sglang-qwen.service",
                                           "# /etc/systemd/system/../../../tmp/x.service", 1))
    r = dw("restore", *BASE, "--baseline", "70toks", "--unit-file", hdr, "--write", tmp_path / "out", cwd=tmp_path)
    no_traceback(r)
    written = [p for p in tmp_path.rglob("*.conf")]
    assert all(str(p).startswith(str(tmp_path / "out")) for p in written), written


HF = "hf_Zx81kQpLmN04vTrsUw92aBcD"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_launcher_secrets_are_masked_and_the_file_is_0600(tmp_path):
    """`bash -c 'export HF_TOKEN=…'` and `docker run -e AWS_SECRET_ACCESS_KEY=…`: masked in text and
    JSON as compare masks them; a written file holding one is 0600."""
    script = BASH_C.format(steps=1, extra="").replace("cd ~ && ", f"export HF_TOKEN={HF} && ")
    cur = tmp_path / "cur.service"
    cur.write_text(script)
    base = tmp_path / "base.service"
    base.write_text(script.replace("--speculative-num-steps 1", "--speculative-num-steps 3"))
    doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", cur, "--unit", UNIT)
    assert r.returncode == 1, r.stdout + r.stderr
    assert HF not in r.stdout + r.stderr and "(redacted)" in r.stdout
    text = dw("restore", *BASE, "--baseline", base, "--unit-file", cur, "--unit", UNIT, "--write", tmp_path / "o",
              cwd=tmp_path)
    assert text.returncode == 1 and HF not in text.stdout + text.stderr
    f = tmp_path / "o" / f"{UNIT}.d" / DROPIN
    assert HF in f.read_text() and f.stat().st_mode & 0o777 == 0o600
    docker = (EXAMPLES / "vllm-docker-llama.service").read_text().replace(
        "  -e HF_HUB_OFFLINE=1 \\", f"  -e HF_HUB_OFFLINE=1 -e AWS_SECRET_ACCESS_KEY={AWS} \\")
    dcur = tmp_path / "vllm-llama.service"
    dcur.write_text(docker.replace("--max-num-seqs 64", "--max-num-seqs 8"))
    dbase = tmp_path / "dbase.service"
    dbase.write_text(docker)
    doc, r = restore_json(tmp_path, "--baseline", dbase, "--unit-file", dcur, "--write", tmp_path / "d")
    assert r.returncode == 1, r.stdout + r.stderr
    assert AWS not in r.stdout + r.stderr
    f = tmp_path / "d" / "vllm-llama.service.d" / DROPIN
    assert AWS in f.read_text() and f.stat().st_mode & 0o777 == 0o600


def test_a_cross_engine_restore_is_refused_unless_asked(tmp_path):
    vllm = EXAMPLES / "vllm-qwen-mtp1-eager.service"
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", vllm, "--write", tmp_path / "o")
    [u] = doc["units"]
    assert r.returncode == 2 and u["status"] == "cannot-restore" and u["dropin"] is None, u
    assert any("engine change (engine vllm -> sglang)" in p for p in u["problems"]), u["problems"]
    assert not (tmp_path / "o").exists()
    other_model = tmp_path / "m.service"
    other_model.write_text(U40.read_text().replace("/root/models/Qwen3.6-27B", "/root/models/Llama-3-8B"))
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", other_model)
    assert r.returncode == 2 and any("engine change (model" in p for p in doc["units"][0]["problems"]), doc
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", other_model, "--allow-engine-change")
    assert doc["units"][0]["status"] == "restorable", doc
    assert "/root/models/Qwen3.6-27B" in doc["units"][0]["dropin"]


def test_a_unit_file_needs_a_baseline(tmp_path):
    r = dw("restore", *BASE, "--unit-file", U40, cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 2 and "--baseline" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_named_unit_file_is_never_widened_by_the_config_inventory(tmp_path):
    """With `inventory:` and `limit:` in the config file, `restore --unit-file F` restores F alone (the
    config's limit is ignored, not an error) and reads no host."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text("hosts:\n  unreachable-a.invalid: {units: [sglang-qwen.service], baseline: 70toks}\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"inventory: {inv}\nlimit: unreachable-a.invalid\nbaselines_dir: {BASELINES}\n")
    r = dw("restore", "--config", config, "--baseline", "70toks", "--unit-file", U40, "--format", "json",
           cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 1, r.stdout + r.stderr
    [u] = json.loads(r.stdout)["units"]
    assert u["host"] is None and u["unit"] == UNIT and u["status"] == "restorable", u


DOLLAR = ("[Service]\nExecStart=/bin/bash -c 'cd {ref} && exec python3 -m sglang.launch_server --model-path /m "
          "--port 30000 --speculative-algorithm NEXTN --speculative-num-steps {steps} --speculative-eagle-topk 1'\n")


def test_a_script_holding_a_reference_systemd_expands_is_not_rewritten(tmp_path):
    """`$$HOME` is the shell's `$HOME` (kept, doubled again); `${HOME}` inside the script is expanded by
    systemd, so the script as read holds its value: rewriting it would inline it, so it is refused."""
    for ref, status in (("$$HOME", "restorable"), ("${HOME}", "cannot-restore")):
        cur, base = tmp_path / "cur.service", tmp_path / "base.service"
        cur.write_text(DOLLAR.format(ref=ref, steps=1))
        base.write_text(DOLLAR.format(ref=ref, steps=3))
        doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", cur, "--unit", UNIT)
        [u] = doc["units"]
        assert u["status"] == status, u
        if status == "restorable":
            assert "ExecStart=/bin/bash -c 'cd $$HOME && exec python3" in u["dropin"]
            compare_clean(tmp_path, cur.read_text(), UNIT, u["dropin"], base)
        else:
            assert any("${VAR} references" in p for p in u["problems"]), u["problems"]


def test_the_baseline_prefixes_never_give_the_unit_a_privilege(tmp_path):
    """The launcher drifted and the baseline's ExecStart= runs with `+` (full privileges): the
    baseline's command line is written with the unit's own prefixes; the prefix is named, not copied."""
    base = tmp_path / "base.service"
    base.write_text(U70.read_text().replace("ExecStart=/root/ml-env/bin/python3",
                                            "ExecStart=+/usr/bin/numactl --interleave=all /root/ml-env/bin/python3"))
    doc, r = restore_json(tmp_path, "--baseline", base, "--unit-file", U40)
    [u] = doc["units"]
    exec_line = next(line for line in u["dropin"].splitlines() if line.startswith("ExecStart=/"))
    assert exec_line.startswith("ExecStart=/usr/bin/numactl --interleave=all /root/ml-env/bin/python3"), exec_line
    assert not any(line.startswith("ExecStart=+") for line in u["dropin"].splitlines())
    assert any(x["key"] == "exec.prefixes" and x["reason"] == "unrestorable" for x in u["left"]), u["left"]


def test_a_bad_plan_file_is_one_line_and_exit_2(tmp_path):
    good = {"schema": "driftwatch.restore-plan/v1", "targets": [{
        "host": "h", "unit": "../x.service", "address": {"name": "h"}, "state_hash": "sha256:0",
        "path": "/etc/systemd/system/../x.service.d/zzzz-driftwatch-restore.conf", "dropin": "", "dropin_sha256": "",
        "mode": "0644", "baseline": "b"}]}
    cases = {"notjson": ("{", "not JSON"), "schema": (json.dumps({"schema": "x"}), "schema"),
             "unit": (json.dumps(good), "../x.service"), "missing": (str(tmp_path / "none"), "cannot read")}
    for name, (text, words) in cases.items():
        path = tmp_path / f"{name}.plan"
        if name != "missing":
            path.write_text(text)
        r = dw("restore", "--apply", path if name != "missing" else text, "--yes", cwd=tmp_path)
        no_traceback(r)
        assert r.returncode == 2 and r.stdout == "", (name, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, (name, r.stderr)
    r = dw("restore", "--apply", tmp_path / "schema.plan", "--host", "h", "--yes", cwd=tmp_path)
    assert r.returncode == 2 and "the plan's own targets" in r.stderr, r.stderr
