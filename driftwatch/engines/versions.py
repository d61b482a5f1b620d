"""Order engine release strings (0.4.10.post2 < 0.5.5 < 0.5.12 < 0.5.23) without extra dependencies."""
from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=4096)  # asked for the same few releases on every unit typed
def version_key(version: str) -> tuple:
    """Sort key for PEP 440-ish release strings: numeric parts, then post/dev/rc markers."""
    parts: list = []
    for piece in re.split(r"[.+-]", version.strip().lstrip("v")):
        m = re.match(r"^(\d+)(.*)$", piece)
        if m:
            parts.append((1, int(m.group(1)), m.group(2)))
        elif piece.startswith("post"):
            parts.append((2, int(piece[4:] or 0), ""))
        else:
            parts.append((0, 0, piece))
    return tuple(parts)
