"""What vLLM does to its arguments at start-up that matters for drift, applied as values and notes.

- `--speculative-config` (and the 0.25+ shorthands `--spec-method/--spec-model/--spec-tokens`, and
  0.8.x's `--speculative-model/--num-speculative-tokens`) become one setting per key
  (`speculative_config.method`, `…num_speculative_tokens`, `…model`), so each is compared and
  mapped to its concept; keys the release's SpeculativeConfig does not have are refused at start-up
  (0.9.x: a plain dataclass, `cls(**dict)` is a TypeError), ignored (0.10 – 0.15, pydantic dataclasses
  ignore extra keys) or refused again (0.20+, `extra="forbid"`).
- `--compilation-config` likewise (`compilation_config.cudagraph_capture_sizes` …); `-O3` in
  0.10/0.11 is `compilation_config.level`; 0.15+ `--optimization-level` is a number.
- Prefix caching and chunked prefill left unset are on for generation models (V1), and 0.10/0.11
  force chunked prefill on even when the unit turns it off; 0.15+ turn async scheduling on unless
  speculative decoding or the executor forbids it.
- Settings read from `--config FILE` say so.
Known start-up crashes are Issues so an operator hears about them before a restart.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import replace
from importlib import resources
from typing import Any

from ..argparse_catalog import Catalog
from ..config import DEFAULT, EXPLICIT, RUNTIME, EngineConfig, FlagValue, Issue
from ..versions import version_key
from .flexible import Preprocessed, at_least

SPEC = "speculative_config"
COMPILE = "compilation_config"
SPEC_KEYS = ("method", "num_speculative_tokens", "model")  # always present: their concepts say "off"
_SHORTHANDS = (("spec_method", "method", "--spec-method"), ("spec_model", "model", "--spec-model"),
               ("spec_tokens", "num_speculative_tokens", "--spec-tokens"))
_LEGACY = (("speculative_model", "model", "--speculative-model"),
           ("num_speculative_tokens", "num_speculative_tokens", "--num-speculative-tokens"))
_ENUM_REPR = re.compile(r"^<[\w.]+: (.+)>$")


@functools.lru_cache(maxsize=1)
def _config_fields() -> dict:
    path = resources.files(__package__).joinpath("config_fields.json")
    return json.loads(path.read_text(encoding="utf-8")).get("releases", {})


def config_fields(version: str) -> dict:
    """SpeculativeConfig / CompilationConfig fields of the nearest release at or below `version`."""
    known = _config_fields()
    older = [v for v in known if version_key(v) <= version_key(version)]
    pick = max(older, key=version_key) if older else min(known, key=version_key)
    return known[pick]


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def apply_rewrites(config: EngineConfig, pre: Preprocessed, catalog: Catalog) -> None:
    config.notes.extend(pre.notes)
    _enum_defaults(config)
    _config_file_origin(config, pre, catalog)
    _speculative(config, pre)
    _compilation(config, pre)
    _batching_defaults(config)
    _async_scheduling(config)


def _enum_defaults(config: EngineConfig) -> None:
    """`<OptimizationLevel.O2: 2>` -> 2, so an explicit `-O2` equals the default."""
    for key, value in list(config.flags.items()):  # a default is shared by the release's configs: replaced
        if isinstance(value.value, str):
            m = _ENUM_REPR.match(value.value)
            if m and value.source == DEFAULT:
                raw = m.group(1).strip("'\"")
                config.flags[key] = replace(value, value=int(raw) if raw.lstrip("-").isdigit() else raw)
    level = config.explicit_value("optimization_level")
    if level is not None and isinstance(level.value, str) and level.value.strip().isdigit():
        level.value = int(level.value)  # vLLM keeps "3"; OptimizationLevel("3") is the same level


def _config_file_origin(config: EngineConfig, pre: Preprocessed, catalog: Catalog) -> None:
    """Note on each setting that only the --config file gives (the command line wins otherwise)."""
    if not pre.config_path:
        return
    if pre.config_read:  # vLLM takes `--config FILE` out before argparse; the file is read
        config.flags["config"] = FlagValue(pre.config_path, EXPLICIT, flag="--config",
                                           note="read: its settings are typed and compared one by one")
    elif pre.config_error:  # its text was known and refused: said once (a start-up crash), kept with the unit
        config.flags["config"] = FlagValue(pre.config_path, EXPLICIT, flag="--config",
                                           note=f"not read: {pre.config_error}")
    from_file: set[str] = set()
    from_cli: set[str] = set()
    for i, word in enumerate(pre.argv):
        if not word.startswith("-") or len(word) < 2:
            continue
        kind, matches = catalog.resolve(word)
        spec = catalog.by_option.get(matches[0]) if kind in ("exact", "prefix") else None
        if spec is not None:
            (from_file if i in pre.config_words else from_cli).add(spec.field)
    for field in from_file - from_cli:
        value = config.flags.get(field)
        if value is not None and value.source == EXPLICIT:
            value.note = f"from --config {pre.config_path}"
    for field in from_file & from_cli:
        value = config.flags.get(field)
        if value is not None and value.source == EXPLICIT:
            value.note = f"the command line overrides --config {pre.config_path}"


# --------------------------------------------------------------------------- speculative decoding

def _speculative(config: EngineConfig, pre: Preprocessed) -> None:
    flags = config.flags
    label = f"{config.label} {config.version}"
    whole = flags.get(SPEC)
    raw: dict[str, Any] | None = None
    spellings: dict[str, str | None] = {}  # None: an explicit value with no spelling kept
    if whole is not None and whole.source == EXPLICIT:
        if isinstance(whole.value, dict):
            raw = dict(whole.value)
            dotted = pre.dotted.get("--speculative-config", {})
            spellings = {k: dotted.get(k, whole.flag or "--speculative-config") for k in raw}
            note = whole.note
        elif whole.value is None:
            raw = None  # `--speculative-config None`: off
            note = None
        else:
            return  # not JSON: the bad-value finding says so; compared as text
    else:
        note = None
    # 0.25+: --spec-method / --spec-model / --spec-tokens fill the same keys (never both).
    for field, key, flag in _SHORTHANDS:
        value = flags.pop(field, None)
        if value is None or value.source != EXPLICIT or value.value is None:
            continue
        raw = {} if raw is None else raw
        if key in raw:
            config.issues.append(Issue("startup-crash", f"{flag} and --speculative-config['{key}'] are both set: "
                                       f"{label} refuses to start (ValueError: mutually exclusive)",
                                       key=f"{SPEC}.{key}", flag=flag, severity="error"))
            continue
        raw[key] = value.value
        spellings[key] = value.flag or flag
    # 0.8.x: --speculative-model / --num-speculative-tokens, used when --speculative-config is not given.
    legacy = {key: flags.pop(field) for field, key, _ in _LEGACY if field in flags}
    legacy_given = {k: v for k, v in legacy.items() if v.source == EXPLICIT and v.value is not None}
    if legacy_given:
        if raw is not None:
            config.notes.append("--speculative-model / --num-speculative-tokens are ignored: --speculative-config "
                                "is given")
        else:
            raw = {key: v.value for key, v in legacy_given.items()}
            spellings = {key: v.flag for key, v in legacy_given.items()}
    if whole is not None:
        del flags[SPEC]
    if raw is not None and at_least(config.version, "0.30"):
        raw = {str(k).replace("-", "_"): v for k, v in raw.items()}  # create_speculative_config, 0.30+
    primary = "--speculative-config"
    if raw is None:
        for key in SPEC_KEYS:
            flags[f"{SPEC}.{key}"] = FlagValue(None, DEFAULT, flag=f"{primary}.{key}")
        return
    fields = set(config_fields(config.version)[SPEC]["fields"])
    unknown = sorted(k for k in raw if fields and k not in fields)
    release = pre.release or config.version  # the unit's own 0.9.x rules where only 0.9.0's catalog ships
    plain_dataclass = at_least(release, "0.9.0") and not at_least(release, "0.10")
    for key in unknown:
        where = spellings.get(key, primary)
        if any(i.key == f"{SPEC}.{key}" and i.kind == "startup-crash" for i in config.issues):
            continue  # flexible.py said why already (0.9.0's dashed dotted keys)
        if plain_dataclass:  # 0.9.0 SpeculativeConfig.from_dict: cls(**dict_value)
            config.issues.append(Issue(
                "startup-crash", f"{where}: {key!r} is not a SpeculativeConfig field in {label}: vLLM refuses to "
                "start (TypeError: unexpected keyword argument)", key=f"{SPEC}.{key}", flag=where, severity="error"))
        elif at_least(config.version, "0.20"):
            config.issues.append(Issue(
                "startup-crash", f"{where}: {key!r} is not a SpeculativeConfig field in {label}: vLLM refuses to "
                "start (pydantic: extra inputs are not permitted)", key=f"{SPEC}.{key}", flag=where, severity="error"))
        else:
            config.issues.append(Issue(
                "ignored-argument", f"{where}: {key!r} is not a SpeculativeConfig field in {label}: vLLM ignores "
                "it (0.20 and later refuse to start)", key=f"{SPEC}.{key}", flag=where, severity="warning"))
    for key, value in raw.items():
        flags[f"{SPEC}.{key}"] = FlagValue(value, EXPLICIT, flag=spellings.get(key, primary), note=note)
    for key in SPEC_KEYS:
        if f"{SPEC}.{key}" not in flags:
            flags[f"{SPEC}.{key}"] = _spec_runtime(key, raw, primary)
    steps = flags.get(f"{SPEC}.num_speculative_tokens")
    steps_count = _int(steps.value) if steps is not None else None
    if steps is not None and steps.source == EXPLICIT and (steps_count is None or steps_count < 1):
        config.issues.append(Issue("startup-crash", f"num_speculative_tokens {steps.value!r}: {label} needs a "
                                   "positive integer", key=f"{SPEC}.num_speculative_tokens", flag=steps.flag,
                                   severity="error"))


def _spec_runtime(key: str, raw: dict, primary: str) -> FlagValue:
    flag = f"{primary}.{key}"
    if key == "method":
        model = str(raw.get("model") or "")
        if model in ("ngram", "[ngram]"):
            return FlagValue("ngram", RUNTIME, flag=flag, note="ngram: the draft 'model' is [ngram]")
        return FlagValue(None, RUNTIME, flag=flag, note="inferred at start-up from the draft model's config "
                         "(EAGLE / MTP heads), or the target's MTP layers when no draft model is given")
    if key == "num_speculative_tokens":
        return FlagValue(None, RUNTIME, flag=flag, note="from the draft model's config (MTP heads), else required")
    return FlagValue(None, DEFAULT, flag=flag, note="none: the method needs no separate draft model, or uses the "
                     "target's own MTP layers")


# --------------------------------------------------------------------------- compilation

def _compilation(config: EngineConfig, pre: Preprocessed) -> None:
    flags = config.flags
    whole = flags.get(COMPILE)
    if whole is None or whole.source != EXPLICIT:
        return
    value = whole.value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = {"level": int(value)}  # 0.10/0.11: `-O 3` / `--compilation-config 3` is the level
    elif isinstance(value, str) and value.strip().isdigit():
        value = {"level": int(value.strip())}
    if not isinstance(value, dict):
        return
    del flags[COMPILE]
    dotted = pre.dotted.get("--compilation-config", {}) or pre.dotted.get("-O", {})
    key_name = "mode" if at_least(config.version, "0.11") else "level"
    label = f"{config.label} {config.version}"
    fields = set(config_fields(config.version)[COMPILE]["fields"])
    for key, sub in value.items():
        spelling = dotted.get(key) or whole.flag or "--compilation-config"
        flags[f"{COMPILE}.{key}"] = FlagValue(sub, EXPLICIT, flag=spelling, note=whole.note)
        if fields and key not in fields and key != "level" \
                and not any(i.key == f"{COMPILE}.{key}" and i.severity == "error" for i in config.issues):
            release = pre.release or config.version
            if at_least(release, "0.9.0") and not at_least(release, "0.9.1"):
                config.issues.append(Issue(  # 0.9.0 CompilationConfig.from_cli: cls(**json.loads(v)), while parsing
                    "startup-crash", f"{spelling}: {key!r} is not a CompilationConfig field in {label}: vLLM refuses "
                    "to start (argparse: invalid --compilation-config value, TypeError: unexpected keyword argument)",
                    key=f"{COMPILE}.{key}", flag=spelling, severity="error"))
                continue
            config.issues.append(Issue(
                "startup-crash" if at_least(config.version, "0.20") else "ignored-argument",
                f"{spelling}: {key!r} is not a CompilationConfig field in {label}"
                + (": vLLM refuses to start" if at_least(config.version, "0.20") else ": ignored"),
                key=f"{COMPILE}.{key}", flag=spelling,
                severity="error" if at_least(config.version, "0.20") else "warning"))
    if "level" in value and key_name == "mode":
        config.notes.append(f"compilation_config.level is the old name of compilation_config.mode in {label}")


# --------------------------------------------------------------------------- start-up defaults

def _batching_defaults(config: EngineConfig) -> None:
    flags = config.flags
    label = f"{config.label} {config.version}"
    v1 = at_least(config.version, "0.10")
    chunked = flags.get("enable_chunked_prefill")
    if chunked is not None and v1:
        if chunked.source == EXPLICIT and chunked.value is False and not at_least(config.version, "0.15"):
            chunked.note = f"{label} turns chunked prefill on at start-up for generation models anyway"
            config.notes.append(f"{chunked.flag or '--no-enable-chunked-prefill'}: {label} (V1) always uses "
                                "chunked prefill for generation models; the flag has no effect")
            chunked.value = True
        elif chunked.source != EXPLICIT and chunked.value is None:
            flags["enable_chunked_prefill"] = FlagValue(True, RUNTIME, flag=chunked.flag,
                                                        note="on for generation models (V1 default)")
    prefix = flags.get("enable_prefix_caching")
    if prefix is not None and v1 and prefix.source != EXPLICIT and prefix.value is None:
        flags["enable_prefix_caching"] = FlagValue(True, RUNTIME, flag=prefix.flag,
                                                   note="on for generation models that support it (V1 default)")


def _async_scheduling(config: EngineConfig) -> None:
    flags = config.flags
    value = flags.get("async_scheduling")
    if value is None or not at_least(config.version, "0.15"):
        return
    label = f"{config.label} {config.version}"
    method = flags.get(f"{SPEC}.method")
    method_name = str(method.value).lower() if method is not None and method.value else None
    eagle_family = set(config_fields(config.version).get("speculative_methods") or [])
    eagle_family = {m for m in eagle_family if m in ("eagle", "eagle3") or m.endswith("_mtp") or m == "mtp"
                    or m in ("dflash", "extract_hidden_states")}
    compatible = {"ngram_gpu", "draft_model", "dspark", "dflash"} if at_least(config.version, "0.33") else set()
    reason = None
    if method_name and method_name not in eagle_family and method_name not in compatible:
        reason = f"{method_name} speculative decoding"
    backend = flags.get("distributed_executor_backend")
    if reason is None and backend is not None and backend.value == "ray" and not at_least(config.version, "0.33"):
        reason = "the ray executor"
    pp = _int(flags["pipeline_parallel_size"].value) if "pipeline_parallel_size" in flags else None
    if reason is None and at_least(config.version, "0.33") and pp and pp > 1 and value.source == EXPLICIT \
            and value.value is True:
        # 0.33 vllm/config/vllm.py: only the V1 model runner refuses async scheduling with PP; the V2
        # runner (the default where Triton is installed) runs it (vLLM PR #32618). A warning, not a crash.
        config.issues.append(Issue("note", f"{value.flag or '--async-scheduling'} with pipeline parallelism: "
                                   f"{label} refuses to start only with the V1 model runner "
                                   "(VLLM_USE_V2_MODEL_RUNNER=0, or a feature the V2 runner lacks)",
                                   key="async_scheduling", flag=value.flag or "--async-scheduling",
                                   severity="warning"))
    if value.source == EXPLICIT:
        if value.value is True and reason is not None:
            config.issues.append(Issue("startup-crash", f"{value.flag or '--async-scheduling'} with {reason}: "
                                       f"{label} refuses to start (ValueError)", key="async_scheduling",
                                       flag=value.flag or "--async-scheduling", severity="error"))
        return
    if value.value is None:
        on = reason is None
        flags["async_scheduling"] = FlagValue(on, RUNTIME, flag=value.flag,
                                              note="on unless speculative decoding or the executor forbids it"
                                              if on else f"off: not supported with {reason}")
