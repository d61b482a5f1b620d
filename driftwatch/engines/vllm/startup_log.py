"""What vLLM prints at start-up, read from the unit's journal (`journalctl -o cat`).

The lines read (file:line per release in tests/engines/vllm/test_startup_log.py), found anywhere in the
line so vLLM's prefix (`(EngineCore_DP0 pid=7) INFO 08-01 10:00:00 [core.py:77] `) may be there or not:
  non-default args: {'model': …, …}          0.10+, the flags that differ from the parser's defaults
  args: Namespace(model='…', …)              0.8.2, every parsed flag (no non-default line yet)
  Initializing a V1 LLM engine (v0.10.0) with config: model='…', …, max_seq_len=…, …
                                             str(VllmConfig); `a V0 LLM engine` for V0 (0.8.2, 0.10)
  GPU KV cache size: 1,234 tokens            V1, per engine/KV cache config
  Maximum concurrency for 32,768 tokens per request: 2.37x   (one line with the above from 0.30)
  # cuda blocks: N, # CPU blocks: M          V0 (0.8.2, 0.10); V0 also prints Maximum concurrency
  Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: N   V1
  Chunked prefill is enabled with max_num_batched_tokens=N.
  Asynchronous scheduling is enabled.        0.14 – 0.25
Values the engine computed (the config line and the lines after it) win over the arguments.
"""
from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable
from typing import Any

from ...fileio import loads_json
from ..startup import NotPlain, StartupValues, plain

# For `grep -F`: every line parsed below holds one of these.
MARKERS: tuple[str, ...] = (
    "non-default args: ",
    "args: Namespace(",
    "LLM engine (v",
    "KV cache size: ",
    "Maximum concurrency for ",
    "# CPU blocks: ",
    "after num_gpu_blocks is: ",
    "Chunked prefill is enabled with",
    "Asynchronous scheduling is ",
)

MAX_LINE = 256 * 1024
# When engines or ranks disagree on one of these, the smallest is what every request can count on.
CAPACITIES = frozenset({"max_model_len", "max_num_batched_tokens", "kv.max_total_tokens", "max_concurrency",
                        "num_gpu_blocks"})

_NUM = r"(\d{1,3}(?:,\d{3}){1,10}|\d{1,30})"  # vLLM prints token counts with `{:,}` (V1) or plain (V0)
_ARGS = re.compile(r"non-default args: (\{.*\})\s*$", re.A)
_NAMESPACE = re.compile(r"\bargs: Namespace\((.*)\)\s*$", re.A)
_CONFIG = re.compile(r"Initializing an? (?:V[01] )?LLM engine \(v[^()\s]{1,100}\) with config: (.*)$", re.A)
_KV = re.compile(r"KV cache size: " + _NUM + r" tokens", re.A)
_CONCURRENCY = re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: (\d{1,30}\.\d{1,30})x", re.A)
_V0_BLOCKS = re.compile(r"# \w{1,20} blocks: (\d{1,30}), # CPU blocks: \d{1,30}", re.A)
_V1_BLOCKS = re.compile(r"cache_config_info with initialization after num_gpu_blocks is: (\d{1,30})", re.A)
_CHUNKED = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d{1,30})\.", re.A)
_ASYNC = re.compile(r"Asynchronous scheduling is (enabled|disabled)\.", re.A)
_KEY = re.compile(r"(\w{1,200})=(.*)", re.S | re.A)
_DICT_KEY = re.compile(r"""\s*('(?:[^'\\]|\\.){0,200}'|"(?:[^"\\]|\\.){0,200}")\s*:(.*)""", re.S | re.A)
_WORD = re.compile(r"[A-Za-z0-9][\w.+\-/:]{0,200}", re.A)
_SIZES = re.compile(r"""["']cudagraph_capture_sizes["']\s*:\s*\[([\d,\s]{0,100000})\]""", re.A)
_MAX_SIZE = re.compile(r"""["']max_cudagraph_capture_size["']\s*:\s*(\d{1,30})\b""", re.A)
_SKIP = object()


def parse_startup_log(lines: Iterable[str]) -> StartupValues:
    """Total: a line that does not match or parse adds nothing; each kind of line is merged over the
    engines and ranks that printed it (`merge`)."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        if isinstance(line, (bytes, bytearray)):
            line = bytes(line).decode("utf-8", "replace")
        if not isinstance(line, str) or len(line) > MAX_LINE:
            continue
        for kind, values in _read(line.rstrip("\r\n")):
            if values and values not in seen.setdefault(kind, []):
                seen[kind].append(values)
    merged = {kind: merge(found) for kind, found in seen.items()}
    result = StartupValues()
    for kind in ("namespace", "args", "config", "chunked", "async", "concurrency"):  # later ones win
        result.fields.update(merged.get(kind, {}))
    result.concepts.update(merged.get("kv", {}))
    result.figures.update(merged.get("figures", {}))
    return result


def _read(line: str) -> Iterable[tuple[str, dict[str, Any]]]:
    if (m := _ARGS.search(line)) is not None:
        yield "args", _with_dotted(parse_dict(m.group(1)))
    elif (m := _NAMESPACE.search(line)) is not None:
        yield "namespace", {k: v for k, v in parse_pairs(m.group(1)).items() if v is not None}
    elif (m := _CONFIG.search(line)) is not None:
        yield "config", parse_config(m.group(1))
    if (m := _KV.search(line)) is not None:
        yield "kv", {"kv.max_total_tokens": _count(m.group(1))}
    if (m := _CONCURRENCY.search(line)) is not None:
        yield "concurrency", {"max_model_len": _count(m.group(1))}
        concurrency = float(m.group(2))
        if math.isfinite(concurrency):
            yield "figures", {"max_concurrency": concurrency}
    if (m := _V0_BLOCKS.search(line) or _V1_BLOCKS.search(line)) is not None:
        yield "figures", {"num_gpu_blocks": int(m.group(1))}
    if (m := _CHUNKED.search(line)) is not None:
        yield "chunked", {"enable_chunked_prefill": True, "max_num_batched_tokens": int(m.group(1))}
    if (m := _ASYNC.search(line)) is not None:
        yield "async", {"async_scheduling": m.group(1) == "enabled"}


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def merge(found: list[dict[str, Any]]) -> dict[str, Any]:
    """One value where every line agrees, the smallest of a capacity where they do not, else nothing."""
    merged: dict[str, Any] = {}
    for key in dict.fromkeys(k for values in found for k in values):
        reported = [values[key] for values in found if key in values]
        if all(v == reported[0] and type(v) is type(reported[0]) for v in reported):
            merged[key] = reported[0]
        elif key in CAPACITIES and all(type(v) in (int, float) for v in reported):
            merged[key] = min(reported)
    return merged


# ---- the config line: str(VllmConfig), `key=value, …` with values as f-strings print them

def _int(raw: str) -> Any:
    return int(raw) if re.fullmatch(r"[0-9]{1,30}", raw) else _SKIP


def _bool(raw: str) -> Any:
    return {"True": True, "False": False}.get(raw, _SKIP)


def _word(raw: str) -> Any:
    """A bare name (`fp8`, `auto`) or a quoted string; None and anything with spaces or brackets: skipped."""
    if raw[:1] in ("'", '"'):
        value = literal(raw)
        return value if isinstance(value, str) else _SKIP
    return raw if raw != "None" and _WORD.fullmatch(raw) else _SKIP


def _dtype(raw: str) -> Any:
    """`torch.bfloat16` -> `bfloat16`, the name --dtype takes."""
    return raw[len("torch."):] if raw.startswith("torch.") and _WORD.fullmatch(raw) else _SKIP


# VllmConfig.__str__ key -> (native field, reader). Keys with objects of their own are read below.
_CONFIG_KEYS = {
    "model": ("model", _word), "tokenizer": ("tokenizer", _word), "dtype": ("dtype", _dtype),
    "max_seq_len": ("max_model_len", _int), "tensor_parallel_size": ("tensor_parallel_size", _int),
    "pipeline_parallel_size": ("pipeline_parallel_size", _int), "data_parallel_size": ("data_parallel_size", _int),
    "decode_context_parallel_size": ("decode_context_parallel_size", _int),
    "disable_custom_all_reduce": ("disable_custom_all_reduce", _bool), "quantization": ("quantization", _word),
    "enforce_eager": ("enforce_eager", _bool), "kv_cache_dtype": ("kv_cache_dtype", _word),
    "enable_prefix_caching": ("enable_prefix_caching", _bool),
    "chunked_prefill_enabled": ("enable_chunked_prefill", _bool),  # up to 0.11
    "enable_chunked_prefill": ("enable_chunked_prefill", _bool),
}
_SPEC_KEYS = {"method": "method", "model": "model", "draft_model": "model",  # draft_model: 0.8.2
              "num_spec_tokens": "num_speculative_tokens"}


def parse_config(text: str) -> dict[str, Any]:
    """The values of str(VllmConfig) that read back unambiguously; the rest (reprs of objects, names
    printed without quotes that may hold anything, such as served_model_name) is left out."""
    pairs = _split_pairs(text)
    found: dict[str, Any] = {}
    for key, (native, read) in _CONFIG_KEYS.items():
        if key in pairs and (value := read(pairs[key])) is not _SKIP:
            found[native] = value
    spec = re.fullmatch(r"SpeculativeConfig\((.*)\)", pairs.get("speculative_config", ""), re.S)
    if spec is not None:
        for key, value in parse_pairs(spec.group(1)).items():
            if key in _SPEC_KEYS and value is not None:
                found[f"speculative_config.{_SPEC_KEYS[key]}"] = value
    found.update(cuda_graph_sizes(pairs.get("compilation_config", "")))
    return found


def cuda_graph_sizes(text: str) -> dict[str, Any]:
    """The capture sizes inside a printed CompilationConfig (JSON up to 0.11, a Python dict from 0.14),
    under the release's flag: `--cudagraph-capture-sizes`/`--max-cudagraph-capture-size` came with the
    `max_cudagraph_capture_size` key (vLLM PR #26016); before them `--cuda-graph-sizes`. Ascending, as
    vLLM keeps them since that PR (0.10 printed them descending)."""
    m = _SIZES.search(text)
    sizes = sorted({int(n) for n in m.group(1).split(",") if n.strip().isdigit()}) if m else []
    top = _MAX_SIZE.search(text)
    if top is None:
        return {"cuda_graph_sizes": sizes} if sizes else {}
    found: dict[str, Any] = {"max_cudagraph_capture_size": int(top.group(1))}
    if sizes:
        found["cudagraph_capture_sizes"] = sizes
    return found


# ---- splitting reprs without evaluating them

def _top_level(text: str) -> list[str]:
    """`text` cut at the commas outside brackets and quotes. A quote opens a string only where a value
    starts (after `=`, `:`, `,` or a bracket), so an apostrophe inside a bare name does not."""
    parts, depth, start, quote, prev, i = [], 0, 0, "", ",", 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"" and prev in "=:,([{":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        if not ch.isspace():
            prev = ch
        i += 1
    parts.append(text[start:])
    return parts


def _split_pairs(text: str) -> dict[str, str]:
    """`a=1, b=x, y` -> {"a": "1", "b": "x, y"}: a piece with no `name=` belongs to the value before it.
    The first of a repeated key wins."""
    pieces: dict[str, list[str]] = {}
    last = None
    for part in _top_level(text):
        m = _KEY.fullmatch(part.strip())
        if m is not None and m.group(1) not in pieces:
            last = m.group(1)
            pieces[last] = [m.group(2)]
        elif last is not None:
            pieces[last].append(part)
    return {key: ",".join(parts).strip() for key, parts in pieces.items()}


def parse_pairs(text: str) -> dict[str, Any]:
    """`Namespace(…)`/`SpeculativeConfig(…)` insides: the literal values (objects left out)."""
    found = {}
    for key, raw in _split_pairs(text).items():
        if (value := literal(raw)) is not _SKIP:
            found[key] = value
    return found


def parse_dict(text: str) -> dict[str, Any]:
    """`{'a': 1, 'b': <Enum.X: 2>, …}` -> its literal values, each read on its own so one object
    (an enum, a CompilationConfig) does not lose the rest. Parsed with `ast`, never evaluated."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return {}
    found: dict[str, Any] = {}
    key = None
    pieces: list[str] = []
    for part in _top_level(text[1:-1]) + ["'':"]:  # a sentinel key flushes the last entry
        m = _DICT_KEY.fullmatch(part)
        if m is None:
            pieces.append(part)
            continue
        if key is not None and (value := literal(",".join(pieces))) is not _SKIP:
            found.setdefault(key, value)
        name = literal(m.group(1))
        key = name if isinstance(name, str) and name else None
        pieces = [m.group(2)]
    return found


def literal(raw: str) -> Any:
    """A Python literal (or, for JSON text such as 0.10's printed CompilationConfig, JSON) as JSON can
    hold it; _SKIP for anything else, non-finite floats included."""
    raw = raw.strip()
    try:
        value = ast.literal_eval(raw)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if not raw or raw[0] not in "[{":
            return _SKIP
        try:
            value = loads_json(raw)
        except (ValueError, RecursionError):
            return _SKIP
    try:
        return plain(value)
    except (NotPlain, RecursionError):
        return _SKIP


def _with_dotted(args: dict[str, Any]) -> dict[str, Any]:
    """`speculative_config`/`compilation_config` dicts also as one setting per key, as the engine reads
    the unit's (rewrites.py): `speculative_config.method` …"""
    for name in ("speculative_config", "compilation_config"):
        if isinstance(args.get(name), dict):
            for key, value in args[name].items():
                if not isinstance(value, dict):
                    args.setdefault(f"{name}.{key}", value)
    return args
