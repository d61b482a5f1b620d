"""A `systemd --test --user` oracle for tests/parse: parse only, it starts nothing. Never runs systemd without --test."""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

UNITS_DIR = Path(__file__).parent / "units"
SYSTEMD = "/lib/systemd/systemd"
NOBODY = 65534


def unit_fixture_paths() -> list[Path]:
    return sorted(UNITS_DIR.glob("*.service"))


# ------------------------------------------------------------------ systemd's quote_command_line()

_WS = " \t\n\r"
_NEED_ESCAPE = '"\\`$'
_NEED_QUOTES = _NEED_ESCAPE + "*?[" + "'()<>|&;!"


def _cescape_byte(b: int) -> bytes:
    table = {7: b"\\a", 8: b"\\b", 12: b"\\f", 10: b"\\n", 13: b"\\r", 9: b"\\t", 11: b"\\v",
             92: b"\\\\", 34: b'\\"', 39: b"\\'"}
    if b in table:
        return table[b]
    return b"\\" + b"%03o" % b


def _utf8_len(data: bytes, i: int) -> int:
    """utf8_encoded_valid_unichar(): length of a valid UTF-8 sequence at i holding a valid char, or -1."""
    for n in (1, 2, 3, 4):
        try:
            ch = data[i:i + n].decode("utf-8")
        except UnicodeDecodeError:
            continue
        c = ord(ch)
        if 0xFDD0 <= c <= 0xFDEF or (c & 0xFFFE) == 0xFFFE:
            return -1
        return n
    return -1


def shell_maybe_quote(arg: str) -> str:
    """systemd 252 shell_maybe_quote(arg, SHELL_ESCAPE_EMPTY), as used for the 'Command Line:' dump."""
    data = arg.encode("utf-8", "surrogateescape")
    if not data:
        return '""'
    i = 0
    while i < len(data):
        width = _utf8_len(data, i)
        if width < 0 or data[i] < 32 or data[i] == 127 or chr(data[i]) in _WS + _NEED_QUOTES:
            break
        i += width
    if i >= len(data):
        return arg
    out = bytearray(b'"')
    out += data[:i]
    while i < len(data):
        width = _utf8_len(data, i)
        b = data[i]
        if b < 32 or b == 127 or width < 0:
            out += _cescape_byte(b)
            i += 1
        elif width == 1:
            if chr(b) in "\\" + _NEED_ESCAPE:
                out += b"\\"
            out.append(b)
            i += 1
        else:
            out += data[i:i + width]
            i += width
    out += b'"'
    return out.decode("utf-8", "surrogateescape")


def quote_command_line(argv: list[str]) -> str:
    return " ".join(shell_maybe_quote(a) for a in argv)


# ------------------------------------------------------------------ the oracle

@dataclass
class OracleResult:
    load_state: str | None
    command_lines: list[str] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)
    stderr: str = ""
    specifiers: dict = field(default_factory=dict)


class SystemdOracle:
    """Runs `systemd --test --user --unit=NAME` on units written to a private temp dir, as uid 65534."""

    def __init__(self) -> None:
        self.as_root = os.geteuid() == 0
        self.user = pwd.getpwuid(NOBODY if self.as_root else os.geteuid())
        self.runs = 0

    def specifiers_for(self, unit_name: str, home: str, runtime_dir: str, fragment: str) -> dict:
        from driftwatch.parse.specifiers import unit_specifiers

        spec = unit_specifiers(unit_name, home=home, user=self.user.pw_name, hostname=socket.gethostname(),
                               fragment_path=fragment)
        spec.update(U=str(self.user.pw_uid), G=str(self.user.pw_gid), t=runtime_dir)
        spec.update(d=f"{runtime_dir}/credentials/{unit_name}")
        for letter in "gsSCLEqTV":  # user-manager values we do not model: keep them out of oracle units
            spec[letter] = None
        return spec

    def run(self, unit_name: str, files: list[tuple[str, str]]) -> OracleResult:
        """files: [(relative path under the unit dir, text)], fragment first."""
        top = tempfile.mkdtemp(prefix="dw-oracle-", dir="/tmp")
        try:
            units, rt, home = (os.path.join(top, d) for d in ("units", "rt", "home"))
            for d in (units, rt, home):
                os.mkdir(d)
            for rel, text in files:
                p = os.path.join(units, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w", encoding="utf-8", newline="") as fh:
                    fh.write(text)
            for root, dirs, fnames in os.walk(top):
                for d in dirs:
                    os.chmod(os.path.join(root, d), 0o755)
                for f in fnames:
                    os.chmod(os.path.join(root, f), 0o644)
            os.chmod(top, 0o755)
            os.chmod(rt, 0o700)
            if self.as_root:
                for root, dirs, fnames in os.walk(top):
                    for x in dirs + fnames:
                        os.chown(os.path.join(root, x), NOBODY, NOBODY)
                os.chown(top, NOBODY, NOBODY)
            env = {"SYSTEMD_UNIT_PATH": units + ":", "XDG_RUNTIME_DIR": rt, "HOME": home,
                   "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SYSTEMD_LOG_COLOR": "0"}
            cmd = [SYSTEMD, "--test", "--user", f"--unit={unit_name}", "--no-pager", "--log-target=console"]
            if self.as_root:
                cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + cmd
            assert "--test" in cmd
            proc = subprocess.run(cmd, env=env, capture_output=True, timeout=60, cwd=top,
                                  stdin=subprocess.DEVNULL)
            self.runs += 1
            out = proc.stdout.decode("utf-8", "surrogateescape")
            err = proc.stderr.decode("utf-8", "surrogateescape")
            res = self._parse_dump(out, unit_name)
            res.stderr = err
            res.specifiers = self.specifiers_for(unit_name, home, rt, os.path.join(units, files[0][0]))
            return res
        finally:
            shutil.rmtree(top, ignore_errors=True)

    @staticmethod
    def _parse_dump(out: str, unit_name: str) -> OracleResult:
        lines = out.split("\n")
        head = f"\t-> Unit {unit_name}:"
        try:
            start = lines.index(head)
        except ValueError:
            return OracleResult(load_state=None)
        res = OracleResult(load_state=None)
        in_exec_start = False
        for line in lines[start + 1:]:
            if line.startswith("\t-> "):
                break
            if line.startswith("\t\tUnit Load State: "):
                res.load_state = line.split(": ", 1)[1]
            elif line.startswith("\t\tEnvironment: "):
                res.environment.append(line[len("\t\tEnvironment: "):])
            if line.startswith("\t\t-> "):
                in_exec_start = line == "\t\t-> ExecStart:"
                continue
            if in_exec_start:
                if line.startswith("\t\t\tCommand Line: "):
                    res.command_lines.append(line[len("\t\t\tCommand Line: "):])
                elif not line.startswith("\t\t\t"):
                    in_exec_start = False
        return res


def oracle_available() -> str | None:
    """None when usable, else the reason to skip."""
    if not os.path.exists(SYSTEMD):
        return f"{SYSTEMD} not present"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv not available to drop root"
    try:
        pwd.getpwuid(NOBODY)
    except KeyError:
        return "no uid 65534"
    try:
        ver = subprocess.run([SYSTEMD, "--version"], capture_output=True, timeout=10, text=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {SYSTEMD}: {exc}"
    if not ver.startswith("systemd "):
        return "unexpected systemd --version output"
    return None



def oracle_unit_name(fixture_name: str) -> str:
    """Unit name to load a fixture under: templates get an instance with an escaped '-'."""
    if fixture_name.endswith("@.service"):
        return fixture_name.replace("@.service", "@gpu0-x\\x2dy.service")
    return fixture_name


def oracle_files(text: str, fixture_name: str) -> list[tuple[str, str]]:
    """Lay a plain unit or `systemctl cat` text out as files: fragment, then NAME.d/NN-*.conf drop-ins."""
    from driftwatch.parse.unitfile import split_files

    unit_name = oracle_unit_name(fixture_name)
    _, _, files, _ = split_files(text)
    if not files or files[0][0] is None:
        return [(fixture_name, text)]
    out = []
    for i, (fpath, numbered) in enumerate(files):
        body = "\n".join(line for _, line in numbered) + "\n"
        if i == 0:
            out.append((fixture_name, body))
        else:
            out.append((f"{unit_name}.d/{i:02d}-{os.path.basename(fpath or '')}", body))
    return out
