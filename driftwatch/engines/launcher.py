"""Find the engine invocation inside the wrappers an ExecStart puts around it.

Operators start SGLang in many ways: `python -m sglang.launch_server`, the `sglang serve` script,
under `env`, `bash -c '…'`, `conda run`, `uv run`, `docker run IMAGE …`, `numactl`, `taskset`.
We peel wrappers from the outside in until an engine entry point appears, and record what we peeled.
"""
from __future__ import annotations

import os
import re
import shlex

from ..errors import EngineError
from ..model import Launcher

PYTHON_RE = re.compile(r"^python(\d+(\.\d+)*)?$")
SGLANG_MODULES = {"sglang.launch_server": "python -m sglang.launch_server"}

# Wrapper options that take a separate value (so the value is not mistaken for the command).
_NUMACTL_VALUE_OPTS = {"-N", "-m", "-C", "-i", "-p", "--cpunodebind", "--membind", "--physcpubind",
                       "--interleave", "--preferred", "--weighted-interleave", "-w"}
_UV_VALUE_OPTS = {"--python", "-p", "--with", "--with-requirements", "--with-editable", "--project",
                  "--directory", "--env-file", "--package", "--extra", "--group", "--index",
                  "--index-url", "--extra-index-url", "--cache-dir", "--config-file", "--python-preference",
                  "--index-strategy", "--find-links", "-f", "--prerelease", "--resolution",
                  "--refresh-package", "--reinstall-package", "--upgrade-package", "-P", "--no-group",
                  "--only-group", "--link-mode", "--exclude-newer", "--color", "--script", "--only-dev"}
_CONDA_VALUE_OPTS = {"-n", "--name", "-p", "--prefix", "--cwd"}
_DOCKER_FLAG_OPTS = {"--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "-it", "-ti",
                     "--privileged", "--init", "-P", "--publish-all", "--read-only", "--sig-proxy",
                     "--no-healthcheck", "--oom-kill-disable", "-q", "--quiet", "--use-api-socket"}
_PYTHON_VALUE_OPTS = {"-W", "-X", "-c"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_SEPARATORS = {"&&", "||", ";", "|", "&", "|&"}
# A redirection at the start of a word: optional fd, operator, target (`2>&1`, `>> /var/log/x`, `&>f`).
_REDIRECT = re.compile(r"(?:(?<=\s)|^)\d*(?:&>>|&>|>>|>&|<&|>\||>|<)\s*(?:&?\d+\b|[^\s;&|]+)")


def _basename(path: str) -> str:
    return os.path.basename(path.rstrip("/"))


def _venv_of(interpreter: str | None) -> str | None:
    """/root/ml-env/bin/python3 -> /root/ml-env (the virtualenv whose SGLang will run)."""
    if not interpreter or "/" not in interpreter:
        return None
    parent = os.path.dirname(interpreter)
    if os.path.basename(parent) == "bin":
        root = os.path.dirname(parent)
        if root not in ("/", "/usr", "/usr/local", ""):
            return root
    return None


def _skip_options(argv: list[str], value_opts: set[str], start: int = 0) -> int:
    """Index of the first non-option word, skipping option values named in value_opts."""
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if not word.startswith("-") or word == "-":
            return i
        if "=" not in word and word in value_opts:
            i += 2
        else:
            i += 1
    return i


def _docker_image_index(argv: list[str], start: int) -> int:
    """Index of IMAGE in `docker run [OPTIONS] IMAGE [COMMAND]` (options take a value unless boolean)."""
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if not word.startswith("-"):
            return i
        if "=" in word or word in _DOCKER_FLAG_OPTS:
            i += 1
        elif word.startswith("--"):
            i += 2
        elif len(word) > 2:  # -it, -e=... or bundled short flags like -itd
            i += 1
        else:
            i += 2
    return i


def _shell_segment(script: str) -> tuple[list[str], dict[str, str]]:
    """The words of the shell command in `bash -c SCRIPT` that runs the engine, and the variables
    the script sets for it (`export A=1;`, `A=1 python …`)."""
    script = _REDIRECT.sub(" ", script)  # `2>&1`, `>> log`, `< /dev/null` are the shell's, not argv
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError as exc:
        raise EngineError(f"cannot split the shell script in ExecStart: {exc}") from None
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SHELL_SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(word)
    env: dict[str, str] = {}
    for segment in segments:
        if any("sglang" in w for w in segment):
            while segment and (segment[0] in ("exec", "command", "nohup") or _ASSIGNMENT.match(segment[0])):
                if _ASSIGNMENT.match(segment[0]):  # `CUDA_VISIBLE_DEVICES=0 python …`
                    name, _, value = segment[0].partition("=")
                    env[name] = value
                segment = segment[1:]
            return segment, env
        if segment and segment[0] == "export":  # `export NCCL_P2P_LEVEL=SYS; exec python …`
            for word in segment[1:]:
                if _ASSIGNMENT.match(word):
                    name, _, value = word.partition("=")
                    env[name] = value
    return segments[-1], env


def find_launcher(argv: list[str]) -> Launcher:
    """Peel wrappers off argv until SGLang's entry point; raise EngineError when there is none."""
    wrappers: list[str] = []
    wrapper_args: list[str] = []  # each wrapper with its options, for the diff (numactl --cpunodebind=1)
    env: dict[str, str] = {}  # variables the wrappers set for the engine (env A=1, docker -e A=1)
    image: str | None = None
    interpreter_hint: str | None = None
    words = list(argv)

    def peeled(before: list[str], after: list[str], skip_env: bool = False) -> None:
        consumed = before[:len(before) - len(after)] if len(after) < len(before) else before[:1]
        kept = [_basename(consumed[0])] + [w for w in consumed[1:] if not (skip_env and _ASSIGNMENT.match(w))]
        wrapper_args.append(" ".join(kept))

    for _ in range(32):  # wrappers nest, but never this deep; bounds hostile input
        if not words:
            break
        head = words[0]
        name = _basename(head)
        before = words
        if name == "env":
            wrappers.append("env")
            i = 1
            while i < len(words):
                w = words[i]
                if w in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                    if w in ("-S", "--split-string") and i + 1 < len(words):
                        try:
                            split = shlex.split(words[i + 1])
                        except ValueError as exc:
                            raise EngineError(f"cannot split `env -S` string in ExecStart: {exc}") from None
                        words = words[:i] + split + words[i + 2:]
                        continue
                    i += 2
                elif w.startswith("-") or _ASSIGNMENT.match(w):
                    if _ASSIGNMENT.match(w):
                        var, _, value = w.partition("=")
                        env[var] = value
                    i += 1
                else:
                    break
            words = words[i:]
            peeled(before, words, skip_env=True)
        elif name in ("bash", "sh", "dash", "zsh") :
            script_index = None
            for i, w in enumerate(words[1:], start=1):
                if w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
                    script_index = i + 1
                    break
                if not w.startswith("-"):
                    break
            if script_index is None or script_index >= len(words):
                raise EngineError(f"ExecStart runs {name} without -c: cannot see the engine command")
            wrappers.append(f"{name} -c")
            wrapper_args.append(f"{name} -c")
            words, script_env = _shell_segment(words[script_index])
            env.update(script_env)
        elif name in ("conda", "mamba", "micromamba") and len(words) > 1 and words[1] == "run":
            env_name = None
            for i, w in enumerate(words[2:], start=2):
                if w in ("-n", "--name", "-p", "--prefix") and i + 1 < len(words):
                    env_name = words[i + 1]
                    break
            wrappers.append(f"{name} run" + (f" -n {env_name}" if env_name else ""))
            words = words[_skip_options(words, _CONDA_VALUE_OPTS, 2):]
            peeled(before, words)
        elif name == "uv" and len(words) > 1 and words[1] == "run":
            wrappers.append("uv run")
            words = words[_skip_options(words, _UV_VALUE_OPTS, 2):]
            peeled(before, words)
        elif name in ("docker", "podman", "nerdctl") and len(words) > 1 and words[1] in ("run", "container"):
            start = 2 if words[1] == "run" else 3
            idx = _docker_image_index(words, start)
            if idx >= len(words):
                raise EngineError(f"{name} run without an image in ExecStart")
            image = words[idx]
            wrappers.append(f"{name} run")
            options, j = [], start
            while j < idx:  # -e/--env NAME=VALUE go to env; other options are compared as written
                w = words[j]
                if w in ("-e", "--env") and j + 1 < idx:
                    var, eq, value = words[j + 1].partition("=")
                    if eq:
                        env[var] = value
                    j += 2
                    continue
                if w.startswith(("--env=", "-e=")) or (w.startswith("-e") and "=" in w[2:] and len(w) > 2):
                    var, eq, value = w.split("=", 1)[1].partition("=") if w.startswith(("--env=", "-e=")) \
                        else w[2:].partition("=")
                    if eq:
                        env[var] = value
                    j += 1
                    continue
                options.append(w)
                j += 1
            wrapper_args.append(" ".join([f"{name} run", *options]))
            words = words[idx + 1:]
        elif name == "numactl":
            wrappers.append("numactl")
            words = words[_skip_options(words, _NUMACTL_VALUE_OPTS, 1):]
            peeled(before, words)
        elif name == "taskset":
            wrappers.append("taskset")
            i = 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in ("-p", "--pid") else 1
            words = words[i + 1:]  # skip the mask / cpu list
            peeled(before, words)
        elif name in ("nice", "ionice", "chrt", "stdbuf", "timeout", "setsid", "nohup", "exec"):
            wrappers.append(name)
            words = words[_skip_options(words, {"-n", "-c", "--adjustment", "--class", "--classdata",
                                                "-s", "--signal", "-k", "--kill-after"}, 1):]
            if name in ("chrt", "timeout") and words:
                words = words[1:]  # priority / duration
            peeled(before, words)
        elif PYTHON_RE.match(name):
            i = 1
            while i < len(words) and words[i].startswith("-") and not words[i].startswith("-m"):
                i += 2 if words[i] in _PYTHON_VALUE_OPTS else 1
            if i + 1 < len(words) and words[i] == "-m" and words[i + 1] in SGLANG_MODULES:
                return Launcher(engine="sglang", entry=SGLANG_MODULES[words[i + 1]], interpreter=head,
                                wrappers=wrappers, engine_argv=words[i + 2:], image=image, env=env,
                                wrapper_args=wrapper_args,
                                venv=_venv_of(head))
            if i < len(words) and words[i].startswith("-m") and words[i][2:] in SGLANG_MODULES:
                return Launcher(engine="sglang", entry=SGLANG_MODULES[words[i][2:]], interpreter=head,
                                wrappers=wrappers, engine_argv=words[i + 1:], image=image, env=env,
                                wrapper_args=wrapper_args,
                                venv=_venv_of(head))
            if i < len(words) and _basename(words[i]) == "sglang":
                interpreter_hint = head
                words = words[i:]
                continue
            break
        elif name == "sglang" and len(words) > 1 and words[1] == "serve":
            interpreter = interpreter_hint  # `python -m … sglang serve`; a bare script has its venv in its path
            venv = _venv_of(interpreter) or _venv_of(head)
            return Launcher(engine="sglang", entry="sglang serve", interpreter=interpreter,
                            wrappers=wrappers, engine_argv=words[2:], image=image, venv=venv,
                            env=env, wrapper_args=wrapper_args)
        else:
            break
    shown = " ".join(shlex.quote(w) for w in argv[:4])
    raise EngineError(f"ExecStart does not start SGLang (no `python -m sglang.launch_server` or "
                      f"`sglang serve` found in: {shown}{' …' if len(argv) > 4 else ''})")
