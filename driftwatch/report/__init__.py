"""Renderers: one module per format; each takes a finished Comparison and only formats it."""
from __future__ import annotations

FORMATS = ("text", "json", "markdown")


def render_comparison(comparison, fmt: str) -> str:
    if fmt == "json":
        from .json_ import render
    elif fmt == "markdown":
        from .markdown import render
    else:
        from .text import render
    return render(comparison)
