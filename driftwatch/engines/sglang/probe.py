"""What a running SGLang server reports on its own HTTP endpoints.

`/server_info` (0.5.12 and later; 0.5.23 resolves every field first) and `/get_server_info` (0.4.10.post2,
0.5.5; still served, deprecated, by 0.5.12 and 0.5.23) return the same JSON: the ServerArgs fields, the
scheduler's `max_total_num_tokens`, `version` and `internal_states` (one dict per DP rank: the
scheduler's copy of the fields, `last_gen_throughput`, `memory_usage`, `avg_spec_accept_length` once
speculative steps have run, and from 0.5.12 `effective_max_running_requests_per_dp`). `/metrics` answers
only with --enable-metrics. Values are returned as reported, secrets included: the caller redacts.
"""
from __future__ import annotations

import math
import re
from typing import Any, TypeGuard

from ...fileio import loads_json
from ..startup import StartupValues
from .startup_log import attention_dp_width, merge_ranks, plain_or_none

PROBE_PATHS: tuple[str, ...] = ("/server_info", "/get_server_info", "/metrics")

MAX_BODY = 32 * 1024 * 1024
MAX_STATES = 1024  # DP ranks read from internal_states
_MEMORY = {"weight": "weight_gb", "kvcache": "kv_cache_gb", "startup_available": "startup_available_gb",
           "cuda_graph": "graph_gb", "graph": "graph_gb"}  # cuda_graph: 0.4.10.post2; graph: a dict in 0.5.23


def parse_probe(responses: dict[str, bytes], fields: frozenset[str]) -> StartupValues:
    """Total: a missing, oversized or malformed body adds nothing. /server_info is the server's
    resolved state, so where it and /metrics report the same value /server_info wins. `fields`: the
    engine's native field names (every catalog's); the payload's other keys are not flags."""
    if not isinstance(responses, dict):
        return StartupValues()
    result = parse_metrics(_body(responses, "/metrics") or b"")
    for path in PROBE_PATHS[:2]:
        info = _server_info(_body(responses, path), fields)
        if info:
            return result.merge(info)
    return result


def _body(responses: dict, path: str) -> bytes | None:
    body = responses.get(path)
    if isinstance(body, str):
        body = body.encode("utf-8", "replace")
    return bytes(body) if isinstance(body, (bytes, bytearray)) and len(body) <= MAX_BODY else None


def _server_info(body: bytes | None, names: frozenset[str]) -> StartupValues:
    if not body:
        return StartupValues()
    try:
        payload = loads_json(body)
    except (ValueError, TypeError, RecursionError, MemoryError):
        return StartupValues()
    if not isinstance(payload, dict):
        return StartupValues()
    result = StartupValues(fields=_native(payload, names))
    states = payload.get("internal_states")
    states = [s for s in states[:MAX_STATES] if isinstance(s, dict)] if isinstance(states, list) else []
    result.fields.update(merge_ranks([_native(state, names) for state in states]))
    if _count(payload.get("max_total_num_tokens")):
        result.fields["max_total_tokens"] = payload["max_total_num_tokens"]
    per_dp = merge_ranks([{"max_running_requests": s["effective_max_running_requests_per_dp"]}
                          for s in states if _count(s.get("effective_max_running_requests_per_dp"))])
    if per_dp:
        # Each DP scheduler holds --max-running-requests // attention-DP width (0.5.12
        # model_executor/model_runner_kv_cache_mixin.py:88, 0.5.23 model_executor/pool_configurator.py:956),
        # so the width times the per-DP value is the flag's value (to the floor division); plain DP
        # replicas each hold the whole value, width 1.
        result.fields["max_running_requests"] = per_dp["max_running_requests"] * attention_dp_width(result.fields)
    throughputs = [s["last_gen_throughput"] for s in states if _number(s.get("last_gen_throughput"))]
    if throughputs and math.isfinite(sum(throughputs)):
        result.figures["throughput"] = float(sum(throughputs))  # each DP rank decodes its own requests
    accepts = [s["avg_spec_accept_length"] for s in states if _number(s.get("avg_spec_accept_length"))]
    if accepts:
        result.figures["accept_length"] = sum(accepts) / len(accepts)
    result.figures.update(merge_ranks([_memory(s.get("memory_usage")) for s in states]))
    return result


def _native(values: dict, names: frozenset[str]) -> dict[str, Any]:
    fields = {}
    for key, value in values.items():
        if key in names:
            ok, value = plain_or_none(value)
            if ok:
                fields[key] = value
    return fields


def _memory(usage: Any) -> dict[str, float]:
    if not isinstance(usage, dict):
        return {}
    figures = {}
    for key, name in _MEMORY.items():
        value = usage.get(key)
        if isinstance(value, dict):  # 0.5.23: GB per captured graph phase
            parts = list(value.values())
            value = sum(parts) if parts and all(_number(p) for p in parts) else None
        if _number(value):
            figures[name] = float(value)
    return figures


def _number(value: Any) -> TypeGuard[int | float]:
    return type(value) in (int, float) and math.isfinite(value)


def _count(value: Any) -> bool:
    return type(value) is int and value > 0


# ---- /metrics (Prometheus text format)
_SAMPLE = re.compile(r"(sglang:[A-Za-z0-9_:]{1,200})(?:\{(.{0,4000}?)\})?[ \t]+(\S{1,64})")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.){0,1000})"')
# metric -> (where it goes, name, how DP ranks combine)
_METRICS = {"sglang:gen_throughput": ("figures", "throughput", "sum"),
            "sglang:num_running_reqs": ("figures", "running_requests", "sum"),
            "sglang:spec_accept_length": ("figures", "accept_length", "mean"),
            "sglang:max_total_num_tokens": ("fields", "max_total_tokens", "min"),
            "sglang:context_len": ("fields", "context_length", "min")}


def parse_metrics(body: bytes) -> StartupValues:
    """The gauges above. Series are grouped by their `dp_rank` label (none: one group); within a
    group the largest value stands for it (TP/PP ranks of one DP rank repeat its numbers); groups
    combine as each DP rank counts: throughput and running requests add up, the accept length is
    their mean, the capacities (per-rank constants) take the smallest."""
    groups: dict[str, dict[str, float]] = {}
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else ""
    for line in text.splitlines():
        sample = _SAMPLE.match(line)
        if sample is None or sample.group(1) not in _METRICS:
            continue
        try:
            value = float(sample.group(3))
        except ValueError:
            continue
        if not math.isfinite(value):
            continue
        labels = dict(_LABEL.findall(sample.group(2) or ""))
        group = groups.setdefault(sample.group(1), {})
        rank = labels.get("dp_rank", "")
        group[rank] = max(value, group.get(rank, value))
    result = StartupValues()
    for metric, by_rank in groups.items():
        where, name, how = _METRICS[metric]
        values = list(by_rank.values())
        combined = sum(values, 0.0) if how == "sum" else sum(values, 0.0) / len(values) if how == "mean" \
            else min(values)
        if not math.isfinite(combined):
            continue
        if where == "fields":
            if combined.is_integer() and combined > 0:
                result.fields[name] = int(combined)
        else:
            result.figures[name] = combined
    return result
