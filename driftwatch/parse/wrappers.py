"""Peel the wrappers an ExecStart puts around a server, whatever the server is.

Operators start engines under `env`, `bash -c '…'`, `conda run`, `uv run`, `docker run IMAGE …`,
`numactl`, `taskset`, `nice` and friends. We peel wrappers from the outside in, asking at every
step whether the words reached are an engine's entry point (the `detect` callback: the engine
registry), and record what we peeled. When no engine is found the innermost command is kept as it
is (`engine: none`), so any unit stays readable; this module never raises.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from typing import Protocol

from .launcher import Launcher

PYTHON_RE = re.compile(r"^python(\d+(\.\d+)*)?$")
NO_ENGINE = "none"
_MAX_DEPTH = 32  # wrappers nest, but never this deep; bounds hostile input

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
_SIMPLE_WRAPPERS = ("nice", "ionice", "chrt", "stdbuf", "timeout", "setsid", "nohup", "exec")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_SEPARATORS = {"&&", "||", ";", "|", "&", "|&"}
# A redirection at the start of a word: optional fd, operator, target (`2>&1`, `>> /var/log/x`, `&>f`).
_REDIRECT = re.compile(r"(?:(?<=\s)|^)\d*(?:&>>|&>|>>|>&|<&|>\||>|<)\s*(?:&?\d+\b|[^\s;&|]+)")



class FoundEntry(Protocol):
    """What a `detect` callback found: `engines.interface.EngineEntry` by shape (parse/ sits below
    engines/ and does not import it)."""

    @property
    def entry(self) -> str: ...
    @property
    def interpreter(self) -> str | None: ...
    @property
    def engine_argv(self) -> list[str]: ...


Detect = Callable[[list[str]], "tuple[str, FoundEntry] | None"]  # words -> (engine name, EngineEntry)
DetectImage = Callable[[str, list[str]], "tuple[str, FoundEntry] | None"]  # (image, args) -> the same


def basename(path: str) -> str:
    return os.path.basename(path.rstrip("/"))


def python_module(words: list[str]) -> tuple[str, str, list[str]] | None:
    """(interpreter, module, arguments) when `words` is `python [options] -m MODULE …`."""
    if not words or not PYTHON_RE.match(basename(words[0])):
        return None
    i = 1
    while i < len(words) and words[i].startswith("-") and not words[i].startswith("-m"):
        i += 2 if words[i] in _PYTHON_VALUE_OPTS else 1
    if i + 1 < len(words) and words[i] == "-m":
        return words[0], words[i + 1], words[i + 2:]
    if i < len(words) and words[i].startswith("-m") and len(words[i]) > 2:
        return words[0], words[i][2:], words[i + 1:]
    return None


def _python_script(words: list[str]) -> int | None:
    """Index of the script in `python [options] SCRIPT …` (not -m, not -c), else None."""
    if not words or not PYTHON_RE.match(basename(words[0])):
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        if words[i].startswith(("-m", "-c")):
            return None
        i += 2 if words[i] in _PYTHON_VALUE_OPTS else 1
    return i if i < len(words) else None


def venv_of(interpreter: str | None) -> str | None:
    """/root/ml-env/bin/python3 -> /root/ml-env (the virtualenv whose engine will run)."""
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
        i += 2 if "=" not in word and word in value_opts else 1
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


_SHELL_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand_shell_words(words: list[str], env: dict[str, str], unknown: list[str]) -> list[str]:
    """The shell's own `$VAR` expansion of a command's words (systemd leaves `$VAR` inside a
    `bash -c` string alone): a whole-word `$VAR` splits into words, one inside a word is substituted.
    Variables whose value is not known are dropped and named in `unknown`."""
    out: list[str] = []
    for word in words:
        whole = _SHELL_VAR.fullmatch(word)
        if whole:
            name = whole.group(1) or whole.group(2)
            if name in env:
                out.extend(env[name].split())
            else:
                unknown.append(name)
            continue

        def substitute(m: re.Match) -> str:
            name = m.group(1) or m.group(2)
            if name in env:
                return env[name]
            unknown.append(name)
            return m.group(0)

        out.append(_SHELL_VAR.sub(substitute, word) if "$" in word else word)
    return out


def _shell_lines(script: str) -> str:
    """The shell's own reading of line ends: a backslash-newline is removed (a continued line) outside
    single quotes, and an unquoted newline ends a command like `;` (a YAML `|` block of a Kubernetes
    `args:` is a script of lines)."""
    if "\n" not in script:
        return script
    out: list[str] = []
    quote = None
    i = 0
    while i < len(script):
        ch = script[i]
        if ch == "\\" and quote != "'" and script[i + 1:i + 2] == "\n":
            i += 2
            continue
        if ch == "\\" and quote != "'" and i + 1 < len(script):
            out.append(script[i:i + 2])
            i += 2
            continue
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote == ch else ch
        out.append(" ; " if ch == "\n" and quote is None else ch)
        i += 1
    return "".join(out)


def _shell_segments(script: str, environment: dict[str, str] | None = None,
                    unknown: list[str] | None = None) -> list[tuple[list[str], dict[str, str]]]:
    """The simple commands of a shell script, each with the variables set for it (`export A=1;`
    before it, `A=1 cmd` on it), `$VAR` expanded from `environment` where known (unknown names are
    appended to `unknown`). Raises ValueError on an unbalanced quote."""
    environment = environment or {}
    unknown = unknown if unknown is not None else []
    script = _REDIRECT.sub(" ", _shell_lines(script))  # `2>&1`, `>> log`, `< /dev/null`: the shell's
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    words = list(lexer)
    raw: list[list[str]] = [[]]
    for word in words:
        if word in _SHELL_SEPARATORS:
            raw.append([])
        else:
            raw[-1].append(word)
    exported: dict[str, str] = {}
    segments = []
    for segment in raw:
        if segment and segment[0] == "export":  # `export NCCL_P2P_LEVEL=SYS; exec python …`
            for word in segment[1:]:
                if _ASSIGNMENT.match(word):
                    name, _, value = word.partition("=")
                    exported[name] = value
            continue
        env = dict(exported)
        while segment and (segment[0] in ("exec", "command", "nohup") or _ASSIGNMENT.match(segment[0])):
            if _ASSIGNMENT.match(segment[0]):  # `CUDA_VISIBLE_DEVICES=0 python …`
                name, _, value = segment[0].partition("=")
                env[name] = value
            segment = segment[1:]
        if segment:
            segments.append((_expand_shell_words(segment, {**environment, **env}, unknown), env))
    return segments


def _docker_entrypoint(options: list[str]) -> str | None:
    """The `--entrypoint CMD` of `docker run` options, if any."""
    for i, word in enumerate(options):
        if word.startswith("--entrypoint="):
            return word.split("=", 1)[1] or None
        if word == "--entrypoint" and i + 1 < len(options):
            return options[i + 1] or None
    return None


class _Peeler:
    def __init__(self, detect: Detect, environment: dict[str, str] | None = None,
                 detect_image: DetectImage | None = None):
        self.detect = detect
        self.detect_image = detect_image
        self.environment = dict(environment or {})  # the unit's Environment=, for `bash -c '… $VAR …'`
        self.budget = 4096  # total peeling steps, nested shells included: bounds hostile input

    def peel(self, argv: list[str], depth: int = 0) -> Launcher:
        wrappers: list[str] = []
        wrapper_args: list[str] = []  # each wrapper with its options (numactl --cpunodebind=1)
        env: dict[str, str] = {}  # variables the wrappers set for the engine (env A=1, docker -e A=1)
        image: str | None = None
        interpreter_hint: str | None = None
        problems: list[str] = []
        words = list(argv)

        def peeled(before: list[str], after: list[str], skip_env: bool = False) -> None:
            consumed = before[:len(before) - len(after)] if len(after) < len(before) else before[:1]
            kept = [basename(consumed[0])] + [w for w in consumed[1:] if not (skip_env and _ASSIGNMENT.match(w))]
            wrapper_args.append(" ".join(kept))

        def launcher(engine: str, entry: str, interpreter: str | None, engine_argv: list[str]) -> Launcher:
            interpreter = interpreter or interpreter_hint
            venv = venv_of(interpreter) or (venv_of(words[0]) if words else None)
            return Launcher(engine=engine, entry=entry, interpreter=interpreter, wrappers=wrappers,
                            engine_argv=list(engine_argv), image=image, venv=venv, env=env,
                            wrapper_args=wrapper_args, problems=problems)

        for _ in range(_MAX_DEPTH):
            self.budget -= 1
            if not words or self.budget <= 0:
                break
            found = self.detect(words)
            if found is not None:
                engine, entry = found
                return launcher(engine, entry.entry, entry.interpreter, entry.engine_argv)
            head = words[0]
            name = basename(head)
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
                                problems.append(f"cannot split the `env -S` string: {exc}")
                                return launcher(NO_ENGINE, "env", None, words[1:])
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
            elif name in ("bash", "sh", "dash", "zsh"):
                return self._shell(words, name, depth, wrappers, wrapper_args, env, image, problems,
                                   launcher)
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
                    problems.append(f"{name} run without an image")
                    break
                image = words[idx]
                wrappers.append(f"{name} run")
                options = self._docker_options(words, start, idx, env)
                wrapper_args.append(" ".join([f"{name} run", *options]))
                entrypoint = _docker_entrypoint(options)
                words = words[idx + 1:]
                if entrypoint:  # --entrypoint replaces the image's own command
                    words = [entrypoint, *words]
                elif self.detect_image is not None:
                    found = self.detect_image(image, words)  # an image whose entrypoint is an engine
                    if found is not None:
                        engine, entry = found
                        return launcher(engine, entry.entry, entry.interpreter, entry.engine_argv)
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
            elif name in _SIMPLE_WRAPPERS:
                wrappers.append(name)
                words = words[_skip_options(words, {"-n", "-c", "--adjustment", "--class", "--classdata",
                                                    "-s", "--signal", "-k", "--kill-after"}, 1):]
                if name in ("chrt", "timeout") and words:
                    words = words[1:]  # priority / duration
                peeled(before, words)
            elif (script := _python_script(words)) is not None:
                interpreter_hint = head  # `python /venv/bin/sglang serve …`: the script runs in head
                words = words[script:]
            else:
                break
        # No engine: keep the innermost command as it is, so the unit is still read and compared.
        if not words:
            return launcher(NO_ENGINE, "", None, [])
        module = python_module(words)
        if module is not None:
            return launcher(NO_ENGINE, f"python -m {module[1]}", module[0], module[2])
        return launcher(NO_ENGINE, words[0], None, words[1:])

    def _docker_options(self, words: list[str], start: int, idx: int, env: dict[str, str]) -> list[str]:
        """Options of `docker run` before the image; -e/--env NAME=VALUE go to env instead. The container
        sees only these (and its image's defaults, and --env-file's contents, which stay options: unknown
        here): `-e NAME` alone passes the client's NAME (the unit's Environment=) when it is set there;
        the unit's Environment= reaches nothing else in the container."""
        options, j = [], start
        while j < idx:
            w = words[j]
            if w in ("-e", "--env") and j + 1 < idx:
                self._container_env(words[j + 1], env)
                j += 2
                continue
            if w.startswith(("--env=", "-e=")) or (w.startswith("-e") and len(w) > 2 and w[2] not in "-="):
                self._container_env(w.split("=", 1)[1] if w.startswith(("--env=", "-e=")) else w[2:], env)
                j += 1
                continue
            options.append(w)
            j += 1
        return options

    def _container_env(self, item: str, env: dict[str, str]) -> None:
        var, eq, value = item.partition("=")
        if eq:
            env[var] = value
        elif var in self.environment:  # `-e NAME`: the client's value, if the client has one
            env[var] = self.environment[var]

    def _shell(self, words: list[str], name: str, depth: int, wrappers: list[str], wrapper_args: list[str],
               env: dict[str, str], image: str | None, problems: list[str],
               launcher: Callable[[str, str, str | None, list[str]], Launcher]) -> Launcher:
        """`bash -c SCRIPT`: the simple command that starts an engine, or else the last one."""
        script_index = None
        for i, w in enumerate(words[1:], start=1):
            if w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
                script_index = i + 1
                break
            if not w.startswith("-"):
                break
        if script_index is None or script_index >= len(words):
            problems.append(f"{name} runs a script file: the command inside it is not visible")
            return launcher(NO_ENGINE, name, None, words[1:])
        wrappers.append(f"{name} -c")
        wrapper_args.append(f"{name} -c")
        unknown: list[str] = []
        try:
            segments = _shell_segments(words[script_index], {**self.environment, **env}, unknown)
        except ValueError as exc:
            problems.append(f"cannot split the shell script: {exc}")
            return launcher(NO_ENGINE, f"{name} -c", None, words[script_index:])
        if not segments or depth >= 8:
            return launcher(NO_ENGINE, f"{name} -c", None, words[script_index:])
        inner = None
        for segment, segment_env in segments:
            candidate = self.peel(segment, depth + 1)
            if candidate.engine != NO_ENGINE:
                inner, env_used = candidate, segment_env
                break
        if inner is None:
            inner, env_used = self.peel(segments[-1][0], depth + 1), segments[-1][1]
        for name in dict.fromkeys(unknown):
            problems.append(f"${name} in the shell script is expanded by the shell at run time "
                            f"from an environment the unit does not show: the arguments it holds are not compared")
        merged_env = {**env, **env_used, **inner.env}
        return Launcher(engine=inner.engine, entry=inner.entry, interpreter=inner.interpreter,
                        wrappers=wrappers + inner.wrappers, engine_argv=inner.engine_argv,
                        image=inner.image or image, venv=inner.venv, env=merged_env,
                        wrapper_args=wrapper_args + inner.wrapper_args, problems=problems + inner.problems)


def peel_wrappers(argv: list[str], detect: Detect, environment: dict[str, str] | None = None,
                  detect_image: DetectImage | None = None) -> Launcher:
    """Unwrap `argv` until `detect` recognises an engine; engine "none" when nothing does.
    `environment` (the unit's Environment=) fills `$VAR` that a `bash -c` script expands itself;
    `detect_image` recognises a `docker run` image whose own entrypoint is an engine."""
    return _Peeler(detect, environment, detect_image).peel(list(argv))
