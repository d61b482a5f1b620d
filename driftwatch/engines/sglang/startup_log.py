"""What SGLang prints at start-up, read from the unit's journal (`journalctl -o cat`).

Formats, the same in 0.4.10.post2, 0.5.5, 0.5.12 and 0.5.23 unless said (file:line per release in
tests/engines/sglang/test_startup_log.py), each after SGLang's own prefix `[2025-08-01 10:00:00 DP0 TP0] `:
  server_args=ServerArgs(model_path='…', …)     dataclass repr; 0.5.23 logs `server_args={'model_path': …}`
  max_total_num_tokens=…, chunked_prefill_size=…, max_prefill_tokens=…, max_running_requests=…,
      context_len=…, available_gpu_mem=12.34 GB  the scheduler, once per DP rank (its TP rank 0)
  Capture cuda graph bs [1, 2, 4, …]             up to 0.5.12; 0.5.23: `Capture target decode CUDA graph
      end. bs=[1, 2, 4, …], …` (`target verify` with speculative decoding)
  KV Cache is allocated. #tokens: N, K size: x GB, V size: y GB   (`KV size: x GB` for MLA; 0.5.23 adds
      `dtype: …, `, names a hybrid model's pools `Full KV Cache …`/`SWA KV Cache …` (not read) and, when
      it resizes the pool after graph capture, logs the final size as
      `Post-capture KV sizing: KV cache allocated. dtype: …, #tokens: N, KV size: x GB, avail mem=…`)
"""
from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable
from typing import Any

from ..startup import NotPlain, StartupValues, plain

# For `grep -F`: every line parsed below holds one of these.
MARKERS: tuple[str, ...] = (
    "server_args=",
    "max_total_num_tokens=",
    "Capture cuda graph bs ",
    "CUDA graph end. bs=",
    "KV Cache is allocated",
    "KV cache allocated. dtype",
)

MAX_LINE = 256 * 1024
# Per-rank capacities: when ranks disagree the smallest is what every request can count on.
CAPACITIES = frozenset({"max_total_tokens", "max_running_requests", "context_length"})

_PREFIX = re.compile(
    r"(?:^|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?((?: [A-Z][A-Z_]*\d+)*)\] )"
    r"(?=server_args=|max_total_num_tokens=|Capture |KV Cache is allocated|Post-capture KV sizing: KV cache)")
_PAIR = re.compile(r"(\w+)=(-?\d{1,30}(?:\.\d{1,30})?)( GB)?(?=,|$)")
_SCHEDULER = {"max_total_num_tokens": "max_total_tokens", "chunked_prefill_size": "chunked_prefill_size",
              "max_prefill_tokens": "max_prefill_tokens", "max_running_requests": "max_running_requests",
              "context_len": "context_length"}
_BS_OLD = re.compile(r"Capture cuda graph bs \[([\d, ]{1,100000})\]")
_BS_NEW = re.compile(r"Capture target (?:decode|verify) CUDA graph end\. bs=\[([\d, ]{1,100000})\]")
_KV = re.compile(r"(?:KV Cache is allocated|Post-capture KV sizing: KV cache allocated)\.(?: dtype: [^,]{1,100},)?"
                 r" #tokens: (\d{1,30}), (?:K size: (\d{1,30}\.\d{1,30}) GB, V size: (\d{1,30}\.\d{1,30}) GB"
                 r"|KV size: (\d{1,30}\.\d{1,30}) GB)")


def parse_startup_log(lines: Iterable[str], unit_args: dict[str, Any] | None = None) -> StartupValues:
    """Total: a line that does not match or parse adds nothing. Per kind of line, each rank's first
    (the target model's pool and graphs come before a draft model's) counts; then ranks are merged.
    `unit_args` (the unit's typed fields) stand in for a `server_args` line that was not read (cut
    by journald's line limit, vacuumed) where the attention-DP width is needed."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for line in lines:
        if isinstance(line, (bytes, bytearray)):
            line = bytes(line).decode("utf-8", "replace")
        if not isinstance(line, str) or len(line) > MAX_LINE:
            continue
        match = _PREFIX.search(line)
        if match is None:
            continue
        kind, values = _read(line[match.end():])
        if values:
            seen.setdefault((kind, match.group(1) or ""), values)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for (kind, _rank), values in seen.items():
        by_kind.setdefault(kind, []).append(values)
    merged = {kind: merge_ranks(found) for kind, found in by_kind.items()}
    args = merged.get("server_args", {})
    result = StartupValues(fields=dict(args))
    for kind in ("kv", "kv_post", "graph", "scheduler"):  # runtime values, later ones win
        for key, value in merged.get(kind, {}).items():
            if key.endswith("_gb") or key == "kv_cache_tokens":
                result.figures[key] = value
            else:
                result.fields[key] = value
    if isinstance(merged.get("scheduler", {}).get("max_running_requests"), int):
        # The scheduler prints its own share: --max-running-requests // attention-DP width (0.4.10.post2
        # managers/tp_worker.py:127, 0.5.23 model_executor/pool_configurator.py:956).
        result.fields["max_running_requests"] *= attention_dp_width({**(unit_args or {}), **args})
    return result


def _read(message: str) -> tuple[str, dict[str, Any]]:
    if message.startswith("server_args="):
        return "server_args", parse_args_repr(message[len("server_args="):])
    if message.startswith("max_total_num_tokens="):
        values: dict[str, Any] = {}
        for name, number, gb in _PAIR.findall(message):
            if gb:
                _put_number(values, f"{name}_gb", float(number))
            elif name in _SCHEDULER and "." not in number:
                values[_SCHEDULER[name]] = int(number)
        return "scheduler", values
    graph = _BS_OLD.match(message) or _BS_NEW.match(message)
    if graph is not None:
        sizes = [int(n) for n in graph.group(1).split(",") if n.strip().isdigit() and len(n.strip()) <= 30]
        if not sizes:
            return "graph", {}
        suffix = "" if graph.re is _BS_OLD else "_decode"  # 0.5.23 renamed the fields with its format
        return "graph", {f"cuda_graph_bs{suffix}": sizes, f"cuda_graph_max_bs{suffix}": max(sizes)}
    kv = _KV.match(message)
    if kv is None:
        return "", {}
    tokens, k_size, v_size, kv_size = kv.groups()
    size = float(kv_size) if kv_size else float(k_size) + float(v_size)
    values = {"kv_cache_tokens": int(tokens)}
    _put_number(values, "kv_cache_gb", round(size, 2))
    return ("kv_post" if message.startswith("Post-capture") else "kv"), values


def parse_args_repr(text: str) -> dict[str, Any]:
    """`ServerArgs(a=1, …)` or `{'a': 1, …}` → its literal values; enums and objects are left out.
    Parsed with `ast`, never evaluated; text that is not one whole expression gives nothing."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "ServerArgs":
            pairs = [(kw.arg, kw.value) for kw in tree.keywords if kw.arg is not None]
        elif isinstance(tree, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(tree.keys, tree.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        else:
            return {}
        found = {}
        for name, node in pairs:
            try:  # a name, a call, an operator (an enum, an object) is not a literal: left out
                found[name] = plain(ast.literal_eval(node))
            except (NotPlain, ValueError, TypeError, SyntaxError, RecursionError):
                continue
        return found
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return {}


def plain_or_none(value: Any) -> tuple[bool, Any]:
    """(True, plain value) or (False, None): for callers outside this module."""
    try:
        return True, plain(value)
    except (NotPlain, RecursionError):
        return False, None


def merge_ranks(found: list[dict[str, Any]]) -> dict[str, Any]:
    """The values several ranks reported: one value when they agree, the smallest of a capacity
    when they do not, nothing for anything else they disagree on."""
    merged: dict[str, Any] = {}
    for key in dict.fromkeys(key for values in found for key in values):
        reported = [values[key] for values in found if key in values]
        if all(value == reported[0] and type(value) is type(reported[0]) for value in reported):
            merged[key] = reported[0]
        elif key in CAPACITIES and all(type(v) is int for v in reported):
            merged[key] = min(reported)
    return merged


def attention_dp_width(args: dict[str, Any]) -> int:
    """How many attention-DP groups split --max-running-requests: 0.5.23 resolves `attn_dp_size`;
    before it, `dp_size` when `enable_dp_attention` (plain DP replicas each take the whole value)."""
    width = args.get("attn_dp_size")
    if type(width) is int and width >= 1:
        return width
    dp = args.get("dp_size")
    return dp if args.get("enable_dp_attention") is True and type(dp) is int and dp >= 1 else 1


def _put_number(values: dict[str, Any], key: str, number: float) -> None:
    if math.isfinite(number):
        values[key] = number
