"""The suite's layers: a test that starts a real outside program is marked `integration` and `slow`.

The outside programs are the OpenSSH sshd lab (tests/collect/dw_sshlab.py), the PostgreSQL server
(tests/store/pg_server.py), headless Chromium (tests/report/chromium_lab.py) and node_exporter
(tests/report/node_exporter_lab.py). A test is marked when it asks for one of their fixtures, directly
or through another fixture, or when its code or one of its fixtures' code names one of those helpers.
`pytest -m "not slow"` is then the quick layer (docs/development.md). Helpers are importable by name:
their folders are on pytest's `pythonpath` (pyproject.toml), no test edits sys.path.
"""
from __future__ import annotations

import pytest

# fixtures that start an outside program (every fixture built on them is found through the closure)
LAB_FIXTURES = frozenset({"lab", "pg", "pg_url", "browser", "textfiles"})
# the helpers that start one, as a test's or fixture's code names them
LAB_NAMES = frozenset({"dw_sshlab", "pg_server", "chromium_lab", "node_exporter", "node_exporter_lab"})


def _names_used(function) -> frozenset[str]:
    code = getattr(function, "__code__", None)
    return frozenset(code.co_names) if code is not None else frozenset()


def starts_a_real_server(item: pytest.Item) -> bool:
    """Whether `item` needs the sshd lab, PostgreSQL, Chromium or node_exporter."""
    fixtures = frozenset(getattr(item, "fixturenames", ()))
    if fixtures & LAB_FIXTURES:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("db_location") == "postgresql":
        return True  # tests/store: the backend parameter that opens the session's PostgreSQL
    if _names_used(getattr(item, "function", None)) & LAB_NAMES:
        return True
    fixture_info = getattr(item, "_fixtureinfo", None)
    definitions = fixture_info.name2fixturedefs if fixture_info is not None else {}
    return any(_names_used(d.func) & LAB_NAMES for name in fixtures for d in definitions.get(name, ()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if starts_a_real_server(item):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
