"""vLLM's own argparse type converters, resolved from a catalog's `type` and `type_name`.

The catalog generator (tools/catalog/vllm.py) names each converter the way vLLM builds it:
`optional_type(int)`, `parse_type(json.loads)`, `parse_dataclass(SpeculativeConfig)`,
`human_readable_int`, `human_readable_int_or_auto`, `union_dict_and_str` … followed by a
description in parentheses. The functions below behave as vLLM's do (vllm/engine/arg_utils.py and
vllm/utils/argparse_utils.py, 0.10.0 – 0.33.0); a value they reject raises ValueError, which the
shared catalog code turns into a `bad-value` finding.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...fileio import loads_json
from ..argparse_catalog import to_bool

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def human_readable_int(text: str) -> int:
    """vLLM's human_readable_int: 1k = 1000, 1K = 1024, 25.6k = 25600; binary suffixes take no
    decimals; a plain number is int()."""
    text = text.strip()
    match = _HUMAN.fullmatch(text)
    if match:
        number, suffix = match.groups()
        if suffix in "kmgt":
            return int(float(number) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[suffix])
        if "." in number:
            raise ValueError(f"decimals are not allowed with binary suffixes like {suffix}")
        return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    return int(text)


def human_readable_int_or_auto(text: str) -> int:
    """human_readable_int, plus `-1` / `auto` (any case) for "pick at start-up" (-1)."""
    if text.strip() == "-1" or text.strip().lower() == "auto":
        return -1
    return human_readable_int(text)


def json_object(text: str) -> Any:
    """`parse_dataclass(Config)`: the value must be JSON (pydantic validates it as the config)."""
    value = loads_json(text)
    if not isinstance(value, dict):
        raise ValueError(f"{text!r} is not a JSON object")
    return value


def compilation_from_cli(text: str) -> Any:
    """0.8.x - 0.9.x CompilationConfig.from_cli: "0" - "3" is the level, else a JSON object (`cls(**json)`;
    another number is a TypeError)."""
    if text in ("0", "1", "2", "3"):
        return {"level": int(text)}
    return json_object(text)


def union_dict_and_str(text: str) -> Any:
    if not re.match(r"(?s)^\s*{.*}\s*$", text):
        return str(text)
    return None if text in ("", "None") else loads_json(text)


def store_boolean(text: str) -> bool:
    """0.8.x StoreBoolean: `true` / `false` in any case, nothing else."""
    if text.lower() == "true":
        return True
    if text.lower() == "false":
        return False
    raise ValueError(f"invalid boolean value {text!r} (expected true or false)")


def nullable_str(text: str) -> Any:
    return None if not text or text == "None" else text


_BASE: dict[str, Callable[[str], Any]] = {
    "int": int, "float": float, "str": str, "bool": to_bool, "json": loads_json, "json.loads": loads_json,
    "human_readable_int": human_readable_int, "human_readable_int_or_auto": human_readable_int_or_auto,
    "union_dict_and_str": union_dict_and_str, "nullable_str": nullable_str, "store_boolean": store_boolean,
    "from_cli": compilation_from_cli, "from_json": json_object,
    "<lambda>": json_object,  # 0.9.0 get_kwargs: `lambda x, f=Config: f(**json.loads(x))` (also from_cli's)
}
_WRAPPED = re.compile(r"^(optional_type|parse_type|parse_dataclass)\((.*)\)$")


def resolve(kind: str | None, type_name: str | None) -> Callable[[str], Any]:
    """The converter for a catalog option: its `type_name` when vLLM's (`optional_type(int)`), else
    the generic `type` (int, float, str, json, bool)."""
    name = (type_name or "").split(" (", 1)[0].strip()
    match = _WRAPPED.match(name)
    if match:
        outer, inner = match.groups()
        if outer == "parse_dataclass":
            return json_object
        inner_fn = resolve(None, inner) if inner else _BASE.get(kind or "str", str)
        if outer == "optional_type":
            def optional(text: str, _inner=inner_fn):
                return None if text in ("", "None") else _inner(text)
            return optional
        return inner_fn
    if name in _BASE:
        return _BASE[name]
    if name.rsplit(".", 1)[-1] in _BASE:  # a qualname: CompilationConfig.from_cli
        return _BASE[name.rsplit(".", 1)[-1]]
    # An unknown spelling (a release's new converter): the generic type says what it parses.
    return _BASE.get(kind or "str", str)
