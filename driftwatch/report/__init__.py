"""Report formats: a registry of `Format`s by name, one module per format (see interface.py).

    get_format("html").render_fleet(doc)      # a driftwatch.report/v1 document
    get_format("text").render_comparison(doc) # a driftwatch.compare/v1 document
    get_format("text").render_history(doc)    # a driftwatch.history/v1 document (history.py)
    get_format("prometheus").render_fleet(doc) # node_exporter textfile (fleet reports only)
    format_names("comparison")                # the choices `compare --format` offers

The documents are built in report/data.py; every phrase comes from report/wording.py.
Adding a format: one module with a `Format` subclass, one line in `_REGISTRY` below. Formats are
imported when first asked for: a command pays only for the one it renders with.
"""
from __future__ import annotations

import importlib

from ..errors import InputError
from .interface import COMPARISON, FLEET, HISTORY, KINDS, Format, UnsupportedDocument

# name -> (module, class, the documents it renders: tests check this against the class's `supports`)
_REGISTRY: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "text": (".text", "TextFormat", (COMPARISON, FLEET, HISTORY)),
    "json": (".json_", "JsonFormat", (COMPARISON, FLEET, HISTORY)),
    "markdown": (".markdown", "MarkdownFormat", (COMPARISON, FLEET, HISTORY)),
    "html": (".html_", "HtmlFormat", (COMPARISON, FLEET)),
    "prometheus": (".prometheus", "PrometheusFormat", (FLEET,)),
}
_LOADED: dict[str, Format] = {}


def _load(name: str) -> Format:
    if name not in _LOADED:
        module, cls, _ = _REGISTRY[name]
        _LOADED[name] = getattr(importlib.import_module(module, __package__), cls)()
    return _LOADED[name]


def __getattr__(attr: str):
    if attr == "FORMATS":  # every format, by name, in registry order (imports them all)
        return {name: _load(name) for name in _REGISTRY}
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def format_names(kind: str | None = None) -> list[str]:
    """Names of the formats that render documents of `kind` (all formats when None), in registry order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown document kind {kind!r} (one of {', '.join(KINDS)})")
    return [name for name, (_, _, kinds) in _REGISTRY.items() if kind is None or kind in kinds]


def get_format(name: str, kind: str | None = None) -> Format:
    """The format called `name`; an unknown name (or one without a layout for `kind`) is an InputError."""
    if name not in _REGISTRY:
        raise InputError(f"unknown report format {name!r} (choose from {', '.join(format_names(kind))})")
    fmt = _load(name)
    if kind is not None and not fmt.supports(kind):
        raise UnsupportedDocument(f"the {name} format cannot render a {kind} "
                                  f"(choose from {', '.join(format_names(kind))})")
    return fmt


__all__ = ["FORMATS", "Format", "UnsupportedDocument", "COMPARISON", "FLEET", "HISTORY", "format_names",
           "get_format"]
