"""The suite's layers: a test that starts a real outside program is marked `integration` and `slow`.

The outside programs are the OpenSSH sshd lab (tests/collect/dw_sshlab.py), the PostgreSQL server
(tests/store/pg_server.py), headless Chromium (tests/report/chromium_lab.py), node_exporter
(tests/report/node_exporter_lab.py), the engines' own parsers in their oracle venvs (where one exists:
`oracle_results`, `_oracle_for`), podman (`podman_image`), podman-compose (`PODMAN_COMPOSE`) and kubectl's
stand-in API server (`kube`). A test is marked when it asks for one of their fixtures, directly
or through another fixture, or when its code or one of its fixtures' code names one of those helpers.
`pytest -m "not slow"` is then the quick layer (docs/development.md). Helpers are importable by name:
their folders are on pytest's `pythonpath` (pyproject.toml), no test edits sys.path.

CLI tests run `driftwatch.cli.main` in-process (tests/cli/cli_helpers.run_in_process, the `dw` fixture);
a test that starts the installed console script in a new process — its subject is the process: stdin, a
terminal, signals, the README's commands — is marked `script`, found the same way (the `dw_script`
fixture, or the script's path or `run_script` named by its code or by a helper of its module it calls).
"""
from __future__ import annotations

import pytest

# fixtures that start an outside program (every fixture built on them is found through the closure)
# (silent_dns: a network namespace whose resolver never answers, tests/hardening/test_name_resolution_deadline.py)
LAB_FIXTURES = frozenset({"lab", "pg", "pg_url", "browser", "textfiles", "silent_dns", "oracle_results",
                          "podman_image", "kube"})
# the helpers that start one, as a test's or fixture's code names them
LAB_NAMES = frozenset({"dw_sshlab", "pg_server", "chromium_lab", "node_exporter", "node_exporter_lab", "_oracle_for",
                       "podman_compose_config", "PODMAN_COMPOSE"})
# the fixture and the names (the script's path, the runner) of a test that starts the console script
SCRIPT_FIXTURES = frozenset({"dw_script"})
SCRIPT_NAMES = frozenset({"DRIFTWATCH", "DW", "run_script"})


def _names_used(function) -> frozenset[str]:
    code = getattr(function, "__code__", None)
    return frozenset(code.co_names) if code is not None else frozenset()


def starts_a_real_server(item: pytest.Item) -> bool:
    """Whether `item` needs the sshd lab, PostgreSQL, Chromium or node_exporter."""
    fixtures = frozenset(getattr(item, "fixturenames", ()))
    if fixtures & LAB_FIXTURES:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "postgresql" in callspec.params.values():
        return True  # tests/store: the backend parameter (`db_location`, `kind`) that opens the session's PostgreSQL
    if _names_used(getattr(item, "function", None)) & LAB_NAMES:
        return True
    fixture_info = getattr(item, "_fixtureinfo", None)
    definitions = fixture_info.name2fixturedefs if fixture_info is not None else {}
    return any(_names_used(d.func) & LAB_NAMES for name in fixtures for d in definitions.get(name, ()))


def _names_used_with_helpers(function) -> frozenset[str]:
    """The names `function`'s code uses, and those of the functions of its module it calls by name."""
    names = _names_used(function)
    module_globals = getattr(function, "__globals__", {})
    helpers = (module_globals.get(name) for name in names)
    return names.union(*(_names_used(h) for h in helpers if callable(h) and hasattr(h, "__code__")))


def starts_the_console_script(item: pytest.Item) -> bool:
    """Whether `item` runs the installed `driftwatch` in a new process (not `run_in_process`)."""
    fixtures = frozenset(getattr(item, "fixturenames", ()))
    if fixtures & SCRIPT_FIXTURES:
        return True
    return bool(_names_used_with_helpers(getattr(item, "function", None)) & SCRIPT_NAMES)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if starts_a_real_server(item):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
        if starts_the_console_script(item):
            item.add_marker(pytest.mark.script)


@pytest.fixture(scope="session")
def lab():
    """The run's one OpenSSH lab (tests/collect/dw_sshlab.py), for tests/collect, tests/run and any test
    that asks: every server, namespace and link it made is removed at the end, even after a failure."""
    import dw_sshlab
    if not (dw_sshlab.is_root() and dw_sshlab.have_sshd()):
        pytest.skip("needs root and /usr/sbin/sshd (apt-get install openssh-server)")
    lab = dw_sshlab.Lab()
    try:
        yield lab
    finally:
        lab.close()
