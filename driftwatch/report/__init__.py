"""Report formats: a registry of `Format`s by name, one module per format (see interface.py).

    get_format("html").render_fleet(doc)      # a driftwatch.report/v1 document
    get_format("text").render_comparison(doc) # a driftwatch.compare/v1 document
    get_format("text").render_history(doc)    # a driftwatch.history/v1 document (history.py)
    get_format("prometheus").render_fleet(doc) # node_exporter textfile (fleet reports only)
    format_names("comparison")                # the choices `compare --format` offers

The documents are built in report/data.py; every phrase comes from report/wording.py.
Adding a format: one module with a `Format` subclass, one line in `FORMATS` below.
"""
from __future__ import annotations

from ..errors import InputError
from .html_ import HtmlFormat
from .interface import COMPARISON, FLEET, HISTORY, KINDS, Format, UnsupportedDocument
from .json_ import JsonFormat
from .markdown import MarkdownFormat
from .prometheus import PrometheusFormat
from .text import TextFormat

FORMATS: dict[str, Format] = {f.name: f for f in (TextFormat(), JsonFormat(), MarkdownFormat(), HtmlFormat(),
                                                   PrometheusFormat())}


def format_names(kind: str | None = None) -> list[str]:
    """Names of the formats that render documents of `kind` (all formats when None), in registry order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown document kind {kind!r} (one of {', '.join(KINDS)})")
    return [name for name, f in FORMATS.items() if kind is None or f.supports(kind)]


def get_format(name: str, kind: str | None = None) -> Format:
    """The format called `name`; an unknown name (or one without a layout for `kind`) is an InputError."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise InputError(f"unknown report format {name!r} (choose from {', '.join(format_names(kind))})")
    if kind is not None and not fmt.supports(kind):
        raise UnsupportedDocument(f"the {name} format cannot render a {kind} "
                                  f"(choose from {', '.join(format_names(kind))})")
    return fmt


__all__ = ["FORMATS", "Format", "UnsupportedDocument", "COMPARISON", "FLEET", "HISTORY", "format_names",
           "get_format"]
