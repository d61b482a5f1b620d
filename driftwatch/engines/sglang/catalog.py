"""Flag catalogs generated from real SGLang releases (tools/gen_sglang_catalog.py), loaded as data.

A catalog lists every option string, alias, dest, ServerArgs field, type, nargs, action, default and
choices of one release. We rebuild an argparse parser from it so that prefix abbreviations, `=` forms
and last-occurrence-wins behave exactly as in SGLang itself.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ...errors import CatalogError
from ..versions import version_key

CATALOG_SCHEMA = "driftwatch.catalog/v1"


@dataclass
class OptionSpec:
    """One argparse action of SGLang's parser, as dumped by the generator."""

    option_strings: list[str]
    dest: str
    field: str
    action: str
    type: str | None = None
    nargs: Any = None
    const: Any = None
    default: Any = None
    default_repr: str | None = None
    choices: list | None = None
    deprecated: str | None = None
    help: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def primary(self) -> str:
        longs = [o for o in self.option_strings if o.startswith("--")]
        return (longs or self.option_strings)[0]


@dataclass
class Catalog:
    engine: str
    version: str
    options: list[OptionSpec]
    speculative_defaults: dict = field(default_factory=dict)

    @functools.cached_property
    def by_option(self) -> dict[str, OptionSpec]:
        return {o: spec for spec in self.options for o in spec.option_strings}

    @functools.cached_property
    def by_field(self) -> dict[str, OptionSpec]:
        result: dict[str, OptionSpec] = {}
        for spec in self.options:
            result.setdefault(spec.field, spec)
        return result

    def resolve(self, option: str) -> tuple[str, list[str]]:
        """How argparse would read `option` here: ("exact"|"prefix"|"ambiguous"|"unknown", matches)."""
        name = option.split("=", 1)[0]
        if name in self.by_option:
            return "exact", [name]
        if not name.startswith("--"):
            return "unknown", []
        matches = sorted(o for o in self.by_option if o.startswith(name) and o.startswith("--"))
        if len(matches) == 1:
            return "prefix", matches
        if len(matches) > 1:
            return "ambiguous", matches
        return "unknown", []


def _load(text: str, origin: str) -> Catalog:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{origin}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != CATALOG_SCHEMA:
        raise CatalogError(f"{origin}: not a {CATALOG_SCHEMA} catalog")
    options = []
    known = set(OptionSpec.__dataclass_fields__) - {"extra"}
    for raw in data.get("options", []):
        kwargs = {k: raw.get(k) for k in known if k in raw}
        kwargs["extra"] = {k: v for k, v in raw.items() if k not in known}
        kwargs.setdefault("field", raw.get("dest"))
        options.append(OptionSpec(**kwargs))
    return Catalog(engine=data.get("engine", "sglang"), version=str(data["version"]), options=options,
                   speculative_defaults=data.get("speculative_defaults") or {})


@functools.lru_cache(maxsize=None)
def available_versions() -> tuple[str, ...]:
    """Releases with a shipped catalog, oldest first."""
    folder = resources.files(__package__).joinpath("catalogs")
    names = [p.name for p in folder.iterdir() if p.name.startswith("sglang-") and p.name.endswith(".json")]
    versions = [n[len("sglang-"):-len(".json")] for n in names]
    return tuple(sorted(versions, key=version_key))


@functools.lru_cache(maxsize=None)
def load_catalog(version: str) -> Catalog:
    if version not in available_versions():
        raise CatalogError(f"no SGLang catalog for release {version} (have: {', '.join(available_versions())})")
    path = resources.files(__package__).joinpath("catalogs", f"sglang-{version}.json")
    return _load(path.read_text(encoding="utf-8"), f"catalog {version}")


def nearest_version(requested: str) -> tuple[str, str]:
    """The catalog to use for a requested release, and a sentence saying why."""
    versions = available_versions()
    if not versions:
        raise CatalogError("no SGLang catalogs are installed")
    if not re.match(r"^v?\d+(\.\d+)*([.-]?(post|rc|dev)\d*)?$", requested.strip()):
        raise CatalogError(f"{requested!r} is not an SGLang release number (shipped: {', '.join(versions)})")
    requested = requested.strip().lstrip("v")
    if requested in versions:
        return requested, "exact catalog"
    older = [v for v in versions if version_key(v) <= version_key(requested)]
    if older:
        return older[-1], f"no catalog for {requested}; using the nearest older release {older[-1]}"
    return versions[0], f"no catalog for {requested}; using the oldest shipped release {versions[0]}"
