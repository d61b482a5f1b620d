"""The interface every report format implements (one module per format, like pip-audit's `_format/`).

A format turns a finished document into text: a comparison (`driftwatch.compare/v1`, built by
report/data.py from a `Comparison`), a fleet report (`driftwatch.report/v1`), and later a history.
It computes nothing: every number and every fact is in the document, every phrase comes from
report/wording.py, and the format only lays them out and escapes them for its medium.

Adding a format is one module with a `Format` subclass and one line in report/__init__.py.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, cast

from ..errors import InputError

if TYPE_CHECKING:
    from .document import ComparisonDoc, DocumentLike, FleetReportDoc, HistoryDoc

COMPARISON = "comparison"
FLEET = "fleet"
HISTORY = "history"
KINDS = (COMPARISON, FLEET, HISTORY)

# Which kind of document a schema names.
SCHEMA_KINDS = {"driftwatch.compare/v1": COMPARISON, "driftwatch.report/v1": FLEET,
                "driftwatch.history/v1": HISTORY}


class UnsupportedDocument(InputError):
    """A format asked to render a kind of document it has no layout for."""


class Format(ABC):
    """One output format. Subclasses set `name`, `media_type` and `suffix` and render documents."""

    name: str = ""  # what --format takes: text, json, markdown, html
    media_type: str = "text/plain"  # MIME type of the output (mail parts, HTTP)
    suffix: str = ".txt"  # file name suffix for the output

    @abstractmethod
    def render_comparison(self, doc: ComparisonDoc) -> str:
        """A `driftwatch.compare/v1` document (one unit against its baseline)."""

    @abstractmethod
    def render_fleet(self, doc: FleetReportDoc, brief: bool = False) -> str:
        """A `driftwatch.report/v1` document (many hosts against one baseline). `brief`: without the
        per-host sections, in the formats that have them (text, HTML: a mail's summary when the full
        report is attached); the others have one layout."""

    def render_history(self, doc: HistoryDoc) -> str:
        """A `driftwatch.history/v1` document (what changed when, since when each finding is there;
        built by history.py); not every format has a layout for it."""
        raise UnsupportedDocument(f"the {self.name} format cannot render a history")

    def supports(self, kind: str) -> bool:
        """Whether this format renders documents of `kind` (comparison, fleet, history)."""
        if kind == HISTORY:
            return type(self).render_history is not Format.render_history
        return kind in (COMPARISON, FLEET)

    def render(self, doc: DocumentLike) -> str:
        """Render any document, by its `schema` (one read from a file too: the formats read it through
        report/view.py and report/wording.py, so a field missing or of the wrong type never breaks it)."""
        schema = doc.get("schema") if isinstance(doc, dict) else None
        kind = SCHEMA_KINDS.get(schema) if isinstance(schema, str) else None
        if kind == COMPARISON:
            return self.render_comparison(cast("ComparisonDoc", doc))
        if kind == FLEET:
            return self.render_fleet(cast("FleetReportDoc", doc))
        if kind == HISTORY:
            return self.render_history(cast("HistoryDoc", doc))
        schema = doc.get("schema") if isinstance(doc, dict) else None
        raise UnsupportedDocument(f"the {self.name} format cannot render a document of schema {schema!r}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
