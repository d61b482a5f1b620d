"""vLLM's `FlexibleArgumentParser.parse_args` pre-processing, per release, before argparse runs.

vLLM rewrites the command line before its argparse parser sees it (vllm/utils/argparse_utils.py
from 0.15, vllm/utils/__init__.py in 0.9.2 – 0.11, vllm/utils.py in 0.8.x – 0.9.1). Each step below is
that code's, in its order, with the release where it changed (0.8.2, 0.9.0, 0.9.1, 0.9.2 read from
their wheels):

1. `vllm serve … --model X` (serve only): 0.9.0 – 0.11 refuse to start (ValueError; 0.8.x has no
   check); 0.15+ move the model to the positional (a deprecation warning); 0.20+ refuse
   `--served-model-name` without a positional model or `--config`. 0.9.0 alone registers no `--model`
   under `vllm serve` at all (EngineArgs.add_cli_args: `if 'serve' not in sys.argv[1:] and '--help'
   not in sys.argv[1:]`), so `--model=X` (also from a config file) is an ambiguous abbreviation and
   a model-less `vllm serve` fails (`args.model` missing); 0.9.1+ hide it only for `serve --help`.
2. `--config FILE` (the word `--config`, not `--config=FILE`, which argparse stores unread): the
   YAML's keys become `--key value` inserted right after the subcommand (and positional model), so
   CLI > config > defaults. `true` -> `--key`; `false` -> nothing (0.30+: `--no-key` when the parser
   that reads the file has it — for `vllm serve` that is the top-level `vllm` parser, which has none);
   lists -> repeated values (0.11+; before: Python's str of the list); mappings -> JSON (0.20+;
   before: Python's str of the dict, which the JSON converters reject). From 0.9.0 the model may come
   from the file (`model:`); 0.8.x requires the positional before `--config`.
3. In every `--name[=value]` the part before the first `.` has `_` -> `-` (0.8.x and 0.9.0: the whole
   name, dotted keys included, so `--x.num_tokens` becomes the JSON key `num-tokens`).
4. `-O3`, `-O=3`, `-O 3`: up to 0.9.1 argparse reads them as `-O` (an alias of
   `--compilation-config`; 0.8.x/0.9.x's own `-O3` branch needs `len(arg) == 2` and never runs);
   0.9.2 – 0.11 `-O.level=3` (a dotted key of `-O`); 0.15+ `--optimization-level 3` (the string "3").
5. Dotted keys (`--speculative-config.method ngram`, `--x.list+ a,b`), from 0.9.0, are merged per
   argument into one JSON appended at the end (so they replace an earlier whole-JSON value). 0.9.0 –
   0.9.1: only `--` names, values kept as text; 0.9.2+: also `-O.x`, values `json.loads`ed, else
   (0.20+) human-readable ints (`80g`), else kept as text, and `+` appends to a list.
6. Duplicate flags: a warning, the last one wins (argparse).

The `serve` word: an engine argv that starts with `serve` came from `vllm serve`; one that does
not, from `python -m vllm.entrypoints.openai.api_server` or an image's entrypoint.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ...fileio import loads_json
from ...redact import is_fingerprint_of
from ..config import Issue
from ..versions import version_key
from . import config_file
from .converters import human_readable_int

SERVE = "serve"
# The JSON options whose object becomes a config dataclass's keyword arguments in 0.9.0 (an unknown key is
# a TypeError): SpeculativeConfig.from_dict -> cls(**dict) at engine start, CompilationConfig.from_cli ->
# cls(**json.loads(v)) while parsing.
_FIELDS_ONLY = {"--speculative-config": "SpeculativeConfig", "--compilation-config": "CompilationConfig"}
_NAME_PART = re.compile(r"(?<=--)[^.]*")


def is_serve_word(word: str) -> bool:
    """`serve`, also once the redaction policy fingerprinted it (a bare word it cannot prove public)."""
    if word == SERVE:
        return True
    return is_fingerprint_of(word, SERVE)


def at_least(version: str, floor: str) -> bool:
    return version_key(version) >= version_key(floor)


def serve_lacks_model_option(version: str) -> bool:
    """0.9.0's `vllm serve` parser has no `--model` (arg_utils.py: added only when neither `serve` nor
    `--help` is in sys.argv); 0.9.1 changed the test to `serve` and `--help` both."""
    return at_least(version, "0.9.0") and not at_least(version, "0.9.1")


@dataclass
class Preprocessed:
    """The argv vLLM's argparse receives (subcommand removed), and what the rewriting noticed."""

    argv: list[str]
    serve: bool
    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config_path: str | None = None  # the `--config FILE` named
    config_read: bool = False  # its settings were known and inserted
    config_error: str | None = None  # its text was known and refused (invalid, or over a bound)
    config_words: set[int] = field(default_factory=set)  # indexes in argv that came from the file
    dotted: dict[str, dict[str, str]] = field(default_factory=dict)  # "--speculative-config" -> {sub: spelling}
    hoisted_model: bool = False
    release: str = ""  # whose rewrites these are (the unit's 0.9.2 while 0.9.0's catalog types the flags)


def _crash(pre: Preprocessed, message: str, flag: str | None = None, key: str | None = None) -> None:
    pre.issues.append(Issue("startup-crash", message, key=key, flag=flag, severity="error"))


def preprocess(words: list[str], version: str, options: frozenset[str], label: str = "vLLM") -> Preprocessed:
    """Rewrite an engine argv as vLLM `version`'s FlexibleArgumentParser does. `options` are every
    option string the release's serve parser registers (hidden ones included)."""
    words, payloads = config_file.split_payloads(list(words))
    serve = bool(words) and is_serve_word(words[0])
    args = [SERVE, *words[1:]] if serve else list(words)
    pre = Preprocessed(argv=[], serve=serve, release=version)
    dotted_keys = at_least(version, "0.9.0")  # 0.9.0 utils.py parse_args: the --model check, dotted keys
    first_part = at_least(version, "0.9.1")  # 0.9.1: `_` -> `-` only before the first `.`
    o_rewrite = at_least(version, "0.9.2")  # 0.9.2: -O3 / -O=3 / -O 3 -> -O.level=3
    name = f"{label} {version}"

    if serve and dotted_keys:
        if not at_least(version, "0.12"):  # --model moved to the positional from 0.12 (oracles 0.12-0.14)
            if "--model" in args:
                _crash(pre, f"`vllm serve … --model X`: {name} refuses to start (ValueError: give the model as "
                       "the positional argument, `vllm serve X`, or in the --config file); 0.12 and later "
                       "accept it", flag="--model", key="model")
        else:
            idx = next((i for i, a in enumerate(args) if re.match(r"^--model(=.+|$)", a)), None)
            if idx is not None:
                if args[idx] == "--model":
                    if idx + 1 >= len(args):
                        _crash(pre, f"`--model` without a value at the end of the command line: {name} fails "
                               "(IndexError) before parsing", flag="--model", key="model")
                        args = args[:idx]
                        idx = None
                    else:
                        model, rest = args[idx + 1], idx + 2
                else:
                    model, rest = args[idx][len("--model="):], idx + 1
                if idx is not None:
                    args = [SERVE, model, *args[1:idx], *args[rest:]]
                    pre.hoisted_model = True
                    pre.notes.append(f"`--model {model}` is moved to the positional model by {name} (it logs that "
                                     "--model will be removed)")
            if (at_least(version, "0.17") and len(args) > 1 and args[1].startswith("-")  # 0.17's argparse_utils
                    and not any(re.match(r"^--config(=.+|$)", a) for a in args)
                    and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", a) for a in args)):
                _crash(pre, f"--served-model-name without a positional model: {name} refuses to start "
                       "(ValueError: `vllm serve <model> --<arg> <value>`)", flag="--served-model-name",
                       key="served_model_name")

    if "--config" in args:
        args = _pull_config(args, payloads, version, serve, options, pre, name)
    if serve and serve_lacks_model_option(version) and not any(i.severity == "error" for i in pre.issues):
        given = next((a for a in args[1:] if re.match(r"^--model(=.*|$)", a)), None)  # --model=X, or from --config
        if given is not None:
            _crash(pre, f"`{given.split('=', 1)[0]}` under `vllm serve`: {name} registers no --model there, so "
                   "argparse refuses it (ambiguous option: could match --model-impl, --model-loader-extra-config); "
                   "give the model as the positional argument", flag="--model", key="model")
    for word in args:
        if word.startswith("--config="):
            pre.notes.append(f"{word}: vLLM reads a config file only from `--config FILE` (a space, not `=`); "
                             "this one is stored and ignored")
            pre.issues.append(Issue("engine-config", f"{word.split('=', 1)[0]}=…: {name} reads the config file only "
                                    "when written `--config FILE`; with `=` the file is ignored", flag="--config",
                                    key="config", severity="warning"))

    body = args[1:] if serve else args
    config_at = {i - (1 if serve else 0) for i in pre.config_words}
    if not dotted_keys:
        pre.argv, pre.config_words = [_legacy_name(a) for a in body], config_at
        return pre

    processed: list[str] = []
    origin: list[bool] = []  # came from the config file
    for i, arg in enumerate(body):
        from_config = i in config_at
        if arg.startswith("--help=") and o_rewrite:
            processed.append("--help")
            origin.append(from_config)
        elif arg.startswith("--") and not first_part:
            processed.append(_legacy_name(arg))
            origin.append(from_config)
        elif arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                processed.append(f"{_NAME_PART.sub(lambda m: m.group(0).replace('_', '-'), key, count=1)}={value}")
            else:
                processed.append(_NAME_PART.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
            origin.append(from_config)
        elif not o_rewrite:  # up to 0.9.1 argparse reads -O3 / -O=3 / -O 3 as the -O alias
            processed.append(arg)
            origin.append(from_config)
        elif arg.startswith("-O") and arg != "-O" and (at_least(version, "0.12") or arg[2] != "."):
            level = arg[3:] if arg[2] == "=" else arg[2:]
            if at_least(version, "0.12"):  # -O N is --optimization-level from 0.12 on (oracles 0.12-0.14)
                processed += ["--optimization-level", level]
                origin += [from_config, from_config]
            else:
                processed.append(f"-O.level={level}")
                origin.append(from_config)
        elif arg == "-O" and i + 1 < len(body) and body[i + 1] in {"0", "1", "2", "3"}:
            processed.append("--optimization-level" if at_least(version, "0.12") else "-O.level")
            origin.append(from_config)
        else:
            processed.append(arg)
            origin.append(from_config)

    merged, merged_origin = _merge_dotted(processed, origin, version, pre)
    pre.argv = merged
    pre.config_words = {i for i, o in enumerate(merged_origin) if o}
    _note_duplicates([w for i, w in enumerate(merged) if i not in pre.config_words], pre)
    return pre


def _legacy_name(arg: str) -> str:
    """0.8.x: every `_` of an option's name becomes `-`."""
    if not arg.startswith("--"):
        return arg
    if "=" in arg:
        key, value = arg.split("=", 1)
        return "--" + key[2:].replace("_", "-") + "=" + value
    return "--" + arg[2:].replace("_", "-")


def _merge_dotted(processed: list[str], origin: list[bool], version: str,
                  pre: Preprocessed) -> tuple[list[str], list[bool]]:
    modern = at_least(version, "0.9.2")  # 0.9.0 - 0.9.1: `--` names only, text values, no `+`, no skip
    delete: set[int] = set()
    dict_args: dict[str, dict[str, Any]] = defaultdict(dict)
    dict_origin: dict[str, bool] = {}
    duplicates: set[str] = set()
    for i, arg in enumerate(processed):
        if i in delete and modern:
            continue
        if not (arg.startswith("-" if modern else "--") and "." in arg):
            continue
        if "=" in arg:
            arg, value_str = arg.split("=", 1)
            if "." not in arg:
                continue  # the dot was in the value
        else:
            if i + 1 >= len(processed):
                _crash(pre, f"{arg} without a value at the end of the command line: vLLM {version} fails "
                       "(IndexError) before parsing", flag=arg.split(".", 1)[0])
                delete.add(i)
                continue
            value_str = processed[i + 1]
            delete.add(i + 1)
        if arg.endswith("+") and modern:
            arg = arg[:-1]
            value_str = json.dumps(list(value_str.split(",")))
        key, *keys = arg.split(".")
        try:
            value: Any = loads_json(value_str) if modern else value_str
        except ValueError:
            value = value_str
            if at_least(version, "0.20"):
                try:
                    value = human_readable_int(value_str)
                except ValueError:
                    value = value_str
        nested: Any = value
        for k in reversed(keys):
            nested = {k: nested}
        overwritten = _update(dict_args[key], nested)
        if modern:  # 0.9.2 added the "Found duplicate keys" warning
            duplicates |= {f"{key}.{d}" for d in overwritten}
        dashed = [k for k in keys if "-" in k]
        if dashed and not at_least(version, "0.9.1"):
            spelled = f"the JSON gets {', '.join(repr(k) for k in dashed)}"
            if key in _FIELDS_ONLY:
                _crash(pre, f"{arg}: vLLM {version} turns every `_` of the option's name into `-`, the dotted "
                       f"keys included, so {spelled}, which no field of {_FIELDS_ONLY[key]} is called: it refuses "
                       f"to start (TypeError: unexpected keyword argument); write the whole JSON (`{key} "
                       "'{...}'`) or use 0.9.1+, which converts only the part before the first `.`", flag=key,
                       key=f"{key[2:].replace('-', '_')}.{dashed[0]}")
            else:
                pre.notes.append(f"{arg}: vLLM {version} turns the dotted keys' `_` into `-` too, so {spelled}")
        dict_origin[key] = dict_origin.get(key, True) and origin[i]
        if keys:
            pre.dotted.setdefault(key, {})[keys[0]] = arg
        delete.add(i)
    out = [a for i, a in enumerate(processed) if i not in delete]
    out_origin = [o for i, o in enumerate(origin) if i not in delete]
    for key, value in dict_args.items():
        out += [key, json.dumps(value)]
        out_origin += [dict_origin.get(key, False)] * 2
    if duplicates:
        pre.notes.append(f"vLLM warns \"Found duplicate keys {', '.join(sorted(duplicates))}\"; the last value wins")
    return out, out_origin


def _update(original: dict, update: dict) -> set[str]:
    duplicates: set[str] = set()
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            duplicates |= {f"{k}.{d}" for d in _update(original[k], v)}
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            if k in original:
                duplicates.add(k)
            original[k] = v
    return duplicates


def _note_duplicates(argv: list[str], pre: Preprocessed) -> None:
    seen: set[str] = set()
    dup: list[str] = []
    for word in argv:
        if word.startswith("--") and "." not in word:
            name = word.split("=", 1)[0]
            if name in seen and name not in dup:
                dup.append(name)
            seen.add(name)
    if dup:
        pre.notes.append(f"{', '.join(dup)} given more than once: the last value wins")


# --------------------------------------------------------------------------- --config FILE

def _pull_config(args: list[str], payloads: dict[str, dict], version: str, serve: bool,
                 options: frozenset[str], pre: Preprocessed, name: str) -> list[str]:
    """`_pull_args_from_config`: the file's flags inserted so that CLI > config > defaults."""
    if args.count("--config") > 1:
        _crash(pre, f"--config given more than once: {name} refuses to start (AssertionError: more than one "
               "config file)", flag="--config", key="config")
        return [a for a in args]
    index = args.index("--config")
    if index == len(args) - 1:
        _crash(pre, f"--config without a file: {name} refuses to start (ValueError: no config file specified)",
               flag="--config", key="config")
        return args[:index]
    path = args[index + 1]
    pre.config_path = path
    rest = args[index + 2:]
    extension = path.split(".")[-1]
    if extension not in ("yaml", "yml"):
        _crash(pre, f"--config {path}: {name} refuses to start (ValueError: the config file must be .yaml or "
               f".yml, not .{extension})", flag="--config", key="config")
        return args[:index] + rest
    payload = payloads.get(path)
    if payload is None:
        pre.issues.append(Issue(
            "engine-config", f"--config {path}: the file's settings are not known here, so they are not compared "
            "(pass the file with `driftwatch --engine-config FILE …`)",
            flag="--config", key="config", severity="warning"))
        return args  # `--config PATH` stays: at least the path is compared
    if payload.get("error") and payload.get("limit"):
        pre.config_error = str(payload["error"])
        pre.issues.append(Issue(
            "engine-config", f"--config {path}: {payload['error']}: driftwatch does not read it, so the file's "
            "settings are not compared", flag="--config", key="config", severity="warning"))
        return args[:index] + rest
    if payload.get("error"):
        pre.config_error = str(payload["error"])
        _crash(pre, f"--config {path}: {payload['error']}; {name} refuses to start (it cannot load the file)",
               flag="--config", key="config")
        return args[:index] + rest
    data = payload.get("data")
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a YAML {type(data).__name__}, not a mapping of options"
        _crash(pre, f"--config {path}: the file is {kind}; {name} refuses to start (AttributeError reading it)",
               flag="--config", key="config")
        return args[:index] + rest
    config_args = config_file_args(data, version, options if not serve else frozenset())
    pre.config_read = True
    head: list[str]
    tail: list[str]
    if at_least(version, "0.9.0"):  # 0.9.0 utils.py _pull_args_from_config: the model may come from the file
        if args[0].startswith("-") and at_least(version, "0.11"):
            head, tail = [], args[0:index] + rest
        elif args[0] == SERVE:
            model_in_cli = len(args) > 1 and not args[1].startswith("-")
            model_in_config = "--model" in config_args
            if not model_in_cli and not model_in_config:
                _crash(pre, f"--config {path} without a model: {name} refuses to start (ValueError: give the model "
                       "as the positional argument or as `model:` in the file)", flag="--config", key="model")
            if model_in_cli:
                head, tail = args[:2], args[2:index] + rest
            else:
                head, tail = args[:1], args[1:index] + rest
        else:
            head, tail = args[:1], args[1:index] + rest
    else:  # 0.8.x
        if args[0] == SERVE:
            if index == 1:
                _crash(pre, f"--config right after `serve`: {name} refuses to start (ValueError: no model_tag "
                       "specified)", flag="--config", key="model")
            head, tail = args[:2], args[2:index] + rest
        else:
            head, tail = args[:1], args[1:index] + rest
    pre.config_words = set(range(len(head), len(head) + len(config_args)))
    ignored = [k for k, v in data.items() if v is False and f"--{k}" in options
               and not (at_least(version, "0.30") and not serve and f"--no-{k}" in options)]
    if ignored:
        pre.notes.append(f"{', '.join(f'{k}: false' for k in ignored)} in {path}: vLLM adds only true booleans from "
                         "a config file" + (" read by `vllm serve`" if serve and at_least(version, "0.30") else "")
                         + ", so the default applies")
    return head + config_args + tail


def config_file_args(data: dict, version: str, options: frozenset[str]) -> list[str]:
    """`load_config_file`: a YAML mapping -> the flags vLLM `version` inserts for it. `options` are
    the option strings of the parser that reads the file (empty for `vllm serve`: the top-level parser)."""
    out: list[str] = []
    lists = at_least(version, "0.11")
    dicts = at_least(version, "0.16")  # 0.16's _pull_args_from_config turns mappings into JSON
    negatives = at_least(version, "0.30")
    for key, value in data.items():
        key = str(key)
        if isinstance(value, bool):
            if value:
                out.append("--" + key)
            elif negatives and f"--no-{key}" in options:
                out.append(f"--no-{key}")
        elif isinstance(value, list) and lists:
            if value:
                out.append("--" + key)
                out += [_py_str(item) for item in value]
        elif isinstance(value, dict) and dicts:
            out += ["--" + key, json.dumps(value)]
        else:
            out += ["--" + key, _py_str(value)]
    return out


def _py_str(value: Any) -> str:
    """Python's str() of a YAML value, as vLLM writes it into the argv."""
    return str(value)
