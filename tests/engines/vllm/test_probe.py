"""vLLM's /v1/models, /metrics and /server_info payloads, in the shapes each release builds (sdist sources,
under vllm/). /metrics bodies are rendered by prometheus_client, as vLLM renders them."""
import json

import prometheus_client
from hypothesis import given, settings, strategies as st

from driftwatch.engines.vllm.probe import PROBE_PATHS, parse_metrics, parse_probe


def cache_config_info(*engines):
    """v1/metrics/loggers.py log_metrics_info (0.10.0 :469, 0.33.0 :1114): a gauge named
    vllm:cache_config_info whose labels are CacheConfig.metrics_info() = {k: str(v) for k, v in __dict__}
    plus `engine`, set to 1 once per engine."""
    registry = prometheus_client.CollectorRegistry()
    gauge = prometheus_client.Gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                                    labelnames=[*engines[0], "engine"], registry=registry)
    for index, labels in enumerate(engines):
        gauge.labels(**labels, engine=str(index)).set(1)
    return registry


def counters(registry, values):
    """vllm:num_requests_running (gauge) and the spec-decode counters (v1/spec_decode/metrics.py), labels
    model_name and engine; prometheus_client exports a counter as NAME_total (and NAME_created)."""
    for name, per_engine in values.items():
        kind = prometheus_client.Gauge if name == "vllm:num_requests_running" else prometheus_client.Counter
        metric = kind(name, name, labelnames=["model_name", "engine"], registry=registry)
        for engine, value in enumerate(per_engine):
            child = metric.labels(model_name="qwen", engine=str(engine))
            child.set(value) if kind is prometheus_client.Gauge else child.inc(value)
    return prometheus_client.generate_latest(registry)


# 0.10.0 config.py:1615 CacheConfig fields
CACHE_0_10 = {"block_size": "16", "gpu_memory_utilization": "0.9", "swap_space": "4", "cache_dtype": "auto",
              "is_attention_free": "False", "num_gpu_blocks_override": "None", "sliding_window": "None",
              "enable_prefix_caching": "True", "prefix_caching_hash_algo": "builtin", "cpu_offload_gb": "0",
              "calculate_kv_scales": "False", "cpu_kvcache_space_bytes": "None", "mamba_page_size_padded": "None",
              "num_gpu_blocks": "87808", "num_cpu_blocks": "None"}
# 0.33.0 config/cache.py:187-389 (a selection, with the init=False kv_cache_size_tokens :344 and
# kv_cache_max_concurrency :348 set by v1/core/kv_cache_utils.py update_kv_cache_capacity)
CACHE_0_33 = {"block_size": "16", "user_specified_block_size": "False", "gpu_memory_utilization": "0.92",
              "cache_dtype": "fp8", "enable_prefix_caching": "True", "prefix_caching_hash_algo": "sha256",
              "num_gpu_blocks_override": "None", "kv_cache_memory_bytes": "None", "num_gpu_blocks": "12414",
              "num_cpu_blocks": "None", "kv_cache_size_tokens": "198624",
              "kv_cache_max_concurrency": "6.06146240234375", "mamba_cache_dtype": "auto"}


def test_paths():
    # /v1/models: 0.10.0 entrypoints/openai/api_server.py (ModelCard protocol.py:103, max_model_len :110);
    # /server_info last: 0.10.0 api_server.py:974 and 0.33.0 entrypoints/serve/dev/server_info/api_router.py:43,
    # only with VLLM_SERVER_DEV_MODE=1
    assert PROBE_PATHS == ("/v1/models", "/metrics", "/server_info")


def test_release_0_10_0():
    models = {"object": "list", "data": [{"id": "qwen", "object": "model", "created": 1754000000, "owned_by": "vllm",
                                          "root": "Qwen/Qwen3-8B", "parent": None, "max_model_len": 40960,
                                          "permission": [{"id": "modelperm-1", "object": "model_permission"}]}]}
    body = counters(cache_config_info(CACHE_0_10), {"vllm:num_requests_running": [3]})
    got = parse_probe({"/v1/models": json.dumps(models).encode(), "/metrics": body})
    assert got.fields == {"block_size": 16, "gpu_memory_utilization": 0.9, "swap_space": 4,
                          "kv_cache_dtype": "auto", "enable_prefix_caching": True,
                          "prefix_caching_hash_algo": "builtin", "cpu_offload_gb": 0,
                          "calculate_kv_scales": False, "max_model_len": 40960}
    assert got.concepts == {}
    assert got.figures == {"num_gpu_blocks": 87808, "running_requests": 3.0}


def test_release_0_33_0_two_engines_and_spec_decode():
    second = {**CACHE_0_33, "num_gpu_blocks": "12000", "kv_cache_size_tokens": "192000",
              "kv_cache_max_concurrency": "5.859375"}
    body = counters(cache_config_info(CACHE_0_33, second), {
        "vllm:num_requests_running": [3, 2], "vllm:spec_decode_num_drafts": [60, 40],
        "vllm:spec_decode_num_draft_tokens": [180, 120], "vllm:spec_decode_num_accepted_tokens": [100, 80]})
    got = parse_probe({"/metrics": body})
    assert got.fields == {"block_size": 16, "gpu_memory_utilization": 0.92, "kv_cache_dtype": "fp8",
                          "enable_prefix_caching": True, "prefix_caching_hash_algo": "sha256"}
    assert got.concepts == {"kv.max_total_tokens": 192000}  # engines disagree: the smaller pool
    assert got.figures == {"num_gpu_blocks": 12000, "max_concurrency": 5.859375, "running_requests": 5.0,
                           "accept_length": 2.8}  # 1 + 180 accepted / 100 drafts, since start


def test_no_drafts_no_accept_length():
    body = counters(prometheus_client.CollectorRegistry(), {"vllm:spec_decode_num_drafts": [0],
                                                            "vllm:spec_decode_num_accepted_tokens": [0]})
    assert parse_probe({"/metrics": body}).figures == {}


def test_block_size_the_unit_gave_is_left_out():
    # A hybrid model's label holds the smallest group's block size (https://github.com/vllm-project/vllm/issues/51163)
    body = prometheus_client.generate_latest(cache_config_info({**CACHE_0_33, "block_size": "4",
                                                                "user_specified_block_size": "True"}))
    assert "block_size" not in parse_probe({"/metrics": body}).fields


def test_server_info_is_the_config_line():
    # 0.33.0 api_router.py:49 {"vllm_config": str(vllm_config), "vllm_env": …, "system_env": …}
    config = ("model='hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789', speculative_config=None, "
              "tokenizer='hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789', dtype=torch.bfloat16, max_seq_len=32768, "
              "tensor_parallel_size=2, enforce_eager=False, kv_cache_dtype=auto, enable_prefix_caching=True, "
              "compilation_config={'cudagraph_capture_sizes': [1, 2, 4], 'max_cudagraph_capture_size': 4}")
    payload = {"vllm_config": config, "vllm_env": {"VLLM_SERVER_DEV_MODE": "1"}, "system_env": {}}
    got = parse_probe({"/server_info": json.dumps(payload).encode(),
                       "/v1/models": json.dumps({"data": [{"id": "m", "max_model_len": 16384}]}).encode()})
    assert got.fields == {  # a token-like value is returned as is: the caller redacts
        "model": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "tokenizer": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "dtype": "bfloat16", "max_model_len": 16384,  # /v1/models wins
        "tensor_parallel_size": 2, "enforce_eager": False, "kv_cache_dtype": "auto", "enable_prefix_caching": True,
        "max_cudagraph_capture_size": 4, "cudagraph_capture_sizes": [1, 2, 4]}


def test_prometheus_lines():
    text = "\n".join([
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        'vllm:num_requests_running{engine="0",model_name="a,b=\\"c\\"\\\\"} 2.0',
        "vllm:num_requests_running 1",
        'vllm:num_requests_running{engine="1" 3.0',  # cut short: skipped whole
        'vllm:num_requests_running{engine="2",junk} 4.0',
        'vllm:num_requests_running{engine="3"} NaN 1700000000000',
        "vllm:num_requests_waiting 9",  # not asked for
    ])
    assert parse_metrics(text, frozenset({"vllm:num_requests_running"}))[:2] == [
        ("vllm:num_requests_running", {"engine": "0", "model_name": 'a,b="c"\\'}, 2.0),
        ("vllm:num_requests_running", {}, 1.0)]
    assert len(parse_metrics(text, frozenset({"vllm:num_requests_running"}))) == 3
    got = parse_probe({"/metrics": text.encode()})
    assert got.figures == {"running_requests": 3.0}  # NaN dropped


def test_garbage():
    assert not parse_probe({})
    assert not parse_probe(None)
    assert not parse_probe({"/v1/models": b"\xff{", "/metrics": b"\x00" * 100, "/server_info": b"[1]"})
    assert not parse_probe({"/v1/models": b'{"data": [{"max_model_len": true}]}', "/server_info": b'{"vllm_config": 1}'})
    assert not parse_probe({"/v1/models": b"[" * 100000 + b"]" * 100000})
    assert not parse_probe({"/metrics": b'vllm:cache_config_info{num_gpu_blocks="1e999",kv_cache_size_tokens="-5"} 1'})


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(PROBE_PATHS + ("/other",)),
                       st.one_of(st.binary(max_size=400),
                                 st.builds(lambda t: ("vllm:cache_config_info{" + t).encode(), st.text(max_size=300)),
                                 st.builds(lambda t: ('{"data": [{"max_model_len": ' + t).encode(),
                                           st.text(max_size=50)))))
def test_random_bodies_never_raise(responses):
    got = parse_probe(responses)
    assert isinstance(got.fields, dict) and isinstance(got.figures, dict)
