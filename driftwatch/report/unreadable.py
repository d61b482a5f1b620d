"""Why a host could not be read, said once: the reason without the host and unit it repeats.

The collector's error names the host and unit for stderr, where the line stands alone
("h6: vllm-qwen.service: unreachable: h6 (10.0.0.6:22): cannot connect: …"); a report line already
starts with them, so it shows "h6 vllm-qwen.service: unreachable (10.0.0.6:22): cannot connect: …".
The JSON report keeps the error as collected.
"""
from __future__ import annotations

import re


def reason(host: object, unit: object, error: object) -> str:
    """`error` with every ``HOST: ``/``UNIT: `` segment dropped and ``HOST (ADDRESS)`` cut to
    ``(ADDRESS)``; "" when nothing is left (the caller says "unknown error")."""
    text = str(error or "").strip()
    for name in (str(host or ""), str(unit or "")):
        if not name:
            continue
        n = re.escape(name)
        text = re.sub(rf"(^|: ){n}: ", r"\1", text)               # "h6: unreachable" -> "unreachable"
        text = re.sub(rf": {n} (\([^()]*\))(?=:|$)", r" \1", text)  # "unreachable: h6 (a:22)" -> "unreachable (a:22)"
        text = re.sub(rf"^{n} (\([^()]*\))(?=:|$)", r"\1", text)
    return text


__all__ = ["reason"]
