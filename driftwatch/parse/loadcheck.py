"""Settings that make systemd 252 refuse to load a service ("bad-setting"), besides ExecStart=.

A refused unit never starts, whatever its command line says, so driftwatch reports each reason
(`check` exits 1, `compare` has a high finding) instead of reading the unit as if it ran. Each check
is a port of the systemd 252 parser that returns -ENOEXEC for the key (src/core/load-fragment.c) or of
service_verify() / unit_validate_on_failure_job_mode(), and each was confirmed with
`systemd-analyze verify` 252 as an unprivileged user (tests/parse/test_loadcheck.py):

- User=, Group=, SupplementaryGroups=: specifiers applied (an unknown one is fatal), then the name
  must be a valid user/group name or numeric ID (relaxed rules): `User=%i` outside a template is empty;
- ExecStartPre=, ExecStartPost=, ExecCondition=, ExecReload=, ExecStop=, ExecStopPost=: the same
  rules as ExecStart= (a relative path, an unknown specifier, unbalanced quotes ...);
- RootDirectory=, RootImage=, RootVerity=: absolute, normalised, no unknown specifier;
- SELinuxContext=, AppArmorProfile=, SmackProcessLabel=: no unknown specifier;
- Type=dbus without BusName=, Type=oneshot with ExitType=cgroup, PAMName= with KillMode= other than
  control-group or mixed, OnFailureJobMode=isolate (OnSuccessJobMode=) with more than one such unit.

Every assignment counts, even one a later line overrides: systemd refuses the file while reading it.
"""
from __future__ import annotations

from collections.abc import Callable

from driftwatch.errors import UnitError
from driftwatch.parse.said import Said, prefixed
from driftwatch.parse.specifiers import SpecifierFailure, apply_specifiers
from driftwatch.parse.unitfile import UNIT_SUFFIXES, Assignment, UnitFile
from driftwatch.redact import shown

PATH_MAX = 4096
EXEC_HOOKS = ("ExecCondition", "ExecStartPre", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost")
ROOT_PATHS = ("RootDirectory", "RootImage", "RootVerity")
SECURITY_LABELS = ("SELinuxContext", "AppArmorProfile", "SmackProcessLabel")
KILL_MODES = ("control-group", "process", "mixed", "none")
EXIT_TYPES = ("main", "cgroup")
JOB_MODES = ("fail", "replace", "replace-irreversibly", "isolate", "flush", "ignore-dependencies",
             "ignore-requirements", "triggering")
EMERGENCY_ACTIONS = ("none", "reboot", "reboot-force", "reboot-immediate", "poweroff", "poweroff-force",
                     "poweroff-immediate", "exit", "exit-force", "kexec", "kexec-force", "kexec-immediate", "halt",
                     "halt-force", "halt-immediate")
_UID_INVALID = (0xFFFF, 0xFFFFFFFF)


class ExecStartError(UnitError):
    """systemd would refuse this unit's ExecStart=; the message carries systemd's own reason.
    (Here, not in execstart.py, because the exec hooks checked here raise it too.)"""


def where(unit: UnitFile, a: Assignment) -> str:
    return f"{a.path or unit.name or '<unit>'}:{a.line}: "


def _is_uid(name: str) -> bool:
    """parse_uid(): decimal, no sign, no leading zero, 32 bits, not 65535 or 4294967295."""
    if not name.isascii() or not name.isdigit() or (len(name) > 1 and name[0] == "0"):
        return False
    value = int(name)
    return value <= 0xFFFFFFFF and value not in _UID_INVALID


def valid_user_group_name(name: str) -> bool:
    """valid_user_group_name(VALID_USER_ALLOW_NUMERIC|VALID_USER_RELAX) of systemd 252."""
    if not name:
        return False
    if _is_uid(name):
        return True
    if name.startswith(" ") or name.endswith(" "):
        return False
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):  # not valid UTF-8
        return False
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return False
    if ":" in name or "/" in name:
        return False
    digits = "0123456789"
    if all(c in digits for c in name) or (name[0] == "-" and all(c in digits for c in name[1:])):
        return False
    return name not in (".", "..")


def _name_problem(raw: str, specifiers: dict | None) -> Said | None:
    """Why systemd refuses one user/group name as written (specifiers not yet applied), or None."""
    try:
        name = apply_specifiers(raw, specifiers)
    except SpecifierFailure as exc:
        return Said(f"Failed to resolve unit specifiers in {raw}: {exc}",
                    f"Failed to resolve unit specifiers in {shown(raw)}: {exc}")
    if valid_user_group_name(name):
        return None
    if name == "":
        return Said("Invalid user/group name or numeric ID: ",
                    f"Invalid user/group name or numeric ID: '' ({shown(raw)} is empty after specifiers"
                    + ("; %i and %I are empty outside a template unit)" if "%i" in raw or "%I" in raw else ")"))
    return Said(f"Invalid user/group name or numeric ID: {name}",
                f"Invalid user/group name or numeric ID: {shown(name)}")


def _users(unit: UnitFile, specifiers: dict | None, out: list[str]) -> None:
    for a in unit.assignments:
        if a.section != "Service" or a.value == "":
            continue
        if a.key in ("User", "Group"):
            names = [a.value]
        elif a.key == "SupplementaryGroups":
            names = a.value.split()  # extract_first_word(flags 0): whitespace, no unquoting
        else:
            continue
        for raw in names:
            problem = _name_problem(raw, specifiers)
            if problem is not None:
                out.append(prefixed(where(unit, a), problem))
                break


def _hooks(unit: UnitFile, specifiers: dict | None, split: Callable, out: list[str], warnings: list[str]) -> None:
    """Exec hooks parsed like ExecStart=; `split` is execstart's config_parse_exec port."""
    for a in unit.assignments:
        if a.section != "Service" or a.key not in EXEC_HOOKS or a.value == "":
            continue
        w: list[str] = []
        try:
            split(a.value, specifiers, w)
        except ExecStartError as exc:
            out.append(prefixed(where(unit, a), exc.args[0] if exc.args else str(exc)))
            continue
        warnings.extend(prefixed(where(unit, a), m) for m in w)


def _paths(unit: UnitFile, specifiers: dict | None, out: list[str]) -> None:
    """config_parse_unit_path_printf(fatal) + path_simplify_and_warn(PATH_CHECK_ABSOLUTE|FATAL)."""
    for a in unit.assignments:
        if a.section != "Service" or a.key not in ROOT_PATHS or a.value == "":
            continue
        if len(a.value) >= PATH_MAX:
            out.append(prefixed(where(unit, a), f"{a.key} value too long."))
            continue
        try:
            path = apply_specifiers(a.value, specifiers, PATH_MAX - 1)
        except SpecifierFailure as exc:
            out.append(prefixed(where(unit, a), Said(f"Failed to resolve unit specifiers in '{a.value}': {exc}",
                                                     f"Failed to resolve unit specifiers in {shown(a.value)}: {exc}")))
            continue
        if not path.startswith("/"):
            problem = "is not absolute"
        elif ".." in path.split("/"):
            problem = "is not normalized"
        else:
            continue
        out.append(prefixed(where(unit, a), Said(f"{a.key}= path {problem}: {path}",
                                                 f"{a.key}= path {problem}: {shown(path)}")))


def _labels(unit: UnitFile, specifiers: dict | None, out: list[str]) -> None:
    for a in unit.assignments:
        if a.section != "Service" or a.key not in SECURITY_LABELS or a.value == "":
            continue
        value = a.value[1:] if a.value.startswith("-") else a.value
        try:
            apply_specifiers(value, specifiers)
        except SpecifierFailure as exc:
            out.append(prefixed(where(unit, a), Said(f"Failed to resolve unit specifiers in '{value}': {exc}",
                                                     f"Failed to resolve unit specifiers in {shown(value)}: {exc}")))


def enum_setting(unit: UnitFile, section: str, key: str, allowed: tuple[str, ...], default: str,
                 empty_resets: bool = False) -> str:
    """An enum setting as systemd 252 reads it: an invalid value is ignored (the earlier one kept), and
    so is an empty one unless the key's parser resets on it (KillMode=)."""
    value = default
    for a in unit.assignments:
        if a.section == section and a.key == key:
            if a.value in allowed:
                value = a.value
            elif a.value == "" and empty_resets:
                value = default
    return value


def _bus_name_is_valid(name: str) -> bool:
    """sd_bus_service_name_is_valid() of systemd 252."""
    unique = name.startswith(":")
    dot, found_dot = True, False
    for c in name[1:] if unique else name:
        if c == ".":
            if dot:
                return False
            found_dot = dot = True
            continue
        if not (c.isascii() and (c.isalpha() or c in "_-" or ((not dot or unique) and c.isdigit()))):
            return False
        dot = False
    return 0 < len(name) <= 255 and not dot and found_dot


def _bus_name(unit: UnitFile, specifiers: dict | None) -> str | None:
    """BusName= as systemd keeps it: the last valid name (an invalid or empty one is ignored)."""
    found = None
    for a in unit.assignments:
        if a.section == "Service" and a.key == "BusName":
            try:
                name = apply_specifiers(a.value, specifiers)
            except SpecifierFailure:
                continue
            if _bus_name_is_valid(name):
                found = name
    return found


def _dependencies(unit: UnitFile, key: str, specifiers: dict | None) -> set[str]:
    """The units an OnFailure=-like list names (no reset by an empty value; a word whose specifiers
    fail, or that is no unit name, is ignored)."""
    names: set[str] = set()
    for value in unit.raw_values("Unit", key):
        for word in value.split():
            try:
                name = apply_specifiers(word, specifiers)
            except SpecifierFailure:
                continue
            if name.endswith(UNIT_SUFFIXES) and "." in name[:-1] and not name.startswith("."):
                names.add(name)
    return names


def _verify(unit: UnitFile, specifiers: dict | None, service_type: str, name: str, out: list[str]) -> None:
    """service_verify() and unit_validate_on_failure_job_mode() checks not made in execstart.py."""
    if service_type == "dbus" and not _bus_name(unit, specifiers):
        out.append(Said(f"{name}: Service is of type D-Bus but no D-Bus service name has been specified. Refusing."))
    if service_type == "oneshot" and enum_setting(unit, "Service", "ExitType", EXIT_TYPES, "main") == "cgroup":
        out.append(Said(f"{name}: Service has ExitType=cgroup set, which isn't allowed for Type=oneshot services. "
                        "Refusing."))
    kill_mode = enum_setting(unit, "Service", "KillMode", KILL_MODES, "control-group", empty_resets=True)
    if unit.get("Service", "PAMName") and kill_mode not in ("control-group", "mixed"):
        out.append(Said(f"{name}: Service has PAM enabled. Kill mode must be set to 'control-group' or 'mixed'. "
                        "Refusing."))
    for dep in ("OnFailure", "OnSuccess"):
        mode = enum_setting(unit, "Unit", f"{dep}JobMode", JOB_MODES, "replace")
        if mode == "isolate" and len(_dependencies(unit, dep, specifiers)) > 1:
            out.append(Said(f"{name}: More than one {dep}= dependencies specified but {dep}JobMode=isolate set. "
                            "Refusing."))


def load_errors(unit: UnitFile, specifiers: dict | None, service_type: str, split: Callable,
                warnings: list[str]) -> list[str]:
    """Every reason, in file order then unit order, that systemd 252 refuses to load this service
    beyond its ExecStart= (checked by execstart.py). Non-fatal complaints go to `warnings`."""
    out: list[str] = []
    _users(unit, specifiers, out)
    _hooks(unit, specifiers, split, out, warnings)
    _paths(unit, specifiers, out)
    _labels(unit, specifiers, out)
    _verify(unit, specifiers, service_type, unit.name or "<unit>", out)
    return out
