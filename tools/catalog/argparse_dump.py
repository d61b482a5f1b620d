"""Engine-neutral dump of an ``argparse.ArgumentParser`` into catalog records.

Runs *inside* an oracle venv (whatever interpreter the engine's venv has), so
this module uses only the standard library. Nothing here knows an engine: the
engine module (``tools/catalog/<engine>.py``) builds the parser, passes its
own converter table, and adds what only it knows (dataclass fields, aliases,
deprecation tables).

One record per argparse action (``-h/--help`` left out), in the keys of
``driftwatch.catalog/v1`` (see docs/engines.md, "How fields are derived"):
``option_strings primary dest action type nargs const default default_repr
choices required deprecated help`` plus, where they apply, ``action_class``
and ``type_name``, and, where the parser has them, ``hidden_option_strings``
(accepted by the parser but not declared by the action, e.g. vLLM's
``--no-x`` spellings) and ``position`` (positional arguments, which go in a
separate list). Keys that would always be empty are left out so that catalogs
of parsers without such things stay byte-identical.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import json
import re
import sys
from pathlib import Path

SCHEMA = "driftwatch.catalog/v1"

# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------


def jsonable(value):
    """(ok, json_value). Tuples become lists; sets and other objects fail."""
    if isinstance(value, enum.Enum):
        return False, None
    if value is None or isinstance(value, (bool, int, str)):
        return True, value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return False, None
        return True, value
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            ok, j = jsonable(v)
            if not ok:
                return False, None
            out.append(j)
        return True, out
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            ok, j = jsonable(v)
            if not ok or not isinstance(k, str):
                return False, None
            out[k] = j
        return True, out
    return False, None


def _choice_value(c):
    if isinstance(c, enum.Enum):
        c = c.value
    ok, j = jsonable(c)
    return j if ok else str(c)


def choices_list(choices):
    """argparse ``choices`` as a JSON list; set-valued choices sorted (their
    iteration order depends on the hash seed)."""
    if choices is None:
        return None
    if isinstance(choices, (set, frozenset)):
        vals = [_choice_value(c) for c in choices]
        return sorted(vals, key=lambda v: (str(type(v)), str(v)))
    return [_choice_value(c) for c in choices]


# ---------------------------------------------------------------------------
# types and actions
# ---------------------------------------------------------------------------

BOOL_CONVERTER_NAMES = {"str2bool", "str_to_bool", "strtobool", "parse_bool",
                        "bool_arg", "str2bool_or_none"}


def _behaves_like_bool(t) -> bool:
    try:
        return t("true") is True and t("false") is False
    except Exception:
        return False


def type_info(t, converters=None):
    """(type, type_name or None) for an argparse ``type=``.

    ``converters`` maps a converter's function name (last part of its
    qualname) to ``(kind, description)``; the engine supplies it.
    """
    converters = converters or {}
    if t is None:
        return None, None
    if t is int:
        return "int", None
    if t is float:
        return "float", None
    if t is str:
        return "str", None
    if t is bool:
        return "bool", "bool"
    if t is json.loads:
        return "json", None
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) \
        or type(t).__qualname__
    short = name.rsplit(".", 1)[-1]
    if short in converters:
        kind, desc = converters[short]
        return kind, f"{name} ({desc})"
    if short in BOOL_CONVERTER_NAMES or _behaves_like_bool(t):
        return "bool", None
    # Probe simple list converters ("1,2,3" -> [1, 2, 3]).
    try:
        v = t("1,2,3")
        if isinstance(v, list) and v == [1, 2, 3]:
            return "str", f"{name} (comma-separated list of int)"
        if isinstance(v, list) and v == ["1", "2", "3"]:
            return "str", f"{name} (comma-separated list of str)"
    except Exception:
        pass
    return "str", name


STD_ACTIONS = {
    "_StoreAction": "store", "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false", "_StoreConstAction": "store_const",
    "_AppendAction": "append", "_AppendConstAction": "append_const",
    "_CountAction": "count", "_ExtendAction": "extend",
    "_VersionAction": "version", "_HelpAction": "help",
}


def action_info(act):
    """(action, action_class or None): argparse's name for a standard action;
    for a custom class the closest standard action plus the class name."""
    cls = type(act)
    if cls.__module__ == "argparse" and cls.__name__ in STD_ACTIONS:
        return STD_ACTIONS[cls.__name__], None
    for base in cls.__mro__[1:]:
        if base.__module__ == "argparse" and base.__name__ in STD_ACTIONS:
            return STD_ACTIONS[base.__name__], cls.__name__
    if isinstance(act, getattr(argparse, "BooleanOptionalAction", ())):
        return "store_true", cls.__name__
    if act.nargs == 0:
        return ("store_true" if act.const is True else "store_const"), cls.__name__
    return "store", cls.__name__


# ---------------------------------------------------------------------------
# help and deprecation
# ---------------------------------------------------------------------------

_ABBREV = re.compile(r"(?:\be\.g|\bi\.e|\betc|\bvs|\bcf|\bapprox|\bno)\.$", re.I)


def first_sentence(text, cap=200):
    """First sentence of a help text (whitespace collapsed; "e.g." is no
    end), capped at ``cap`` characters; None for no help / SUPPRESS."""
    if not text:
        return None
    t = " ".join(str(text).split())
    if t == "==SUPPRESS==":
        return None
    out = t
    for m in re.finditer(r"[.!?](?=\s+(?:[A-Z(\[`'\"]|--))", t):
        head = t[: m.end()]
        if _ABBREV.search(head):
            continue
        out = head
        break
    if len(out) > cap:
        out = out[: cap - 3].rstrip() + "..."
    return out


# Help text that declares the flag itself deprecated: it opens with the word
# ("Deprecated.", "(Deprecated) ...", "(Deprecated: use ...)") or says "this
# flag/argument/option is deprecated". Mentions of *other* deprecated things
# ("Replaces the deprecated --grpc-mode", "the fallback ... is deprecated") do
# not count.
DEPRECATED_HELP = re.compile(
    r"^\W*deprecated\b|\b(?:this|the)\s+(?:flag|argument|option|parameter)\s+"
    r"(?:is|has been)\s+(?:now\s+)?deprecated\b",
    re.I,
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REPLACEMENT = re.compile(
    r"\b(?:please\s+)?(use|set|switch to|replaced by|in favou?r of)\s+(.+?)"
    r"(?:\s+instead\b.*|[.;)](?:\s.*)?)?$",
    re.I,
)


def clean_msg(msg, cap=200):
    m = _ANSI.sub("", " ".join(str(msg).split()))
    m = re.sub(r"^(?:note|warning)\s*:\s*", "", m, flags=re.I)
    if len(m) > cap:
        m = m[: cap - 3].rstrip() + "..."
    return m


def replacement(msg):
    """'use X' / 'set X ...' clause of a deprecation message, else None."""
    m = _REPLACEMENT.search(clean_msg(msg, cap=10_000))
    if not m:
        return None
    verb = m.group(1).lower()
    if verb in ("replaced by", "in favor of", "in favour of", "switch to"):
        verb = "use"
    return clean_msg(f"{verb} {m.group(2).strip()}")


def source_messages(paths):
    """String literals (f-strings flattened, {} for fields) in the given
    source files that mention "deprecat"."""
    out = []
    for p in paths:
        try:
            tree = ast.parse(Path(p).read_text(encoding="utf-8"))
        except Exception:
            continue
        for node in ast.walk(tree):
            s = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                s = node.value
            elif isinstance(node, ast.JoinedStr):
                s = "".join(
                    v.value if isinstance(v, ast.Constant) else "{}"
                    for v in node.values
                )
            if s and "deprecat" in s.lower():
                out.append(s)
    return sorted(set(out))


def argparse_deprecated(act, parser=None) -> bool:
    """argparse's own flag: ``add_argument(deprecated=True)`` (Python 3.13+),
    or a parser that keeps deprecated actions/dests in ``_deprecated`` (vLLM
    does this on older Pythons)."""
    if getattr(act, "deprecated", False) is True:
        return True
    kept = getattr(parser, "_deprecated", None) if parser is not None else None
    if not kept:
        return False
    try:
        return act in kept or act.dest in kept \
            or any(o in kept for o in act.option_strings)
    except TypeError:
        return False


def deprecation(act, help_text, source_msgs, parser=None):
    """Short string saying the flag is deprecated and what replaces it.

    Sources, in order: a Deprecated* action class (its new_flag or
    error_message), help text that declares the flag deprecated, warning
    strings in the engine's argument code of the form "--flag is deprecated
    ...", and argparse's own ``deprecated=True``.
    """
    cls = type(act)
    is_dep_class = "deprecat" in cls.__name__.lower()
    help_hit = bool(help_text) and bool(DEPRECATED_HELP.search(help_text))
    flags = [o for o in act.option_strings if o.startswith("--")]
    src_hits = []
    for s in source_msgs:
        for f in flags:
            pat = (re.escape(f) + r"(?![\w-])['\"`]?\s+(?:is|has been|was|are)"
                   r"\s+(?:now\s+)?deprecated")
            if re.search(pat, s, re.I):
                src_hits.append(s)
                break
    ap_hit = argparse_deprecated(act, parser)
    if not (is_dep_class or help_hit or src_hits or ap_hit):
        return None
    new_flag = getattr(act, "new_flag", None)
    if new_flag:
        return clean_msg(f"use {new_flag}")
    msgs = []
    err = getattr(act, "error_message", None)
    if err:
        msgs.append(err)
    if help_hit:
        msgs.append(help_text)
    msgs += sorted(src_hits, key=len)
    for m in msgs:
        r = replacement(m)
        if r:
            return r
    return clean_msg(msgs[0]) if msgs else "deprecated"


# ---------------------------------------------------------------------------
# parsers
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def argv_as(argv):
    """Run with ``sys.argv`` replaced (some engines only compute help text
    when ``--help`` is in ``sys.argv``, e.g. vLLM's NEEDS_HELP)."""
    saved = sys.argv
    sys.argv = list(argv)
    try:
        yield
    finally:
        sys.argv = saved


# sys.argv while a parser is built: with "--help", engines that only compute
# help text for --help (vLLM's NEEDS_HELP) give the full text.
HELP_ARGV = ("prog", "--help")


def build_parser(make, argv=HELP_ARGV):
    """The parser to dump. ``make`` is an ArgumentParser, a callable that
    fills the parser it is given (``ServerArgs.add_cli_args``; what it returns
    is used instead if that is a parser), or a callable with no arguments that
    returns one. Built with ``sys.argv = argv``."""
    import inspect

    if isinstance(make, argparse.ArgumentParser):
        return make
    try:
        takes_parser = any(
            p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                p.POSITIONAL_OR_KEYWORD)
            for p in inspect.signature(make).parameters.values())
    except (TypeError, ValueError):
        takes_parser = True
    with argv_as(argv):
        if takes_parser:
            parser = argparse.ArgumentParser()
            res = make(parser)
            if isinstance(res, argparse.ArgumentParser):
                parser = res
        else:
            parser = make()
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(f"{make!r} built no ArgumentParser")
    return parser


def hidden_option_strings(parser, act):
    """Option strings the parser routes to ``act`` that the action does not
    declare (registered straight into ``_option_string_actions``)."""
    declared = set(act.option_strings)
    return sorted(s for s, a in parser._option_string_actions.items()
                  if a is act and s not in declared)


def action_record(act, parser=None, converters=None, source_msgs=()):
    """The engine-neutral catalog record of one action."""
    action, action_class = action_info(act)
    typ, type_name = type_info(act.type, converters)
    ok, default = jsonable(act.default)
    help_text = act.help if isinstance(act.help, str) else None
    raw_const = act.const
    if raw_const is None and getattr(act, "const_value", None) is not None:
        # Deprecated*ConstAction (SGLang) keeps the value it stores in const_value.
        raw_const = act.const_value
    okc, const = jsonable(raw_const)
    rec = {
        "option_strings": list(act.option_strings),
        "primary": act.option_strings[0] if act.option_strings else act.dest,
        "dest": act.dest,
        "action": action,
        "type": typ,
        "nargs": act.nargs,
        "const": const if okc else repr(raw_const),
        "default": default if ok else None,
        "default_repr": None if ok else repr(act.default),
        "choices": choices_list(act.choices),
        "required": bool(act.required),
        "deprecated": deprecation(act, help_text, source_msgs, parser),
        "help": first_sentence(help_text),
    }
    if action_class:
        rec["action_class"] = action_class
    if type_name:
        rec["type_name"] = type_name
    if parser is not None and act.option_strings:
        hidden = hidden_option_strings(parser, act)
        if hidden:
            rec["hidden_option_strings"] = hidden
    return rec


def dump_parser(parser, converters=None, source_msgs=()):
    """(options, positionals, parser_settings) of a parser.

    ``options`` sorted by ``primary``; ``positionals`` in argparse order with
    ``position``; ``parser_settings`` = allow_abbrev, prefix_chars, prog.
    """
    options, positionals = [], []
    for act in parser._actions:
        if isinstance(act, argparse._HelpAction):
            continue
        if isinstance(act, argparse._SubParsersAction):
            continue  # the engine picks the subcommand's parser itself
        rec = action_record(act, parser, converters, source_msgs)
        if act.option_strings:
            options.append((act, rec))
        else:
            rec["position"] = len(positionals)
            positionals.append((act, rec))
    options.sort(key=lambda ar: ar[1]["primary"])
    settings = {
        "allow_abbrev": bool(getattr(parser, "allow_abbrev", True)),
        "prefix_chars": parser.prefix_chars,
        "prog": parser.prog,
    }
    return options, positionals, settings


# ---------------------------------------------------------------------------
# dataclass-backed parsers (ServerArgs, EngineArgs ...)
# ---------------------------------------------------------------------------


def record_fields(cls):
    """Fields of a dataclass or msgspec Struct."""
    try:
        import msgspec  # noqa: F401
        import msgspec.structs

        if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
            return list(msgspec.structs.fields(cls))
    except ImportError:
        pass
    return list(dataclasses.fields(cls))


def field_default(f):
    """(has_default, value) of a dataclass / msgspec field."""
    missing = [dataclasses.MISSING]
    try:
        import msgspec

        missing.append(msgspec.NODEFAULT)
    except ImportError:
        pass
    if f.default not in missing:
        return True, f.default
    if f.default_factory not in missing:
        return True, f.default_factory()
    return False, None


def attach_fields(records, fields, aliases):
    """Add ``field`` (and ``not_a_field``, ``field_default``/``_repr``) to
    (action, record) pairs; return the aliases actually used.

    ``fields``: {name: dataclass field}; ``aliases``: {dest: field} copies the
    engine makes after parsing. A dest that is neither keeps field = dest and
    gets ``not_a_field: true``. ``field_default`` appears only where the
    dataclass default differs from argparse's.
    """
    used = {}
    for act, rec in records:
        field = act.dest
        if act.dest in aliases and aliases[act.dest] in fields:
            field = aliases[act.dest]
            used[act.dest] = field
        elif act.dest not in fields:
            rec["not_a_field"] = True
        rec["field"] = field
        f = fields.get(field)
        if f is None:
            continue
        has, fd = field_default(f)
        if not has:
            continue
        ok, default = jsonable(act.default)
        okf, fdj = jsonable(fd)
        if okf and (not ok or fdj != default):
            rec["field_default"] = fdj
        elif not okf and (ok or repr(fd) != repr(act.default)):
            rec["field_default_repr"] = repr(fd)
    return used


# ---------------------------------------------------------------------------
# the catalog
# ---------------------------------------------------------------------------


def catalog(engine, version, generated_by, options, python=None,
            field_aliases=None, positionals=(), settings=None, stubs=(),
            extra=None):
    """A ``driftwatch.catalog/v1`` document (without ``generated_at``).

    Optional keys appear only when they say something: ``positionals`` (and
    ``counts.positionals``), ``counts.hidden_option_strings``,
    ``allow_abbrev``/``prefix_chars`` when not argparse's defaults, ``stubs``.
    """
    import platform

    counts = {
        "actions": len(options),
        "option_strings": sum(len(o["option_strings"]) for o in options),
    }
    hidden = sum(len(o.get("hidden_option_strings", ())) for o in options)
    if hidden:
        counts["hidden_option_strings"] = hidden
    doc = {
        "schema": SCHEMA,
        "engine": engine,
        "version": version,
        "generated_by": generated_by,
        "python": python or platform.python_version(),
        "counts": counts,
        "field_aliases": dict(sorted((field_aliases or {}).items())),
        "options": list(options),
    }
    if positionals:
        doc["positionals"] = list(positionals)
        counts["positionals"] = len(positionals)
    settings = settings or {}
    if settings.get("allow_abbrev", True) is not True:
        doc["allow_abbrev"] = False
    if settings.get("prefix_chars", "-") != "-":
        doc["prefix_chars"] = settings["prefix_chars"]
    if stubs:
        doc["stubs"] = sorted(stubs)
    for k, v in (extra or {}).items():
        if v:
            doc[k] = v
    return doc


def render(doc) -> str:
    """The catalog file's exact text (deterministic: sorted keys, indent 1)."""
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
