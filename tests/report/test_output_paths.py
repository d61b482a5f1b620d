"""Outputs write only what is theirs (issue 32, item 4): a character device or FIFO is written in place and
stays what it is, a symbolic link is never replaced (refused, one line naming it and its target, unless it
leads to a device or stream such as /dev/stdout), a directory is refused, and only a regular file is
replaced atomically. The device nodes are real ones made here (os.mknod needs root, as cron runs it); the
CLI runs are subprocesses of the installed console script."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from driftwatch.errors import InputError
from driftwatch.fileio import write_atomic, write_new

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).parent / "driftwatch"
DRIFT_UNIT = ROOT / "examples/sglang-qwen-40toks.service"
CLEAN_UNIT = ROOT / "examples/sglang-qwen-70toks.service"

JUDGED = ("--baseline", "70toks", "--baselines-dir", ROOT / "baselines", "--no-store")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a device node (os.mknod) needs root")


def null_device(directory: Path) -> Path:
    """A character device node with /dev/null's major and minor: writes go nowhere, as root's cron would do."""
    node = directory / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    return node


def run_dw(*args, stdout=subprocess.PIPE, home: Path, timeout=60):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_") and k != "XDG_CONFIG_HOME"}
    env["HOME"] = str(home)
    return subprocess.run([str(DW), *map(str, args)], cwd=ROOT, env=env, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, check=False, timeout=timeout)


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


# ----------------------------------------------------------------------------- the writer itself


@as_root
def test_a_character_device_is_written_in_place_and_stays_a_device(tmp_path):
    node = null_device(tmp_path)
    before = os.stat(node)
    write_atomic(node, "a report\n", mode=0o600)
    after = os.lstat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert after.st_mode == before.st_mode  # the node's own permissions, not the report's 0600
    assert sorted(os.listdir(tmp_path)) == ["null"]  # no temp file left beside it


def test_a_fifo_is_written_in_place_for_its_reader(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    text = "line\n" * 50_000  # more than a pipe holds: the writer continues short writes
    write_atomic(fifo, text)
    reader.join(10)
    assert got == [text.encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_to_a_file_is_refused_naming_link_and_target(tmp_path):
    real = tmp_path / "real.prom"
    real.write_text("old\n")
    link = tmp_path / "driftwatch.prom"
    link.symlink_to(real)
    with pytest.raises(InputError) as err:
        write_atomic(link, "new\n")
    message = str(err.value)
    assert message.startswith(f"{link}: is a symbolic link (to {real})") and "\n" not in message
    assert os.path.islink(link) and os.readlink(link) == str(real) and real.read_text() == "old\n"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match="is a symbolic link"):
        write_atomic(dangling, "x")
    assert os.path.islink(dangling) and not (tmp_path / "nowhere").exists()
    with pytest.raises(InputError, match="is a symbolic link"):
        write_new(link, "x", force=True)  # baseline save --force, store export: the same writer
    assert real.read_text() == "old\n"


@as_root
def test_a_symlink_to_a_device_is_written_through(tmp_path):
    node = null_device(tmp_path)
    link = tmp_path / "out"
    link.symlink_to(node)
    write_atomic(link, "discarded\n")
    assert os.path.islink(link) and stat.S_ISCHR(os.stat(node).st_mode)


def test_a_directory_and_a_socket_are_refused(tmp_path):
    import socket
    folder = tmp_path / "reports"
    folder.mkdir()
    with pytest.raises(InputError, match=rf"^{folder}: is a directory, not a file to write$"):
        write_atomic(folder, "x")
    assert folder.is_dir() and not list(folder.iterdir())
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(InputError, match=rf"^{path}: is a socket"):
            write_atomic(path, "x")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_regular_file_is_still_replaced_atomically(tmp_path):
    target = tmp_path / "r.txt"
    target.write_text("old\n")
    inode = os.stat(target).st_ino
    write_atomic(target, "new\n", mode=0o600)
    assert target.read_text() == "new\n" and os.stat(target).st_ino != inode  # a new file renamed over it
    assert os.stat(target).st_mode & 0o777 == 0o600 and os.listdir(tmp_path) == ["r.txt"]


# ----------------------------------------------------------------------------- through the CLI

pytestmark = pytest.mark.skipif(not DW.exists(), reason=f"console script {DW} not installed")


@as_root
def test_report_onto_a_device_node_leaves_it_a_device(tmp_path, home):
    node = null_device(tmp_path)
    run = run_dw("report", "--unit-file", DRIFT_UNIT, *JUDGED, "-o", node,
                 "--prometheus", node, home=home)
    assert run.returncode == 1, run.stderr  # drift found, both outputs written
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.stat("/dev/null").st_rdev
    assert run.stdout == "" and run.stderr == ""


def test_report_to_a_file_does_not_print_the_document_too(tmp_path, home):
    out = tmp_path / "report.txt"
    run = run_dw("report", "--unit-file", DRIFT_UNIT, *JUDGED, "-o", out, home=home)
    assert run.returncode == 1, run.stderr
    assert "sglang-qwen-40toks" in out.read_text() and run.stdout == ""
    shown = run_dw("report", "--unit-file", DRIFT_UNIT, *JUDGED, home=home)
    moment = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # the two runs' own times
    assert shown.returncode == 1 and moment.sub("T", shown.stdout.strip()) == moment.sub("T", out.read_text().strip())


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout-a-pipe", "stdout-a-file"])
def test_output_dev_stdout_writes_the_document_to_standard_output(tmp_path, home, to_file):
    args = ("compare", "--unit-file", DRIFT_UNIT, "--baseline", "70toks", "--format", "json", "-o", "/dev/stdout")
    if to_file:
        sink = tmp_path / "captured.json"
        with open(sink, "w") as fh:
            run = run_dw(*args, stdout=fh, home=home)
        text = sink.read_text()
        assert stat.S_ISREG(os.lstat(sink).st_mode)
    else:
        run = run_dw(*args, home=home)
        text = run.stdout
    assert run.returncode == 1, run.stderr
    assert '"schema"' in text and text.lstrip().startswith("{")
    assert os.path.islink("/dev/stdout")  # never replaced


def test_prometheus_onto_a_symlink_is_one_line_and_exit_2(tmp_path, home):
    real = tmp_path / "real.prom"
    real.write_text("# old\n")
    link = tmp_path / "driftwatch.prom"
    link.symlink_to(real)
    run = run_dw("report", "--unit-file", CLEAN_UNIT, *JUDGED, "--quiet",
                 "--prometheus", link, home=home)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{link}: is a symbolic link (to {real})" in lines[0] and "Traceback" not in run.stderr
    assert os.path.islink(link) and real.read_text() == "# old\n"


def test_output_onto_a_directory_is_one_line_and_exit_2(tmp_path, home):
    run = run_dw("compare", "--unit-file", DRIFT_UNIT, "--baseline", "70toks", "-o", tmp_path, home=home)
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.strip().splitlines()
    assert str(tmp_path) in line and "is a directory" in line and line.startswith("driftwatch: ")


def test_restore_write_onto_a_symlinked_dropin_is_refused_and_the_link_kept(tmp_path, home):
    """`restore --write DIR` goes through the same writer: a link planted at the drop-in's place is not
    followed into the file it names (which could be anywhere) nor replaced."""
    out = tmp_path / "out"
    args = ("restore", "--baseline", "70toks", "--baselines-dir", ROOT / "baselines", "--unit-file", DRIFT_UNIT,
            "--write", out)
    first = run_dw(*args, home=home)
    assert first.returncode == 1, first.stderr
    [dropin] = list(out.rglob("*.conf"))
    victim = tmp_path / "victim.conf"
    victim.write_text("# someone else's file\n")
    dropin.unlink()
    dropin.symlink_to(victim)
    again = run_dw(*args, home=home)
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr
    [line] = again.stderr.strip().splitlines()
    assert line.startswith(f"driftwatch: {dropin}: is a symbolic link (to {victim})") and again.stdout == ""
    assert os.path.islink(dropin) and victim.read_text() == "# someone else's file\n"
