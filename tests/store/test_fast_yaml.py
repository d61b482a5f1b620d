"""libyaml for speed, PyYAML's answers: the C-parser loader and the C dumper give exactly what the pure ones
give on everything driftwatch ships, and hand anything they might read or write differently to the pure ones."""
from __future__ import annotations

import glob
from pathlib import Path

import pytest
import yaml

from driftwatch import fileio
from driftwatch.errors import InputError
from driftwatch.run.reading import snapshot_from_unit_file
from driftwatch.snapshots.snapshot import snapshot_to_dict

ROOT = Path(__file__).resolve().parents[2]
needs_libyaml = pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML without libyaml")

SHIPPED_YAML = sorted(p for pattern in ("baselines/*.yaml", "rules/*.yaml", "examples/**/*.yaml", "tests/**/*.yaml",
                                        "driftwatch/**/*.yaml")
                      for p in glob.glob(str(ROOT / pattern), recursive=True)
                      # Kubernetes and Compose files hold several documents: read by the manifest reader
                      # (parse/kubernetes.py), never by the one-document loader these tests compare
                      if "/tests/fixtures/manifests/" not in p)
UNITS = sorted(glob.glob(str(ROOT / "examples/**/*.service"), recursive=True))


def pure_load(text: str):
    return fileio._load_one(fileio.PureLimitedLoader, text)


def pure_dump(data) -> str:
    return yaml.dump(data, Dumper=fileio._Dumper, sort_keys=False, allow_unicode=True, width=120)


def outcome(load, text: str):
    try:
        return "value", repr(load(text))
    except InputError as exc:
        return "error", str(exc)


@needs_libyaml
@pytest.mark.parametrize("path", SHIPPED_YAML, ids=lambda p: str(Path(p).relative_to(ROOT)))
def test_shipped_files_load_identically_through_libyaml(path):
    text = Path(path).read_text(encoding="utf-8")
    assert repr(fileio._load_one(fileio.CLimitedLoader, text)) == repr(pure_load(text))  # types and key order too


def test_shipped_files_are_many():
    assert len(SHIPPED_YAML) > 30 and any("baselines" in p for p in SHIPPED_YAML)


@needs_libyaml
@pytest.mark.parametrize("text", [
    "a: !\n",                             # libyaml reads '' here, PyYAML null
    "# c\n\ufeffrules: 1\n",               # a BOM past the start (libyaml drops it)
    "a: 1\t# tab\n",                      # libyaml accepts tabs PyYAML refuses
    "a: [b, c\n",                         # libyaml's message differs
    "a: b: c\n",
    "k: \x07\n",
    "[" * 5000 + "]" * 5000,              # libyaml's own nesting limit stops first
    "- " * 70 + "x\n",
    "a: &a [1, 2]\nb: *a\nc: *nope\n",
    "d: &d {user: root}\nh: {<<: *d, port: 22}\n",
])
def test_odd_texts_get_the_pure_loaders_answer(text):
    fast = outcome(lambda t: fileio.load_yaml_text(t, "f.yaml", "x"), text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fileio, "_load_bounded", pure_load)
        assert outcome(lambda t: fileio.load_yaml_text(t, "f.yaml", "x"), text) == fast


@needs_libyaml
def test_limits_hold_inside_the_c_parser_loader():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
    with pytest.raises(yaml.composer.ComposerError, match="expands to more than"):
        fileio._load_one(fileio.CLimitedLoader, bomb)
    with pytest.raises(yaml.composer.ComposerError, match="nested deeper than 64"):
        fileio._load_one(fileio.CLimitedLoader, "- " * 70 + "x\n")
    with pytest.raises(yaml.composer.ComposerError, match="nested deeper than 64"):
        fileio._load_one(fileio.CLimitedLoader, "[" * 5000 + "]" * 5000)
    with pytest.raises(yaml.constructor.ConstructorError):
        fileio._load_one(fileio.CLimitedLoader, "!!python/object/apply:os.system ['true']\n")


def snapshots() -> list[dict]:
    return [snapshot_to_dict(snapshot_from_unit_file(u, host="ct129")) for u in UNITS]


@needs_libyaml
def test_snapshots_dump_byte_for_byte_as_the_pure_dumper():
    docs = snapshots()
    assert len(docs) >= 5
    assert sum(fileio._c_dumpable(d) for d in docs) >= 5  # the C emitter really is used for real snapshots
    for d in docs:
        assert fileio.dump_yaml(d) == pure_dump(d)
        assert yaml.dump(d, Dumper=fileio._CDumper, sort_keys=False, allow_unicode=True, width=120) == pure_dump(d)


@needs_libyaml
def test_shipped_documents_dump_as_the_pure_dumper():
    for path in SHIPPED_YAML:
        data = pure_load(Path(path).read_text(encoding="utf-8"))
        assert fileio.dump_yaml(data) == pure_dump(data), path


@pytest.mark.parametrize("data", [
    {"": 1},                               # libyaml writes an empty key as a simple key
    {"k" * 127: 1},                        # the simple-key length limit is counted differently
    {"model": "Qwen→3"},                   # non-ASCII: folding and escapes differ
    {"unit": "a \nb\n"},                   # trailing space: double-quoted, folded differently
    {"unit": "a\tb"},
    {("a", "b"): 1},
    {"d": {1, 2}},
])
def test_what_the_emitters_might_write_differently_goes_to_the_pure_dumper(data):
    assert not fileio._c_dumpable(data)


def test_a_cycle_is_not_walked_forever():
    a: list = []
    a.append(a)
    assert not fileio._c_dumpable(a)


def test_dumped_text_still_has_no_aliases_and_literal_blocks():
    shared = {"user": "root"}
    text = fileio.dump_yaml({"x": shared, "y": shared, "unit": "[Service]\nExecStart=/bin/true\n"})
    assert "&" not in text and "unit: |\n  [Service]\n" in text


# A text that cannot expand (no anchor, alias or merge key) is read by libyaml's composer too and checked once
# read: the same value, or (over a bound, or anything unusual) the bounded loader's verdict and message.
NO_ALIAS_TEXTS = [
    "a: 1\nb: [x, 'y', \"z\", 1.5, -3, 0x1f, 1_000, 1:30, .inf, ~, true, 2026-12-02, 2026-12-02 03:00:00]\n",
    "- " * 63 + "x\n",                     # 64 nodes deep: the bound itself
    "- " * 64 + "x\n",                     # one deeper: refused
    "a: " + "[" * 64 + "]" * 64 + "\n",
    "n: " + "9" * 100 + "\n",              # a number at the bound, and one past it
    "n: " + "9" * 101 + "\n",
    "n: " + "1_" * 60 + "1\n",             # a long number spelled with '_' (no run of digits)
    "h: " + "ab" * 60 + "\n",              # a long run that is text, not a number
    "s: !!set {a, b, c}\n",
    "o: !!omap [{a: 1}, {b: 2}]\n",
    "p: !!pairs [{a: 1}, {a: 2}]\n",
    "b: !!binary aGVsbG8=\n",
    "k: {[1, 2]: x}\n",                    # an unhashable key
    "x: !!python/name:os.system\n",
    "a: 1\na: 2\n",
    "",
    "# only a comment\n",
    "unit: |\n  [Service]\n  ExecStart=/bin/true\n",
]


@needs_libyaml
@pytest.mark.parametrize("text", NO_ALIAS_TEXTS, ids=range(len(NO_ALIAS_TEXTS)))
def test_texts_without_aliases_get_the_bounded_loaders_answer(text):
    fast = outcome(lambda t: fileio.load_yaml_text(t, "f.yaml", "x"), text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fileio, "_load_bounded", pure_load)
        assert outcome(lambda t: fileio.load_yaml_text(t, "f.yaml", "x"), text) == fast


@needs_libyaml
def test_the_node_bound_holds_without_aliases():
    text = "[" + ", ".join(["x"] * 50) + "]\n"
    assert fileio._load_unbounded_if_safe(text, 51)[0]
    assert not fileio._load_unbounded_if_safe(text, 50)[0]  # 51 nodes: left to the bounded loader, which refuses
    with pytest.raises(yaml.composer.ComposerError, match="expands to more than 50 values"):
        fileio._load_bounded(text, 50)
    words = "[" + ", ".join(["x"] * 49) + ", [a, b]]\n"  # 1 + 49 + (1 + 2) = 53 nodes
    assert fileio._load_unbounded_if_safe(words, 53)[0] and not fileio._load_unbounded_if_safe(words, 52)[0]
    assert fileio._load_unbounded_if_safe("- " * 62 + "[x]\n", 100)[0]  # the word at depth 64
    assert not fileio._load_unbounded_if_safe("- " * 63 + "[x]\n", 100)[0]
    mapping = "{" + ", ".join(f"k{i}: v" for i in range(25)) + "}\n"  # keys count: 1 + 2 x 25
    assert fileio._load_unbounded_if_safe(mapping, 51)[0] and not fileio._load_unbounded_if_safe(mapping, 50)[0]


@needs_libyaml
def test_saved_snapshots_are_read_by_libyamls_composer_and_read_the_same():
    docs = snapshots()
    fast = 0
    for d in docs:
        text = fileio.dump_yaml(d)
        used, data = fileio._load_unbounded_if_safe(text, fileio.MAX_YAML_NODES)
        fast += used
        assert repr(fileio._load_bounded(text)) == repr(pure_load(text))
        if used:
            assert repr(data) == repr(pure_load(text))
    assert fast >= 5  # the fast path really is taken for saved snapshots


@needs_libyaml
@pytest.mark.parametrize("text", ["d: {<<: {a: 1}, b: 2}\n", "p: *nope\n", "a: &a [*a]\n", "&a [1, *a]\n"])
def test_merges_undefined_and_recursive_aliases_stay_on_the_bounded_path(text):
    assert fileio._load_unbounded_if_safe(text, fileio.MAX_YAML_NODES) == (False, None)


def _bomb(width: int, levels: int) -> str:
    text = "a: &a [" + ",".join(['"xxxxxxxx"'] * width) + "]\n"
    for i in range(levels - 1):
        a, b = chr(97 + i), chr(98 + i)
        text += f"{b}: &{b} [" + ",".join([f"*{a}"] * width) + "]\n"
    return text


ALIAS_TEXTS = [
    "a: &a [1, 2]\nb: *a\n", "a: &a 1\nb: &a 2\nc: *a\n", "a: &a x\nb: [*a, *a, *a]\n",
    "b: [&a x, *a, *a]\nc: [*a, y]\n", "? &k [1]\n: *k\n", "a: &a {b: 1}\nc: *a\n", "s: !!set {&a x, *a}\n",
    _bomb(9, 9), _bomb(4, 4), "k: 'a*b'\nl: \"&x\"\n",
    "x: " + "[" * 63 + "&a 1" + "]" * 63 + "\ny: *a\n",      # an alias counts where it stands
    "x: &d " + "[" * 62 + "1" + "]" * 62 + "\ny: [*d]\n",
    "x: &d " + "[" * 63 + "1" + "]" * 63 + "\ny: [*d]\n",    # the definition itself is too deep
]


def _random_aliased(rng) -> str:
    anchors: list[str] = []

    def value(depth: int) -> str:
        r = rng.random()
        if anchors and r < 0.3:
            return "*" + rng.choice(anchors)
        if depth > 3 or r < 0.5:
            text = rng.choice(["1", "x", "'q'", "[]", "{}", "null"])
        elif r < 0.75:
            text = "[" + ", ".join(value(depth + 1) for _ in range(rng.randint(0, 4))) + "]"
        else:
            text = "{" + ", ".join(f"k{i}: {value(depth + 1)}" for i in range(rng.randint(0, 3))) + "}"
        if rng.random() < 0.3:
            anchors.append(f"a{len(anchors)}")
            text = f"&{anchors[-1]} {text}"
        return text
    return "\n".join(f"t{i}: {value(0)}" for i in range(rng.randint(1, 4))) + "\n"


@needs_libyaml
@pytest.mark.parametrize("max_nodes", [fileio.MAX_YAML_NODES, 5, 10, 20, 40, 100])
def test_texts_with_aliases_read_by_libyamls_composer_get_the_bounded_loaders_answer(max_nodes):
    """Anchors and aliases are sized on libyaml's nodes (each node once: a bomb is never expanded): the
    fast path answers only where the bounded loader gives that value, and leaves every refusal to it."""
    import random
    rng = random.Random(max_nodes)
    texts = ALIAS_TEXTS + [_random_aliased(rng) for _ in range(400)]
    fast = 0
    for text in texts:
        used, data = fileio._load_unbounded_if_safe(text, max_nodes)
        try:
            expected = ("value", repr(fileio._load_one(fileio.PureLimitedLoader, text, max_nodes)))
        except (yaml.YAMLError, ValueError) as exc:
            expected = ("error", type(exc).__name__)
        if used:
            fast += 1
            assert expected == ("value", repr(data)), text
    if max_nodes >= 100:
        assert fast > len(texts) // 2  # the fast path really answers
    if max_nodes == fileio.MAX_YAML_NODES:
        assert not fileio._load_unbounded_if_safe(_bomb(9, 9), max_nodes)[0]  # 9^9 words: refused, not built


@needs_libyaml
def test_a_long_list_held_twice_is_written_once_and_read_back_twice():
    """A huge unit's argv is saved as `argv` and (no $VAR expanded) the same `expanded_argv`: the second is an
    alias (ALIAS_MIN_ITEMS), in both dumpers alike; shorter lists and everything else are written in full."""
    long = [f"--x{i}" for i in range(fileio.ALIAS_MIN_ITEMS)]
    short = long[:-1]
    data = {"exec_start": {"argv": long, "expanded_argv": long}, "short": [short, short]}
    assert fileio._c_dumpable(data)
    text = fileio.dump_yaml(data)
    assert text == pure_dump(data)
    assert text.count("&id") == 1 and text.count("*id") == 1 and "expanded_argv: *id001" in text
    used, again = fileio._load_unbounded_if_safe(text, fileio.MAX_YAML_NODES)
    assert used and again == data == fileio.load_yaml_text(text, "f.yaml", "x")
    # the bound counts as the bounded composer does: the document's nodes, where the alias stands for what it
    # names, and once more for the alias itself
    argv_nodes = 1 + len(long)
    document = 1 + 2 + (1 + 2 + 2 * argv_nodes) + (1 + 2 * (1 + len(short)))  # root, its keys, exec_start, short
    nodes = document + argv_nodes
    with pytest.raises(yaml.composer.ComposerError):
        fileio._load_one(fileio.PureLimitedLoader, text, nodes - 1)
    assert fileio._load_one(fileio.PureLimitedLoader, text, nodes) == data
    assert fileio._load_unbounded_if_safe(text, nodes)[0] and not fileio._load_unbounded_if_safe(text, nodes - 1)[0]


@needs_libyaml
def test_an_argv_of_words_that_need_quoting_dumps_as_the_pure_dumper():
    """Lists of single-line strings take a shortcut in the C dumper's representer: same text, and read back
    the same through the fast loader."""
    argv = ["--tp", "1", "", "yes", "null", "~", "1e3", "0x10", "- x", "a: b", "#c", "'q'", '"d"', "*alias", "&a",
            "<<", "x\ty", "%h", " lead", "trail ", "[1]", "{a}", "é", "--api-key=" + "a" * 200]
    plain = [w for w in argv if w.isascii() and w.isprintable()]
    docs = ({"argv": plain, "nested": [plain, {"more": plain}]}, [plain] * 3, {"argv": plain[:4] * 2000},
            {"argv": argv})
    assert all(fileio._c_dumpable(d) for d in docs[:3])  # the C dumper's shortcut really runs
    for data in docs:
        assert fileio.dump_yaml(data) == pure_dump(data)
        assert fileio.load_yaml_text(fileio.dump_yaml(data), "f.yaml", "x") == data


@needs_libyaml
def test_tags_remembered_per_spelling_are_the_resolvers_own():
    """libyaml's loader and dumper remember a scalar's tag by its text alone: right only while no path
    resolver is registered, and the tags are the resolver's for every kind of scalar."""
    assert not fileio._CSafeLoader.yaml_path_resolvers and not fileio._CDumper.yaml_path_resolvers
    words = ["1", "1.5", "0x1f", "1_000", "1:30", ".inf", "~", "null", "yes", "off", "2026-12-02", "=", "<<", "x", ""]
    loader = fileio._CSafeLoader("")
    for word in words + words:
        for implicit in ((True, False), (False, True), (True, True)):
            assert loader.resolve(yaml.ScalarNode, word, implicit) == \
                yaml.resolver.Resolver().resolve(yaml.ScalarNode, word, implicit), (word, implicit)
    loader.dispose()
