"""The remote script, run locally with /bin/sh, and the parser of its sections."""
import shlex
import subprocess

import pytest

from driftwatch.collect.commands import (
    build_command,
    cat_paths,
    parse_cmdline_hex,
    parse_journal,
    parse_output,
    split_sections,
)
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do


def run_locally(unit, **kw):
    cmd = build_command(unit, **kw)
    out = subprocess.run(["/bin/sh", "-s"], input=cmd.script.encode(), capture_output=True, timeout=60).stdout
    return cmd, out


def test_script_is_posix_sh_and_completes():
    for shell in ("/bin/sh", "/bin/dash"):
        cmd = build_command("sglang-qwen")
        subprocess.run([shell, "-n"], input=cmd.script.encode(), check=True)
    cmd, out = run_locally("dw-surely-missing-unit.service")
    s = split_sections(out, cmd.nonce)
    assert s.complete
    raw = parse_output("h", cmd.unit, cmd.nonce, out, reader=READER)
    assert raw.status == "unit not found"


def test_unit_name_is_quoted_in_script():
    cmd = build_command("a\\x2db@c:d.service")
    assert "U='a\\x2db@c:d.service'" in cmd.script


def test_forged_header_in_file_content_is_just_text():
    nonce = "0123456789abcdef"
    out = (b"motd noise\n@@DW:" + nonce.encode() + b":CAT\n# /x.service\n@@DW:fake:END\n"
           b"\n@@DW:" + nonce.encode() + b":CATRC\n0\n")
    raw = parse_output("h", "x.service", nonce, out, reader=READER)
    assert raw.text == "# /x.service\n@@DW:fake:END\n" and raw.status == "ok"


def test_truncated_output_is_timeout():
    raw = parse_output("h", "x.service", "n", b"\n@@DW:n:CAT\n", timed_out=True, reader=READER)
    assert raw.status == "timeout" and raw.text is None


def test_pieces():
    assert cat_paths("# /a\nx\n# /not-a-header\n\n# /b\n") == ["/a", "/b"]
    assert parse_cmdline_hex(b" 70 79 00 2d 6d 00\n 73 00\n") == ["py", "-m", "s"]
    assert parse_cmdline_hex(b"") is None
    assert parse_journal("accept len: 3.20, gen throughput (token/s): 70.1\nfoo\n"
                         "accept len: 1.5\n", READER.engine_markers) == {"accept_length": 1.5, "throughput": 70.1}
    assert parse_journal("accept len: 3.20\n", ()) == {}  # no engine's parser: no figure


@pytest.mark.parametrize("unit", ["x@FRAGMENTS@.service", "a@MAXENV@.service", "b@UNIT@.service"])
def test_placeholders_inside_a_unit_name_are_not_substituted(unit):
    """Valid unit names may contain `@WORD@`; the script template is filled in one pass."""
    script = build_command(unit).script
    assert f"U={shlex.quote(unit)}\n" in script
    assert "@FRAGMENTS@" not in script.replace(unit, "")
    assert subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True).returncode == 0


def test_the_units_interpreter_is_never_executed():
    script = build_command("sglang-qwen.service").script
    assert '"$PY" -c' not in script and "$PY -c" not in script
    assert "dist-info/METADATA" in script


def test_a_script_longer_than_the_shells_read_block_still_runs_whole():
    """sh reads its script from stdin in blocks (dash: 8 KiB); stdin is redirected only around the
    function the script is, so its length never cuts it off."""
    cmd = build_command("dw-surely-missing-unit.service", interpreter="/opt/" + "v" * 20000 + "/bin/python3")
    assert len(cmd.script) > 3 * 8192
    out = subprocess.run(["/bin/dash", "-s"], input=cmd.script.encode(), capture_output=True, timeout=60).stdout
    assert split_sections(out, cmd.nonce).complete


def _alive_in_group(pgid: int) -> list[str]:
    """Processes of a process group that still run (zombies waiting for init to reap them do not)."""
    rows = subprocess.run(["ps", "-e", "-o", "pgid=,stat=,pid=,args="], capture_output=True, text=True).stdout
    return [r for r in rows.splitlines() if r.split()[0] == str(pgid) and not r.split()[1].startswith("Z")]


def test_the_script_kills_its_own_process_group_at_its_deadline(tmp_path):
    """A step that hangs where no working `timeout` bounds it ends with the whole script at its
    deadline, children included; run in a session of its own, as sshd runs a command."""
    import time
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\nsleep 300\n")
    (fake / "nvidia-smi").chmod(0o755)
    (fake / "timeout").write_text('#!/bin/sh\nshift\nexec "$@"\n')  # a `timeout` that bounds nothing
    (fake / "timeout").chmod(0o755)
    cmd = build_command("dw-surely-missing-unit.service", deadline=1)
    script = cmd.script.replace("PATH=/usr/local/sbin:", f"PATH={fake}:/usr/local/sbin:")
    start = time.monotonic()
    proc = subprocess.Popen(["/bin/sh", "-s"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(script.encode(), timeout=60)
    finally:
        subprocess.run(["pkill", "-9", "-g", str(proc.pid)], capture_output=True)  # never leave a hang behind
    assert time.monotonic() - start < 20
    assert proc.returncode == -9  # killed by its watchdog
    assert b":GPU\n" in out and not split_sections(out, cmd.nonce).complete
    time.sleep(0.2)
    assert _alive_in_group(proc.pid) == [], "the hung child outlived the script"


def test_a_finished_script_leaves_no_watchdog_behind():
    import time
    cmd = build_command("dw-surely-missing-unit.service", deadline=300)
    proc = subprocess.Popen(["/bin/sh", "-s"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            start_new_session=True)
    out, _ = proc.communicate(cmd.script.encode(), timeout=60)
    assert split_sections(out, cmd.nonce).complete
    time.sleep(0.2)
    assert _alive_in_group(proc.pid) == [], "processes left in the script's group"


TOPO_2 = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-31\nGPU1\tNV4\t X \t0-31\n"


def _with_fake_nvidia_smi(tmp_path, body: str, step_timeout: float = 30):
    """The script run locally with a fake nvidia-smi (sh `case` on its first argument) first on PATH."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "nvidia-smi").write_text("#!/bin/sh\n" + body)
    (fake / "nvidia-smi").chmod(0o755)
    cmd = build_command("dw-surely-missing-unit.service", step_timeout=step_timeout)
    script = cmd.script.replace("PATH=/usr/local/sbin:", f"PATH={fake}:/usr/local/sbin:")
    out = subprocess.run(["/bin/sh", "-s"], input=script.encode(), capture_output=True, timeout=60).stdout
    return cmd, out, parse_output("h", cmd.unit, cmd.nonce, out, reader=READER)


def test_link_matrix_is_read_where_two_gpus_answer(tmp_path):
    cmd, out, raw = _with_fake_nvidia_smi(tmp_path, f"""case "$1" in
  topo) printf '{TOPO_2}' ;;
  *) echo '0, NVIDIA H100 80GB HBM3, 81559 MiB'; echo '1, NVIDIA H100 80GB HBM3, 81559 MiB' ;;
esac
""")
    assert len(raw.gpus) == 2 and raw.interconnect == "nvlink"


def test_one_gpu_asks_for_no_link_matrix(tmp_path):
    cmd, out, raw = _with_fake_nvidia_smi(tmp_path, f"""case "$1" in
  topo) printf '{TOPO_2}' ;;
  *) echo '0, NVIDIA H100 80GB HBM3, 81559 MiB' ;;
esac
""")
    assert len(raw.gpus) == 1 and raw.interconnect is None
    assert b":TOPO" not in out


def test_a_failing_link_matrix_is_unknown_not_read(tmp_path):
    # it prints a valid matrix and then fails: its exit status (not head's) decides
    cmd, out, raw = _with_fake_nvidia_smi(tmp_path, f"""case "$1" in
  topo) printf '{TOPO_2}'; exit 9 ;;
  *) echo '0, NVIDIA H100 80GB HBM3, 81559 MiB'; echo '1, NVIDIA H100 80GB HBM3, 81559 MiB' ;;
esac
""")
    assert len(raw.gpus) == 2 and raw.interconnect is None
    assert split_sections(out, cmd.nonce).complete


def test_a_hung_link_matrix_costs_one_step(tmp_path):
    import time
    start = time.monotonic()
    cmd, out, raw = _with_fake_nvidia_smi(tmp_path, """case "$1" in
  topo) exec sleep 300 ;;
  *) echo '0, NVIDIA H100 80GB HBM3, 81559 MiB'; echo '1, NVIDIA H100 80GB HBM3, 81559 MiB' ;;
esac
""", step_timeout=1)
    assert time.monotonic() - start < 20
    assert split_sections(out, cmd.nonce).complete  # the script went on after the step's timeout
    assert len(raw.gpus) == 2 and raw.interconnect is None


@pytest.mark.slow  # waits for a timeout on purpose (seconds of wall time, no CPU)
def test_a_hung_systemctl_is_a_timeout_not_a_missing_unit(tmp_path):
    """systemctl cat that never answers is stopped by the step timeout (exit 124): the unit's status is
    "timeout", not "unit not found". The real script, run locally with a hanging systemctl first on
    PATH and a directory standing for /run/systemd/system (systemd as PID 1)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "systemctl").write_text("#!/bin/sh\nexec sleep 30\n")
    (fake / "systemctl").chmod(0o755)
    booted = tmp_path / "run-systemd-system"
    booted.mkdir()
    cmd = build_command("dw-surely-missing-unit.service", step_timeout=1)
    script = cmd.script.replace("PATH=/usr/local/sbin:", f"PATH={fake}:/usr/local/sbin:")
    script = script.replace("/run/systemd/system", str(booted))
    out = subprocess.run(["/bin/sh", "-s"], input=script.encode(), capture_output=True, timeout=60).stdout
    raw = parse_output("h", cmd.unit, cmd.nonce, out, reader=READER)
    assert raw.status == "timeout", (raw.status, raw.error)
    assert "did not answer" in raw.error and "not found" not in raw.error


def test_a_config_file_after_100_000_continuation_lines_is_read_within_the_deadline(tmp_path):
    """The remote script finds `--config FILE` and the model at the end of a 1 MB ExecStart= block of
    continuation lines within its own deadline (20 s here; the script kills itself then). Its awk
    pass joined the block into one string line by line: the square of the line count, 250 s for
    110 000 lines on a loaded machine, so the config file was never fetched (benchmarks/fleet_limits.py)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("max-num-seqs: 8\n")
    unit = tmp_path / "v.service"
    unit.write_text("[Service]\nExecStart=/opt/v/bin/vllm serve \\\n" + " --x 1 \\\n" * 100_000
                    + f" --config {cfg} \\\n --model=/dw-no-such-model\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "systemctl").write_text(f"#!/bin/sh\nfor a in \"$@\"; do case $a in cat) cat {unit}; exit 0 ;; "
                                    f"show) exit 0 ;; esac; done\nexit 1\n")
    (fake / "systemctl").chmod(0o755)
    booted = tmp_path / "run-systemd-system"
    booted.mkdir()
    cmd = build_command("v.service", gpus=False, deadline=20, engines=READER.engine_markers)
    script = cmd.script.replace("PATH=/usr/local/sbin:", f"PATH={fake}:/usr/local/sbin:")
    script = script.replace("/run/systemd/system", str(booted))
    out = subprocess.run(["/bin/sh", "-s"], input=script.encode(), capture_output=True, timeout=60).stdout
    assert split_sections(out, cmd.nonce).complete
    raw = parse_output("h", cmd.unit, cmd.nonce, out, reader=READER)
    assert raw.status == "ok" and raw.text.count("--x 1") == 100_000
    assert raw.engine_files == {str(cfg): "max-num-seqs: 8\n"}


def test_a_read_cut_while_the_unit_files_were_read_from_disk_says_drop_ins_may_be_missing():
    """The fallback read's unit files end with `TICK disk`; output cut before it is partial."""
    n = "0123456789abcdef"
    head = f"\n@@DW:{n}:CAT\n\n@@DW:{n}:CATRC\n1\n\n@@DW:{n}:TICK cat 1.00\n\n@@DW:{n}:F /etc/systemd/system/x.service\n"
    out = (head + "[Service]\nExecStart=/bin/true\n").encode()
    raw = parse_output("h", "x.service", n, out, timed_out=True, reader=READER)
    assert raw.status == "fallback" and "ExecStart=/bin/true" in raw.text
    assert "while the unit files were read from disk" in raw.incomplete and "--command-timeout" in raw.incomplete
    raw = parse_output("h", "x.service", n, out + f"\n@@DW:{n}:TICK disk 1.01\n".encode(), timed_out=True,
                       reader=READER)
    assert raw.status == "fallback" and raw.incomplete.startswith("read cut by --command-timeout after the unit text")
    raw = parse_output("h", "x.service", n, out + f"\n@@DW:{n}:TICK disk 1.01\n\n@@DW:{n}:END\n".encode(),
                       reader=READER)
    assert raw.incomplete is None


def test_a_complete_local_run_is_not_partial():
    cmd, out = run_locally("dw-surely-missing-unit.service", gpus=False)
    assert split_sections(out, cmd.nonce).complete
    assert parse_output("h", cmd.unit, cmd.nonce, out, reader=READER).incomplete is None


def test_a_cut_read_names_only_the_steps_its_script_had():
    """A second unit on a host asks no GPUs; without start-up markers there is no start-up step."""
    n = "0123456789abcdef"
    out = (f"\n@@DW:{n}:CAT\n[Service]\nExecStart=/bin/true\n\n@@DW:{n}:CATRC\n0\n"
           f"\n@@DW:{n}:TICK cat 1.00\n\n@@DW:{n}:SHOW\n\n@@DW:{n}:TICK show 1.01\n").encode()
    full = parse_output("h", "x.service", n, out, timed_out=True, reader=READER).incomplete
    assert full == ("read cut by --command-timeout after the unit text: process, version, GPUs, GPU links, journal, "
                    "start-up lines, environment, engine config and model config files not read")
    cmd = build_command("x.service", gpus=False)
    assert cmd.skipped == ("gpu", "topo", "startup")
    less = parse_output("h", "x.service", n, out, timed_out=True, reader=READER, skipped=cmd.skipped).incomplete
    assert less == ("read cut by --command-timeout after the unit text: process, version, journal, "
                    "environment, engine config and model config files not read")
