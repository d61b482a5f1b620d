"""The YAML file of `vllm serve --config FILE`: where its text comes from, and how it travels.

vLLM reads CLI options from that file at start-up (flexible.py applies them as vLLM does). The file
lives on the server, so driftwatch gets its text from whoever has it:

- offline, the user passes it: `driftwatch --engine-config FILE …` (FILE serves every `--config`
  path) or `--engine-config /etc/vllm/qwen.yaml=FILE` (that path only), repeatable; or the same
  items, separated by `:`, in $DRIFTWATCH_ENGINE_CONFIG;
- a collector fetches it from the host (`RawUnit.engine_files`, path as the unit writes it -> text)
  and `build_snapshot` reads the unit inside `host_files(those files)`: for that one unit (a context
  variable, so concurrent units of a fleet never see each other's files) a fetched path is served
  before any `--engine-config FILE` that is not given for that exact path.

When the engine entry is detected, the file's parsed content is put into the engine argv right after
the path, as one word `--config={"driftwatch_config_file": PATH, "data": …}` (see `with_payloads`):
snapshots and baselines then carry the settings the unit ran with, and re-reading a saved snapshot
needs no file. The engine types that word as the value of `--config` (rewrites.py), so the
redaction policy keeps it, with credentials inside it cut out like those of any typed JSON value.
The word is never passed to vLLM's parser (`split_payloads` takes it out first; vLLM itself would
ignore a `--config=` word anyway).
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading

MAX_CONFIG_BYTES = 64 << 10  # as collectors read a host's --config FILE (collect/local.py, commands.py)
MAX_CONFIG_VALUES = 20_000  # values the YAML may expand to, aliases counted as what they repeat
MAX_PAYLOAD_CHARS = 256 << 10  # the parsed file as one argv word: what a snapshot can carry and read back
PAYLOAD_KEY = "driftwatch_config_file"
PAYLOAD_PREFIX = '--config={"' + PAYLOAD_KEY + '":'
ANY_PATH = "*"
ENV_VAR = "DRIFTWATCH_ENGINE_CONFIG"

_lock = threading.RLock()
_provided: dict[str, str] = {}  # path as the unit writes it (or ANY_PATH) -> file text
_env_read: list[str] = []  # the $DRIFTWATCH_ENGINE_CONFIG value already read
_host: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("driftwatch_vllm_host_files", default={})


@contextlib.contextmanager
def host_files(files: dict[str, str] | None):
    """Within the block, `--config PATH` of the unit being read is served the text fetched from its host."""
    token = _host.set(dict(files or {}))
    try:
        yield
    finally:
        _host.reset(token)


def provide(text: str, path: str = ANY_PATH) -> None:
    """Make a config file's text known for `--config path` (ANY_PATH: for every --config)."""
    with _lock:
        _provided[path] = text


def clear() -> None:
    with _lock:
        _provided.clear()
        _env_read.clear()


def _read_env() -> None:
    """$DRIFTWATCH_ENGINE_CONFIG, once per value. A FILE that cannot be read is bad input."""
    value = os.environ.get(ENV_VAR, "")
    if not value or value in _env_read:
        return
    _env_read.append(value)
    for item in filter(None, value.split(os.pathsep)):
        try:
            provide_option(item)
        except OSError as exc:
            from ...errors import InputError
            raise InputError(f"{ENV_VAR}: {item}: {exc.strerror or exc}") from None


def provided(path: str) -> str | None:
    """The text given for `--config path`: that exact path, else the file fetched from the unit's host
    (`host_files`), else the same file name, else ANY_PATH."""
    with _lock:
        _read_env()
        if path in _provided:
            return _provided[path]
        fetched = _host.get()
        if path in fetched:
            return fetched[path]
        base = os.path.basename(path)
        for known, text in _provided.items():
            if known != ANY_PATH and os.path.basename(known) == base:
                return text
        return _provided.get(ANY_PATH)


def provide_option(value: str) -> None:
    """One `[PATH=]FILE` of --engine-config / $DRIFTWATCH_ENGINE_CONFIG. Raises OSError for an unreadable FILE."""
    path, sep, local = value.partition("=")
    if not sep:
        path, local = ANY_PATH, value
    from ...errors import InputError
    from ...fileio import read_text_file  # bounded before it is read: --engine-config /dev/zero is one line
    try:
        text = read_text_file(local, "engine config file", allow_empty=True, limit=MAX_CONFIG_BYTES)
    except InputError as exc:  # the callers name the option or variable it came from, and the FILE
        message = str(exc)
        raise OSError(message[len(local) + 2:] if message.startswith(local + ": ") else message) from None
    provide(text, path or ANY_PATH)


def payload(path: str, text: str) -> str:
    """The argv word carrying the parsed file (or why it could not be parsed)."""
    from ...fileio import YAMLLimitError, load_yaml_data
    if len(text) > MAX_CONFIG_BYTES:
        return _error_payload(path, f"larger than {MAX_CONFIG_BYTES} bytes", limit=True)
    try:  # every bound of fileio's loader: depth, aliases, number length
        doc = {PAYLOAD_KEY: path, "data": load_yaml_data(text, max_nodes=MAX_CONFIG_VALUES)}
    except YAMLLimitError as exc:
        over = exc.reason.startswith(_BOUNDS)  # valid for vLLM, maybe; too much for driftwatch to carry
        return _error_payload(path, f"{'over a limit' if over else 'not valid YAML'}"
                                    f"{f' (line {exc.line})' if exc.line else ''}: {exc.reason}", limit=over)
    word = "--config=" + json.dumps(doc, default=str, separators=(",", ":"))
    if len(word) > MAX_PAYLOAD_CHARS:
        return _error_payload(path, f"its settings take more than {MAX_PAYLOAD_CHARS} characters", limit=True)
    return word


_BOUNDS = ("expands to more than", "nested deeper than", "a number of")


def _error_payload(path: str, why: str, limit: bool = False) -> str:
    """The word for a file not read: invalid YAML (vLLM would not start either), or over one of
    driftwatch's bounds (`limit`: vLLM might read it; driftwatch compares none of its settings)."""
    doc = {PAYLOAD_KEY: path, "error": why, **({"limit": True} if limit else {})}
    return "--config=" + json.dumps(doc, separators=(",", ":"))


def with_payloads(argv: list[str]) -> list[str]:
    """argv with the known text of each `--config PATH` inlined after the path (once)."""
    if "--config" not in argv or any(w.startswith(PAYLOAD_PREFIX) for w in argv):
        return argv
    out: list[str] = []
    i = 0
    while i < len(argv):
        out.append(argv[i])
        if argv[i] == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
            out.append(path)
            text = provided(path)
            if text is not None:
                out.append(payload(path, text))
            i += 2
            continue
        i += 1
    return out


def split_payloads(argv: list[str]) -> tuple[list[str], dict[str, dict]]:
    """(argv without payload words, {path: {"data": …} or {"error": …}})."""
    words, payloads = [], {}
    for word in argv:
        if word.startswith(PAYLOAD_PREFIX):
            from ...fileio import loads_json
            try:
                doc = loads_json(word[len("--config="):])
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get(PAYLOAD_KEY), str):
                payloads[doc[PAYLOAD_KEY]] = doc
            continue
        words.append(word)
    return words, payloads
