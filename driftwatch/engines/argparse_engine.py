"""An Engine whose command line is one argparse parser, typed from generated catalogs.

SGLang (and vLLM) are this shape; an engine subclasses `ArgparseEngine`, says where its catalogs,
runtime defaults and concept map live, adds its own converters, and implements `detect` and
`apply_startup`. Everything else (choosing a release, typing, issues) is shared here.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources

import yaml

from ..concepts import Binding, check_bindings
from .argparse_catalog import BadValue, CatalogSet, OptionSpec, in_choices, plain
from .config import DEFAULT, EXPLICIT, RUNTIME, EngineConfig, FlagValue, Issue
from .interface import Engine


class ArgparseEngine(Engine):
    package: str  # holds catalogs/, runtime_defaults.yaml and concepts.yaml
    converters: dict = {}
    allow_abbrev = True
    positional_note = "takes no positional arguments"
    image_names: tuple[str, ...] = ()  # repository names of the engine's images: ("sglang",)

    @functools.cached_property
    def catalogs(self) -> CatalogSet:
        return CatalogSet(self.name, self.label, self.package, self.converters, self.allow_abbrev,
                          self.positional_note)

    def releases(self) -> tuple[str, ...]:
        return self.catalogs.versions

    def choose_release(self, argvs: list[list[str]]) -> tuple[str, str]:
        return self.catalogs.choose(argvs)

    def _data(self, name: str) -> dict:
        path = resources.files(self.package).joinpath(name)
        if not path.is_file():
            return {}
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}

    @functools.cached_property
    def runtime_fields(self) -> dict[str, str]:
        """Fields whose default the engine replaces at start-up, with how (runtime_defaults.yaml)."""
        return dict(self._data("runtime_defaults.yaml").get("fields", {}))

    @functools.cached_property
    def _bindings(self) -> dict[str, Binding]:
        raw = self._data("concepts.yaml").get("fields", {})
        bindings = {}
        for key, spec in raw.items():
            if isinstance(spec, str):
                bindings[key] = Binding(spec)
            else:
                bindings[key] = Binding(spec["concept"], bool(spec.get("invert", False)))
        check_bindings(bindings, f"{self.package}/concepts.yaml")
        return bindings

    def concept_bindings(self) -> dict[str, Binding]:
        return dict(self._bindings)

    def primary_flag(self, key: str, version: str) -> str | None:
        spec = self.catalogs.load(version).by_field.get(key) if version in self.releases() else None
        return spec.primary if spec is not None else None

    def release_from_image(self, image: str | None) -> str | None:
        """`lmsysorg/sglang:v0.5.5`, `…:v0.5.5.post1-cu126`, `…:v0.5.5@sha256:…` -> the release;
        None for `latest`, a bare digest or another image."""
        if not image:
            return None
        name, _, digest_free = image.partition("@")
        repo, sep, tag = name.rpartition(":")
        if not sep or "/" in tag:  # no tag (`host:5000/img` is a registry port, not a tag)
            return None
        if repo.rsplit("/", 1)[-1].lower() not in self.image_names:
            return None
        m = re.match(r"^v?(\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+)?)(?:$|[-_])", tag)
        return m.group(1) if m else None

    def apply_startup(self, config: EngineConfig, engine_argv: list[str]) -> None:
        """The engine's own start-up rewrites and known start-up crashes (notes and Issues), for
        `config` typed from `engine_argv` (vLLM rewrites from the argv as its parser saw it)."""

    def _default_rows(self, version: str) -> list[tuple]:
        """(spec, primary, default value, source, note) of every option of a release, worked out once
        per release (typing a unit then only builds the FlagValues); a release's default is DEFAULT,
        or RUNTIME (no value) for a field the engine computes at start-up."""
        cache = self.__dict__.setdefault("_rows", {})
        catalog = self.catalogs.load(version)
        rows = cache.get(version)
        if rows is None or rows[0] is not catalog:
            runtime = self.runtime_fields
            built = []
            for spec in catalog.options:
                computed = spec.field in runtime and spec.default in (None, "auto")
                default = spec.default if spec.default_repr is None else spec.default_repr
                built.append((spec, spec.primary, None if computed else default, RUNTIME if computed else DEFAULT,
                              runtime.get(spec.field) if computed else None))
            rows = cache[version] = (catalog, built)
        return rows[1]

    def _defaults(self, version: str) -> tuple[dict[str, FlagValue], dict[str, list[tuple[int, OptionSpec]]]]:
        """A release's default FlagValue of every field (the first option of a field gives it) and its
        options by argparse dest (with their catalog order), made once per release: typing a unit
        then copies one dict and builds only the FlagValues its argv sets (a few, of 500 options).
        The defaults are shared by every config of that release: a rewrite replaces one in
        `config.flags`, never changes it in place."""
        cache = self.__dict__.setdefault("_default_flags", {})
        catalog = self.catalogs.load(version)
        hit = cache.get(version)
        if hit is None or hit[0] is not catalog:
            flags: dict[str, FlagValue] = {}
            by_dest: dict[str, list[tuple[int, OptionSpec]]] = {}
            for i, (spec, primary, default, source, note) in enumerate(self._default_rows(version)):
                if spec.field not in flags:
                    flags[spec.field] = FlagValue(value=default, source=source, flag=primary, note=note)
                by_dest.setdefault(spec.dest, []).append((i, spec))
            hit = cache[version] = (catalog, flags, by_dest)
        return hit[1], hit[2]

    def _parse(self, engine_argv, version):
        """`catalogs.parse`, remembered per (argv, release): a history reads each snapshot's argv
        several times (each pair, each state check); the parse is a pure function of the two and of the
        release's catalog, which a `--catalog-dir` replaces for one command (as `_default_rows` checks)."""
        memo = self.__dict__.setdefault("_parsed", {})
        key = (tuple(engine_argv), version)
        catalog = self.catalogs.load(version)
        hit = memo.get(key)
        if hit is None or hit[0] is not catalog:
            if len(memo) >= 512:
                memo.clear()
            hit = memo[key] = (catalog, self.catalogs.parse(engine_argv, version))
        values, spellings, issues = hit[1]
        return values, spellings, list(issues)

    def read_config(self, engine_argv, engine_version=None, recorded_version=None, choose_from=None,
                    recorded_from: str | None = None, environment: Mapping[str, str] | None = None) -> EngineConfig:
        label = self.label
        if engine_version:
            version, why = self.catalogs.nearest(engine_version)
            reason = f"--engine-version {engine_version}" + ("" if why == "exact catalog" else f" ({why})")
        elif recorded_version:
            version, why = self.catalogs.nearest(recorded_version)
            said = recorded_from or "recorded with the unit"
            reason = f"{label} {recorded_version} {said}" + ("" if why == "exact catalog" else f" ({why})")
        else:
            version, reason = self.choose_release(choose_from or [engine_argv])
            reason = f"inferred: {reason}"
        values, spellings, issues = self._parse(engine_argv, version)
        defaults, by_dest = self._defaults(version)
        flags: dict[str, FlagValue] = dict(defaults)  # shared, never changed in place (see `_defaults`)
        given = sorted(row for dest in values for row in by_dest.get(dest, ()))
        for _, spec in given:  # the options the argv sets, in the catalog's order (the last of a field wins)
            value = values[spec.dest]
            flags[spec.field] = FlagValue(value=plain(value), source=EXPLICIT,
                                          flag=spellings.get(spec.dest) or spec.primary)
            bad = value if isinstance(value, BadValue) else next(
                (v for v in value if isinstance(v, BadValue)), None) if isinstance(value, (list, tuple)) else None
            if bad is not None:  # a rejected word, alone or in a list (nargs: `--cuda-graph-bs 1,2,4`)
                issues.append(Issue("bad-value", f"{spec.primary} {bad!s}: not a valid {spec.type} for "
                                    f"{label} {version}", key=spec.field, flag=spec.primary, severity="error"))
            elif spec.choices and not in_choices(value, spec.choices):
                issues.append(Issue("bad-value", f"{spec.primary} {value!r} is not one of "
                                    f"{', '.join(map(str, spec.choices))} in {label} {version}",
                                    key=spec.field, flag=spec.primary, severity="error"))
            if spec.deprecated:
                issues.append(Issue("deprecated-flag", f"{spec.primary} is deprecated in {label} {version}: "
                                    f"{spec.deprecated}", key=spec.field, flag=spec.primary, severity="warning"))
        bindings = {k: b for k, b in self._bindings.items() if k in flags}
        config = EngineConfig(engine=self.name, version=version, version_reason=reason, flags=flags,
                              issues=issues, label=label, bindings=bindings, environment=dict(environment or {}))
        self.apply_startup(config, engine_argv)
        return config
