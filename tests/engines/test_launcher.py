"""find_launcher: peel the wrappers an ExecStart puts around SGLang (issue 2, item 4)."""
from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from driftwatch.engines.registry import find_launcher

ENGINE = ["--model-path", "/m", "--tp", "2"]


def L(cmd: str | list[str]):
    return find_launcher(shlex.split(cmd) if isinstance(cmd, str) else cmd)


# (command line, expected attributes). Every case ends in the same engine argv unless it says otherwise.
CASES = [
    pytest.param(
        "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /m --tp 2",
        dict(entry="python -m sglang.launch_server", interpreter="/root/ml-env/bin/python3",
             venv="/root/ml-env", wrappers=[], image=None),
        id="venv-python3-m"),
    pytest.param(
        "python3 -u -m sglang.launch_server --model-path /m --tp 2",
        dict(entry="python -m sglang.launch_server", interpreter="python3", venv=None, wrappers=[]),
        id="python-options-before-m"),
    pytest.param(
        "python3 -W ignore -X faulthandler -m sglang.launch_server --model-path /m --tp 2",
        dict(entry="python -m sglang.launch_server", interpreter="python3", wrappers=[]),
        id="python-valued-options-before-m"),
    pytest.param(
        "sglang serve --model-path /m --tp 2",
        dict(entry="sglang serve", interpreter=None, venv=None, wrappers=[]),
        id="sglang-serve"),
    pytest.param(
        "/opt/v/bin/sglang serve --model-path /m --tp 2",
        dict(entry="sglang serve", venv="/opt/v", wrappers=[]),
        id="venv-sglang-serve"),
    pytest.param(
        "/opt/v/bin/python3.11 /opt/v/bin/sglang serve --model-path /m --tp 2",
        dict(entry="sglang serve", interpreter="/opt/v/bin/python3.11", venv="/opt/v", wrappers=[]),
        id="python-runs-sglang-script"),
    pytest.param(
        "/usr/bin/env A=1 python -m sglang.launch_server --model-path /m --tp 2",
        dict(entry="python -m sglang.launch_server", interpreter="python", wrappers=["env"]),
        id="usr-bin-env-assignment"),
    pytest.param(
        "env -u X B=2 /opt/v/bin/python -m sglang.launch_server --model-path /m --tp 2",
        dict(interpreter="/opt/v/bin/python", venv="/opt/v", wrappers=["env"]),
        id="env-unset"),
    pytest.param(
        "env -S 'python3 -m sglang.launch_server' --model-path /m --tp 2",
        dict(interpreter="python3", wrappers=["env"]),
        id="env-split-string"),
    pytest.param(
        "bash -c 'source /x/activate && exec python -m sglang.launch_server --model-path /m --tp 2'",
        dict(entry="python -m sglang.launch_server", interpreter="python", wrappers=["bash -c"]),
        id="bash-c-source-exec"),
    pytest.param(
        "sh -c 'python3 -m sglang.launch_server --model-path /m --tp 2'",
        dict(interpreter="python3", wrappers=["sh -c"]),
        id="sh-c"),
    pytest.param(
        "bash -lc 'cd /srv && /opt/v/bin/python -m sglang.launch_server --model-path /m --tp 2'",
        dict(interpreter="/opt/v/bin/python", venv="/opt/v", wrappers=["bash -c"]),
        id="bash-lc-bundled"),
    pytest.param(
        "conda run -n sgl --no-capture-output python -m sglang.launch_server --model-path /m --tp 2",
        dict(interpreter="python", wrappers=["conda run -n sgl"]),
        id="conda-run"),
    pytest.param(
        "uv run --python 3.11 sglang serve --model-path /m --tp 2",
        dict(entry="sglang serve", wrappers=["uv run"]),
        id="uv-run-sglang-serve"),
    pytest.param(
        "uv run --with sglang python -m sglang.launch_server --model-path /m --tp 2",
        dict(entry="python -m sglang.launch_server", interpreter="python", wrappers=["uv run"]),
        id="uv-run-python"),
    pytest.param(
        "docker run --rm --gpus all -v a:b -e K=V --ipc=host -p 30000:30000 lmsysorg/sglang:v0.5.5 "
        "python3 -m sglang.launch_server --model-path /m --tp 2",
        dict(entry="python -m sglang.launch_server", interpreter="python3", wrappers=["docker run"],
             image="lmsysorg/sglang:v0.5.5"),
        id="docker-run"),
    pytest.param(
        "docker run -it --shm-size 32g --name sgl lmsysorg/sglang:latest sglang serve --model-path /m --tp 2",
        dict(entry="sglang serve", wrappers=["docker run"], image="lmsysorg/sglang:latest"),
        id="docker-run-sglang-serve"),
    pytest.param(
        "numactl --cpunodebind=0 -m 0 python3 -m sglang.launch_server --model-path /m --tp 2",
        dict(interpreter="python3", wrappers=["numactl"]),
        id="numactl"),
    pytest.param(
        "taskset -c 0-7 python3 -m sglang.launch_server --model-path /m --tp 2",
        dict(interpreter="python3", wrappers=["taskset"]),
        id="taskset-c"),
    pytest.param(
        "taskset 0xff python3 -m sglang.launch_server --model-path /m --tp 2",
        dict(interpreter="python3", wrappers=["taskset"]),
        id="taskset-mask"),
    pytest.param(
        "numactl --cpunodebind=0 -m 0 taskset -c 0-7 /usr/bin/env A=1 "
        "bash -c 'exec /opt/v/bin/python -m sglang.launch_server --model-path /m --tp 2'",
        dict(interpreter="/opt/v/bin/python", venv="/opt/v",
             wrappers=["numactl", "taskset", "env", "bash -c"]),
        id="nested-four"),
    pytest.param(
        "docker run --rm lmsysorg/sglang:v0.5.5 bash -c "
        "'numactl -N 0 python3 -m sglang.launch_server --model-path /m --tp 2'",
        dict(interpreter="python3", wrappers=["docker run", "bash -c", "numactl"],
             image="lmsysorg/sglang:v0.5.5"),
        id="nested-docker-bash-numactl"),
]


@pytest.mark.parametrize("cmd, expected", CASES)
def test_launcher_finds_sglang(cmd, expected):
    launcher = L(cmd)
    assert launcher.engine == "sglang"
    assert launcher.engine_argv == ENGINE
    for attr, value in expected.items():
        assert getattr(launcher, attr) == value, attr


def test_python_m_without_engine_args():
    launcher = L("python -m sglang.launch_server")
    assert launcher.engine_argv == []
    assert launcher.entry == "python -m sglang.launch_server"


def test_engine_argv_keeps_words_verbatim():
    # Values that look like options or contain spaces/quotes pass through untouched.
    argv = ["/v/bin/python", "-m", "sglang.launch_server", "--json-model-override-args",
            '{"a": 1}', "--port", "-1", "--", "x"]
    assert find_launcher(argv).engine_argv == argv[3:]


def test_system_interpreter_is_not_a_venv():
    assert L("/usr/bin/python3 -m sglang.launch_server").venv is None
    assert L("/usr/local/bin/python3 -m sglang.launch_server").venv is None


def test_result_does_not_alias_input():
    argv = ["python3", "-m", "sglang.launch_server", "--tp", "2"]
    launcher = find_launcher(argv)
    launcher.engine_argv.append("--x")
    assert argv == ["python3", "-m", "sglang.launch_server", "--tp", "2"]


def test_attached_dash_m():
    launcher = L("python3 -msglang.launch_server --model-path /m --tp 2")
    assert launcher.entry == "python -m sglang.launch_server"
    assert launcher.engine_argv == ENGINE


@pytest.mark.parametrize("tail", ["2>&1 | tee /var/log/sgl.log", ">> /var/log/sgl.log 2>&1"])
def test_bash_c_redirections_are_not_engine_args(tail):
    launcher = L(["bash", "-c", f"python3 -m sglang.launch_server --model-path /m --tp 2 {tail}"])
    assert launcher.engine_argv == ENGINE


# ---------------------------------------------------------------- negatives


@pytest.mark.parametrize("cmd, entry, args", [
    ("vllm chat --url http://x", "vllm", ["chat", "--url", "http://x"]),  # vLLM's client, not a server
    ("python -m http.server 8000", "python -m http.server", ["8000"]),
    ("/usr/bin/python3 -m vllm.entrypoints.api_server", "python -m vllm.entrypoints.api_server", []),  # demo server
    ("env A=1 /usr/bin/true", "/usr/bin/true", []),
    ("docker run --rm nginx:latest", "", []),
    ("numactl -N 0 /opt/bin/llama-server -m x.gguf", "/opt/bin/llama-server", ["-m", "x.gguf"]),
])
def test_no_known_engine_is_engine_none(cmd, entry, args):
    # A unit that runs no engine driftwatch knows is still read: the innermost command is kept.
    launcher = L(cmd)
    assert launcher.engine == "none"
    assert (launcher.entry, launcher.engine_argv) == (entry, args)


def test_bash_without_c_is_engine_none_with_a_reason():
    launcher = L("bash /opt/start-sglang.sh")
    assert launcher.engine == "none" and launcher.engine_argv == ["/opt/start-sglang.sh"]
    assert any("script" in p for p in launcher.problems)


def test_shell_script_without_engine_keeps_its_last_command():
    launcher = find_launcher(["/bin/sh", "-c", "docker rm -f x || true"])
    assert (launcher.engine, launcher.entry, launcher.engine_argv) == ("none", "true", [])
    assert launcher.wrappers == ["sh -c"]


@pytest.mark.parametrize("argv", [
    [], [""], ["python"], ["python3", "-m"], ["bash", "-c"], ["bash", "-c", ""], ["sh", "-c", "&& ; |"],
    ["docker", "run"], ["docker", "run", "--rm"], ["docker", "container"], ["conda", "run", "-n"],
    ["uv", "run"], ["taskset"], ["taskset", "-p"], ["numactl", "-N"], ["env"], ["env", "-u"],
    ["chrt"], ["timeout"], ["sglang"], ["sglang", "launch"],
    ["bash", "-c", "python3 -m sglang.launch_server 'unterminated"],
])
def test_truncated_or_odd_commands_are_engine_none(argv):
    assert find_launcher(argv).engine == "none"


def test_env_split_string_unbalanced_quote():
    launcher = find_launcher(["env", "-S", "python3 'oops", "-m", "sglang.launch_server"])
    assert launcher.engine == "none" and any("split" in p for p in launcher.problems)


# ---------------------------------------------------------------- hostile input


def test_very_long_engine_argv():
    argv = ["python3", "-m", "sglang.launch_server"] + ["--tp", "2"] * 100_000
    assert len(find_launcher(argv).engine_argv) == 200_000


def test_very_long_non_sglang_argv():
    launcher = find_launcher(["/bin/true"] + ["x" * 1000] * 10_000)
    assert launcher.engine == "none" and len(launcher.engine_argv) == 10_000


@pytest.mark.parametrize("depth", [1, 3, 8])
def test_nested_bash_c(depth):
    script = "python3 -m sglang.launch_server --model-path /m --tp 2"
    for _ in range(depth):
        script = "bash -c " + shlex.quote(script)
    launcher = L(script)
    assert launcher.wrappers == ["bash -c"] * depth
    assert launcher.engine_argv == ENGINE


@pytest.mark.parametrize("argv", [
    ["env"] * 100_000 + ["python3", "-m", "sglang.launch_server"],
    ["numactl", "-N", "0"] * 1000 + ["python3", "-m", "sglang.launch_server"],
    ["taskset", "-c", "0"] * 1000 + ["sglang", "serve"],
])
def test_absurd_nesting_is_bounded(argv):
    # Found or engine none; never a RecursionError/hang/exception.
    assert find_launcher(argv).engine in ("sglang", "none")


WRAPPER_WORDS = ["env", "/usr/bin/env", "-S", "-u", "A=1", "bash", "sh", "-c", "-lc", "conda", "uv", "run",
                 "-n", "docker", "podman", "container", "numactl", "taskset", "nice", "chrt", "timeout",
                 "python3", "/v/bin/python", "-m", "-msglang.launch_server", "sglang.launch_server", "sglang",
                 "serve", "--", "'", '"', "&&", "|", ";", "exec", "-p", "--rm", "img:1", "2>&1"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(WRAPPER_WORDS), st.text(max_size=12)), max_size=14))
def test_random_argv_only_engine_error(argv):
    launcher = find_launcher(argv)  # never raises
    assert launcher.engine in ("sglang", "none")
    assert isinstance(launcher.engine_argv, list) and all(isinstance(w, str) for w in launcher.engine_argv)
