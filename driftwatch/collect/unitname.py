"""systemd unit-name grammar, checked before a unit name goes anywhere near a remote shell.

Rules as in systemd's ``unit_name_is_valid()`` (src/basic/unit-name.c):

- at most 255 characters (``UNIT_NAME_MAX`` is 256 with the NUL);
- a suffix ``.TYPE`` naming a known unit type (``.service``, ``.socket``, ...);
- before the suffix only ``[A-Za-z0-9:_.\\-@]`` (``\\`` is how ``systemd-escape`` writes ``\\x2d``);
- a plain name has no ``@``; a template is ``prefix@.type``; an instance is ``prefix@instance.type``
  (the instance may contain further ``@``); the prefix is never empty.

A name with no unit-type suffix gets ``.service`` appended, as ``systemctl`` does
(``llm-qwen`` -> ``llm-qwen.service``). Anything else is refused with an ``InputError`` that
names the unit.

Container names (``validate_container_name``) are checked here too, for the same reason.
"""
from __future__ import annotations

import re

from driftwatch.errors import InputError

UNIT_NAME_MAX = 255
UNIT_TYPES = (
    "service", "socket", "target", "device", "mount", "automount",
    "swap", "timer", "path", "slice", "scope",
)
_VALID_CHARS = re.compile(r"[A-Za-z0-9:_.\\@-]*\Z")

PLAIN, TEMPLATE, INSTANCE = "plain", "template", "instance"


def unit_kind(name: str) -> str | None:
    """PLAIN, TEMPLATE or INSTANCE for a valid unit name, None when systemd would refuse it."""
    if not name or len(name) > UNIT_NAME_MAX:
        return None
    dot = name.rfind(".")
    if dot <= 0 or name[dot + 1:] not in UNIT_TYPES:
        return None
    stem = name[:dot]
    if not _VALID_CHARS.match(stem):
        return None
    at = stem.find("@")
    if at == 0:
        return None
    if at < 0:
        return PLAIN
    return TEMPLATE if at == len(stem) - 1 else INSTANCE


def validate_unit_name(name: str) -> str:
    """Return the unit name systemctl would use (``.service`` added when no type is given).

    Raises InputError naming the unit when systemd's grammar refuses it.
    """
    if not isinstance(name, str):
        raise InputError(f"invalid unit name {name!r}: not a string")
    candidate = name
    dot = name.rfind(".")
    if dot < 0 or name[dot + 1:] not in UNIT_TYPES:
        candidate = name + ".service"
    if unit_kind(candidate) is not None:
        return candidate
    raise InputError(f"invalid unit name {name!r}: {_reason(candidate)}")


def _reason(name: str) -> str:
    if not name or name.startswith("."):
        return "empty name"
    if len(name) > UNIT_NAME_MAX:
        return f"longer than {UNIT_NAME_MAX} characters"
    stem = name[: name.rfind(".")]
    bad = sorted({c for c in stem if not _VALID_CHARS.match(c)})
    if bad:
        return "characters not allowed in a systemd unit name: " + " ".join(repr(c) for c in bad)
    if stem.startswith("@"):
        return "nothing before '@'"
    return "not a valid systemd unit name"


def split_unit(name: str) -> tuple[str, str | None, str]:
    """(prefix, instance or None, type) of a valid unit name: 'a@b.service' -> ('a', 'b', 'service')."""
    dot = name.rfind(".")
    stem, utype = name[:dot], name[dot + 1:]
    if "@" in stem:
        prefix, instance = stem.split("@", 1)
        return prefix, instance, utype
    return stem, None, utype


def template_of(name: str) -> str | None:
    """'foo@bar.service' -> 'foo@.service'; None when the name is not an instance."""
    if unit_kind(name) != INSTANCE:
        return None
    prefix, _, utype = split_unit(name)
    return f"{prefix}@.{utype}"


def _dropin_names(name: str) -> list[str]:
    """Unit names whose ``NAME.d/`` directories systemd reads for ``name`` in one search directory.

    Mirrors ``unit_file_find_dirs()`` (src/shared/dropin.c): the name, then its template, then the
    dash-truncated prefixes (``foo-bar-baz.service`` -> ``foo-bar-.service`` -> ``foo-.service``),
    each with its own template, most specific first.
    """
    out = [name]
    tmpl = template_of(name)
    if tmpl:
        out.extend(_dropin_names(tmpl))
    prefix, instance, utype = split_unit(name)
    chopped = False
    while True:
        dash = prefix.rfind("-")
        if dash <= 0:
            return out
        if dash + 1 != len(prefix) or chopped:
            prefix = prefix[: dash + 1]
            break
        prefix = prefix[:dash]  # trailing dash: chop it off and try again, once
        chopped = True
    # a template has no instance: 'foo-bar@.service' -> 'foo-.service' (unit_name_build_from_type)
    built = f"{prefix}@{instance}.{utype}" if instance else f"{prefix}.{utype}"
    if unit_kind(built) is None:
        return out
    out.extend(_dropin_names(built))
    return out


def dropin_dir_names(name: str) -> tuple[list[str], str]:
    """(unit-specific names in priority order, top-level type name) for drop-in directory lookup.

    For ``llm-qwen.service``: (['llm-qwen.service', 'llm-.service'], 'service') meaning
    directories ``llm-qwen.service.d``, ``llm-.service.d`` in each search directory, and
    finally ``service.d`` in each search directory (systemd >= 249 top-level drop-ins).
    """
    return list(dict.fromkeys(_dropin_names(name))), split_unit(name)[2]


def fragment_names(name: str) -> list[str]:
    """Names to look for as the unit's fragment: the name itself, then its template."""
    tmpl = template_of(name)
    return [name, tmpl] if tmpl else [name]


# Docker's and podman's container names: [a-zA-Z0-9][a-zA-Z0-9_.-]* (a container ID is hex of the same set).
CONTAINER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,253}$")


def validate_container_name(name: str) -> str:
    if not isinstance(name, str) or not CONTAINER_NAME.match(name):
        raise InputError(f"container name {name!r}: not a container name (letters, digits, _ . -)")
    return name
