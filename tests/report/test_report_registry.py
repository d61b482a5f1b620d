"""The format registry: names feed the CLI, unknown names are one clear error, every format is a Format."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.errors import DriftwatchError, InputError
from driftwatch.report import FORMATS, Format, UnsupportedDocument, format_names, get_format

DRIFTWATCH = Path(sys.executable).with_name("driftwatch")


def test_registry_names_and_kinds():
    assert list(FORMATS) == ["text", "json", "markdown", "html", "prometheus"]
    assert format_names("comparison") == ["text", "json", "markdown", "html"]
    assert format_names("fleet") == ["text", "json", "markdown", "html", "prometheus"]
    assert format_names("history") == ["text", "json", "markdown"]
    assert format_names() == list(FORMATS)


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_format_describes_itself(name):
    fmt = get_format(name)
    assert isinstance(fmt, Format) and fmt.name == name
    assert fmt.media_type.count("/") == 1 and fmt.suffix.startswith(".")
    assert get_format(name, "fleet") is fmt


def test_unknown_format_is_one_clear_error():
    with pytest.raises(InputError) as err:
        get_format("xml")
    message = str(err.value)
    assert "\n" not in message
    assert message == "unknown report format 'xml' (choose from text, json, markdown, html, prometheus)"
    assert isinstance(err.value, DriftwatchError) and err.value.exit_code == 2


def test_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError):
        format_names("bogus")


def test_history_only_where_a_format_has_a_layout(seed_doc):
    with pytest.raises(UnsupportedDocument, match="cannot render a history"):
        get_format("html").render_history({"schema": "driftwatch.history/v1"})
    with pytest.raises(UnsupportedDocument, match="history"):
        get_format("html", "history")
    with pytest.raises(UnsupportedDocument, match="comparison"):
        get_format("prometheus", "comparison")
    assert get_format("text").render({"schema": "driftwatch.history/v1", "units": []}).startswith(
        "driftwatch history")


def test_render_dispatches_on_schema(seed_doc, fleet_doc):
    text = get_format("text")
    assert text.render(seed_doc) == text.render_comparison(seed_doc)
    assert text.render(fleet_doc) == text.render_fleet(fleet_doc)
    with pytest.raises(UnsupportedDocument, match="schema 'nope/v9'"):
        text.render({"schema": "nope/v9"})


def _run(*args):
    return subprocess.run([str(DRIFTWATCH), *args], capture_output=True, text=True, timeout=60,
                          cwd=str(Path(__file__).resolve().parents[2]))


@pytest.mark.parametrize("command, choices", [("compare", "[text|json|markdown|html]"),
                                              ("report", "[text|json|markdown|html|prometheus]"),
                                              ("history", "[text|json|markdown]")])
def test_cli_choices_come_from_the_registry(command, choices):
    help_text = _run(command, "--help").stdout
    assert choices in " ".join(help_text.split())


@pytest.mark.parametrize("command", ["compare", "report"])
def test_cli_unknown_format_is_one_line_exit_2(command):
    run = _run(command, "--baseline", "70toks", "--unit-file", "examples/sglang-qwen-40toks.service",
               "--format", "xml")
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("driftwatch: ") and "'xml'" in lines[0]
    assert "html" in lines[0]


def test_the_registrys_kinds_are_what_each_format_renders():
    """The CLI's --format choices come from the registry without importing the formats: the kinds
    written there must be what each class says it renders."""
    from driftwatch.report import _REGISTRY
    from driftwatch.report.interface import KINDS
    for name, (_, _, kinds) in _REGISTRY.items():
        fmt = get_format(name)
        assert set(kinds) == {k for k in KINDS if fmt.supports(k)}, name


def test_a_command_imports_only_the_format_it_renders():
    code = ("import sys; import driftwatch.cli; from driftwatch.report import get_format; get_format('text'); "
            "print(sorted(m for m in sys.modules if m.startswith('driftwatch.report.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "driftwatch.report.text" in out
    assert "driftwatch.report.html_" not in out and "driftwatch.report.prometheus" not in out
