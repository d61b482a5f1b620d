"""`driftwatch restore` on unit files: the drop-in printed and written, laid over the unit, compared
again (no drift) and loaded by `systemd-analyze verify` (parse only)."""
from __future__ import annotations

import json
import re

import pytest
from dw_restore import BASELINES, EXAMPLES, SYSTEMD_ANALYZE, dw, laid_over, no_traceback, systemd_accepts  # noqa: E402

UNIT = "sglang-qwen.service"
DROPIN = "zzzz-driftwatch-restore.conf"
U40 = EXAMPLES / "sglang-qwen-40toks.service"
U70 = EXAMPLES / "sglang-qwen-70toks.service"
BASE = ("--baselines-dir", BASELINES)


def exec_start_block(text: str) -> str:
    m = re.search(r"^ExecStart=\S.*?(?:\\\n.*?)*$", text, re.MULTILINE)
    assert m, text
    return m.group(0)


def restore_json(tmp_path, *args) -> tuple[dict, object]:
    r = dw("restore", *BASE, *args, "--format", "json", cwd=tmp_path)
    no_traceback(r)
    doc = json.loads(r.stdout)
    assert doc["schema"] == "driftwatch.restore/v1"
    return doc, r


def written(tmp_path, unit: str, *args) -> str:
    out = tmp_path / "out"
    r = dw("restore", *BASE, *args, "--write", out, cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 1, r.stdout + r.stderr
    path = out / f"{unit}.d" / DROPIN
    assert path.is_file(), list(out.rglob("*"))
    assert [p.name for p in path.parent.iterdir()] == [DROPIN]  # no temporary file left behind
    return path.read_text()


def compare_after(tmp_path, unit_text: str, unit: str, dropins: dict, baseline: str) -> None:
    """The unit with its drop-ins reads as the baseline: `compare` exits 0; systemd accepts it."""
    combined = tmp_path / "after.service"
    combined.write_text(laid_over(unit_text, unit, dropins))
    r = dw("compare", *BASE, "--baseline", baseline, "--unit-file", combined, cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 0, r.stdout + r.stderr
    if SYSTEMD_ANALYZE:
        ok, said = systemd_accepts(tmp_path, unit, unit_text, dropins)
        assert ok, said


def test_seed_story_40_back_to_70(tmp_path):
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", U40)
    assert r.returncode == 1, r.stderr
    [u] = doc["units"]
    assert u["status"] == "restorable" and u["problems"] == [] and u["drift_after"] == []
    assert u["path"] == f"/etc/systemd/system/{UNIT}.d/{DROPIN}"
    assert {x["label"] for x in u["undoes"]} == {"--speculative-num-steps", "--context-length",
                                                 "--max-running-requests"}
    assert u["state_hash"].startswith("sha256:")
    text = written(tmp_path, UNIT, "--baseline", "70toks", "--unit-file", U40)
    assert text == u["dropin"]
    assert "baseline 70toks" in text and "# undoes DW101 --speculative-num-steps: 1 -> 3" in text
    lines = text.splitlines()
    assert lines[lines.index("[Service]") + 1] == "ExecStart="
    # the unit's own spelling: its interpreter path, the module launch, one option per line
    assert "ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server \\" in lines
    assert "  --speculative-num-steps 3 \\" in lines and "  --max-running-requests 16 \\" in lines
    assert exec_start_block(text) == exec_start_block(U70.read_text())  # exactly the 70 tok/s line
    compare_after(tmp_path, U40.read_text(), UNIT, {DROPIN: text}, "70toks")


def test_seed_story_with_a_dropin_that_reset_exec_start(tmp_path):
    """The fragment is the 70 tok/s unit; an operator's drop-in reset ExecStart= to the 40 tok/s line.
    The restore drop-in (50-) sorts after it (10-) and resets it again."""
    mtp1 = "[Service]\nExecStart=\n" + exec_start_block(U40.read_text()) + "\n"
    unit_text = laid_over(U70.read_text(), UNIT, {"10-mtp1.conf": mtp1})
    current = tmp_path / "current.service"
    current.write_text(unit_text)
    before = dw("compare", *BASE, "--baseline", "70toks", "--unit-file", current, cwd=tmp_path)
    assert before.returncode == 1
    text = written(tmp_path, UNIT, "--baseline", "70toks", "--unit-file", current)
    assert "--speculative-num-steps 3" in text
    compare_after(tmp_path, U70.read_text(), UNIT, {"10-mtp1.conf": mtp1, DROPIN: text}, "70toks")


def test_a_later_dropin_would_override_it_so_it_is_not_offered(tmp_path):
    """A drop-in sorting after zzzz-driftwatch-restore.conf would win over it: restore names that file
    and refuses (exit 2, nothing written)."""
    late = "[Service]\nExecStart=\n" + exec_start_block(U40.read_text()) + "\n"
    current = tmp_path / "current.service"
    current.write_text(laid_over(U70.read_text(), UNIT, {"zzzzz-late.conf": late}))
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", current, "--write", tmp_path / "out")
    assert r.returncode == 2
    [u] = doc["units"]
    assert u["status"] == "cannot-restore"
    assert any("would override it" in p and p.endswith(f"/etc/systemd/system/{UNIT}.d/zzzzz-late.conf")
               for p in u["problems"]), u["problems"]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.conf"))
    text = dw("restore", *BASE, "--baseline", "70toks", "--unit-file", current, cwd=tmp_path)
    assert text.returncode == 2 and "cannot restore" in text.stdout


def test_the_seed_story_override_conf_from_systemctl_edit_is_restored(tmp_path):
    """The seed story's own shape: `systemctl edit` wrote override.conf resetting ExecStart= (and a
    `zz-` drop-in sets more): the restore drop-in sorts after both and wins, with no drift left."""
    seed = EXAMPLES / "ddtree" / "sglang-qwen-current.service"
    text = seed.read_text()
    fragment, override = text.split("\n\n# /etc/systemd/system/sglang-qwen.service.d/override.conf\n")
    override = override.replace("--speculative-num-steps 3", "--speculative-num-steps 1")
    zz = "[Service]\nEnvironment=NCCL_DEBUG=INFO\n"
    current = tmp_path / "current.service"
    current.write_text(laid_over(fragment, UNIT, {"override.conf": override, "zz-debug.conf": zz}))
    base = tmp_path / "base.service"
    base.write_text(laid_over(fragment, UNIT, {"override.conf": override.replace(
        "--speculative-num-steps 1", "--speculative-num-steps 3")}))
    before = dw("compare", "--baseline", base, "--unit-file", current, cwd=tmp_path)
    assert before.returncode == 1, before.stdout
    dropin = written(tmp_path, UNIT, "--baseline", base, "--unit-file", current)
    assert "--speculative-num-steps 3" in dropin and "UnsetEnvironment=NCCL_DEBUG" in dropin
    combined = tmp_path / "after.service"
    combined.write_text(laid_over(fragment, UNIT, {"override.conf": override, "zz-debug.conf": zz, DROPIN: dropin}))
    after = dw("compare", "--baseline", base, "--unit-file", combined, cwd=tmp_path)
    assert after.returncode == 0, after.stdout
    if SYSTEMD_ANALYZE:
        ok, said = systemd_accepts(tmp_path, UNIT, fragment, {"override.conf": override, "zz-debug.conf": zz,
                                                               DROPIN: dropin})
        assert ok, said


def test_vllm_speculative_config(tmp_path):
    unit = EXAMPLES / "vllm-qwen-mtp1-eager.service"
    doc, r = restore_json(tmp_path, "--baseline", "vllm-qwen-mtp3", "--unit-file", unit)
    assert r.returncode == 1, r.stderr
    [u] = doc["units"]
    assert u["status"] == "restorable", u
    text = written(tmp_path, "vllm-qwen.service", "--baseline", "vllm-qwen-mtp3", "--unit-file", unit)
    assert "  --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'" in text.splitlines()
    assert "ExecStart=/opt/vllm/.venv/bin/vllm serve /models/Qwen3.6-27B \\" in text.splitlines()
    assert "--enforce-eager" not in text.split("[Service]")[1]
    compare_after(tmp_path, unit.read_text(), "vllm-qwen.service", {DROPIN: text}, "vllm-qwen-mtp3")


DOCKER = EXAMPLES / "vllm-docker-llama.service"


def _drifted_docker() -> str:
    text = DOCKER.read_text()
    text = text.replace("--max-num-seqs 64", "--max-num-seqs 8").replace(
        "-e VLLM_ATTENTION_BACKEND=FLASHINFER", "-e VLLM_ATTENTION_BACKEND=XFORMERS")
    text = text.replace("Restart=always\n", "Restart=on-failure\nEnvironment=NCCL_DEBUG=INFO\n")
    return text.replace("  --enable-chunked-prefill --max-num-batched-tokens 4096", "  --enforce-eager")


def test_docker_run_unit(tmp_path):
    """A `docker run` unit: the wrappers, `-e` variables and image spelt as the baseline unit has them;
    the Environment= added since is reset (the client's environment, a unit key), Restart= put back."""
    current = tmp_path / "vllm-llama.service"
    current.write_text(_drifted_docker())
    args = ("--baseline", DOCKER, "--unit-file", current)
    doc, r = restore_json(tmp_path, *args)
    assert r.returncode == 1, r.stdout + r.stderr
    [u] = doc["units"]
    assert u["status"] == "restorable", u
    text = written(tmp_path, "vllm-llama.service", *args)
    lines = text.splitlines()
    assert any(line.startswith("ExecStart=/usr/bin/docker run --rm --name vllm-llama") for line in lines), text
    assert "  -e VLLM_ATTENTION_BACKEND=FLASHINFER \\" in lines or any(
        "VLLM_ATTENTION_BACKEND=FLASHINFER" in line for line in lines)
    assert any("--max-num-seqs 64" in line for line in lines)
    # in a container unit Environment= reaches only the docker client: a unit key, reset as the baseline has none
    assert "Environment=" in lines and not any(line.startswith("Environment=NCCL") for line in lines)
    assert lines[-1] == "Restart=always"  # a scalar: the last assignment wins (no empty reset: systemd refuses it)
    combined = tmp_path / "after.service"
    combined.write_text(laid_over(current.read_text(), "vllm-llama.service", {DROPIN: text}))
    after = dw("compare", "--baseline", DOCKER, "--unit-file", combined, cwd=tmp_path)
    assert after.returncode == 0, after.stdout
    if SYSTEMD_ANALYZE:
        ok, said = systemd_accepts(tmp_path, "vllm-llama.service", current.read_text(), {DROPIN: text})
        assert ok, said


def test_keep_leaves_a_difference_as_the_unit_has_it(tmp_path):
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", U40, "--keep", "--max-running-requests")
    [u] = doc["units"]
    assert r.returncode == 1 and u["status"] == "restorable", u
    assert [x["label"] for x in u["left"]] == ["--max-running-requests"]
    assert "--max-running-requests" not in u["dropin"].split("[Service]")[1]
    assert [d["label"] for d in u["drift_after"]] == ["--max-running-requests"]


def test_nothing_to_restore(tmp_path):
    doc, r = restore_json(tmp_path, "--baseline", "70toks", "--unit-file", U70)
    assert r.returncode == 0
    assert doc["units"][0]["status"] == "nothing-to-restore" and doc["units"][0]["dropin"] is None
    text = dw("restore", *BASE, "--baseline", "70toks", "--unit-file", U70, "--write", tmp_path / "o", cwd=tmp_path)
    assert text.returncode == 0 and "nothing to restore" in text.stdout
    assert not list((tmp_path / "o").rglob("*.conf")) if (tmp_path / "o").exists() else True


SECRET_A = "sk-baseline-4f9a1c2e7d"
SECRET_B = "sk-drifted-81b3e0aa55"


def _with_key(text: str, key: str, env: str) -> str:
    text = text.replace("  --port 30000 \\", f"  --port 30000 \\\n  --api-key {key} \\")
    return text.replace("Type=simple\n", f"Type=simple\nEnvironment=HF_TOKEN={env}\n")


def test_a_drifted_secret_is_never_written_from_its_redacted_value(tmp_path):
    base = tmp_path / "base.service"
    base.write_text(_with_key(U70.read_text(), SECRET_A, "hf_baseline0123456789"))
    same = tmp_path / "same.service"  # the same secrets, other flags drifted: the unit's own key is kept
    same.write_text(_with_key(U40.read_text(), SECRET_A, "hf_baseline0123456789"))
    saved = dw("baseline", "save", "sec", "--unit-file", base, "--baselines-dir", tmp_path / "b", cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    stored = (tmp_path / "b" / "sec.yaml").read_text()
    assert SECRET_A not in stored
    out = dw("restore", "--baselines-dir", tmp_path / "b", "--baseline", "sec", "--unit-file", same,
             "--write", tmp_path / "w", cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert SECRET_A not in out.stdout + out.stderr and "(redacted)" in out.stdout
    dropin = tmp_path / "w" / f"{UNIT}.d" / DROPIN
    text = dropin.read_text()
    assert f"--api-key {SECRET_A}" in text  # the unit's own value, in the file only (mode 0600)
    assert dropin.stat().st_mode & 0o777 == 0o600
    # Now the key itself drifted: it is left as the unit has it and named "set it by hand".
    other = tmp_path / "other.service"
    other.write_text(_with_key(U40.read_text(), SECRET_B, "hf_drifted9876543210"))
    doc = json.loads(dw("restore", "--baselines-dir", tmp_path / "b", "--baseline", "sec", "--unit-file", other,
                        "--format", "json", cwd=tmp_path).stdout)
    [u] = doc["units"]
    reasons = {x["label"]: x["reason"] for x in u["left"]}
    assert reasons.get("--api-key") == "secret" and reasons.get("HF_TOKEN") == "secret", u["left"]
    assert "set it by hand" in json.dumps(u["left"])
    assert not any(x["label"] == "--api-key" for x in u["undoes"])  # not claimed as undone
    assert "# left alone: --api-key" in u["dropin"] and "# left alone: HF_TOKEN" in u["dropin"]
    assert u["status"] == "restorable", u
    assert SECRET_A not in json.dumps(doc) and SECRET_B not in json.dumps(doc)
    assert "HF_TOKEN" not in u["dropin"].split("[Service]")[1]
    assert "--speculative-num-steps 3" in u["dropin"]


@pytest.mark.parametrize("args, words", [
    (("--baseline", "70toks"), "give one of"),
    (("--baseline", "70toks", "--unit-file", "/nonexistent/x.service"), "x.service"),
    (("--baseline", "nope", "--unit-file", U40), "nope"),
    (("--baseline", "70toks", "--unit-file", U40, "--apply", "--yes"), "--apply"),
    (("--baseline", "70toks", "--unit-file", U40, "--restart"), "--restart"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    r = dw("restore", *BASE, *args, cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
    assert r.stdout == ""


BASH_C = ("[Unit]\nDescription=SGLang under bash -c\n\n[Service]\n"
          "ExecStart=/bin/bash -c 'source /root/ml-env/bin/activate && exec python3 -m sglang.launch_server "
          "--model-path /root/models/m --port 30000 --speculative-algorithm NEXTN --speculative-num-steps {steps} "
          "--speculative-eagle-topk 1{extra}'\n")


def test_bash_c_script_keeps_its_own_words(tmp_path):
    """The script's words before the engine (`source …/activate && exec python3`) are kept as written
    (no quoting of the shell's `&&`); only the engine's arguments change."""
    base = tmp_path / "base.service"
    base.write_text(BASH_C.format(steps=3, extra=" --max-running-requests 16"))
    cur = tmp_path / "cur.service"
    cur.write_text(BASH_C.format(steps=1, extra=""))
    text = written(tmp_path, "sglang-qwen.service", "--baseline", base, "--unit-file", cur, "--unit",
                   "sglang-qwen.service")
    assert ("ExecStart=/bin/bash -c 'source /root/ml-env/bin/activate && exec python3 -m sglang.launch_server "
            "--model-path /root/models/m --port 30000 --speculative-algorithm NEXTN --speculative-num-steps 3 "
            "--speculative-eagle-topk 1 --max-running-requests 16'") in text.splitlines()
    combined = tmp_path / "after.service"
    combined.write_text(laid_over(cur.read_text(), "sglang-qwen.service", {DROPIN: text}))
    after = dw("compare", "--baseline", base, "--unit-file", combined, cwd=tmp_path)
    assert after.returncode == 0, after.stdout
    if SYSTEMD_ANALYZE:
        ok, said = systemd_accepts(tmp_path, "sglang-qwen.service", cur.read_text(), {DROPIN: text})
        assert ok, said
