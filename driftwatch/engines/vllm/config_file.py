"""The YAML file of `vllm serve --config FILE`: how its text travels with the unit's command line.

vLLM reads CLI options from that file at start-up (flexible.py applies them as vLLM does). Its text
comes from the user or the unit's host, as an `EngineFiles` value handed to `detect` (engines/files.py).

When the engine entry is detected, the file's parsed content is put into the engine argv right after
the path, as one word `--config={"driftwatch_config_file": PATH, "data": …}` (see `with_payloads`):
snapshots and baselines then carry the settings the unit ran with, and re-reading a saved snapshot
needs no file. The engine types that word as the value of `--config` (rewrites.py), so the
redaction policy keeps it, with credentials inside it cut out like those of any typed JSON value.
The word is never passed to vLLM's parser (`split_payloads` takes it out first; vLLM itself would
ignore a `--config=` word anyway).
"""
from __future__ import annotations

import json

import yaml

from ...fileio import YAMLLimitError, load_yaml_data, loads_json
from ..files import MAX_CONFIG_BYTES, EngineFiles

MAX_CONFIG_VALUES = 20_000  # values the YAML may expand to, aliases counted as what they repeat
MAX_PAYLOAD_CHARS = 256 << 10  # the parsed file as one argv word: what a snapshot can carry and read back
PAYLOAD_KEY = "driftwatch_config_file"
PAYLOAD_PREFIX = '--config={"' + PAYLOAD_KEY + '":'


def payload(path: str, text: str) -> str:
    """The argv word carrying the parsed file (or why it could not be parsed)."""
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


def with_payloads(argv: list[str], files: EngineFiles) -> list[str]:
    """argv with the text `files` hold for each `--config PATH` inlined after the path (once)."""
    if "--config" not in argv or any(w.startswith(PAYLOAD_PREFIX) for w in argv):
        return argv
    out: list[str] = []
    i = 0
    while i < len(argv):
        out.append(argv[i])
        if argv[i] == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
            out.append(path)
            text = files.text(path)
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
            try:
                doc = loads_json(word[len("--config="):])
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get(PAYLOAD_KEY), str):
                payloads[doc[PAYLOAD_KEY]] = doc
            continue
        words.append(word)
    return words, payloads


def carried(argv: list[str]) -> dict[str, str]:
    """{path: YAML text} of the files whose settings `argv` carries (files not read are left out).

    YAML, not JSON: read back through the same loader, it gives the same values and so the same
    payload word (JSON's `1e-05` would be a string to a YAML 1.1 reader)."""
    return {path: yaml.safe_dump(doc["data"], sort_keys=False)
            for path, doc in split_payloads(argv)[1].items() if "data" in doc}
