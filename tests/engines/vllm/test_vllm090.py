"""vLLM 0.9.0 (issue 35, item 5): a 0.9-era command line is read with 0.9.0's own catalog and the
rewrites its FlexibleArgumentParser does (vllm/utils.py of the 0.9.0 wheel), not 0.8.2's nor 0.10's.
tests/engines/vllm/test_oracle.py checks the same against vLLM 0.9.0's parser where its venv exists."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from cli_helpers import run_in_process

from driftwatch.engines.vllm.engine import ENGINE as VLLM
from driftwatch.engines.vllm.flexible import preprocess

REPO = Path(__file__).resolve().parents[3]

# The reasoning recipe of vLLM's 0.8 / 0.9 docs ("Reasoning Outputs": `--enable-reasoning
# --reasoning-parser deepseek_r1`; `--enable-reasoning` was removed in 0.10) with an n-gram draft as its
# speculative-decoding page writes it (the JSON form, the only one 0.9.0 reads right).
R1_NGRAM = ("/opt/vllm/bin/vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-32B --enable-reasoning "
            "--reasoning-parser deepseek_r1 --tensor-parallel-size 2 --max-model-len 32768 --speculative-config "
            "'{\"method\": \"ngram\", \"num_speculative_tokens\": 5, \"prompt_lookup_max\": 4}'")
DOTTED = "vllm serve Qwen/Qwen3-8B --speculative-config.method ngram --speculative-config.num_speculative_tokens 3"


def cfg(command: str, version: str | None = None):
    """The engine argv: from `serve` on, or what follows the api_server module."""
    words = shlex.split(command)
    start = words.index("serve") if "serve" in words else words.index("vllm.entrypoints.openai.api_server") + 1
    return VLLM.read_config(words[start:], engine_version=version)


def errors(config) -> list[str]:
    return [i.message for i in config.issues if i.severity == "error"]


def explicit(config) -> dict:
    return {k: v.value for k, v in config.explicit().items()}


def show(tmp_path: Path, command: str, *extra: str) -> dict:
    unit = tmp_path / "vllm.service"
    unit.write_text(f"[Service]\nExecStart={command}\n")
    proc = run_in_process("show", "--unit-file", unit, "--format", "json", *extra, cwd=REPO,
                          env={"DRIFTWATCH_ENGINE_CONFIG": None})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_09_command_line_is_inferred_as_090(tmp_path):
    data = show(tmp_path, R1_NGRAM)
    assert data["engine"]["version"] == "0.9.0"
    assert "every flag parses" in data["engine"]["version_reason"]
    flags = {k: v["value"] for k, v in data["engine"]["flags"].items()}
    assert flags["speculative_config.method"] == "ngram"
    assert flags["speculative_config.num_speculative_tokens"] == 5
    assert flags["enable_reasoning"] is True and flags["reasoning_parser"] == "deepseek_r1"
    assert [f["kind"] for f in data["findings"]] == ["deprecated-flag"]  # --enable-reasoning, said by 0.9.0
    # 0.10.0 removed --enable-reasoning: the same unit there would not start.
    newer = show(tmp_path, R1_NGRAM, "--engine-version", "0.10.0")
    assert any(f["kind"] == "removed-flag" and "0.9.0" in f["message"] for f in newer["findings"])


def test_090_dashes_the_dotted_keys_so_it_refuses_to_start():
    old = cfg(DOTTED, "0.9.0")
    assert any("'num-speculative-tokens'" in m and "refuses to start" in m for m in errors(old)), old.issues
    new = cfg(DOTTED, "0.10.0")  # 0.9.1+ dash only the part before the first `.`
    assert not errors(new)
    assert explicit(new)["speculative_config.num_speculative_tokens"] == 3
    assert "--speculative-config" in preprocess(shlex.split(DOTTED)[1:], "0.9.1", frozenset()).argv
    assert preprocess(shlex.split(DOTTED)[1:], "0.9.1", frozenset()).issues == []


def test_090_dotted_keys_without_underscores_are_read_as_text():
    c = cfg("vllm serve M --speculative-config.method eagle --speculative-config.model a/b "
            "--compilation-config.level 3", "0.9.0")
    assert not errors(c)
    assert explicit(c)["speculative_config.method"] == "eagle"
    assert explicit(c)["compilation_config.level"] == "3"  # 0.9.0 does not json.loads a dotted value
    assert explicit(cfg("vllm serve M --compilation-config.level 3", "0.10.0"))["compilation_config.level"] == 3


@pytest.mark.parametrize("flag", [["-O3"], ["-O", "3"], ["-O=3"]])
def test_090_O_is_the_compilation_config_alias(flag):
    c = cfg(shlex.join(["vllm", "serve", "M", *flag]), "0.9.0")
    assert explicit(c)["compilation_config.level"] == 3
    assert not errors(c)
    assert preprocess(["serve", "M", *flag], "0.9.1", frozenset()).argv == ["M", *flag]  # argparse's alias
    assert preprocess(["serve", "M", *flag], "0.9.2", frozenset()).argv[1] == "-O"  # -O.level merged into JSON


@pytest.mark.parametrize("command, needle", [
    ("vllm serve --model M", "ValueError"),  # utils.py's check of the word --model
    ("vllm serve M --model=N", "ambiguous"),  # 0.9.0 registers no --model under `vllm serve`
    ("vllm serve --served-model-name a --port 8001", "AttributeError"),  # no model at all
    ("python -m vllm.entrypoints.openai.api_server M --max-num-seqs 8", "stray argument"),  # no positional
])
def test_090_model_refusals(command, needle):
    assert any(needle in m for m in errors(cfg(command, "0.9.0"))), cfg(command, "0.9.0").issues


def test_090_model_accepted_forms():
    assert explicit(cfg("vllm serve M --max-num-seqs 8", "0.9.0"))["model"] == "M"
    module = cfg("python -m vllm.entrypoints.openai.api_server --model M -tp 2", "0.9.0")
    assert not errors(module) and explicit(module)["model"] == "M"
    assert VLLM.catalogs.load("0.9.0").by_option["--model"].default == "facebook/opt-125m"  # 0.9.0's ModelConfig


@pytest.mark.parametrize("flag, value, field", [
    ("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "lookahead": 2}', "SpeculativeConfig"),
    ("--compilation-config", '{"level": 3, "capture_sizes": [1, 2]}', "CompilationConfig"),
])
def test_090_unknown_config_keys_are_refused_then_ignored_from_010(flag, value, field):
    # 0.9.0's configs are plain dataclasses built with cls(**dict): an unknown key is a TypeError;
    # 0.10 - 0.15's pydantic dataclasses drop it.
    old = cfg(shlex.join(["vllm", "serve", "M", flag, value]), "0.9.0")
    assert any(field in m and "refuses to start" in m for m in errors(old)), old.issues
    new = cfg(shlex.join(["vllm", "serve", "M", flag, value]), "0.10.0")
    assert not errors(new) and any(i.kind == "ignored-argument" for i in new.issues), new.issues


@pytest.mark.parametrize("release", ["0.9.1", "0.9.2"])
def test_091_092_units_get_0_9_0s_catalog_but_their_own_rewrites(release):
    # No 0.9.1 / 0.9.2 catalog ships: 0.9.0's types the flags, but 0.9.1 dashes only the part before
    # the first `.` and registers --model under `vllm serve` again, so none of 0.9.0's refusals apply.
    for read in (cfg(DOTTED, release), VLLM.read_config(shlex.split(DOTTED)[1:], recorded_version=release)):
        assert read.version == "0.9.0" and f"{release}" in read.version_reason
        assert not errors(read), read.issues
        assert "speculative_config.num_speculative_tokens" in explicit(read)
    for command in ("vllm serve M --model=N", "vllm serve --served-model-name a --port 8001"):
        assert not errors(cfg(command, release)), cfg(command, release).issues
        assert errors(cfg(command, "0.9.0"))
    assert cfg(DOTTED, "0.9.0").version == "0.9.0"  # and 0.9.0 itself keeps its own rules after them
    assert errors(cfg(DOTTED, "0.9.0"))
