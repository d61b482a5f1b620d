"""driftwatch's typed parse of vLLM command lines vs vLLM's own parser, per shipped release.

Runs where an oracle venv of the release exists (/work/oracles/vllm-<release>, or
DRIFTWATCH_VLLM_ORACLE_<0_33_0>=path), skipped otherwise, like tests/engines/test_config.py does for
SGLang. Each case is parsed by vLLM (tests/engines/vllm/oracle_parse.py inside the venv: the real
`vllm serve` CLI parser, or the api_server module's) and by driftwatch (VLLMCatalogSet.parse, before
start-up rewrites); both the outcome (parses / refuses) and every explicit value must agree.
The oracle's answers are cached in pytest's cache, keyed by the release, the cases and the script.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from driftwatch.engines.argparse_catalog import BadValue, in_choices, plain
from driftwatch.engines.files import EngineFiles
from driftwatch.engines.values import _norm
from driftwatch.engines.vllm import config_file
from driftwatch.engines.vllm.engine import ENGINE as VLLM
from driftwatch.engines.vllm.flexible import is_serve_word

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SCRIPT = HERE / "oracle_parse.py"
CONFIG_DIR = Path("/tmp/driftwatch-vllm-oracle")
CONFIG_YAML = CONFIG_DIR / "qwen.yaml"
CONFIG_TEXT = """\
tensor-parallel-size: 2
max_num_seqs: 32
enable-prefix-caching: false
gpu-memory-utilization: 0.85
served-model-name: [qwen-a, qwen-b]
"""
CONFIG_NESTED = CONFIG_DIR / "spec.yaml"
CONFIG_NESTED_TEXT = """\
max-model-len: 16384
speculative-config:
  method: ngram
  num_speculative_tokens: 2
  prompt_lookup_max: 4
"""
CONFIG_MODEL = CONFIG_DIR / "model.yaml"
CONFIG_MODEL_TEXT = "model: /models/from-config\nmax-num-seqs: 12\n"
FILES = {CONFIG_YAML: CONFIG_TEXT, CONFIG_NESTED: CONFIG_NESTED_TEXT, CONFIG_MODEL: CONFIG_MODEL_TEXT}


def _examples() -> list[dict]:
    """The engine argv of every shipped vLLM example unit."""
    from driftwatch.run.reading import snapshot_from_unit_file
    cases = []
    for path in sorted((REPO / "examples").glob("vllm-*.service")):
        snap = snapshot_from_unit_file(str(path))
        if snap.launcher.engine != "vllm":
            continue
        argv, _ = config_file.split_payloads(snap.launcher.engine_argv)
        argv = [str(CONFIG_YAML) if w.endswith(".yaml") else w for w in argv]  # the oracle reads a real file
        if argv and is_serve_word(argv[0]):
            cases.append({"mode": "serve", "argv": argv[1:], "id": path.stem})
        else:
            cases.append({"mode": "module", "argv": argv, "id": path.stem})
    return cases


S = "serve"
CASES = [
    {"mode": S, "argv": ["Qwen/Qwen3-8B", "--tensor-parallel-size", "2", "--max-model-len", "32768",
                         "--gpu-memory-utilization", "0.9"]},
    {"mode": S, "argv": ["/m", "--max_num_seqs", "64", "--gpu_memory_utilization=0.85", "--max_model_len=8192"]},
    {"mode": S, "argv": ["/m", "--max-num-seq", "8", "--gpu-mem", "0.8", "--tensor-parallel", "2"]},
    {"mode": S, "argv": ["/m", "--max-num", "8"]},
    {"mode": S, "argv": ["/m", "--max-num-seqs", "8", "--max-num-seqs", "16", "--port=8001", "--port", "8002"]},
    {"mode": S, "argv": ["/m", "--speculative-config",
                         '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}']},
    {"mode": S, "argv": ["/m", "--speculative-config.method", "ngram",
                         "--speculative-config.num_speculative_tokens", "3"]},
    {"mode": S, "argv": ["/m", "--speculative-config", '{"method": "eagle3", "model": "a/b", "num_speculative_tokens": 5}',
                         "--speculative-config.num_speculative_tokens", "2"]},
    {"mode": S, "argv": ["/m", "--speculative_config.method=ngram", "--speculative-config.prompt_lookup_max=3"]},
    {"mode": S, "argv": ["/m", "--speculative-config.method", "eagle", "--speculative-config.model", "a/b"]},
    {"mode": S, "argv": ["/m", "--compilation-config.level", "3"]},
    {"mode": S, "argv": ["/m", "--compilation-config.cudagraph_capture_sizes", "[1, 2]"]},
    {"mode": S, "argv": ["/m", "-O3"]},
    {"mode": S, "argv": ["/m", "-O", "1"]},
    {"mode": S, "argv": ["/m", "-O=0"]},
    {"mode": S, "argv": ["/m", "-O.level=3"]},
    {"mode": S, "argv": ["/m", "-O", "3", "--max-num-seqs", "8"]},
    {"mode": S, "argv": ["/m", "--enable-prefix-caching"]},
    {"mode": S, "argv": ["/m", "--no-enable-prefix-caching"]},
    {"mode": S, "argv": ["/m", "--disable-prefix-caching"]},
    {"mode": S, "argv": ["/m", "--no-disable-prefix-caching"]},
    {"mode": S, "argv": ["--model", "/m", "--tensor-parallel-size", "2"]},
    {"mode": S, "argv": ["--model=/m", "--max-num-seqs", "4"]},
    {"mode": S, "argv": ["/m", "--model=/x"]},
    {"mode": S, "argv": ["--port", "8001"]},
    {"mode": S, "argv": ["/m", "--kv-cache-dtype", "fp8", "--quantization", "fp8", "--dtype", "bfloat16"]},
    {"mode": S, "argv": ["/m", "--enforce-eager", "--max-num-batched-tokens", "8192", "--enable-chunked-prefill"]},
    {"mode": S, "argv": ["/m", "--max-num-batched-tokens", "16k"]},
    {"mode": S, "argv": ["/m", "--speculative-model", "/d", "--num-speculative-tokens", "3"]},
    {"mode": S, "argv": ["/m", "--use-v2-block-manager"]},
    {"mode": S, "argv": ["/m", "--served-model-name", "a", "b", "--port", "8001", "--host", "0.0.0.0",
                         "--api-key", "k-123"]},
    {"mode": S, "argv": ["--served-model-name", "a", "--port", "8001"]},
    {"mode": S, "argv": ["/m", "--max-model-len", "32k"]},
    {"mode": S, "argv": ["/m", "--async-scheduling"]},
    {"mode": S, "argv": ["/m", "--no-async-scheduling"]},
    {"mode": S, "argv": ["/m", "--attention-backend", "FLASHINFER"]},
    {"mode": S, "argv": ["/m", "--swap-space", "4"]},
    {"mode": S, "argv": ["/m", "--disable-log-requests"]},
    {"mode": S, "argv": ["/m", "--enable-expert-parallel", "--data-parallel-size", "2"]},
    {"mode": S, "argv": ["/m", "--spec-method", "eagle3", "--spec-model", "a/b", "--spec-tokens", "3"]},
    {"mode": S, "argv": ["/m", "-tp", "2", "-pp", "2"]},
    {"mode": S, "argv": ["/m", "--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4]}']},
    {"mode": S, "argv": ["/m", "--tp", "2"]},
    {"mode": S, "argv": ["/m", "--config", str(CONFIG_YAML), "-tp", "4"]},
    {"mode": S, "argv": ["/m", "--config", str(CONFIG_NESTED)]},
    {"mode": S, "argv": ["--config", str(CONFIG_MODEL), "--port", "9000"]},
    {"mode": S, "argv": ["/m", "--trust-remote-code", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]},
    {"mode": "module", "argv": ["--model", "/m", "-tp", "2", "--max-num-seqs", "128"]},
    {"mode": "module", "argv": ["/m", "--max-num-seqs", "8"]},
    {"mode": "module", "argv": ["--model", "/m", "--speculative-config.method", "ngram",
                                "--speculative-config.prompt_lookup_max", "4"]},
    {"mode": "module", "argv": ["--model", "/m", "--config", str(CONFIG_YAML)]},
    {"mode": "module", "argv": ["--config", str(CONFIG_YAML), "--model", "/m"]},
]
ALL_CASES = CASES + _examples()
PARSE_KINDS = {"unknown-flag", "removed-flag", "ambiguous-flag", "bad-value", "startup-crash"}


def _oracle_python(version: str) -> str | None:
    env = os.environ.get("DRIFTWATCH_VLLM_ORACLE_" + version.replace(".", "_"))
    for candidate in ([env] if env else []) + [f"/work/oracles/vllm-{version}"]:
        path = Path(candidate)
        if path.is_dir():
            path = path / "bin" / "python"
        if path.exists():
            return str(path)
    return None


def _run_oracle(python: str) -> dict:
    for path, text in FILES.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    cases = [{"mode": c["mode"], "argv": c["argv"]} for c in ALL_CASES]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "PYTHON"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1", PYTHONWARNINGS="ignore")
    res = subprocess.run([python, str(SCRIPT)], input=json.dumps(cases), capture_output=True, text=True,
                         env=env, cwd="/", timeout=600)
    if "@@ORACLE@@" not in res.stdout:
        return {"failed": f"exit {res.returncode}: {res.stderr[-2000:]}"}
    return json.loads(res.stdout.split("@@ORACLE@@", 1)[1])


@pytest.fixture(scope="module")
def oracle_results(request):
    """{release: oracle answer} for every shipped release with an oracle venv (run in parallel)."""
    key = hashlib.sha256((SCRIPT.read_text() + json.dumps(ALL_CASES) + json.dumps(
        {str(p): t for p, t in FILES.items()})).encode()).hexdigest()[:16]
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    out, todo = {}, {}
    for version in VLLM.releases():
        python = _oracle_python(version)
        if python is None:
            continue
        cached = cache.get(f"driftwatch/vllm-oracle/{version}/{key}", None) if cache else None
        if cached is not None:
            out[version] = cached
        else:
            todo[version] = python
    with ThreadPoolExecutor(max_workers=4) as pool:
        for version, result in zip(todo, pool.map(_run_oracle, todo.values()), strict=False):
            out[version] = result
            if "failed" not in result and cache is not None:
                cache.set(f"driftwatch/vllm-oracle/{version}/{key}", result)
    return out


def ours(case: dict, version: str) -> tuple[dict, list]:
    """driftwatch's explicit values (by dest) and parse-stage errors for a case."""
    files = EngineFiles({str(path): text for path, text in FILES.items()})
    argv = config_file.with_payloads((["serve"] if case["mode"] == "serve" else []) + case["argv"], files)
    values, _spellings, issues = VLLM.catalogs.parse(argv, version)
    catalog = VLLM.catalogs.load(version)
    errors = [i for i in issues if i.severity == "error" and i.kind in PARSE_KINDS]
    for dest, value in values.items():
        if isinstance(value, BadValue):
            errors.append(f"{dest}: {value!s} rejected by its converter")
        spec = next((s for s in catalog.options if s.dest == dest), None)
        if spec is not None and spec.choices and value is not None and not in_choices(value, spec.choices):
            errors.append(f"{dest}: {value!r} not in choices")
    return {k: plain(v) for k, v in values.items()}, errors


@pytest.mark.parametrize("version", VLLM.releases())
def test_typed_parse_matches_vllm(version, oracle_results):
    if version not in oracle_results:
        pytest.skip(f"no vLLM {version} oracle venv (/work/oracles/vllm-{version} or "
                    f"DRIFTWATCH_VLLM_ORACLE_{version.replace('.', '_')})")
    result = oracle_results[version]
    assert "failed" not in result, result.get("failed")
    assert result["version"] == version
    mismatches = []
    for case, answer in zip(ALL_CASES, result["results"], strict=False):
        values, errors = ours(case, version)
        label = f"{case['mode']} {' '.join(case['argv'])}"
        if answer["error"]:
            if not errors:
                mismatches.append(f"{label}: vLLM refuses ({answer['error']}), driftwatch parses {values}")
            continue
        if errors:
            mismatches.append(f"{label}: vLLM parses, driftwatch reports {[getattr(e, 'message', e) for e in errors]}")
            continue
        base = result["base"][case["mode"]]
        theirs = {**base, **answer["ns"]}
        defaults = {s.dest: s.default for s in VLLM.catalogs.load(version).options}
        mine = {k: v for k, v in values.items() if k != "config"}
        for dest in sorted((set(answer["ns"]) | set(mine)) - {"config"}):
            a, b = _norm(mine.get(dest, defaults.get(dest))), _norm(theirs.get(dest))
            if dest == "compilation_config" and isinstance(a, dict) and isinstance(b, dict):
                # The built config fills in other fields and leaves out those equal to their default.
                a = {k: v for k, v in a.items() if k in b}
                b = {k: v for k, v in b.items() if k in a}
            if a != b:
                mismatches.append(f"{label}: {dest} driftwatch {mine.get(dest, defaults.get(dest))!r} "
                                  f"vs vLLM {theirs.get(dest)!r}")
    assert not mismatches, "\n".join(mismatches)
