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

from ..files import EngineFiles

PAYLOAD_KEY = "driftwatch_config_file"
PAYLOAD_PREFIX = '--config={"' + PAYLOAD_KEY + '":'


def payload(path: str, text: str) -> str:
    """The argv word carrying the parsed file (or why it could not be parsed)."""
    try:
        doc = {PAYLOAD_KEY: path, "data": yaml.safe_load(text)}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        doc = {PAYLOAD_KEY: path, "error": f"not valid YAML{where}: {getattr(exc, 'problem', None) or exc}"}
    return "--config=" + json.dumps(doc, default=str, separators=(",", ":"))


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
                doc = json.loads(word[len("--config="):])
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get(PAYLOAD_KEY), str):
                payloads[doc[PAYLOAD_KEY]] = doc
            continue
        words.append(word)
    return words, payloads
