"""What a running vLLM server says about itself on its own HTTP endpoints (payload shapes and release
file:line in tests/engines/vllm/test_probe.py and ../shared/research/vllm.md, Q3).

- `/v1/models`: `data[0].max_model_len`, the resolved context length.
- `/metrics` (always on): `vllm:cache_config_info`, an info gauge whose labels are `str()` of every
  CacheConfig field, one series per engine; `vllm:num_requests_running`; the speculative-decoding
  counters. Throughput is a counter (`vllm:generation_tokens_total`): one scrape cannot tell a rate,
  so none is reported.
- `/server_info`: only with VLLM_SERVER_DEV_MODE=1; its `vllm_config` is str(VllmConfig), the text of
  the start-up config line. Asked last: elsewhere it is a 404.
`/version` is not asked: a StartupValues has no place for the release.
"""
from __future__ import annotations

import math
import re
from typing import Any

from ...fileio import loads_json
from ..startup import StartupValues
from .startup_log import MAX_LINE, merge, parse_config

PROBE_PATHS: tuple[str, ...] = ("/v1/models", "/metrics", "/server_info")

MAX_BODY = 32 * 1024 * 1024
CACHE_INFO = "vllm:cache_config_info"
RUNNING = "vllm:num_requests_running"
DRAFTS = "vllm:spec_decode_num_drafts_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
_WANTED = frozenset({CACHE_INFO, RUNNING, DRAFTS, ACCEPTED})
# CacheConfig label -> native field (the flag's dest); the capacities computed at start-up go apart.
_CACHE_FIELDS = {"block_size": "block_size", "gpu_memory_utilization": "gpu_memory_utilization",
                 "cache_dtype": "kv_cache_dtype", "enable_prefix_caching": "enable_prefix_caching",
                 "prefix_caching_hash_algo": "prefix_caching_hash_algo", "swap_space": "swap_space",
                 "cpu_offload_gb": "cpu_offload_gb", "kv_cache_memory_bytes": "kv_cache_memory_bytes",
                 "num_gpu_blocks_override": "num_gpu_blocks_override", "calculate_kv_scales": "calculate_kv_scales"}
_SAMPLE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]{0,200})(?:\{(.*)\})?[ \t]+(\S{1,64})(?:[ \t]+-?\d{1,20})?[ \t]*",
                     re.A)
_LABEL = re.compile(r'[ \t]*([A-Za-z_][A-Za-z0-9_]{0,200})[ \t]*=[ \t]*"((?:[^"\\]|\\.){0,65536})"[ \t]*(?:,|$)',
                    re.A)
_NUMBER = re.compile(r"-?[0-9]{1,30}(?:\.[0-9]{1,30})?(?:[eE][-+]?[0-9]{1,3})?", re.A)


def parse_probe(responses: dict[str, bytes]) -> StartupValues:
    """Total: a missing, oversized or malformed body adds nothing. /v1/models over /metrics over
    /server_info where they name the same field."""
    result = StartupValues()
    if not isinstance(responses, dict):
        return result
    info = _json(responses.get("/server_info"))
    if isinstance(info, dict) and isinstance(info.get("vllm_config"), str) and len(info["vllm_config"]) <= MAX_LINE:
        result.fields.update(parse_config(info["vllm_config"]))
    body = responses.get("/metrics")
    if isinstance(body, (bytes, bytearray)) and len(body) <= MAX_BODY:
        _read_metrics(parse_metrics(bytes(body).decode("utf-8", "replace"), _WANTED), result)
    models = _json(responses.get("/v1/models"))
    data = models.get("data") if isinstance(models, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        length = data[0].get("max_model_len")
        if type(length) is int and length > 0:
            result.fields["max_model_len"] = length
    return result


def _json(body: Any) -> Any:
    if not isinstance(body, (bytes, bytearray)) or len(body) > MAX_BODY:
        return None
    try:
        return loads_json(bytes(body))
    except (ValueError, RecursionError):
        return None


def parse_metrics(text: str, names: frozenset[str]) -> list[tuple[str, dict[str, str], float]]:
    """The samples of `names` in Prometheus text: (name, labels, value). A line that does not parse
    whole (labels included) is skipped, never half read."""
    samples = []
    for line in text.splitlines():
        name = line.partition("{")[0].partition(" ")[0]
        if name not in names:
            continue
        m = _SAMPLE.fullmatch(line)
        if m is None:
            continue
        labels = _labels(m.group(2) or "")
        if labels is None:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        samples.append((m.group(1), labels, value))
    return samples


def _labels(text: str) -> dict[str, str] | None:
    labels: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None or m.end() == pos:
            return labels if not text[pos:].strip() else None
        labels[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(2))
        pos = m.end()
    return labels


def _read_metrics(samples: list[tuple[str, dict[str, str], float]], result: StartupValues) -> None:
    engines = [_cache_info(labels) for name, labels, _ in samples if name == CACHE_INFO]
    cache = merge([e for e in engines if e])
    for key, value in cache.items():
        if key == "kv.max_total_tokens":
            result.concepts[key] = value
        elif key in ("num_gpu_blocks", "max_concurrency"):
            result.figures[key] = value
        else:
            result.fields[key] = value
    totals = {name: 0.0 for name in (RUNNING, DRAFTS, ACCEPTED)}
    seen = set()
    for name, _, value in samples:
        if name in totals and math.isfinite(value) and value >= 0:
            totals[name] += value
            seen.add(name)
    if RUNNING in seen:
        result.figures["running_requests"] = totals[RUNNING]  # summed over the engines (data parallel)
    if totals[DRAFTS] > 0 and totals[ACCEPTED] > 0:
        # Mean acceptance length since start (vllm/v1/spec_decode/metrics.py docstring: 1 + accepted/drafts).
        result.figures["accept_length"] = 1 + totals[ACCEPTED] / totals[DRAFTS]


def _cache_info(labels: dict[str, str]) -> dict[str, Any]:
    """One engine's CacheConfig labels. `block_size` is left out when the unit gave it: for a hybrid
    model the label holds the smallest group's block size, not the flag's (vllm issue #51163)."""
    found: dict[str, Any] = {}
    for label, native in _CACHE_FIELDS.items():
        if label in labels and (value := _label_value(labels[label])) is not None:
            found[native] = value
    if labels.get("user_specified_block_size") == "True":
        found.pop("block_size", None)
    for label, key in (("num_gpu_blocks", "num_gpu_blocks"), ("kv_cache_size_tokens", "kv.max_total_tokens"),
                       ("kv_cache_max_concurrency", "max_concurrency")):
        value = _label_value(labels.get(label, "None"))
        if type(value) in (int, float) and value >= 0:
            found[key] = value
    return found


def _label_value(text: str) -> Any:
    """`str()` of a Python value read back: None (not set) gives None; bools, numbers, else the text."""
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if _NUMBER.fullmatch(text):
        number = float(text)
        if not math.isfinite(number):
            return None
        return int(text) if re.fullmatch(r"-?[0-9]{1,30}", text) else number
    return text
