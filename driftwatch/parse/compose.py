"""Compose files -> the containers their services start, after the Compose specification's rules.

Rules (each cited in docs/engines.md, "Containers and Kubernetes", and tested):
- Interpolation of every string value: `$VAR`, `${VAR}`, `${VAR:-default}` (unset or empty),
  `${VAR-default}` (unset), `${VAR:?err}` / `${VAR?err}` (an error), `${VAR:+alt}` / `${VAR+alt}`,
  `$$` a literal `$`; values from the process environment, else the `.env` file beside the (first)
  Compose file; an unset variable without a default is an empty string (Compose warns, and so do we).
- `entrypoint` replaces the image's ENTRYPOINT and drops its CMD; `command` replaces the CMD. Either
  may be a list (exec form, taken as is) or a string, which Compose splits into words as a shell
  would (quotes, backslashes) but does not run through a shell.
- `environment` is a mapping or a list of `NAME=VALUE`; a name without a value takes the variable
  from the environment Compose runs in (unset: not set in the container).
- GPUs: `deploy.resources.reservations.devices` entries with the `gpu` capability (`count`, or the
  number of `device_ids`; `count: all` depends on the host) and the service-level `gpus`.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InputError
from .containers import ContainerSpec, EnvVar, ImageLookup, Origin, no_images, string_list

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_BRACED = re.compile(r"\$\{(" + _NAME + r")(?:(:?[-?+])(.*))?\}", re.S)


class _Interpolator:
    """Compose's interpolation over one file, with `lookup` (process environment over `.env`)."""

    def __init__(self, lookup: Callable[[str], str | None], where: str):
        self.lookup, self.where = lookup, where
        self.unset: list[str] = []

    def text(self, value: str, key: str) -> str:
        out: list[str] = []
        i, n = 0, len(value)
        while i < n:
            ch = value[i]
            if ch != "$" or i + 1 >= n:
                out.append(ch)
                i += 1
                continue
            nxt = value[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
            elif nxt == "{":
                end = self._closing(value, i + 2)
                if end < 0:
                    raise InputError(f"{self.where}: {key}: invalid interpolation format {value[i:]!r}")
                out.append(self._braced(value[i:end + 1], key))
                i = end + 1
            else:
                m = re.match(_NAME, value[i + 1:])
                if m is None:
                    out.append("$")
                    i += 1
                    continue
                out.append(self._get(m.group(0)))
                i += 1 + m.end()
        return "".join(out)

    @staticmethod
    def _closing(value: str, start: int) -> int:
        depth = 1
        for j in range(start, len(value)):
            if value[j] == "{" and value[j - 1] == "$":
                depth += 1
            elif value[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        return -1

    def _get(self, name: str) -> str:
        found = self.lookup(name)
        if found is None:
            self.unset.append(name)
            return ""
        return found

    def _braced(self, expr: str, key: str) -> str:
        m = _BRACED.fullmatch(expr)
        if m is None:
            raise InputError(f"{self.where}: {key}: invalid interpolation format {expr!r}")
        name, op, arg = m.group(1), m.group(2), m.group(3)
        found = self.lookup(name)
        if op is None:
            return self._get(name)
        empty = found is None or (op.startswith(":") and found == "")
        kind = op[-1]
        if kind == "-":
            return self.text(arg or "", key) if empty else str(found)
        if kind == "?":
            if empty:
                raise InputError(f"{self.where}: {key}: required variable {name} is missing a value"
                                 + (f": {self.text(arg, key)}" if arg else ""))
            return str(found)
        return "" if empty else self.text(arg or "", key)  # "+": the alternative when set

    def walk(self, data: Any, key: str = "") -> Any:
        if isinstance(data, str):
            return self.text(data, key)
        if isinstance(data, list):
            return [self.walk(v, f"{key}[{i}]") for i, v in enumerate(data)]
        if isinstance(data, dict):
            return {k: self.walk(v, f"{key}.{k}" if key else str(k)) for k, v in data.items()}
        return data


def read_dotenv(text: str) -> dict[str, str]:
    """A `.env` file: NAME=VALUE lines, `#` comments, optional `export `, quotes taken off."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        name, eq, value = line.partition("=")
        name = name.strip()
        if not eq or not re.fullmatch(_NAME, name):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        out[name] = value
    return out


def interpolate(data: Any, where: str, environ: Mapping[str, str], dotenv: Mapping[str, str]) -> tuple[Any, list[str]]:
    """(data with every string interpolated, the variables that were unset)."""
    def lookup(name: str) -> str | None:
        return environ[name] if name in environ else dotenv.get(name)
    interp = _Interpolator(lookup, where)
    out = interp.walk(data)
    return out, list(dict.fromkeys(interp.unset))


def _words(value: Any, where: str, what: str) -> list[str] | None:
    """A `command`/`entrypoint`: a list as is, a string split as a shell would (not run by one)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise InputError(f"{where}: {what} cannot be split into words: {exc}") from None
    return string_list(value, where, what)


def _environment(value: Any, where: str, environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[EnvVar]:
    out: list[EnvVar] = []
    items: list[tuple[str, object]]
    if value is None:
        return out
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = []
        for entry in value:
            key, eq, text = str(entry).partition("=")
            items.append((key, text if eq else None))
    else:
        raise InputError(f"{where}: environment is neither a mapping nor a list")
    for name, val in items:
        if val is None:  # `NAME` alone: from the environment Compose runs in
            found: str | None = environ.get(name, dotenv.get(name))
            if found is not None:
                out.append(EnvVar(name, found, "shell"))
            continue
        out.append(EnvVar(name, ("true" if val else "false") if isinstance(val, bool) else str(val)))
    return out


def _gpus(service: dict, where: str) -> tuple[int | None, str | None]:
    devices = service.get("deploy")
    for key in ("resources", "reservations", "devices"):
        devices = devices.get(key) if isinstance(devices, dict) else None
    total, note = 0, None
    seen = False
    for d in devices if isinstance(devices, list) else []:
        capabilities = d.get("capabilities") if isinstance(d, dict) else None
        if not isinstance(capabilities, list) or "gpu" not in capabilities:
            continue
        seen = True
        if isinstance(d.get("device_ids"), list):
            total += len(d["device_ids"])
        elif str(d.get("count", "all")).lower() == "all":  # Compose: count defaults to all
            note = "all"
        else:
            try:
                total += int(d["count"])
            except (TypeError, ValueError):
                raise InputError(f"{where}: deploy device count {d.get('count')!r} is not a number") from None
    gpus = service.get("gpus")
    if gpus is not None:
        seen = True
        if str(gpus).lower() == "all":
            note = "all"
        elif isinstance(gpus, list):
            for g in gpus:
                if not isinstance(g, dict):
                    raise InputError(f"{where}: gpus entries are mappings (count, device_ids)")
                if isinstance(g, dict) and isinstance(g.get("device_ids"), list):
                    total += len(g["device_ids"])
                elif isinstance(g, dict) and str(g.get("count", "all")).lower() != "all":
                    total += int(g["count"])
                else:
                    note = "all"
    if not seen:
        return None, None
    return (total or None), note


def read_compose(data: dict, file: str, environ: Mapping[str, str] | None = None,
                 dotenv: Mapping[str, str] | None = None, images: ImageLookup = no_images
                 ) -> tuple[list[ContainerSpec], list[str]]:
    """(the services' containers, warnings) of one Compose file already loaded from YAML."""
    environ = os.environ if environ is None else environ
    dotenv = dotenv or {}
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        raise InputError(f"{file}: not a Compose file (no services: mapping)")
    data, unset = interpolate(data, file, environ, dotenv)
    warnings = [f"the {name} variable is not set: Compose reads it as a blank string" for name in unset]
    project = data.get("name")
    specs = []
    for sname, service in data["services"].items():
        if not isinstance(service, dict):
            raise InputError(f"{file}: service {sname} is not a mapping")
        cname = str(service.get("container_name") or sname)
        origin = Origin(file, None, "service", str(sname), str(project) if project else None, cname)
        where = f"{file}: service {sname}"
        image = str(service["image"]) if service.get("image") is not None else None
        entrypoint = _words(service.get("entrypoint"), where, "entrypoint")
        command = _words(service.get("command"), where, "command")
        notes: list[str] = []
        known = images(image)
        if entrypoint is not None:  # replaces ENTRYPOINT and drops the image's CMD
            argv = entrypoint + (command or [])
        else:
            if known is None:
                notes.append(f"the image {image}'s ENTRYPOINT is not known here: only `command` is read")
            head = list(known.entrypoint) if known else []
            argv = head + (command if command is not None else list(known.cmd) if known else [])
        env = _environment(service.get("environment"), where, environ, dotenv)
        for env_file in ([service["env_file"]] if isinstance(service.get("env_file"), (str, dict))
                         else service.get("env_file") or []):
            path = env_file.get("path") if isinstance(env_file, dict) else env_file
            notes.append(f"env_file {path}: its variables are not read (value unknown)")
        gpus, gpus_note = _gpus(service, where)
        extra = {"entrypoint": entrypoint, "command": command, "head_len": 0 if entrypoint is not None else
                 len(known.entrypoint) if known else 0}
        specs.append(ContainerSpec(origin=origin, image=image, argv=tuple(argv), env=tuple(env), gpus=gpus,
                                   gpus_note=gpus_note, notes=tuple(notes), platform="compose", extra=extra))
    return specs, warnings
