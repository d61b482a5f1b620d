"""vLLM start-up lines, per release: real lines quoted in public issues where there are some (URL given;
a quote cut short in the issue is completed from the release's format string), else lines built from
the release's own format string (file:line in the release's sdist, under vllm/). 0.15.0 has no sdist:
its lines are those of 0.14.1 and 0.16.0, which print the same."""
import shutil
import subprocess

from hypothesis import given, settings, strategies as st

from driftwatch.engines.vllm.startup_log import MARKERS, MAX_LINE, parse_dict, parse_startup_log

P = "(EngineCore_DP0 pid=7) INFO 08-01 10:00:00 "  # vLLM's prefix: (process pid) LEVEL date [file:line]


def parsed(lines):
    got = parse_startup_log(lines)
    return got.fields, got.concepts, got.figures


# ---- 0.8.2
# entrypoints/openai/api_server.py:982  logger.info("args: %s", args)  (no non-default args line yet)
# v1/engine/core.py:54  "Initializing a V1 LLM engine (v%s) with config: %s" (config.py VllmConfig.__str__)
# v1/core/kv_cache_utils.py:566  "GPU KV cache size: %s tokens" (f"{num_tokens:,}")
# v1/core/kv_cache_utils.py:569  "Maximum concurrency for %s tokens per request: %.2fx"
# config.py:1698  "Chunked prefill is enabled with max_num_batched_tokens=%d."
V1_0_8 = (  # https://github.com/containers/ramalama/issues/912 (v0.8.3.dev: 0.8.2's VllmConfig.__str__)
    "INFO 04-04 16:30:36 [core.py:61] Initializing a V1 LLM engine (v0.8.3.dev244+g8b3a4a17e) with config: "
    "model='google/gemma-3-1b-it', speculative_config=None, tokenizer='google/gemma-3-1b-it', "
    "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, "
    "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, "
    "download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, "
    "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto,  "
    "device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend='xgrammar', "
    "reasoning_backend=None), observability_config=ObservabilityConfig(show_hidden_metrics=False, "
    "otlp_traces_endpoint=None, collect_model_forward_time=False, collect_model_execute_time=False), "
    "seed=None, served_model_name=google/gemma-3-1b-it, num_scheduler_steps=1, multi_step_stream_outputs=True, "
    "enable_prefix_caching=True, chunked_prefill_enabled=True, use_async_output_proc=True, "
    "disable_mm_preprocessor_cache=False, mm_processor_kwargs=None, pooler_config=None, "
    'compilation_config={"level":3,"custom_ops":["none"],"splitting_ops":["vllm.unified_attention",'
    '"vllm.unified_attention_with_output"],"use_inductor":true,"compile_sizes":[],"use_cudagraph":true,'
    '"cudagraph_num_of_warmups":1,"cudagraph_capture_sizes":[512,504,496,488,480,8,4,2,1],'
    '"max_capture_size":512}')


def test_release_0_8_2_v1():
    lines = [
        "INFO 03-26 10:00:00 [api_server.py:982] args: Namespace(subparser='serve', model_tag='google/gemma-3-1b-it',"
        " config='', host=None, port=8000, api_key='sk-live-0123456789abcdef', max_model_len=None, "
        "gpu_memory_utilization=0.9, max_num_seqs=None, block_size=None, enable_chunked_prefill=None, "
        "model='google/gemma-3-1b-it', dispatch_function=<function ServeSubcommand.cmd at 0x7f3c2a1b>)",
        "INFO 03-26 10:00:01 [config.py:1698] Chunked prefill is enabled with max_num_batched_tokens=8192.",
        V1_0_8,
        "INFO 03-26 10:00:30 [kv_cache_utils.py:566] GPU KV cache size: 811,808 tokens",
        "INFO 03-26 10:00:30 [kv_cache_utils.py:569] Maximum concurrency for 32,768 tokens per request: 24.77x",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields == {  # the Namespace's None (resolved later) and its function object are left out
        "subparser": "serve", "model_tag": "google/gemma-3-1b-it", "config": "", "port": 8000,
        "api_key": "sk-live-0123456789abcdef",  # returned as printed: the caller redacts
        "gpu_memory_utilization": 0.9, "model": "google/gemma-3-1b-it", "tokenizer": "google/gemma-3-1b-it",
        "dtype": "bfloat16", "max_model_len": 32768, "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
        "disable_custom_all_reduce": False, "enforce_eager": False, "kv_cache_dtype": "auto",
        "enable_prefix_caching": True, "enable_chunked_prefill": True, "max_num_batched_tokens": 8192,
        "cuda_graph_sizes": [1, 2, 4, 8, 480, 488, 496, 504, 512]}
    assert concepts == {"kv.max_total_tokens": 811808}
    assert figures == {"max_concurrency": 24.77}


# engine/llm_engine.py:242  "Initializing a V0 LLM engine (v%s) with config: %s, use_cached_outputs=%s, "
# executor/executor_base.py:111  "# %s blocks: %d, # CPU blocks: %d" (current_platform.device_name: cuda)
# executor/executor_base.py:116  "Maximum concurrency for %s tokens per request: %.2fx" (max_model_len, no commas)
def test_release_0_8_2_v0():
    lines = [  # https://github.com/vllm-project/vllm/issues/8031 (v0.8.3, same format), completed
        "INFO 04-11 12:37:49 [llm_engine.py:242] Initializing a V0 LLM engine (v0.8.3) with config: "
        "model='OPEA/Mistral-Small-3.1-24B-Instruct-2503-int4-AutoRound-awq-sym', speculative_config=None, "
        "tokenizer='OPEA/Mistral-Small-3.1-24B-Instruct-2503-int4-AutoRound-awq-sym', skip_tokenizer_init=False, "
        "tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, "
        "trust_remote_code=False, dtype=torch.float16, max_seq_len=8192, download_dir=None, load_format=auto, "
        "tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=awq, "
        "enforce_eager=False, kv_cache_dtype=auto,  device_config=cuda, "
        "decoding_config=DecodingConfig(guided_decoding_backend='outlines', reasoning_backend=None), "
        "observability_config=ObservabilityConfig(show_hidden_metrics=False, otlp_traces_endpoint=None, "
        "collect_model_forward_time=False, collect_model_execute_time=False), seed=None, "
        "served_model_name=OPEA/Mistral-Small-3.1-24B-Instruct-2503-int4-AutoRound-awq-sym, num_scheduler_steps=1, "
        "multi_step_stream_outputs=True, enable_prefix_caching=None, chunked_prefill_enabled=False, "
        "use_async_output_proc=True, disable_mm_preprocessor_cache=False, mm_processor_kwargs=None, "
        'pooler_config=None, compilation_config={"splitting_ops":[],"compile_sizes":[],'
        '"cudagraph_capture_sizes":[256,248,8,4,2,1],"max_capture_size":256}, use_cached_outputs=True, ',
        "INFO 04-11 12:38:10 [executor_base.py:111] # cuda blocks: 5691, # CPU blocks: 2048",
        "INFO 04-11 12:38:10 [executor_base.py:116] Maximum concurrency for 8192 tokens per request: 11.12x",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields == {  # enable_prefix_caching=None is not a value
        "model": "OPEA/Mistral-Small-3.1-24B-Instruct-2503-int4-AutoRound-awq-sym",
        "tokenizer": "OPEA/Mistral-Small-3.1-24B-Instruct-2503-int4-AutoRound-awq-sym", "dtype": "float16",
        "max_model_len": 8192, "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
        "disable_custom_all_reduce": False, "quantization": "awq", "enforce_eager": False,
        "kv_cache_dtype": "auto", "enable_chunked_prefill": False, "cuda_graph_sizes": [1, 2, 4, 8, 248, 256]}
    assert concepts == {}  # V0 prints blocks, not tokens; block_size is not on the line: not guessed
    assert figures == {"num_gpu_blocks": 5691, "max_concurrency": 11.12}


# ---- 0.10.0
# entrypoints/openai/cli_args.py:261  logger.info("non-default args: %s", non_default_args)
# v1/engine/core.py:71 config line; v1/core/kv_cache_utils.py:833/837 (and :997/:1001 for several groups)
# v1/metrics/loggers.py:143  "Engine %03d: vllm cache_config_info with initialization after num_gpu_blocks is: %d"
def test_release_0_10_0():
    lines = [
        "(APIServer pid=1) INFO 08-05 17:10:10 [cli_args.py:261] non-default args: {'model_tag': '/mnt/models', "
        "'model': '/mnt/models', 'max_model_len': 131072, 'api_key': 'sk-live-0123456789abcdef', "
        "'compilation_config': {\"level\":3,\"cudagraph_capture_sizes\":[1,2,4],\"use_cudagraph\":true}}",
        # https://github.com/vllm-project/vllm/issues/22265 (v0.10.2.dev2, 0.10.0's format), completed
        "(EngineCore_0 pid=269) INFO 08-05 17:10:29 [core.py:73] Initializing a V1 LLM engine "
        "(v0.10.2.dev2+gf5635d62e.d20250805) with config: model='/mnt/models', speculative_config=None, "
        "tokenizer='/mnt/models', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        "override_neuron_config={}, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
        "max_seq_len=131072, download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
        "disable_custom_all_reduce=False, quantization=mxfp4, enforce_eager=False, kv_cache_dtype=auto, "
        "device_config=cuda, decoding_config=DecodingConfig(backend='auto', disable_fallback=False, "
        "disable_any_whitespace=False, disable_additional_properties=False, reasoning_backend='openai'), "
        "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
        "otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=/mnt/models, "
        "num_scheduler_steps=1, multi_step_stream_outputs=True, enable_prefix_caching=True, "
        "chunked_prefill_enabled=True, use_async_output_proc=True, pooler_config=None, "
        'compilation_config={"level":3,"debug_dump_path":"","cache_dir":"","backend":"","custom_ops":[],'
        '"splitting_ops":["vllm.unified_attention","vllm.unified_attention_with_output","vllm.mamba_mixer2"],'
        '"use_inductor":true,"compile_sizes":[],"use_cudagraph":true,"cudagraph_num_of_warmups":1,'
        '"cudagraph_capture_sizes":[1024,1016,512,8,4,2,1],"cudagraph_copy_inputs":false,'
        '"full_cuda_graph":false,"max_capture_size":1024,"local_cache_dir":null}',
        P + "[kv_cache_utils.py:833] GPU KV cache size: 1,404,928 tokens",
        P + "[kv_cache_utils.py:837] Maximum concurrency for 131,072 tokens per request: 10.72x",
        "(APIServer pid=1) INFO 08-05 17:11:02 [loggers.py:143] Engine 000: vllm cache_config_info with "
        "initialization after num_gpu_blocks is: 87808",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields == {
        "model_tag": "/mnt/models", "model": "/mnt/models", "max_model_len": 131072,
        "api_key": "sk-live-0123456789abcdef",
        "compilation_config": {"level": 3, "cudagraph_capture_sizes": [1, 2, 4], "use_cudagraph": True},
        "compilation_config.level": 3, "compilation_config.cudagraph_capture_sizes": [1, 2, 4],
        "compilation_config.use_cudagraph": True,
        "tokenizer": "/mnt/models", "dtype": "bfloat16", "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
        "disable_custom_all_reduce": False, "quantization": "mxfp4", "enforce_eager": False,
        "kv_cache_dtype": "auto", "enable_prefix_caching": True, "enable_chunked_prefill": True,
        "cuda_graph_sizes": [1, 2, 4, 8, 512, 1016, 1024]}
    assert concepts == {"kv.max_total_tokens": 1404928}
    assert figures == {"max_concurrency": 10.72, "num_gpu_blocks": 87808}


# ---- 0.11.0
# entrypoints/utils.py:233 non-default args; v1/engine/core.py:77 (config/__init__.py VllmConfig.__str__:
# data_parallel_size, structured_outputs_config); v1/core/kv_cache_utils.py:1087/1091;
# config/scheduler.py:206 chunked prefill
def test_release_0_11_0():
    lines = [
        P.replace("EngineCore_DP0", "APIServer") + "[utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
        "'model': 'Qwen/Qwen3-8B', 'data_parallel_size': 2, 'cuda_graph_sizes': [64], 'max_num_seqs': 64}",
        P + "[scheduler.py:206] Chunked prefill is enabled with max_num_batched_tokens=8192.",
        P + "[core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='Qwen/Qwen3-8B', "
        "speculative_config=SpeculativeConfig(method='eagle3', model='Tengyunw/qwen3_8b_eagle3', num_spec_tokens=3), "
        "tokenizer='Qwen/Qwen3-8B', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=40960, "
        "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
        "data_parallel_size=2, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, "
        "kv_cache_dtype=fp8_e4m3, device_config=cuda, structured_outputs_config=StructuredOutputsConfig("
        "backend='auto', disable_fallback=False), observability_config=ObservabilityConfig("
        "show_hidden_metrics_for_version=None), seed=0, served_model_name=Qwen/Qwen3-8B, "
        "enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, "
        'compilation_config={"level":3,"cudagraph_mode":[2,1],"cudagraph_capture_sizes":[64,56,48,40,32,24,16,8,4,2,1],'
        '"max_capture_size":64}',
        P + "[kv_cache_utils.py:1087] GPU KV cache size: 501,424 tokens",
        P + "[kv_cache_utils.py:1091] Maximum concurrency for 40,960 tokens per request: 12.24x",
        P.replace("DP0", "DP1") + "[kv_cache_utils.py:1087] GPU KV cache size: 498,112 tokens",
        P.replace("DP0", "DP1") + "[kv_cache_utils.py:1091] Maximum concurrency for 40,960 tokens per request: 12.16x",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields == {
        "model_tag": "Qwen/Qwen3-8B", "model": "Qwen/Qwen3-8B", "data_parallel_size": 2,
        "cuda_graph_sizes": [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64],  # the resolved list wins over [64]
        "max_num_seqs": 64, "enable_chunked_prefill": True, "max_num_batched_tokens": 8192,
        "speculative_config.method": "eagle3", "speculative_config.model": "Tengyunw/qwen3_8b_eagle3",
        "speculative_config.num_speculative_tokens": 3, "tokenizer": "Qwen/Qwen3-8B", "dtype": "bfloat16",
        "max_model_len": 40960, "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
        "disable_custom_all_reduce": False, "quantization": "fp8", "enforce_eager": False,
        "kv_cache_dtype": "fp8_e4m3", "enable_prefix_caching": True}
    assert concepts == {"kv.max_total_tokens": 498112}  # two DP engines disagree: the smaller pool
    assert figures == {"max_concurrency": 12.16}


# ---- 0.15.0 (0.14.1 / 0.16.0 sources)
# entrypoints/utils.py:263 (0.14.1) / :223 (0.16.0) non-default args; v1/engine/core.py:98 config line
# (config/vllm.py: enable_return_routed_experts, enable_chunked_prefill; CompilationConfig printed with
# str(dict), config/compilation.py); config/vllm.py:631 / :690 "Asynchronous scheduling is %s.";
# v1/core/kv_cache_utils.py:1305/1311 (0.14.1), :1307/1313 (0.16.0), info_once per process
CONFIG_0_15 = (
    "Initializing a V1 LLM engine (v0.15.0) with config: model='meta-llama/Llama-3.1-8B-Instruct', "
    "speculative_config=None, tokenizer='meta-llama/Llama-3.1-8B-Instruct', skip_tokenizer_init=False, "
    "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
    "max_seq_len=16384, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, "
    "data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
    "enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, "
    "structured_outputs_config=StructuredOutputsConfig(backend='auto', reasoning_parser=''), "
    "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None), seed=0, "
    "served_model_name=llama, it's mine, enable_prefix_caching=False, enable_chunked_prefill=True, "
    "pooler_config=None, compilation_config={'level': None, 'mode': <CompilationMode.VLLM_COMPILE: 3>, "
    "'custom_ops': ['none'], 'splitting_ops': ['vllm::unified_attention'], 'compile_sizes': [], "
    "'inductor_compile_config': {'enable_auto_functionalized_v2': False, 'combo_kernels': True}, "
    "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_num_of_warmups': 1, "
    "'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 24, 32], 'cudagraph_copy_inputs': False, "
    "'max_cudagraph_capture_size': 32, 'local_cache_dir': None}")


def test_release_0_15_0():
    lines = [
        "(APIServer pid=1) INFO 01-20 10:00:00 [utils.py:263] non-default args: {'model_tag': "
        "'meta-llama/Llama-3.1-8B-Instruct', 'tensor_parallel_size': 2, 'max_model_len': 16384, "
        "'no_enable_prefix_caching': True, 'max_cudagraph_capture_size': 32, "
        "'compilation_config': {'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'mode': 3}}",
        "(APIServer pid=1) INFO 01-20 10:00:01 [vllm.py:631] Asynchronous scheduling is enabled.",
        P + "[core.py:98] " + CONFIG_0_15,
        P + "[kv_cache_utils.py:1305] GPU KV cache size: 245,760 tokens",
        P + "[kv_cache_utils.py:1311] Maximum concurrency for 16,384 tokens per request: 15.00x",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields == {  # the enum in the compilation_config dict: the dict is left out, its plain key kept
        "model_tag": "meta-llama/Llama-3.1-8B-Instruct", "tensor_parallel_size": 2, "max_model_len": 16384,
        "no_enable_prefix_caching": True, "max_cudagraph_capture_size": 32, "async_scheduling": True,
        "model": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer": "meta-llama/Llama-3.1-8B-Instruct",
        "dtype": "bfloat16", "pipeline_parallel_size": 1, "data_parallel_size": 1,
        "disable_custom_all_reduce": False, "enforce_eager": False, "kv_cache_dtype": "auto",
        "enable_prefix_caching": False, "enable_chunked_prefill": True,
        "cudagraph_capture_sizes": [1, 2, 4, 8, 16, 24, 32]}
    assert concepts == {"kv.max_total_tokens": 245760}
    assert figures == {"max_concurrency": 15.0}


# ---- 0.20.0
# entrypoints/utils.py:233 non-default args; v1/engine/core.py:110 (config/vllm.py: decode_context_parallel_size,
# dcp_comm_backend, quantization_config, kernel_config); v1/core/kv_cache_utils.py:1711/1717;
# config/vllm.py:841 async scheduling; config/scheduler.py:240 chunked prefill
def test_release_0_20_0():
    lines = [  # https://github.com/noonghunna/club-3090/issues/295 (0.20-era release, same format strings)
        "(APIServer pid=1) INFO 06-01 09:20:16 [utils.py:278] non-default args: {'model_tag': "
        "'~/.cache/huggingface/qwen3.6-27b-autoround-int4', 'chat_template': '/etc/qwen-froggeric-chat-template.jinja', "
        "'default_chat_template_kwargs': {'enable_thinking': False}, 'enable_auto_tool_choice': True, "
        "'tool_call_parser': 'qwen3_coder', 'host': '0.0.0.0', 'model': '~/.cache/huggingface/qwen3.6-27b-autoround-int4', "
        "'trust_remote_code': True, 'dtype': 'float16', 'max_model_len': 262144, 'quantization': 'auto_round', "
        "'served_model_name': ['qwen3.6-27b-autoround'], 'override_generation_config': {'temperature': 0.6, "
        "'top_p': 0.95, 'top_k': 20, 'min_p': 0.0, 'repetition_penalty': 1.0}, 'reasoning_parser': 'qwen3', "
        "'tensor_parallel_size': 2, 'disable_custom_all_reduce': True, 'kv_cache_dtype': 'fp8_e5m2', "
        "'enable_prefix_caching': True, 'max_num_batched_tokens': 8192, 'max_num_seqs': 2, "
        "'enable_chunked_prefill': True, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}}",
        "(EngineCore pid=120) INFO 06-01 09:22:30 [kv_cache_utils.py:1733] GPU KV cache size: 620,944 tokens",
        "(EngineCore pid=120) INFO 06-01 09:22:30 [kv_cache_utils.py:1734] Maximum concurrency for 262,144 tokens "
        "per request: 2.37x",
        "(APIServer pid=1) INFO 06-01 09:20:17 [vllm.py:841] Asynchronous scheduling is disabled.",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields["speculative_config.method"] == "mtp"
    assert fields["speculative_config.num_speculative_tokens"] == 3
    assert fields["served_model_name"] == ["qwen3.6-27b-autoround"]
    assert fields["max_model_len"] == 262144 and fields["async_scheduling"] is False
    assert len(fields) == 25  # the 22 arguments, speculative_config.* and async_scheduling
    assert concepts == {"kv.max_total_tokens": 620944}
    assert figures == {"max_concurrency": 2.37}


def test_release_0_20_0_config_line():
    # https://github.com/castorini/rank_llm/pull/426 (v0.19.1, 0.20.0's VllmConfig.__str__), completed
    line = (
        "(EngineCore pid=1992630) INFO 08-26 22:26:28 [core.py:105] Initializing a V1 LLM engine (v0.19.1) with "
        "config: model='castorini/rank_vicuna_7b_v1', speculative_config=None, tokenizer='castorini/rank_vicuna_7b_v1', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, "
        "dtype=torch.float16, max_seq_len=4096, download_dir='/home/tardis/shared/raghavv', load_format=auto, "
        "tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, "
        "dcp_comm_backend=ag_rs, disable_custom_all_reduce=False, quantization=None, quantization_config=None, "
        "enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, "
        "structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, "
        "disable_additional_properties=False, reasoning_parser='', reasoning_parser_plugin='', "
        "enable_in_reasoning=False), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
        "otlp_traces_endpoint=None, collect_detailed_traces=None, kv_cache_metrics=False, kv_cache_metrics_sample=0.01, "
        "cudagraph_metrics=False, enable_layerwise_nvtx_tracing=False, enable_mfu_metrics=False, "
        "enable_mm_processor_stats=False, enable_logging_iteration_details=False), seed=0, "
        "served_model_name=castorini/rank_vicuna_7b_v1, enable_prefix_caching=True, enable_chunked_prefill=True, "
        "pooler_config=None, compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
        "'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, "
        "136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 272, 288, 304, 320, 336, "
        "352, 368, 384, 400, 416, 432, 448, 464, 480, 496, 512], 'max_cudagraph_capture_size': 512}, "
        "kernel_config=KernelConfig(enable_flashinfer_autotune=True)")
    fields, _, _ = parsed([line])
    assert fields == {
        "model": "castorini/rank_vicuna_7b_v1", "tokenizer": "castorini/rank_vicuna_7b_v1", "dtype": "float16",
        "max_model_len": 4096, "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1,
        "decode_context_parallel_size": 1, "disable_custom_all_reduce": False, "enforce_eager": False,
        "kv_cache_dtype": "auto", "enable_prefix_caching": True, "enable_chunked_prefill": True,
        "max_cudagraph_capture_size": 512,
        "cudagraph_capture_sizes": [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136,
                                    144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 272,
                                    288, 304, 320, 336, 352, 368, 384, 400, 416, 432, 448, 464, 480, 496, 512]}


# ---- 0.25.0
# entrypoints/serve/utils/api_utils.py:273 non-default args; v1/engine/core.py:115 config line;
# v1/core/kv_cache_utils.py:2146/2148 (one pair per engine, from get_kv_cache_capacity); config/vllm.py:1043
def test_release_0_25_0():
    lines = [  # https://github.com/SergiioB/intel-arc-pro-b70-inference-cookbook/issues/4 (v0.27.2rc1), completed
        "(EngineCore pid=316) INFO 08-21 18:34:34 [core.py:122] Initializing a V1 LLM engine (v0.27.2rc1.dev77+gac7509e2b)"
        " with config: model='/model', speculative_config=SpeculativeConfig(method='mtp', model='/model', "
        "num_spec_tokens=4), tokenizer='/model', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        "tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, max_seq_len=100000, download_dir=None, "
        "load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        "decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=True, "
        "quantization=auto_gptq, quantization_config=None, enforce_eager=False, enable_return_routed_experts=False, "
        "kv_cache_dtype=fp8, device_config=xpu, structured_outputs_config=StructuredOutputsConfig(backend='auto', "
        "reasoning_parser='qwen3'), observability_config=ObservabilityConfig(jit_monitor_mode='warn'), seed=0, "
        "served_model_name=/model, enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, "
        "compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, 'cudagraph_capture_sizes': [1, 2, 4, 5, 10], "
        "'max_cudagraph_capture_size': 10}, kernel_config=KernelConfig()",
        P + "[kv_cache_utils.py:2146] GPU KV cache size: 12,800 tokens",
        P + "[kv_cache_utils.py:2148] Maximum concurrency for 100,000 tokens per request: 0.13x",
        P + "[vllm.py:1043] Asynchronous scheduling is enabled.",
    ]
    fields, concepts, figures = parsed(lines)
    assert fields["speculative_config.method"] == "mtp" and fields["speculative_config.model"] == "/model"
    assert fields["speculative_config.num_speculative_tokens"] == 4
    assert (fields["quantization"], fields["kv_cache_dtype"], fields["max_model_len"]) == ("auto_gptq", "fp8", 100000)
    assert fields["cudagraph_capture_sizes"] == [1, 2, 4, 5, 10] and fields["async_scheduling"] is True
    assert concepts == {"kv.max_total_tokens": 12800}
    assert figures == {"max_concurrency": 0.13}


# ---- 0.30.0 and 0.33.0: one line for both (0.30 v1/core/kv_cache_utils.py:2396, 0.33 :1148, the pool named
# "GPU", "CPU"/"XPU" …, 0.33 "GPU + host" with hisparse); non-default args redacted (0.30
# entrypoints/serve/utils/api_utils.py:286, 0.33 entrypoints/common/startup.py:96); core.py:124 / :140;
# 0.33 aux_output_config replaces enable_return_routed_experts in the config line
def test_release_0_30_0_and_0_33_0():
    for release, kv in (("0.30.0", "GPU"), ("0.33.0", "GPU + host")):
        lines = [
            "(APIServer pid=1) INFO 09-01 10:00:00 [startup.py:96] non-default args: {'model_tag': 'Qwen/Qwen3-32B', "
            "'api_key': '***', 'max_model_len': 65536, 'max_num_seqs': 128}",
            P + f"[kv_cache_utils.py:1148] {kv} KV cache size: 393,216 tokens, Maximum concurrency for 65,536 tokens "
            "per request: 6.00x",
            P + "[scheduler.py:311] Chunked prefill is enabled with max_num_batched_tokens=16384.",
            P + f"[core.py:140] Initializing a V1 LLM engine (v{release}) with config: model='Qwen/Qwen3-32B', "
            "speculative_config=None, tokenizer='Qwen/Qwen3-32B', dtype=torch.bfloat16, max_seq_len=65536, "
            "tensor_parallel_size=4, enforce_eager=True, aux_output_config=AuxOutputConfig(), kv_cache_dtype=auto, "
            "compilation_config={'mode': <CompilationMode.NONE: 0>, 'cudagraph_capture_sizes': [], "
            "'max_cudagraph_capture_size': 0}, kernel_config=KernelConfig()",
        ]
        fields, concepts, figures = parsed(lines)
        assert fields == {"model_tag": "Qwen/Qwen3-32B", "api_key": "***", "max_model_len": 65536,
                          "max_num_seqs": 128, "enable_chunked_prefill": True, "max_num_batched_tokens": 16384,
                          "model": "Qwen/Qwen3-32B", "tokenizer": "Qwen/Qwen3-32B", "dtype": "bfloat16",
                          "tensor_parallel_size": 4, "enforce_eager": True, "kv_cache_dtype": "auto",
                          "max_cudagraph_capture_size": 0}  # an empty list of sizes is not reported
        assert concepts == {"kv.max_total_tokens": 393216}
        assert figures == {"max_concurrency": 6.0}


def test_computed_lines_win_over_arguments():
    lines = [
        P + "non-default args: {'max_model_len': 40000, 'max_num_batched_tokens': 4096, 'enforce_eager': False, "
        "'async_scheduling': False}",
        P + "Maximum concurrency for 32,768 tokens per request: 1.00x",
        P + "Chunked prefill is enabled with max_num_batched_tokens=8192.",
        P + "Asynchronous scheduling is enabled.",
        P + "Initializing a V1 LLM engine (v0.20.0) with config: model='m', max_seq_len=36000, enforce_eager=True",
    ]
    fields, _, _ = parsed(lines)
    assert fields == {"max_model_len": 32768, "max_num_batched_tokens": 8192, "enforce_eager": True,
                      "async_scheduling": True, "model": "m", "enable_chunked_prefill": True}


def test_engines_and_kv_cache_groups():
    same = P + "GPU KV cache size: 100,000 tokens"
    lines = [same, same.replace("DP0", "DP1"),  # identical lines from two engines: one value
             P + "Maximum concurrency for 8,192 tokens per request: 12.21x",
             P.replace("DP0", "DP1") + "Maximum concurrency for 8,192 tokens per request: 11.50x",
             P + "2 Engines: vllm cache_config_info with initialization after num_gpu_blocks is: 6250",
             P + "Engine 001: vllm cache_config_info with initialization after num_gpu_blocks is: 6100",
             P + "Initializing a V1 LLM engine (v0.11.0) with config: model='m', kv_cache_dtype=auto",
             P.replace("DP0", "DP1") + "Initializing a V1 LLM engine (v0.11.0) with config: model='m', "
             "kv_cache_dtype=fp8"]
    fields, concepts, figures = parsed(lines)
    assert fields == {"model": "m", "max_model_len": 8192}  # engines disagree on a setting: left out
    assert concepts == {"kv.max_total_tokens": 100000}
    assert figures == {"max_concurrency": 11.5, "num_gpu_blocks": 6100}


def test_garbage_and_limits():
    lines = [
        "", "\x00\x00", b"\xff\xfe GPU KV cache size: 12 tokens", 42, None,
        P + "non-default args: {'max_model_len': 4096, 'model': 'x'",  # truncated dict: nothing
        P + "non-default args: {'max_model_len': 4096, 'bad': <object at 0x1>, 'x': [1, 2}",
        P + "GPU KV cache size: " + "9" * 40 + " tokens",  # beyond any count vLLM prints
        P + "GPU KV cache size: 1,23,4 tokens",
        P + "Maximum concurrency for 8,192 tokens per request: nanx",
        P + "Initializing a V1 LLM engine (v0.20.0) with config: max_seq_len=1e9, tensor_parallel_size=-1, "
        "enforce_eager=maybe, dtype=torch.bf16 x, quantization=None",
        P + "non-default args: {'x': 1e999, 'y': (1, 2), 'z': {1, 2}, 'w': " + "[" * 5000 + "]" * 5000 + "}",
        P + "GPU KV cache size: 7 tokens " + "x" * MAX_LINE,  # over 256 KiB: ignored
    ]
    fields, concepts, figures = parsed(lines)
    assert fields == {"max_model_len": 4096, "y": [1, 2]}
    assert concepts == {"kv.max_total_tokens": 12}
    assert figures == {}


def test_parse_dict_keeps_what_is_literal():
    text = ("{'a': 'x, y', 'b': <CUDAGraphMode.FULL: 2>, 'c': {'d': [1, 2]}, \"e\": None, "
            "'f': '}', 'g': 2}")
    assert parse_dict(text) == {"a": "x, y", "c": {"d": [1, 2]}, "e": None, "f": "}", "g": 2}
    assert parse_dict("not a dict") == {}


def test_markers_select_every_parsed_line():
    assert all(m.isascii() and not any(c in m for c in "'\"\\$") for m in MARKERS)
    lines = [V1_0_8, CONFIG_0_15, P + "GPU KV cache size: 1 tokens", P + "# cuda blocks: 5, # CPU blocks: 2",
             P + "Maximum concurrency for 8 tokens per request: 1.00x", P + "Asynchronous scheduling is enabled.",
             P + "non-default args: {}", "INFO args: Namespace(a=1)",
             P + "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 1",
             P + "Chunked prefill is enabled with max_num_batched_tokens=1."]
    for line in lines:
        assert any(m in line for m in MARKERS), line
    grep = shutil.which("grep")
    if grep:
        args = [grep, "-F"] + [a for m in MARKERS for a in ("-e", m)]
        out = subprocess.run(args, input="\n".join(lines + ["INFO unrelated"]) + "\n", capture_output=True,
                             text=True).stdout
        assert out.splitlines() == lines


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=300), st.binary(max_size=300),
                          st.builds(lambda m, t: m + t, st.sampled_from(MARKERS), st.text(max_size=300))),
                max_size=8))
def test_random_text_never_raises(lines):
    got = parse_startup_log(lines)
    assert isinstance(got.fields, dict) and isinstance(got.figures, dict)
