"""Property tests: arbitrary text never makes the parse layer raise anything but DriftwatchError."""
from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from driftwatch.errors import DriftwatchError
from driftwatch.parse.environment import parse_environment_file, parse_environment_values
from driftwatch.parse.execstart import expand_argv, resolve_exec_start, split_command_line
from driftwatch.parse.specifiers import unit_specifiers
from driftwatch.parse.unitfile import parse_unit_text
from driftwatch.unitwords import LexInvalid, _extract_word, extract_word

UNITS = sorted(p.read_text(encoding="utf-8") for p in (Path(__file__).parent / "units").glob("*.service"))
SPEC = unit_specifiers("sglang@gpu0.service")
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text biased towards the characters that matter to systemd's parsers
_special = st.sampled_from(list("\"'\\;%$@-:+!{}[]=#\n\r\t \0xuU01") + ["\\x", "\\u00", "${", "%n", " ; ", "\\\n"])
_text = st.lists(st.one_of(_special, st.text(max_size=4)), max_size=40).map("".join)


def _mutate(data: st.DataObject, text: str) -> str:
    ops = data.draw(st.lists(st.tuples(st.integers(0, max(len(text), 1)), _text, st.integers(0, 5)), max_size=5))
    for pos, ins, cut in ops:
        pos = min(pos, len(text))
        text = text[:pos] + ins + text[pos + cut:]
    return text


def _run_all(text: str) -> None:
    try:
        unit = parse_unit_text(text)
    except DriftwatchError:
        return
    unit.sections()
    try:
        r = resolve_exec_start(unit, {"/etc/sglang/qwen.env": text})
        _ = r.expanded_argv  # a property: reading it is the test
    except DriftwatchError:
        pass


@FAST
@given(_text)
def test_random_unit_text(text):
    _run_all("[Service]\n" + text)
    _run_all(text)


@FAST
@given(st.data())
def test_mutated_real_units(data):
    _run_all(_mutate(data, data.draw(st.sampled_from(UNITS))))


@FAST
@given(_text)
def test_split_command_line(value):
    try:
        cmds = split_command_line(value, SPEC)
    except DriftwatchError:
        return
    for c in cmds:
        assert c.argv and all(isinstance(a, str) for a in c.argv)
        c.expand({"A": value})


@FAST
@given(st.lists(_text, max_size=4), st.dictionaries(st.text(max_size=3), _text, max_size=4))
def test_expand_argv_and_environment(argv, env):
    out = expand_argv(argv, env)
    assert all(isinstance(a, str) for a in out)
    parse_environment_values(argv, SPEC)
    parse_environment_file("\n".join(argv))


def _lexed(lex, text: str, i: int, flags: tuple[bool, bool, bool]):
    try:
        return lex(text, i, *flags)
    except LexInvalid:
        return "invalid"


@FAST
@given(text=_text, start=st.integers(0, 60),
       flags=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_a_plain_word_read_in_one_match_is_what_the_lexer_reads(text, start, flags):
    """extract_word reads a word without quotes or backslashes in one regular expression (the 16 000 words
    of a hostile unit were lexed character class by character class); every word, plain or not, under
    every combination of its flags, comes out as the full lexer's."""
    start = min(start, len(text))
    fast = _lexed(lambda t, i, c, e, r: extract_word(t, i, cunescape=c, relax_escape=e, relax=r), text, start, flags)
    assert fast == _lexed(_extract_word, text, start, flags)
