"""Issue 22 item 9, the smaller items: `history` of an unknown host is exit 2; `show --format json`
carries its schema; `snapshot --format json`; each snapshot failure said once; the findings table
never cuts a word (blocks below 80 columns); colour only on a terminal, as --color and NO_COLOR say.

Runs the real console script (subprocess); the colour test gives it a real pseudo-terminal."""
from __future__ import annotations

import os
import pty
import re
import select
import socket
import subprocess
from pathlib import Path

import pytest
from cli_helpers import DRIFTWATCH

REPO = Path(__file__).resolve().parents[2]
UNIT40 = REPO / "examples" / "sglang-qwen-40toks.service"
BASELINE = REPO / "baselines" / "70toks.yaml"
ANSI = "\x1b["


def _closed_port() -> int:
    """A loopback port nobody listens on (connection refused: no other address is contacted)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_history_of_an_unknown_host_is_one_line_exit_2(dw, tmp_path):
    store = tmp_path / "store"
    assert dw("snapshot", "--unit-file", UNIT40, "--host-name", "ct140", "--store", store).code == 0
    known = dw("history", "ct140", "--store", store)
    assert known.code == 0 and "ct140" in known.stdout
    r = dw("history", "nosuchhost", "--store", store)
    lines = r.stderr.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and r.stdout == "", r
    assert "nosuchhost" in lines[0] and "ct140" in lines[0]  # names what the store does hold
    r = dw("history", "ct140", "--unit", "other.service", "--store", store)
    assert r.code == 2 and "other.service" in r.stderr


def test_show_json_has_its_schema(dw):
    r = dw("show", "--unit-file", UNIT40, "--format", "json")
    assert r.code == 0 and r.json()["schema"] == "driftwatch.show/v1"


def test_snapshot_json_and_each_failure_said_once(dw, tmp_path):
    port = _closed_port()
    host = f"root@127.0.0.1:{port}"
    args = ["snapshot", host, "--unit", "x.service", "--unit-file", UNIT40, "--host-name", "ct140",
            "--store", tmp_path / "store", "--known-hosts", tmp_path / "kh", "--connect-timeout", "3"]
    r = dw(*args, "--format", "json")
    assert r.code == 2, r
    doc = r.json()
    assert doc["schema"] == "driftwatch.snapshot-run/v1"
    assert doc["summary"] == {"units": 2, "saved": 1, "failed": 1}
    ok, failed = doc["units"]
    assert (ok["host"], ok["status"], ok["error"]) == ("ct140", "ok", None) and "ct140" in ok["snapshot"]
    assert failed["host"] == f"127.0.0.1:{port}" and failed["snapshot"] is None and failed["status"] != "ok" and failed["error"]
    assert r.stderr.strip().splitlines() == [f"driftwatch: {failed['error']}"]

    text = dw(*args)
    assert text.code == 2
    said = text.stdout + text.stderr
    assert said.count(failed["error"]) == 1, said  # why: once, on stderr
    assert text.stderr.strip().splitlines() == [f"driftwatch: {failed['error']}"]
    lines = [line.split("\t") for line in text.stdout.splitlines()]
    assert [line[2] for line in lines] == ["ok", failed["status"]] and lines[1][3] == "-"  # its status only


def _pieces(word: str) -> set[str]:
    """The word and the parts a line break after one of its hyphens may leave (as textwrap breaks)."""
    cuts = [0, len(word)] + [i for i in range(2, len(word)) if word[i - 1] == "-" and word[i].isalnum()
                             and word[i - 2].isalnum()]
    return {word[a:b] for a in cuts for b in cuts if a < b}


def test_the_table_never_cuts_a_word_and_is_blocks_below_80(dw, tmp_path):
    args = ["compare", "--baseline", BASELINE, "--unit-file", UNIT40]
    words = dw(*args, env={"COLUMNS": "2000"}).stdout.split() + dw(*args, env={"COLUMNS": "79"}).stdout.split()
    allowed = {p for word in words for p in _pieces(word)}
    for columns in (60, 66, 70, 74, 78, 79, 80, 84, 90, 100, 110, 120, 140):
        r = dw(*args, env={"COLUMNS": str(columns)})
        assert r.code == 1
        lines = r.stdout.splitlines()
        assert all(len(line) <= columns for line in lines), columns
        table = any(re.match(r"\s*#\s+flag\s", line) for line in lines)
        if columns < 80:
            assert not table, f"a table at {columns} columns"
        if table:
            cut = [w for w in r.stdout.split() if w not in allowed and w.strip("-")]  # (not the header's rule)
            assert not cut, f"{columns} columns: cut words {cut[:5]}"


def _on_a_terminal(args: list[str], env: dict) -> str:
    """stdout of the console script run on a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(DRIFTWATCH), *map(str, args)], stdin=subprocess.DEVNULL, stdout=follower,
                            stderr=subprocess.DEVNULL, env=env, close_fds=True)
    os.close(follower)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
        proc.kill() if proc.poll() is None else None
        proc.wait(timeout=30)
    return out.decode("utf-8", "replace")


@pytest.mark.parametrize("command", [["compare", "--baseline", BASELINE, "--unit-file", UNIT40],
                                     ["report", "--baseline", BASELINE, "--unit-file", UNIT40, "--no-store"]])
def test_colour_only_on_a_terminal_as_asked(dw, tmp_path, command):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "DRIFTWATCH_COLOR")}
    env.update(TERM="xterm", HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    shown = _on_a_terminal(command, env)
    assert "\x1b[31m" in shown and "speculative" in shown                 # high severity in red
    if command[0] == "report":  # the host's section heading: its status in the table's colour
        assert "sglang-qwen.service: \x1b[31mdrift\x1b[0m, predicted" in " ".join(shown.split()), shown
    assert ANSI not in _on_a_terminal(command, {**env, "NO_COLOR": "1"})
    assert ANSI not in _on_a_terminal([*command, "--color", "never"], env)
    assert ANSI not in _on_a_terminal(command, {**env, "DRIFTWATCH_COLOR": "never"})
    piped = dw(*command, env={"HOME": str(tmp_path)})
    assert ANSI not in piped.stdout and "speculative" in piped.stdout       # not a terminal: plain
    forced = dw(*command, "--color", "always", env={"HOME": str(tmp_path), "NO_COLOR": "1"})
    assert ANSI in forced.stdout                                           # the option beats NO_COLOR
    out = tmp_path / "report.txt"
    written = _on_a_terminal([*command, "--color", "always", "--output", out], env)
    assert out.is_file() and ANSI not in out.read_text()                   # never in a file
    del written
