"""Compare driftwatch's parser with systemd 252's own (`systemd --test --user`, parse only)."""
from __future__ import annotations

import re

import pytest
from dw_parse_oracle import oracle_files, oracle_unit_name, quote_command_line, unit_fixture_paths

from driftwatch.parse.execstart import ExecStartError, resolve_exec_start
from driftwatch.parse.unitfile import parse_unit_text

# Extra cases written inline: (fixture name, text). Bytes that are awkward in files live here.
INLINE = [
    ("inline_crlf.service", "[Service]\r\nExecStart=/bin/echo crlf \\\r\n  joined\r\nEnvironment=A=1\r\n"),
    ("inline_cr_only.service", "[Service]\rExecStart=/bin/echo cr\rFoo\r"),
    ("inline_bom.service", "\ufeff[Service]\nExecStart=/bin/echo bom\n"),
    ("inline_eof_continuation.service", "[Service]\nExecStart=/bin/echo last \\"),
    ("inline_raw_bytes.service",
     "[Service]\nExecStart=/bin/echo \\xff \\377 \\x00 \\000 \\ud800 \\U0010FFFF \\U00110000 \\uFFFE \\x1b[0m\n"),
    ("inline_quoted_semicolon_first.service",
     "[Service]\nType=oneshot\nExecStart=/bin/echo x ; \";\" /bin/echo y\n"),
    ("inline_argv0_specifier.service", "[Service]\nExecStart=@/bin/sleep %N-worker 1\n"),
    ("inline_empty_value_tricks.service", "[Service]\nExecStart= \nExecStart=/bin/echo \"\" '' \"\"''x\n"),
    ("inline_dash_ignored_error.service",
     "[Service]\nType=oneshot\nExecStart=/bin/true\nExecStart=-/bin/echo \"open ; /bin/false\n"),
    ("inline_outside_section.service", "ExecStart=/bin/echo nope\n[Service]\nExecStart=/bin/echo yes\nnoequals\n=x\n"),
    ("inline_special_path.service", "[Service]\nExecStart=/bin/ec\\\"ho x\n"),
    ("inline_dir_path.service", "[Service]\nExecStart=/bin/\n"),
    ("inline_bare_at.service", "[Service]\nExecStart=@\n"),
    ("inline_restart_oneshot.service", "[Service]\nType=oneshot\nRestart=always\nExecStart=/bin/true\n"),
    ("inline_stop_only.service", "[Service]\nExecStop=/bin/true\n"),
    ("inline_stop_only_oneshot.service", "[Service]\nType=oneshot\nExecStop=/bin/true\n"),
    ("inline_bad_type.service", "[Service]\nType=bogus\nExecStart=/bin/echo a\n"),
    ("inline_env_specials.service",
     "[Service]\nEnvironment=\"A=tab\\there\" B=\\u00e9 C=%% D=%z E=ok\nEnvironment=F=\\x01 G=\"a b\"c H=\nExecStart=/bin/true\n"),
    ("inline_stop_only_remain.service", "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStop=/bin/true\n"),
    ("inline_stop_only_simple.service", "[Service]\nType=simple\nExecStop=/bin/true\n"),
]


def _cases():
    for p in unit_fixture_paths():
        yield pytest.param(p.name, p.read_text(encoding="utf-8"), id=p.name)
    for name, text in INLINE:
        yield pytest.param(name, text, id=name)


def _strip_location(msg: str) -> str:
    """'unit.service:2: reason' / 'unit.service: reason' -> 'reason'."""
    return re.sub(r"^\S+?(:\d+)?: ", "", msg, count=1)


@pytest.mark.parametrize("fixture_name,text", list(_cases()))
def test_matches_systemd(systemd_oracle, fixture_name, text):
    unit_name = oracle_unit_name(fixture_name)
    res = systemd_oracle.run(unit_name, oracle_files(text, fixture_name))
    unit = parse_unit_text(text, name=unit_name)
    try:
        ours = resolve_exec_start(unit, specifiers=res.specifiers)
    except ExecStartError as exc:
        assert res.load_state != "loaded", f"systemd loaded the unit, we refused: {exc}\n{res.stderr}"
        reason = _strip_location(str(exc)).split(" (ExecStart= lines ignored", 1)[0]
        assert reason in res.stderr, f"systemd said:\n{res.stderr}"
        return
    if ours.load_errors:  # refused, the command still read: every reason named, systemd's first among them
        assert res.load_state != "loaded", f"systemd loaded the unit, we refused: {ours.load_errors}\n{res.stderr}"
        assert any(_strip_location(str(e)) in res.stderr for e in ours.load_errors), (ours.load_errors, res.stderr)
        return
    assert res.load_state == "loaded", f"systemd refused the unit, we did not:\n{res.stderr}"
    assert [quote_command_line(c.argv) for c in ours.commands] == res.command_lines
    assert [f"{k}={v}" for k, v in ours.environment.items()] == res.environment
    # every non-fatal systemd complaint about ExecStart/Environment shows up in our warnings too
    for line in res.stderr.splitlines():
        m = re.match(r"^\S+:\d+: (.*)$", line)
        if m and ("ignoring" in m.group(1) or "Ignoring" in m.group(1)) and "Unknown key" not in m.group(1):
            assert any(m.group(1) in w for w in ours.warnings + unit.warnings), (m.group(1), ours.warnings)
