"""SGLang's /server_info, /get_server_info and /metrics payloads, in the shapes each release builds
(sglang/srt/ in the released wheel: entrypoints/http_server.py and the scheduler's get_internal_state)."""
import json

from hypothesis import given, settings, strategies as st

from driftwatch.engines.sglang.engine import ENGINE
from driftwatch.engines.sglang.probe import PROBE_PATHS, parse_metrics

parse_probe = ENGINE.parse_probe


def test_paths_newest_first():
    # /server_info: 0.5.12 http_server.py:630, 0.5.23 :863; /get_server_info: 0.4.10.post2 :317, 0.5.5 :498
    assert PROBE_PATHS == ("/server_info", "/get_server_info", "/metrics")


def test_release_0_4_10_post2_get_server_info():
    # http_server.py:317: {**asdict(server_args), **scheduler_info, "internal_states", "version"};
    # scheduler.py:2217: internal state = global_server_args_dict + last_gen_throughput, memory_usage
    # {weight, kvcache, token_capacity, cuda_graph}, avg_spec_accept_length (speculative), load
    payload = {"model_path": "Qwen/Qwen3-8B", "tp_size": 1, "api_key": "sk-secret", "max_running_requests": None,
               "context_length": None, "cuda_graph_bs": [1, 2, 4], "not_a_flag": 7,
               "max_total_num_tokens": 413813, "max_req_input_len": 40954, "status": "ready",
               "internal_states": [{"attention_backend": "fa3", "last_gen_throughput": 71.25,
                                    "memory_usage": {"weight": 15.27, "kvcache": 56.84, "token_capacity": 413813,
                                                     "cuda_graph": 0.42},
                                    "avg_spec_accept_length": 2.9, "load": 0}],
               "version": "0.4.10.post2"}
    got = parse_probe({"/get_server_info": json.dumps(payload).encode()})
    assert got.fields == {"model_path": "Qwen/Qwen3-8B", "tp_size": 1, "api_key": "sk-secret",
                          "max_running_requests": None, "context_length": None, "cuda_graph_bs": [1, 2, 4],
                          "attention_backend": "fa3", "max_total_tokens": 413813}
    assert got.figures == {"throughput": 71.25, "accept_length": 2.9, "weight_gb": 15.27, "kv_cache_gb": 56.84,
                           "graph_gb": 0.42}


def test_release_0_5_12_effective_running_requests_times_attention_dp():
    # scheduler.py:3480 ret["effective_max_running_requests_per_dp"] = self.max_running_requests, which is
    # --max-running-requests // dp_size under --enable-dp-attention (model_runner_kv_cache_mixin.py:88)
    state = {"dp_size": 2, "enable_dp_attention": True, "max_running_requests": 64,
             "effective_max_running_requests_per_dp": 32, "last_gen_throughput": 40.0,
             "memory_usage": {"weight": 8.0, "kvcache": 20.0, "token_capacity": 100000, "graph": 1.5}}
    payload = {"dp_size": 2, "enable_dp_attention": True, "max_running_requests": 64,
               "max_total_num_tokens": 100000, "internal_states": [state, {**state, "last_gen_throughput": 35.5}]}
    got = parse_probe({"/server_info": json.dumps(payload).encode(), "/get_server_info": b"{}"})
    assert got.fields["max_running_requests"] == 64
    assert got.figures == {"throughput": 75.5, "weight_gb": 8.0, "kv_cache_gb": 20.0, "graph_gb": 1.5}


def test_plain_dp_replicas_hold_the_whole_value():
    state = {"dp_size": 2, "enable_dp_attention": False, "effective_max_running_requests_per_dp": 48}
    got = parse_probe({"/server_info": json.dumps({"internal_states": [state, state]}).encode()})
    assert got.fields == {"dp_size": 2, "enable_dp_attention": False, "max_running_requests": 48}


def test_release_0_5_23_server_info():
    # http_server.py:863 -> utils/common.py:3584 build_server_info: resolved_dict() + launch_command +
    # scheduler_info + kv_events; internal_state.py:73 effective_max_running_requests_per_dp, memory_usage
    # with "graph" a dict of GB per phase (memory_usage.py:29)
    resolved = {"model_path": "Qwen/Qwen3-32B", "attn_dp_size": 2, "dp_size": 2, "enable_dp_attention": True,
                "mem_fraction_static": 0.828, "max_running_requests": 16, "cuda_graph_max_bs_decode": 8,
                "admin_api_key": "adm-secret", "cuda_graph_config": {"decode": {"backend": "full"}}}
    states = [{**resolved, "world_size": 4, "effective_max_running_requests_per_dp": 7, "last_gen_throughput": 30.0,
               "avg_spec_accept_length": accept,
               "memory_usage": {"weight": 32.1, "kvcache": 40.0, "startup_available": 75.0, "token_capacity": 5,
                                "token_capacity_swa": None, "graph": {"decode": 0.5, "target_verify": 0.25}}}
              for accept in (3.0, 2.0)]
    payload = {**resolved, "launch_command": "sglang serve --api-key x", "status": "ready",
               "max_total_num_tokens": 812345, "kv_events": {}, "internal_states": states, "version": "0.5.23"}
    got = parse_probe({"/server_info": json.dumps(payload).encode()})
    assert got.fields == {**resolved, "max_total_tokens": 812345, "max_running_requests": 14}
    assert got.figures == {"throughput": 60.0, "accept_length": 2.5, "weight_gb": 32.1, "kv_cache_gb": 40.0,
                           "startup_available_gb": 75.0, "graph_gb": 0.75}


METRICS = b"""# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{dp_rank="0",engine_type="unified",model_name="q",pp_rank="0",tp_rank="0"} 41.5
sglang:gen_throughput{dp_rank="0",engine_type="unified",model_name="q",pp_rank="0",tp_rank="1"} 41.5
sglang:gen_throughput{dp_rank="1",engine_type="unified",model_name="q",pp_rank="0",tp_rank="0"} 38.5
sglang:num_running_reqs{dp_rank="0",model_name="q",tp_rank="0"} 3.0
sglang:num_running_reqs{dp_rank="1",model_name="q",tp_rank="0"} 2.0
sglang:spec_accept_length{dp_rank="0",model_name="q",tp_rank="0"} 3.5
sglang:spec_accept_length{dp_rank="1",model_name="q",tp_rank="0"} 2.5
sglang:max_total_num_tokens{dp_rank="0",model_name="q",tp_rank="0"} 50000.0
sglang:max_total_num_tokens{dp_rank="1",model_name="q",tp_rank="0"} 48000.0
sglang:context_len{model_name="q",tp_rank="0"} 40960.0
sglang:token_usage{model_name="q",tp_rank="0"} 0.5
sglang:cache_hit_rate{model_name="q",tp_rank="0"} NaN
sglang:gen_throughput{broken 1
garbage line
"""


def test_metrics():
    # names: 0.4.10.post2 metrics/collector.py:161,182,210; 0.5.23 observability/metrics_collector.py:365,383,512,
    # 1290,1338 (max_total_num_tokens and context_len from 0.5.12)
    got = parse_probe({"/metrics": METRICS})
    assert got.fields == {"max_total_tokens": 48000, "context_length": 40960}
    assert got.figures == {"throughput": 80.0, "running_requests": 5.0, "accept_length": 3.0}


def test_server_info_wins_over_metrics():
    info = {"max_total_num_tokens": 47000, "internal_states": [{"last_gen_throughput": 10.0}]}
    got = parse_probe({"/metrics": METRICS, "/get_server_info": json.dumps(info).encode()})
    assert got.fields["max_total_tokens"] == 47000 and got.fields["context_length"] == 40960
    assert got.figures["throughput"] == 10.0 and got.figures["running_requests"] == 5.0


def test_bad_payloads_add_nothing():
    for body in (b"", b"not json", b"[1, 2]", b"null", b'{"internal_states": 5, "max_total_num_tokens": "9"}',
                 b'{"tp_size": NaN, "mem_fraction_static": Infinity, "max_total_num_tokens": -1}',
                 b'{"internal_states": [1, "x", {"last_gen_throughput": 1e999, "memory_usage": {"graph": {"a": "b"}}}]}',
                 b"[" * 100000, b"\xff\xfe\x00", b"{}" + b" " * (33 * 1024 * 1024)):
        assert not parse_probe({"/server_info": body}), body[:40]
    assert not parse_probe({"/server_info": None, "/metrics": 5})
    assert not parse_probe("not a dict")
    assert not parse_metrics(b'sglang:gen_throughput 1e999\nsglang:context_len 0.5\nsglang:gen_throughput +Inf\n')


def test_falls_back_to_the_deprecated_path():
    got = parse_probe({"/server_info": b"<html>404</html>", "/get_server_info": b'{"tp_size": 4}'})
    assert got.fields == {"tp_size": 4}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(PROBE_PATHS),
                       st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode),
                                 st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
                                              lambda inner: st.lists(inner) | st.dictionaries(st.sampled_from(
                                                  ["tp_size", "internal_states", "memory_usage", "graph",
                                                   "last_gen_throughput", "max_total_num_tokens", "dp_size",
                                                   "effective_max_running_requests_per_dp", "attn_dp_size"]), inner),
                                              max_leaves=30).map(lambda v: json.dumps(v).encode()))))
def test_any_payload_never_raises(responses):
    got = parse_probe(responses)
    for value in got.figures.values():
        assert isinstance(value, (int, float)) and value == value and abs(value) != float("inf")
