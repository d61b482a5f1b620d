"""systemd unit files and `systemctl cat` output -> assignments, with systemd 252's file-level rules.

Ported from systemd 252 src/shared/conf-parser.c (config_parse / parse_line) and checked against
`systemd --test` 252:

- lines end at '\\n', '\\r', '\\r\\n', '\\n\\r' or NUL (read_line);
- a line whose first non-blank character is '#' or ';' is a comment, also inside a continuation;
- an odd number of trailing backslashes continues the line: the backslash becomes a space and the next
  non-comment line is appended verbatim (indentation kept); an empty line ends the continuation;
- ``Key = value``: whitespace around key and value is stripped (only " \\t\\n\\r");
- a line outside a section, without '=' or with an empty key is ignored with a warning;
- an invalid section header makes systemd refuse the whole file: UnitError.

`systemctl cat` output is recognised when the first meaningful line is a ``# /path`` header; every
header starts a new file (fragment, then drop-ins) and each file starts outside any section, as systemd
parses each file separately.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from driftwatch.errors import UnitError
from driftwatch.parse.said import Said

WHITESPACE = " \t\n\r"
COMMENTS = "#;"
UNIT_SUFFIXES = (
    ".service", ".socket", ".target", ".timer", ".mount", ".automount", ".swap", ".path",
    ".slice", ".scope", ".device",
)
_EOL = re.compile(r"\0|\r\n|\n\r|\r|\n")
_HEADER = re.compile(r"^# (/.*\S)\s*$")
_MASKED = re.compile(r"^# Unit (\S+) is masked\.\s*$")
_NOT_LOADED = re.compile(r"^# Unit (\S+) could not be loaded\.\s*$")
_WARNING_START = re.compile(r"^#? ?Warning: ")
_WARNING_MORE = re.compile(
    r"^# (This output shows |If fragments or drop-ins |Run 'systemctl |The unit file, source configuration)"
)


# [Service] keys that hold lists: each assignment adds to the list (an empty one resets it). Every
# other key is a scalar: the last assignment wins, across the fragment and its drop-ins.
LIST_KEYS = frozenset({
    "Environment", "EnvironmentFile", "UnsetEnvironment", "PassEnvironment", "ReadWritePaths", "ReadOnlyPaths",
    "InaccessiblePaths", "ExecPaths", "NoExecPaths", "SupplementaryGroups", "DeviceAllow", "AmbientCapabilities",
    "CapabilityBoundingSet", "BindPaths", "BindReadOnlyPaths", "LogExtraFields", "SystemCallFilter",
    "SystemCallArchitectures", "RestrictAddressFamilies", "RestrictFileSystems", "ExecStartPre", "ExecStartPost",
    "ExecStart", "ExecStop", "ExecStopPost", "ExecReload", "ExecCondition", "TemporaryFileSystem",
    "RuntimeDirectory", "StateDirectory", "CacheDirectory", "LogsDirectory", "ConfigurationDirectory",
    "RestartPreventExitStatus", "RestartForceExitStatus", "SuccessExitStatus", "IPAddressAllow", "IPAddressDeny",
    "SetCredential", "SetCredentialEncrypted", "LoadCredential", "LoadCredentialEncrypted", "ImportCredential",
    "Sockets", "FileDescriptorStoreMax", "DevicePolicy", "RestrictNamespaces", "SystemCallLog", "MountImages",
    "ExtensionImages", "ExtensionDirectories", "OpenFile", "RootImageOptions",
})


@dataclass
class Assignment:
    section: str
    key: str
    value: str
    path: str | None
    line: int  # line (1-based, within its file) where the assignment starts


@dataclass
class UnitFile:
    name: str | None
    paths: list[str] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    masked: bool = False
    comments: list[tuple[str | None, str]] = field(default_factory=list)  # (file, comment line)

    def raw_values(self, section: str, key: str) -> list[str]:
        """Every value of section/key in file order, without reset semantics."""
        return [a.value for a in self.assignments if a.section == section and a.key == key]

    def values(self, section: str, key: str) -> list[str]:
        """List semantics: an empty assignment drops everything before it (and is itself dropped)."""
        out: list[str] = []
        for value in self.raw_values(section, key):
            if value == "":
                out = []
            else:
                out.append(value)
        return out

    def get(self, section: str, key: str, default: str | None = None) -> str | None:
        """Scalar semantics: the last value; an empty last assignment means 'back to the default'."""
        vals = self.raw_values(section, key)
        if not vals or vals[-1] == "":
            return default
        return vals[-1]

    def sections(self) -> dict[str, dict[str, list[str]]]:
        out: dict[str, dict[str, list[str]]] = {}
        for a in self.assignments:
            keys = out.setdefault(a.section, {})
            if a.value == "":
                keys[a.key] = []
            else:
                keys.setdefault(a.key, []).append(a.value)
        return out

    def assignment(self, section: str, key: str) -> Assignment | None:
        """The last Assignment of section/key (for error locations), or None."""
        found = None
        for a in self.assignments:
            if a.section == section and a.key == key:
                found = a
        return found


def _split_lines(text: str) -> list[str]:
    lines = _EOL.split(text)
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()  # text ended with an end-of-line: no extra empty line
    return lines


def _is_unit_name(base: str) -> bool:
    return base.endswith(UNIT_SUFFIXES) and len(base) > 1


def _header_path(line: str) -> str | None:
    m = _HEADER.match(line)
    if not m:
        return None
    path = m.group(1)
    base = os.path.basename(path)
    if _is_unit_name(base):
        return path
    parent = os.path.basename(os.path.dirname(path))
    if base.endswith(".conf") and parent.endswith(".d"):
        return path
    return None


def _is_dropin(path: str) -> bool:
    return os.path.basename(os.path.dirname(path)).endswith(".d") and path.endswith(".conf")


def _looks_like_cat(lines: list[str]) -> bool:
    in_warning = False
    for line in lines:
        s = line.strip(WHITESPACE)
        if not s:
            continue
        if _WARNING_START.match(s):
            in_warning = True
            continue
        if in_warning and _WARNING_MORE.match(s):
            continue
        return _header_path(line) is not None or bool(_MASKED.match(line)) or bool(_NOT_LOADED.match(line))
    return False


def split_files(text: str, name: str | None = None, path: str | None = None
                ) -> tuple[str | None, bool, list[tuple[str | None, list[tuple[int, str]]]], list[str]]:
    """Split unit text into files.

    Returns (name, masked, files, warnings) where files is a list of (path, [(lineno, line), ...]).
    A plain unit file is one file named ``path``.
    """
    lines = _split_lines(text)
    warnings: list[str] = []
    masked = False
    if not _looks_like_cat(lines):
        return name, masked, [(path, list(enumerate(lines, 1)))], warnings

    files: list[tuple[str | None, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] | None = None
    unit_name = name
    have_fragment = False
    in_warning = False
    stopped_at = None
    previous = ""  # systemctl cat puts a blank line before every file after the first
    for line in lines:
        stripped = line.strip(WHITESPACE)
        starts_file = current is None or not previous.strip(WHITESPACE)
        previous = line
        if _WARNING_START.match(stripped) and (current is None or "changed on disk" in stripped):
            warnings.append(stripped.lstrip("# ").strip())
            in_warning = True
            continue
        if in_warning and _WARNING_MORE.match(stripped):
            warnings.append(stripped.lstrip("# ").strip())
            continue
        in_warning = False
        m = _MASKED.match(line)
        if m:
            if files or masked:
                stopped_at = m.group(1)
                break
            masked = True
            unit_name = unit_name or m.group(1)
            warnings.append(f"Unit {m.group(1)} is masked.")
            continue
        m = _NOT_LOADED.match(line)
        if m:
            if files:
                stopped_at = m.group(1)
                break
            warnings.append(f"Unit {m.group(1)} could not be loaded.")
            unit_name = unit_name or m.group(1)
            continue
        hp = _header_path(line) if starts_file else None  # a `# /path` inside a file is a comment
        if hp is not None:
            base = os.path.basename(hp)
            if not _is_dropin(hp):
                if have_fragment or masked:
                    stopped_at = base
                    break
                have_fragment = True
                unit_name = unit_name or base
            current = []
            files.append((hp, current))
            continue
        if current is None:
            if stripped:
                warnings.append(f"text before the first '# /path' header ignored ({len(stripped)} characters, "
                                "not shown)")
            continue
        current.append((len(current) + 1, line))
    if stopped_at is not None:
        warnings.append(
            f"systemctl cat output holds more than one unit; using {unit_name or 'the first'}, ignoring {stopped_at} "
            "and everything after it"
        )
    return unit_name, masked, files, warnings


_SECTION_TEXT = re.compile(r"\[[A-Za-z0-9 ._@-]{0,64}\]?")


def _header_text(line: str) -> str:
    """A section header for a message: quoted when it is a plain name, else only its length."""
    return f"'{line}'" if _SECTION_TEXT.fullmatch(line) else f"({len(line)} characters, not shown)"


def _string_is_safe(s: str) -> bool:
    return not any(ord(c) < 32 or ord(c) == 127 or c in "\"'\\" for c in s)


def _parse_one_file(path: str | None, numbered: list[tuple[int, str]], label: str,
                    out: list[Assignment], warnings: list[str],
                    comments: list[tuple[str | None, str]] | None = None) -> None:
    section: str | None = None
    continuation: list[str] | None = None
    cont_line = 0
    bom_seen = False
    last = 0

    def where(n: int) -> str:
        return f"{path or label}:{n}"

    def parse_line(n: int, text: str) -> None:
        nonlocal section
        text = text.strip(WHITESPACE)
        if not text:
            return
        if text[0] == "[":
            if text[-1] != "]":
                raise UnitError(Said(f"{where(n)}: Invalid section header '{text}'",
                                    f"{where(n)}: Invalid section header {_header_text(text)}"))
            sname = text[1:-1]
            if not _string_is_safe(sname):
                raise UnitError(Said(f"{where(n)}: Bad characters in section header '{text}'",
                                    f"{where(n)}: Bad characters in section header {_header_text(text)}"))
            section = sname
            return
        if section is None:
            warnings.append(f"{where(n)}: Assignment outside of section. Ignoring.")
            return
        eq = text.find("=")
        if eq < 0:
            warnings.append(f"{where(n)}: Missing '=', ignoring line.")
            return
        if eq == 0:
            warnings.append(f"{where(n)}: Missing key name before '=', ignoring line.")
            return
        key = text[:eq].strip(WHITESPACE)
        value = text[eq + 1:].strip(WHITESPACE)
        out.append(Assignment(section=section, key=key, value=value, path=path, line=n))

    for n, buf in numbered:
        last = n
        s = buf.lstrip(WHITESPACE)
        if s and s[0] in COMMENTS:
            if comments is not None:
                comments.append((path, s))
            continue
        line = buf
        if not bom_seen and line.startswith("\ufeff"):
            line = line[1:]
            bom_seen = True
        if continuation is None:
            cont_line = n
            continuation = []
        # The joined text so far always ends with the space that replaced a backslash, so the
        # trailing backslashes of the joined line are this line's: counted on it alone, and the
        # pieces joined once at the end (a long continuation is linear, not quadratic).
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            continuation.append(line[:-1] + " ")
            continue
        continuation.append(line)
        p = "".join(continuation)
        continuation = None
        parse_line(cont_line, p)
    if continuation is not None:
        parse_line(cont_line if cont_line else last + 1, "".join(continuation))


def parse_unit_text(text: str, name: str | None = None, path: str | None = None) -> UnitFile:
    """Parse a unit file or `systemctl cat` output. See the module docstring for the rules."""
    if not isinstance(text, str):
        raise UnitError("unit text must be a string")
    unit_name, masked, files, warnings = split_files(text, name=name, path=path)
    if unit_name is None and path is not None:
        base = os.path.basename(path)
        if _is_unit_name(base):
            unit_name = base
    assignments: list[Assignment] = []
    paths: list[str] = []
    label = unit_name or "<unit>"
    comments: list[tuple[str | None, str]] = []
    for fpath, numbered in files:
        if fpath is not None:
            paths.append(fpath)
        _parse_one_file(fpath, numbered, label, assignments, warnings, comments)
    return UnitFile(name=unit_name, paths=paths, assignments=assignments, warnings=warnings, masked=masked,
                    comments=comments)
