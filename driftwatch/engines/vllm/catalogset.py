"""vLLM's catalogs and argparse semantics: the shared CatalogSet plus what vLLM's parser adds.

- the positional model (`model_tag`, `nargs="?"`; required in 0.8.x) and what each entry point
  does with it (`vllm serve` copies it into `--model`; `python -m vllm.entrypoints.openai.api_server`
  parses it and ignores it from 0.10, refuses it before);
- boolean pairs: `--x` / `--no-x` (BooleanOptionalAction, 0.10 – 0.30) and 0.33's
  EnableDisableAction (`--enable-x` / `--disable-x`, hidden `--no-enable-x`); hidden option strings
  are registered as vLLM registers them, so abbreviations and unknown-flag findings match;
- vLLM's converters (converters.py);
- FlexibleArgumentParser's argv rewriting before argparse (flexible.py), per release.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from contextvars import ContextVar
from typing import Any

from ..argparse_catalog import _RECORDING, BadValue, Catalog, CatalogError, CatalogSet, OptionSpec, _is_number
from ..config import Issue
from ..versions import version_key
from . import converters
from .flexible import Preprocessed, preprocess, serve_lacks_model_option

# The release a unit records or is given (`--engine-version 0.9.2`), set while VLLMEngine reads it: an
# unshipped release is typed with the nearest older catalog (0.9.0's) but rewritten by its own rules.
UNIT_RELEASE: ContextVar[str | None] = ContextVar("vllm_unit_release", default=None)
POSITIONAL_MODEL = "model_tag"
MODEL_SPELLING = "MODEL (positional)"
_BOOLEAN_CLASSES = ("BooleanOptionalAction", "EnableDisableAction")


class _PairAction(argparse.Action):
    """A vLLM boolean: True for its positive spellings, False for `--no-x` / `--disable-x`."""

    def __init__(self, option_strings, dest, negatives=(), **kwargs):
        kwargs.pop("type", None)
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.negatives = frozenset(negatives)

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.__dict__.setdefault("_dw_spelling", {})[self.dest] = option_string
        setattr(namespace, self.dest, option_string not in self.negatives)


def negatives_of(spec: OptionSpec) -> list[str]:
    listed = spec.extra.get("negative_option_strings")
    if listed:
        return list(listed)
    return [o for o in spec.option_strings if o.startswith("--no-")]


class VLLMCatalogSet(CatalogSet):
    @functools.cache
    def load(self, version: str) -> Catalog:
        catalog = super().load(version)
        extra = getattr(self, "_extra_file", lambda _v: None)(version)  # a user --catalog-dir
        raw = json.loads(extra.read_text(encoding="utf-8")) if extra is not None else self.shipped_doc(version)
        for spec in catalog.options:
            hidden = [o for o in spec.extra.get("hidden_option_strings") or [] if o not in spec.option_strings]
            spec.option_strings = list(spec.option_strings) + hidden
        catalog.positionals = list(raw.get("positionals") or [])  # type: ignore[attr-defined]
        if "--model" not in {o for spec in catalog.options for o in spec.option_strings} \
                and version_key(version) >= version_key("0.9.0"):
            # vLLM 0.10+ leaves --model out of the parser when `serve` and `--help` are both in
            # sys.argv (EngineArgs.add_cli_args), which is how catalogs are dumped for full help text.
            # At run time the flag exists; its default is ModelConfig.model ("Qwen/Qwen3-0.6B" in
            # every release 0.10.0 - 0.33.0, "facebook/opt-125m" in 0.9.0: the positional's
            # field_default). 0.9.0 leaves it out when either word is there, so `vllm serve` has no
            # --model at run time either: flexible.serve_lacks_model_option reports its use there.
            # Used only while a catalog lacks the option.
            model_default = next((p.get("field_default") for p in catalog.positionals  # type: ignore[attr-defined]
                                  if p.get("dest") == POSITIONAL_MODEL and p.get("field_default")), "Qwen/Qwen3-0.6B")
            catalog.options.append(OptionSpec(
                option_strings=["--model"], dest="model", field="model", action="store", type="str",
                default=model_default, help="Name or path of the Hugging Face model to use.",
                extra={"synthesized": "absent from the dump (`serve --help` hides it)"}))
        return catalog

    def _forget_catalogs(self) -> None:
        """The base's caches and this engine's own (a --catalog-dir came or went)."""
        super()._forget_catalogs()
        for cached in (VLLMCatalogSet.load, VLLMCatalogSet.parser, VLLMCatalogSet.option_strings,
                       VLLMCatalogSet._count_problems, _preprocess_cached):
            cached.cache_clear()

    @functools.cache
    def option_strings(self, version: str) -> frozenset[str]:
        return frozenset(self.load(version).by_option)

    def _converter(self, type_name, custom=None):
        base = converters.resolve(type_name, custom)

        def convert(text: str):
            try:
                return base(text)
            except (ValueError, TypeError, ArithmeticError):
                return BadValue(text)

        convert.__name__ = type_name or "str"
        return convert

    def _add_option(self, parser: argparse.ArgumentParser, spec: OptionSpec) -> None:
        if spec.extra.get("type_name") == "<lambda>" and spec.dest == "compilation_config":
            # 0.9.0's get_kwargs: `lambda x, f=CompilationConfig.from_cli: f(x)` (the dump names it <lambda>)
            spec = dataclasses.replace(spec, extra={**spec.extra, "type_name": "CompilationConfig.from_cli"})
        if spec.extra.get("action_class") == "StoreBoolean":  # 0.8.x: --enable-chunked-prefill [true|false]
            parser.add_argument(*spec.option_strings, dest=spec.dest, default=argparse.SUPPRESS,
                                action=_RECORDING["store"], nargs="?", const=spec.const or "True",
                                type=self._converter("bool", "store_boolean"))
            return
        if spec.extra.get("action_class") in _BOOLEAN_CLASSES:
            parser.add_argument(*spec.option_strings, dest=spec.dest, default=argparse.SUPPRESS,
                                action=_PairAction, negatives=negatives_of(spec))
            return
        super()._add_option(parser, spec)

    @functools.cache
    def parser(self, version: str):
        parser = super().parser(version)
        for positional in self.load(version).positionals:  # type: ignore[attr-defined]
            parser.add_argument(positional["dest"], nargs="?", default=argparse.SUPPRESS,
                                action=_RECORDING["store"])
        return parser

    def rules_release(self, version: str) -> str:
        """The release whose FlexibleArgumentParser rewrites an argv typed with `version`'s catalog: the
        unit's own (UNIT_RELEASE) when that catalog is its nearest older one, else `version`."""
        wanted = (UNIT_RELEASE.get() or "").strip().lstrip("v")
        if not wanted or wanted == version:
            return version
        try:
            return wanted if self.nearest(wanted)[0] == version and version_key(wanted) > version_key(version) \
                else version
        except (CatalogError, ValueError):
            return version

    def preprocessed(self, argv: list[str], version: str) -> Preprocessed:
        return _preprocess_cached(self, tuple(argv), version, self.rules_release(version))

    def _drop_unknown(self, words: list[str], version: str) -> tuple[list[str], list[Issue]]:
        """Take unknown options (with the value word after them) out before argparse, so that
        their value is not read as the positional model; report them as the shared code does."""
        catalog = self.load(version)
        legacy = version_key(self.rules_release(version)) < version_key("0.9.0")  # 0.9.0 merges dotted keys
        kept: list[str] = []
        issues: list[Issue] = []
        i = 0
        while i < len(words):
            word = words[i]
            name = word.split("=", 1)[0]
            if word.startswith("--") and len(word) > 2 and catalog.resolve(name)[0] == "unknown":
                if legacy and name.startswith("--") and "." in name:
                    accepted = [v for v in self.versions if version_key(v) >= version_key("0.9.0")
                                and self.load(v).resolve(name.split(".", 1)[0])[0] in ("exact", "prefix")]
                    issues.append(Issue("unknown-flag", f"{name}: dotted keys of JSON arguments are read from vLLM "
                                        f"0.9.0 on; {self.label} {version} would refuse to start (accepted by "
                                        f"{', '.join(accepted) or 'no shipped release'})", flag=name,
                                        releases=accepted, severity="error"))
                else:
                    issues.append(self._unknown_issue(name, catalog))
                i += 1
                if "=" not in word and i < len(words) and not (words[i].startswith("-") and len(words[i]) > 1
                                                               and not _is_number(words[i])):
                    i += 1  # its value
                continue
            kept.append(word)
            i += 1
        return kept, issues

    def parse(self, argv: list[str], version: str) -> tuple[dict[str, Any], dict[str, str], list[Issue]]:
        pre = self.preprocessed(argv, version)
        words, dropped = self._drop_unknown(pre.argv, version)
        values, spellings, issues = super().parse(words, version)
        issues = dropped + issues
        model = values.pop(POSITIONAL_MODEL, None)
        spellings.pop(POSITIONAL_MODEL, None)
        catalog = self.load(version)
        required = any(p.get("dest") == POSITIONAL_MODEL and p.get("nargs") is None
                       for p in catalog.positionals)  # type: ignore[attr-defined]
        if pre.serve:
            if model is not None:
                values["model"] = model  # ServeSubcommand.cmd: args.model = args.model_tag
                spellings["model"] = "--model" if pre.hoisted_model else MODEL_SPELLING
            elif required:
                issues.append(Issue("startup-crash", f"{self.label} {version}'s `vllm serve` requires the model as "
                                    "its positional argument (`vllm serve MODEL …`)", key="model",
                                    severity="error"))
            elif serve_lacks_model_option(pre.release) and not any(i.key == "model" for i in pre.issues):
                issues.append(Issue("startup-crash", f"`vllm serve` without a positional model: {self.label} "
                                    f"{pre.release} registers no --model under `vllm serve`, so the parsed arguments "
                                    "hold no model and it fails before loading one (AttributeError: 'Namespace' "
                                    "object has no attribute 'model'); give it as `vllm serve MODEL …`",
                                    key="model", severity="error"))
        elif model is not None and (required or version_key(version) < version_key("0.10")):
            # 0.8.x - 0.9.x: only `vllm serve` has a positional at all (ServeSubcommand.subparser_init
            # declares it; 0.10 moved it into make_arg_parser)
            issues.append(Issue("unknown-flag", f"stray argument {model!r} ({self.label} {version}'s "
                                "`python -m vllm.entrypoints.openai.api_server` takes no positional arguments; "
                                "give --model)", flag=model, severity="error"))
        elif model is not None:
            issues.append(Issue("ignored-argument", f"positional {model!r}: only `vllm serve` reads a positional "
                                "model; `python -m vllm.entrypoints.openai.api_server` (and the image entrypoint "
                                "of older vllm-openai images) ignores it and serves --model", key="model",
                                severity="warning"))
        return values, spellings, list(pre.issues) + issues

    def problems_at_least(self, argv, version) -> int:
        return 0  # the argv is rewritten first (`serve`, dotted keys): no bound from the words as given

    @functools.lru_cache(maxsize=256)
    def _count_problems(self, argv: tuple[str, ...], version: str) -> int:
        """Release choice: only what this release's flags cause."""
        problems = self.parse(list(argv), version)[2]
        return sum(1 for p in problems if p.kind not in ("engine-config", "ignored-argument"))


@functools.lru_cache(maxsize=512)
def _preprocess_cached(catalogs: VLLMCatalogSet, argv: tuple[str, ...], version: str, rules: str) -> Preprocessed:
    return preprocess(list(argv), rules, catalogs.option_strings(version), catalogs.label)
