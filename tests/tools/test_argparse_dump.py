"""The engine-neutral argparse dump (tools/catalog/argparse_dump.py) on a
small fake parser: no engine installed. Checks every field of a catalog
record, the optional keys that only appear when a parser has such things
(positionals, hidden option strings, allow_abbrev=False), the dataclass field
mapping and the exact output text."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from tools.catalog import ENGINES, argparse_dump as ad, load_engine

REPO = Path(__file__).resolve().parents[2]


def human_int(v):
    return int(v.rstrip("k")) * (1000 if v.endswith("k") else 1)


def str2bool(v):
    return v.lower() in ("true", "1", "yes")


def int_list(v):
    return [int(x) for x in v.split(",")]


class Color:
    RED = "red"


class DeprecatedStoreConst(argparse.Action):
    """Like SGLang's: stores const_value, points to the new flag."""

    def __init__(self, option_strings, dest, const_value=None, new_flag=None, **kw):
        super().__init__(option_strings, dest, nargs=0, **kw)
        self.const_value = const_value
        self.new_flag = new_flag

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const_value)


class MyBool(argparse.BooleanOptionalAction):
    pass


@dataclasses.dataclass
class Args:
    model: str = ""
    tp_size: int = 1
    max_len: int = 0
    enable_x: bool = False
    mode: str = "fast"
    ratio: float = 0.5
    flags_list: list = dataclasses.field(default_factory=lambda: [1, 2])
    old: str | None = None
    kind: str = "a"
    verbose: int = 0


def fake_parser(allow_abbrev=True):
    p = argparse.ArgumentParser(prog="fake", allow_abbrev=allow_abbrev)
    p.add_argument("model_tag", nargs="?", help="The model. Positional.")
    p.add_argument("extra", nargs="*", type=int)
    p.add_argument("--tp-size", "--tp", "--tensor-parallel-size", dest="tp", type=int,
                   default=1, help="Tensor parallel size, e.g. 2. More words.")
    p.add_argument("--max-len", type=human_int, default="4k", help="Max length.")
    p.add_argument("--enable-x", action=argparse.BooleanOptionalAction, default=False,
                   help="Enable x.")
    p.add_argument("--use-y", action=MyBool, help=argparse.SUPPRESS)
    p.add_argument("--mode", choices={"slow", "fast", "auto"}, default="fast")
    p.add_argument("--ratio", type=float, default=0.7)
    p.add_argument("--flags-list", type=int_list, default=(1, 2))
    p.add_argument("--json-arg", type=json.loads)
    p.add_argument("--flag-bool", type=str2bool, default=True)
    p.add_argument("--old", action=DeprecatedStoreConst, const_value="v2",
                   new_flag="--kind v2", help="Old spelling.")
    p.add_argument("--kind", type=str, default="a",
                   help="(Deprecated: use --mode instead) Kind.")
    p.add_argument("--color", default=Color, help="An object default.")
    p.add_argument("--config", required=True)
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("--tag", action="append")
    hidden = p.add_argument("--enable-z", action="store_true")
    p._option_string_actions["--no-disable-z"] = hidden  # vLLM-style hidden alias
    return p


@pytest.fixture(scope="module")
def dumped():
    options, positionals, settings = ad.dump_parser(
        fake_parser(), {"human_int": ("str", "int with k suffix")},
        source_msgs=["--color is deprecated; use --mode."])
    return {rec["primary"]: rec for _a, rec in options}, positionals, settings, options


def test_record_keys_and_order(dumped):
    by, _pos, _s, options = dumped
    primaries = [rec["primary"] for _a, rec in options]
    assert primaries == sorted(primaries)
    assert "-h" not in by and "--help" not in by
    base = {"option_strings", "primary", "dest", "action", "type", "nargs", "const",
            "default", "default_repr", "choices", "required", "deprecated", "help"}
    for rec in by.values():
        assert base <= set(rec)
        assert set(rec) - base <= {"action_class", "type_name", "hidden_option_strings"}


def test_aliases_dest_type_default(dumped):
    by = dumped[0]
    tp = by["--tp-size"]
    assert tp["option_strings"] == ["--tp-size", "--tp", "--tensor-parallel-size"]
    assert tp["dest"] == "tp" and tp["type"] == "int" and tp["default"] == 1
    assert tp["help"] == "Tensor parallel size, e.g. 2."
    assert tp["nargs"] is None and tp["const"] is None and tp["choices"] is None
    assert tp["action"] == "store" and "action_class" not in tp and "type_name" not in tp
    assert by["--ratio"]["type"] == "float"
    assert by["--json-arg"]["type"] == "json"
    assert by["--config"]["required"] is True


def test_custom_converters(dumped):
    by = dumped[0]
    ml = by["--max-len"]
    assert ml["type"] == "str" and ml["default"] == "4k"
    assert ml["type_name"] == "human_int (int with k suffix)"
    fl = by["--flags-list"]
    assert fl["type_name"] == "int_list (comma-separated list of int)"
    assert fl["default"] == [1, 2]                    # tuple -> list
    assert by["--flag-bool"]["type"] == "bool" and "type_name" not in by["--flag-bool"]


def test_boolean_optional_and_custom_actions(dumped):
    by = dumped[0]
    ex = by["--enable-x"]
    assert ex["option_strings"] == ["--enable-x", "--no-enable-x"]
    assert ex["action"] == "store_true" and ex["action_class"] == "BooleanOptionalAction"
    assert ex["nargs"] == 0 and ex["default"] is False
    uy = by["--use-y"]
    assert uy["action"] == "store_true" and uy["action_class"] == "MyBool"
    assert uy["help"] is None                         # SUPPRESS
    assert by["-v"]["action"] == "count" and by["-v"]["option_strings"] == ["-v", "--verbose"]
    assert by["--tag"]["action"] == "append"


def test_choices_sorted_for_sets(dumped):
    assert dumped[0]["--mode"]["choices"] == ["auto", "fast", "slow"]


def test_deprecations(dumped):
    by = dumped[0]
    old = by["--old"]
    assert old["deprecated"] == "use --kind v2"       # Deprecated* class, new_flag
    assert old["const"] == "v2"                        # const_value
    assert old["action"] == "store_const" and old["action_class"] == "DeprecatedStoreConst"
    assert by["--kind"]["deprecated"] == "use --mode"  # help declares it
    assert by["--color"]["deprecated"] == "use --mode"  # engine source message
    assert by["--ratio"]["deprecated"] is None


def test_unjsonable_default(dumped):
    color = dumped[0]["--color"]
    assert color["default"] is None and "Color" in color["default_repr"]


def test_hidden_option_strings(dumped):
    by = dumped[0]
    assert by["--enable-z"]["hidden_option_strings"] == ["--no-disable-z"]
    assert "hidden_option_strings" not in by["--tp-size"]


def test_positionals(dumped):
    _by, pos, settings, _o = dumped
    recs = [rec for _a, rec in pos]
    assert [r["position"] for r in recs] == [0, 1]
    mt, extra = recs
    assert mt["primary"] == "model_tag" and mt["option_strings"] == []
    assert mt["nargs"] == "?" and mt["help"] == "The model."
    assert extra["nargs"] == "*" and extra["type"] == "int"
    assert settings == {"allow_abbrev": True, "prefix_chars": "-", "prog": "fake"}


def test_argparse_deprecated_kwarg():
    p = argparse.ArgumentParser()
    if sys.version_info >= (3, 13):
        a = p.add_argument("--gone", deprecated=True)
    else:
        a = p.add_argument("--gone")
        p._deprecated = {a.dest}                      # vLLM's way before 3.13
    assert ad.deprecation(a, None, [], p) == "deprecated"
    assert ad.deprecation(a, None, []) == ("deprecated" if sys.version_info >= (3, 13) else None)


def test_build_parser_forms_and_argv():
    seen = []

    def fill(parser):
        seen.append(list(sys.argv))
        parser.add_argument("--a")

    def make():
        seen.append(list(sys.argv))
        p = argparse.ArgumentParser(prog="x")
        p.add_argument("--b")
        return p

    argv_before = list(sys.argv)
    p1 = ad.build_parser(fill, ("eng", "--help"))
    p2 = ad.build_parser(make, ("eng",))
    assert "--a" in p1._option_string_actions and "--b" in p2._option_string_actions
    assert seen == [["eng", "--help"], ["eng"]]
    assert sys.argv == argv_before
    p3 = argparse.ArgumentParser()
    assert ad.build_parser(p3) is p3
    with pytest.raises(TypeError):
        ad.build_parser(lambda: None)


def test_attach_fields_and_catalog_document():
    parser = fake_parser(allow_abbrev=False)
    options, positionals, settings = ad.dump_parser(parser)
    fields = {f.name: f for f in ad.record_fields(Args)}
    used = ad.attach_fields(options + positionals, fields,
                            {"tp": "tp_size", "nope": "missing"})
    by = {rec["primary"]: rec for _a, rec in options}
    assert used == {"tp": "tp_size"}
    assert by["--tp-size"]["field"] == "tp_size" and "not_a_field" not in by["--tp-size"]
    assert by["--config"]["not_a_field"] is True and by["--config"]["field"] == "config"
    assert by["--ratio"]["field_default"] == 0.5       # dataclass 0.5 vs argparse 0.7
    assert "field_default" not in by["--mode"]          # same default
    assert "field_default" not in by["--flags-list"]    # [1, 2] == (1, 2)
    assert by["--max-len"]["field_default"] == 0
    doc = ad.catalog("fake", "1.0", "tests", [r for _a, r in options], python="3.11.7",
                     field_aliases=used, positionals=[r for _a, r in positionals],
                     settings=settings, stubs=["zz", "aa"], extra={"empty": {}, "x": [1]})
    assert doc["schema"] == "driftwatch.catalog/v1"
    assert doc["counts"] == {"actions": len(options),
                             "option_strings": sum(len(r["option_strings"]) for _a, r in options),
                             "hidden_option_strings": 1, "positionals": 2}
    assert doc["allow_abbrev"] is False and "prefix_chars" not in doc
    assert doc["stubs"] == ["aa", "zz"] and doc["x"] == [1] and "empty" not in doc
    text = ad.render(doc)
    assert text.endswith("}\n") and text.startswith('{\n "allow_abbrev": false,\n')
    assert ad.render(json.loads(text)) == text


def test_catalog_without_extras_has_only_v1_keys():
    p = argparse.ArgumentParser()
    p.add_argument("--a", type=int, default=3)
    options, positionals, settings = ad.dump_parser(p)
    doc = ad.catalog("e", "1", "t", [r for _a, r in options], python="3.11.7",
                     positionals=[r for _a, r in positionals], settings=settings)
    assert set(doc) == {"schema", "engine", "version", "generated_by", "python",
                        "counts", "field_aliases", "options"}
    assert doc["counts"] == {"actions": 1, "option_strings": 1}


def test_helpers():
    assert ad.first_sentence("  The tensor parallelism size.  More text. ") == \
        "The tensor parallelism size."
    assert ad.first_sentence("Use e.g. Llama models. Second.") == "Use e.g. Llama models."
    assert ad.first_sentence(None) is None and ad.first_sentence("==SUPPRESS==") is None
    assert len(ad.first_sentence("x" * 500)) == 200
    assert ad.jsonable((1, 2)) == (True, [1, 2])
    assert ad.jsonable({1, 2})[0] is False and ad.jsonable(float("inf"))[0] is False
    assert ad.jsonable({"a": (1,)}) == (True, {"a": [1]})
    assert ad.choices_list(None) is None and ad.choices_list([2, 1]) == [2, 1]
    assert ad.type_info(None) == (None, None) and ad.type_info(bool) == ("bool", "bool")
    assert ad.replacement("Please use --foo instead.") == "use --foo"
    assert ad.replacement("replaced by --bar.") == "use --bar"
    assert ad.clean_msg("WARNING: \x1b[31mgone\x1b[0m") == "gone"


def test_source_messages(tmp_path):
    src = tmp_path / "args.py"
    src.write_text('x = f"--{name} is deprecated"\ny = "fine"\nz = "Deprecated: use --b"\n')
    # the f-string flattened, and (as ast.walk sees it) its literal part alone
    assert ad.source_messages([src, tmp_path / "missing.py"]) == \
        [" is deprecated", "--{} is deprecated", "Deprecated: use --b"]


# --------------------------------------------------------------- registry and engine modules

ENGINE_API = ("NAME", "DISTRIBUTION", "GENERATED_BY", "DEFAULT_OUT", "STRIP_ENV_PREFIXES",
              "install_plan", "stubs_for", "dump")


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_modules_have_the_interface(name):
    mod = load_engine(name)
    for attr in ENGINE_API:
        assert hasattr(mod, attr), f"{name} lacks {attr}"
    assert mod.NAME == name


def test_unknown_engine():
    with pytest.raises(SystemExit, match="unknown engine"):
        load_engine("nope")
