"""SGLang start-up lines, per release: real lines quoted in public issues where there are some, else
lines built from the release's own f-string (file:line in the released wheel, under sglang/srt/)."""
import json
import shutil
import subprocess
from importlib import resources

from hypothesis import given, settings, strategies as st

from driftwatch.engines.sglang.startup_log import MARKERS, parse_args_repr, parse_startup_log


def catalog_defaults(release):
    folder = resources.files("driftwatch.engines.sglang").joinpath("catalogs")
    text = folder.joinpath(f"sglang-{release}.json").read_text()
    return {o["field"]: o["default"] for o in json.loads(text)["options"]}


def dataclass_repr(release, **raw):
    """`f"{server_args=}"` of a ServerArgs dataclass: every catalog field at its default, `raw` as written."""
    values = {name: repr(value) for name, value in catalog_defaults(release).items()}
    values.update(raw)
    return "ServerArgs(" + ", ".join(f"{name}={text}" for name, text in values.items()) + ")"


# ---- 0.4.10.post2
# entrypoints/engine.py:688  logger.info(f"{server_args=}")
# managers/scheduler.py:384  f"max_total_num_tokens=…, chunked_prefill_size=…, max_prefill_tokens=…,
#                             max_running_requests=…, context_len=…, available_gpu_mem={avail_mem:.2f} GB"
# model_executor/cuda_graph_runner.py:260  rank0_log(f"Capture cuda graph bs {self.capture_bs}")
# mem_cache/memory_pool.py:211  f"KV Cache is allocated. #tokens: {size}, K size: … GB, V size: … GB"
# mem_cache/memory_pool.py:774  f"KV Cache is allocated. #tokens: {size}, KV size: … GB" (MLA)
def test_release_0_4_10_post2():
    lines = [
        "[2025-08-01 10:00:00] server_args=" + dataclass_repr(
            "0.4.10.post2", model_path="'Qwen/Qwen3-8B'", tp_size="2", max_running_requests="None",
            lora_target_modules="{'q_proj', 'v_proj'}",  # a set: not JSON, left out
            lora_paths="[LoRARef(lora_id='1', lora_name='a', lora_path='/a')]"),  # an object: left out
        "[2025-08-01 10:00:20 TP0] KV Cache is allocated. #tokens: 413813, K size: 28.42 GB, V size: 28.42 GB",
        "[2025-08-01 10:00:20 TP1] KV Cache is allocated. #tokens: 413813, K size: 28.42 GB, V size: 28.42 GB",
        "[2025-08-01 10:00:21 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32]",
        "[2025-08-01 10:00:30 TP0] max_total_num_tokens=413813, chunked_prefill_size=8192, max_prefill_tokens=16384,"
        " max_running_requests=4096, context_len=40960, available_gpu_mem=9.87 GB",
    ]
    got = parse_startup_log(lines)
    assert got.fields["model_path"] == "Qwen/Qwen3-8B" and got.fields["tp_size"] == 2
    assert got.fields["mem_fraction_static"] is None and got.fields["dtype"] == "auto"
    assert "lora_target_modules" not in got.fields and "lora_paths" not in got.fields
    assert {k: got.fields[k] for k in ("max_total_tokens", "chunked_prefill_size", "max_prefill_tokens",
                                       "max_running_requests", "context_length", "cuda_graph_bs",
                                       "cuda_graph_max_bs")} == {
        "max_total_tokens": 413813, "chunked_prefill_size": 8192, "max_prefill_tokens": 16384,
        "max_running_requests": 4096, "context_length": 40960, "cuda_graph_bs": [1, 2, 4, 8, 16, 24, 32],
        "cuda_graph_max_bs": 32}
    assert got.figures == {"kv_cache_gb": 56.84, "kv_cache_tokens": 413813, "available_gpu_mem_gb": 9.87}


def test_mla_pool_0_4_10_post2():
    got = parse_startup_log(["[2025-08-01 10:00:20 TP0] KV Cache is allocated. #tokens: 1000, KV size: 3.21 GB"])
    assert got.figures == {"kv_cache_gb": 3.21, "kv_cache_tokens": 1000}


# ---- 0.5.5
# entrypoints/engine.py:782  logger.info(f"{server_args=}")
# managers/scheduler.py:408  … f"{'available_cpu_mem' if self.device == 'cpu' else 'available_gpu_mem'}={avail_mem:.2f} GB"
# model_executor/cuda_graph_runner.py:260  log_info_on_rank0(logger, f"Capture cuda graph bs {self.capture_bs}")
# mem_cache/memory_pool.py:509 / :515  (K size, V size / KV size)
# Real lines, https://github.com/sgl-project/sglang/pull/11716 (TP8, 2025-10-16):
REAL_11716 = [
    "[2025-10-16 09:06:22 TP5] KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB",
    "[2025-10-16 09:06:22 TP1] KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB",
    "[2025-10-16 09:06:22 TP5] Memory pool end. avail mem=11.87 GB",
    "[2025-10-16 09:06:22 TP7] Capture cuda graph begin. This can take up to several minutes. avail mem=12.01 GB",
    "[2025-10-16 09:06:22 TP0] Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96,"
    " 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 272, 288,"
    " 304, 320, 336, 352, 368, 384, 400, 416, 432, 448, 464, 480, 496, 512]",
]


def test_release_0_5_5():
    lines = ["[2025-10-16 09:05:00] server_args=" + dataclass_repr("0.5.5", tp_size="8", cuda_graph_max_bs="None"),
             *REAL_11716,
             "[2025-10-16 09:06:40 TP0] max_total_num_tokens=2795207, chunked_prefill_size=16384,"
             " max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=10.02 GB"]
    got = parse_startup_log(lines)
    assert got.fields["tp_size"] == 8
    assert got.fields["cuda_graph_max_bs"] == 512 and len(got.fields["cuda_graph_bs"]) == 52
    assert got.fields["max_total_tokens"] == 2795207 and got.fields["context_length"] == 131072
    assert got.figures == {"kv_cache_gb": 106.62, "kv_cache_tokens": 2795207, "available_gpu_mem_gb": 10.02}


# ---- 0.5.12
# entrypoints/engine.py:773, managers/scheduler.py:777, model_executor/cuda_graph_runner.py:658,
# mem_cache/memory_pool.py:744 / :750: the same formats as 0.5.5.
# Real lines, https://github.com/sgl-project/sglang/issues/29575 (scheduler) and
# https://github.com/sgl-project/sglang/pull/11830 (pool and graphs, with the piecewise graph's
# `Capture cuda graph num tokens`, which is not the decode batch sizes):
def test_release_0_5_12_real_lines():
    lines = [
        "[2025-11-30 12:50:10] KV Cache is allocated. #tokens: 2243474, K size: 59.91 GB, V size: 59.91 GB",
        "[2025-11-30 12:50:10] Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32]",
        "[2025-11-30 12:50:15] Capture cuda graph end. Time elapsed: 5.37 s. mem usage=1.44 GB. avail mem=38.05 GB.",
        "[2025-11-30 12:50:15] Capture cuda graph num tokens [4, 8, 12, 16, 20, 24, 28, 32, 48, 64, 80, 96, 1024]",
        "[2026-06-28 15:16:45] max_total_num_tokens=2086558, chunked_prefill_size=8192, max_prefill_tokens=16384,"
        " max_running_requests=33, context_len=256000, available_gpu_mem=17.22 GB",
    ]
    got = parse_startup_log(lines)
    assert got.fields == {"cuda_graph_bs": [1, 2, 4, 8, 12, 16, 24, 32], "cuda_graph_max_bs": 32,
                          "max_total_tokens": 2086558, "chunked_prefill_size": 8192, "max_prefill_tokens": 16384,
                          "max_running_requests": 33, "context_length": 256000}
    assert got.figures == {"kv_cache_gb": 119.82, "kv_cache_tokens": 2243474, "available_gpu_mem_gb": 17.22}


def test_pool_line_with_dtype():
    # Real, https://github.com/sgl-project/sglang/pull/27537 (a 0.5.6 build on MUSA)
    got = parse_startup_log(["[2026-06-08 07:20:53 TP0] KV Cache is allocated. dtype: torch.bfloat16, "
                             "#tokens: 1106304, K size: 25.32 GB, V size: 25.32 GB"])
    assert got.figures == {"kv_cache_gb": 50.64, "kv_cache_tokens": 1106304}


# ---- 0.5.23
# entrypoints/engine.py:1185  logger.info(f"server_args={_server_args_for_logging(server_args)}")  (a dict)
# managers/scheduler.py:1269  the same scheduler line
# model_executor/model_runner_components/cuda_graph_setup.py:788
#     f"Capture {capture_name} {graph_backend[device]} end. bs={runner.capture_bs}, elapsed=…, mem usage=…"
# mem_cache/memory_pool.py:2088  f"{cache_name} is allocated. dtype: {self.dtype}, #tokens: …, K size: …, V size: …"
# model_executor/model_runner_components/kv_pool_runtime.py:195
#     "Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, KV size: %.2f GB, avail mem=%.2f GB"
# eagle_worker_v2.py:516  "Capture draft decode CUDA graph begin. … bs=[…]" (the draft's: not read)
def test_release_0_5_23():
    args = {**catalog_defaults("0.5.23"), "model_path": "Qwen/Qwen3-32B", "tp_size": 4, "attn_dp_size": 1,
            "cuda_graph_bs_decode": None, "cuda_graph_config": {"decode": {"backend": "full"}}}
    lines = [
        f"[2026-11-01 08:00:00] server_args={args!r}",
        "[2026-11-01 08:01:00 TP0] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, K size: 40.00 GB,"
        " V size: 40.00 GB",
        "[2026-11-01 08:01:10 TP0] Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1,"
        " bs=[1, 2], avail mem=20.00 GB",
        "[2026-11-01 08:01:10 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4,"
        " avail mem=20.00 GB",
        "[2026-11-01 08:01:20 TP0] Capture target verify CUDA graph end. bs=[1, 2, 4, 8, 16], elapsed=9.50 s,"
        " mem usage=1.25 GB, avail mem=18.75 GB.",
        "[2026-11-01 08:01:21 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 812345,"
        " KV size: 70.10 GB, avail mem=4.50 GB",
        "[2026-11-01 08:01:21 TP0] Post-capture KV sizing: draft KV cache allocated. dtype: torch.bfloat16,"
        " #tokens: 812345, KV size: 1.10 GB",
        "[2026-11-01 08:01:30 TP0] max_total_num_tokens=812345, chunked_prefill_size=8192, max_prefill_tokens=16384,"
        " max_running_requests=48, context_len=40960, available_gpu_mem=4.50 GB",
    ]
    got = parse_startup_log(lines)
    assert got.fields["model_path"] == "Qwen/Qwen3-32B"
    assert got.fields["cuda_graph_config"] == {"decode": {"backend": "full"}}
    assert got.fields["cuda_graph_bs_decode"] == [1, 2, 4, 8, 16] and got.fields["cuda_graph_max_bs_decode"] == 16
    assert "cuda_graph_bs" not in got.fields
    assert got.fields["max_total_tokens"] == 812345 and got.fields["max_running_requests"] == 48
    assert got.figures == {"kv_cache_gb": 70.1, "kv_cache_tokens": 812345, "available_gpu_mem_gb": 4.5}


def test_scheduler_values_win_over_the_repr():
    lines = ["[2025-08-01 10:00:00] server_args=ServerArgs(model_path='m', max_running_requests=None,"
             " context_length=None, chunked_prefill_size=-1, max_total_tokens=None)",
             "[2025-08-01 10:00:30 TP0] max_total_num_tokens=20000, chunked_prefill_size=-1, max_prefill_tokens=16384,"
             " max_running_requests=1, context_len=8192, available_gpu_mem=1.00 GB"]
    got = parse_startup_log(lines)
    assert got.fields == {"model_path": "m", "max_running_requests": 1, "context_length": 8192,
                          "chunked_prefill_size": -1, "max_total_tokens": 20000, "max_prefill_tokens": 16384}


def test_attention_dp_ranks():
    """Each DP rank's scheduler prints its share; disagreeing capacities keep the smallest, other
    disagreements say nothing, and the share is scaled back to the flag's meaning."""
    line = ("[2025-08-01 10:00:30 DP{r} TP{t}] max_total_num_tokens={tot}, chunked_prefill_size={c},"
            " max_prefill_tokens=16384, max_running_requests=8, context_len=8192, available_gpu_mem={m} GB")
    lines = ["[2025-08-01 10:00:00] server_args=ServerArgs(model_path='m', dp_size=2, enable_dp_attention=True,"
             " max_running_requests=16)",
             line.format(r=0, t=0, tot=50000, c=4096, m="3.00"),
             line.format(r=1, t=1, tot=48000, c=2048, m="3.00"),
             line.format(r=1, t=1, tot=1, c=1, m="0.01")]  # a second line of one rank: its first counts
    got = parse_startup_log(lines)
    assert got.fields["max_total_tokens"] == 48000
    assert got.fields["max_running_requests"] == 16
    assert "chunked_prefill_size" not in got.fields
    assert got.fields["max_prefill_tokens"] == 16384 and got.figures == {"available_gpu_mem_gb": 3.0}


def test_garbage_and_near_misses_add_nothing():
    lines = ["", "\x00" * 100, "max_total_num_tokens", "server_args=ServerArgs(model_path='m'",  # truncated
             "server_args=ServerArgs(model_path='m', handler=<function f at 0x7f>)",  # not Python: nothing
             "server_args=__import__('os').system('true')",
             "[2025-08-01 10:00:00 TP0] self.max_total_num_tokens=5, available_size=3, evictable_size=0",
             "[2025-08-01 10:00:00 TP0] max_total_num_tokens=" + "9" * 5000 + ", context_len=1e999",
             "[2025-08-01 10:00:00 TP0] Capture cuda graph bs []",
             "[2025-08-01 10:00:00 TP0] Capture cpu graph bs [1, 2]",
             "[2025-08-01 10:00:00 TP0] KV Cache is allocated. #tokens: x, KV size: 1 GB",
             "[2025-08-01 10:00:00] server_args=ServerArgs(a=1e999, b=[1e999], c=" + "[" * 100000 + ")",
             "server_args=ServerArgs(model_path='m', x=" + "a" * (256 * 1024) + ")",  # over 256 KiB
             b"[2025-08-01 10:00:00] server_args=ServerArgs(tp_size=\xff)", 12345, None]
    assert not parse_startup_log(lines)


def test_repr_values_are_literals_only():
    assert parse_args_repr("ServerArgs(a=1e999, b=[1, 2.5], c=torch.bfloat16, d=(1, 2), e=-3, f={'k': None},"
                           " g={1: 2}, h=b'x', i=1j)") == {"b": [1, 2.5], "d": [1, 2], "e": -3, "f": {"k": None}}
    assert parse_args_repr("{'tp_size': 2, 3: 4, 'x': print}") == {"tp_size": 2}
    assert parse_args_repr("Other(a=1)") == {}


def test_lines_without_sglang_prefix_or_after_a_progress_bar_still_read():
    # tqdm's `Capturing batches` bar ends with no newline, so the next log line is glued to it (as quoted in
    # https://github.com/sgl-project/sglang/pull/27537)
    got = parse_startup_log(["server_args=ServerArgs(tp_size=2)",
                             "Capturing batches (bs=10 avail_mem=11.99 GB):   0%|    | 0/5 [00:00<?, ?it/s]"
                             "[2026-06-08 07:20:54 TP0] Capture cuda graph bs [1, 2]"])
    assert got.fields == {"tp_size": 2, "cuda_graph_bs": [1, 2], "cuda_graph_max_bs": 2}


def test_markers_are_plain_and_select_every_parsed_line():
    for marker in MARKERS:
        assert marker.isascii() and not set(marker) & set("'\"\\$") and 5 <= len(marker) <= 40
    lines = ["[2025-08-01 10:00:00] server_args=ServerArgs(tp_size=2)",
             "[2025-08-01 10:00:01 TP0] an unrelated line", *REAL_11716,
             "[2026-11-01 08:01:20 TP0] Capture target decode CUDA graph end. bs=[1, 2], elapsed=1.00 s, "
             "mem usage=0.50 GB, avail mem=1.00 GB.",
             "[2026-11-01 08:01:21 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16,"
             " #tokens: 10, KV size: 0.10 GB, avail mem=4.50 GB",
             "[2026-06-28 15:16:45] max_total_num_tokens=2086558, chunked_prefill_size=8192, max_prefill_tokens=16384,"
             " max_running_requests=33, context_len=256000, available_gpu_mem=17.22 GB"]
    kept = [line for line in lines if any(m in line for m in MARKERS)]
    assert parse_startup_log(kept) == parse_startup_log(lines)
    assert len(kept) == len(lines) - 3  # the unrelated line, `Memory pool end`, `Capture cuda graph begin`
    if shutil.which("grep"):
        argv = ["grep", "-F"] + [w for m in MARKERS for w in ("-e", m)]
        out = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
        assert out.stdout.splitlines() == kept


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=300),
                          st.builds(lambda m, t: m + t, st.sampled_from(
                              ["[2025-08-01 10:00:00 TP0] " + m for m in MARKERS] +
                              ["server_args=ServerArgs(", "server_args={", "max_total_num_tokens=1, context_len=",
                               "Capture cuda graph bs [", "KV Cache is allocated. #tokens: 1, KV size: "]),
                                    st.text(max_size=200)),
                          st.binary(max_size=200)), max_size=20))
def test_any_text_never_raises(lines):
    got = parse_startup_log(lines)
    for value in got.figures.values():
        assert isinstance(value, (int, float)) and value == value and abs(value) != float("inf")


def test_attention_dp_width_from_the_unit_when_the_server_args_line_was_not_read():
    """journald cuts lines over LineMax (48K): without server_args, the unit says the DP width."""
    line = ("[2026-11-01 08:01:30 DP1 TP1] max_total_num_tokens=812345, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=8, context_len=131072, available_gpu_mem=9.10 GB")
    alone = parse_startup_log([line])
    assert alone.fields["max_running_requests"] == 8
    with_unit = parse_startup_log([line], {"dp_size": 2, "enable_dp_attention": True})
    assert with_unit.fields["max_running_requests"] == 16
