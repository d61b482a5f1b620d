"""Issue 9 item 3: on a host without systemd as PID 1 there is no MainPID to ask, and the collector
took the first SGLang-looking process on the host as the running server of every unit (a false
"restart pending" on each). A process is now the unit's only on evidence: its command line is the
unit's, or it serves the unit's --port; otherwise the running process is unknown.

The first tests run the parser on hand-made script output; the last ones start a real process and
read it over SSH from a loopback sshd (root and /usr/sbin/sshd needed; no network namespaces).
"""
from __future__ import annotations

import os

from driftwatch.collect.commands import match_process, parse_output
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

PY = "/root/ml-env/bin/python3"


def unit_text(port: int | None, model: str = "/root/models/m", wrapper: str | None = None) -> str:
    args = f"-m sglang.launch_server --model-path {model}" + (f" --port {port}" if port else "")
    exec_start = f"{PY} {args}" if wrapper is None else f"{wrapper} 'exec {PY} {args}'"
    return f"# /etc/systemd/system/x.service\n[Service]\nExecStart={exec_start}\n"


def argv(port: int | None, model: str = "/root/models/m", *extra: str) -> list[str]:
    words = [PY, "-m", "sglang.launch_server", "--model-path", model]
    return words + (["--port", str(port)] if port else []) + list(extra)


def test_an_unrelated_engine_on_another_port_is_not_the_units():
    assert match_process(unit_text(31000), "x.service", [(100, argv(30000, "/root/models/other"))], reader=READER) is None
    assert match_process(unit_text(31000), "x.service", [(100, argv(None, "/root/models/other"))], reader=READER) is None
    assert match_process(unit_text(None), "x.service", [(100, argv(31000))], reader=READER) is None
    assert match_process(unit_text(31000), "x.service", [], reader=READER) is None


def test_the_same_command_line_is_the_units():
    assert match_process(unit_text(31000), "x.service", [(7, argv(30000)), (9, argv(31000))], reader=READER) == argv(31000)
    wrapped = unit_text(31000, wrapper="/bin/bash -c")  # bash execs the engine: the same engine argv
    assert match_process(wrapped, "x.service", [(9, argv(31000))], reader=READER) == argv(31000)


def test_the_process_serving_the_units_port_is_the_units_even_when_its_flags_differ():
    """This is what "restart pending" is for: the unit changed, the old process still serves its port."""
    old = argv(31000, "/root/models/m", "--speculative-num-steps", "3")
    assert match_process(unit_text(31000), "x.service", [(5, argv(30000, "/other")), (9, old)], reader=READER) == old
    assert match_process(unit_text(31000), "x.service", [(9, argv(None) + ["--port=31000"])], reader=READER) is not None


def test_two_processes_on_the_units_port_are_no_evidence():
    assert match_process(unit_text(31000), "x.service", [(5, argv(31000, "/a")), (9, argv(31000, "/b"))], reader=READER) is None


def test_a_unit_that_cannot_be_read_matches_nothing():
    assert match_process("[Service]\nUser=x\n", "x.service", [(9, argv(31000))], reader=READER) is None
    assert match_process(None, "x.service", [(9, argv(31000))], reader=READER) is None


def _output(nonce: str, text: str, procs: list[tuple[int, list[str]]]) -> bytes:
    """The script's answer on a host without systemd: `systemctl cat` failed, the file from disk,
    no SHOW, and every process mentioning sglang."""
    sec = lambda kind: f"\n@@DW:{nonce}:{kind}\n".encode()  # noqa: E731
    out = sec("CAT") + sec("CATRC") + b"1\n" + sec("CATERR") + b"System has not been booted with systemd\n"
    out += sec("F /etc/systemd/system/x.service") + text.split("\n", 1)[1].encode()
    for pid, words in procs:
        out += sec(f"PROC {pid}") + " ".join(f"{b:02x}" for b in "\0".join(words).encode() + b"\0").encode()
    return out + sec("END")


def test_parse_output_without_systemd_needs_evidence():
    nonce = "0123456789abcdef"
    unrelated = argv(30000, "/root/models/other")
    raw = parse_output("h", "x.service", nonce, _output(nonce, unit_text(31000), [(100, unrelated)]), reader=READER)
    assert raw.status == "fallback" and raw.main_pid is None
    assert raw.running_argv is None  # was `unrelated`: the first sglang process on the host
    served = argv(31000, "/root/models/m", "--tp-size", "2")
    raw = parse_output("h", "x.service", nonce, _output(nonce, unit_text(31000), [(100, unrelated), (200, served)]), reader=READER)
    assert raw.running_argv == served


# --------------------------------------------------------------------------- over SSH, a real process

def test_over_ssh_only_the_unit_on_the_processes_port_gets_it(loopback, known_hosts, options, server_process):
    """The loopback host holds sglang-qwen.service (--port 30000) and other.service (--port 30001),
    and no systemd. One old server runs on 30001 with other flags: other.service is "restart
    pending", sglang-qwen.service's running process is unknown (it used to get the same process)."""
    from driftwatch.collect.fleet import collect_fleet
    from driftwatch.collect.inventory import HostTarget
    from driftwatch.findings.compare import compare
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.snapshots.baseline import Baseline
    from driftwatch.snapshots.reader import snapshot_from_raw

    old = ["/root/ml-env/bin/python3", "-m", "sglang.launch_server", "--model-path", "/root/models/m",
           "--port", "30001", "--tp-size", "2"]
    server_process(old)
    target = HostTarget(name="loopback", address=loopback.address, user="root", port=loopback.port)
    qwen, other = collect_fleet([(target, "sglang-qwen.service"), (target, "other.service")],
                                options(known_hosts(loopback)), reader=READER)
    assert (qwen.status, other.status) == ("fallback", "fallback"), (qwen.error, other.error)
    assert qwen.running_argv is None
    assert other.running_argv == old
    rules = load_rules()
    for raw, pending in ((qwen, False), (other, True)):
        snap = snapshot_from_raw(raw)
        base = snapshot_from_raw(raw)
        base.runtime = {}
        keys = {f.key for f in compare(Baseline(name="b", snapshot=base), snap, rules).findings}
        assert ("process.argv" in keys) is pending, (raw.unit, keys)
    from driftwatch.report.show import render_show
    assert "running:     unknown" in render_show(snapshot_from_raw(qwen), "text", False)
    assert "running:     unknown" not in render_show(snapshot_from_raw(other), "text", False)


def test_plain_unit_file_says_nothing_about_a_running_process(tmp_path):
    from driftwatch.report.show import render_show
    from driftwatch.run.reading import snapshot_from_unit_file
    path = tmp_path / "x.service"
    path.write_text(unit_text(31000), encoding="utf-8")
    assert "running:" not in render_show(snapshot_from_unit_file(str(path)), "text", False)
    assert os.path.exists(path)
