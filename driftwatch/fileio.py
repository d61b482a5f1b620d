"""Every file driftwatch reads or writes goes through here: one text reader, one atomic writer,
one YAML loader and dumper, one JSON loader.

- `read_text_file`: UTF-8 text with one clear error per failure (missing, directory, too large,
  binary, not UTF-8, empty), checked before anything is parsed.
- `write_atomic` / `write_new` / `link_atomic` / `sync_directories`: nothing a user keeps is ever
  half-written; they live in `filewrite` (the writing half) and are imported from here.
- `read_yaml` / `load_yaml_text`: ``yaml.safe_load`` only, bounded; errors name the file and the line.
  libyaml's parser does the reading when installed; a text it might read differently, or refuses, is
  read by the pure loader, so values and messages are PyYAML's.
- `read_json` / `loads_json`: ``json.loads``, bounded in size, depth, values and number length.
- `dump_yaml`: block style, multi-line strings as literal blocks (unit text stays reviewable in git);
  libyaml's emitter for the data it writes byte for byte as PyYAML's does.

Errors are `InputError`s whose message is one line naming the file.
"""
from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any

import yaml

from .errors import InputError

# the writing half, imported from here by every caller
from .filewrite import STALE_TEMP_SECONDS, file_kind, link_atomic, sync_directories, write_atomic, write_new

MAX_TEXT_BYTES = 1_000_000
MAX_YAML_BYTES = 8_000_000
MAX_YAML_DEPTH = 64  # nesting of mappings and sequences
MAX_YAML_NODES = 1_000_000  # scalars, mappings and sequences, every alias counted as what it expands to
MAX_NUMBER_CHARS = 100  # a number written longer (a 320-digit integer) is refused, not carried along
MAX_JSON_DEPTH = MAX_YAML_DEPTH
MAX_JSON_BYTES = MAX_YAML_BYTES
MAX_JSON_NODES = MAX_YAML_NODES


# --------------------------------------------------------------------------- reading


def read_text_file(path: str | os.PathLike, what: str = "unit file", *, allow_empty: bool = False,
                   limit: int = MAX_TEXT_BYTES, regular_only: bool = False) -> str:
    """Return the UTF-8 text of ``path``.

    Raises InputError (one line, naming the file) when the file is missing, a directory, not readable,
    larger than ``limit`` bytes (checked before reading; at most ``limit`` + 1 bytes are ever read),
    binary (NUL bytes), not UTF-8 (byte offset given) or empty / whitespace only (unless ``allow_empty``).
    FIFOs such as ``<(systemctl cat x)`` are accepted unless ``regular_only`` (files a directory
    listing finds: a FIFO there would block the read forever).
    """
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file ({what} not found)") from None
    except PermissionError:
        raise InputError(f"{name}: permission denied, cannot read {what}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{name}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name}: is a directory, not a {what}")
    if regular_only and not stat.S_ISREG(st.st_mode):
        raise InputError(f"{name}: not a regular file ({file_kind(st.st_mode)}), cannot read {what}")
    if stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise InputError(f"{name}: {what} is too large ({st.st_size} bytes; the limit is {limit} bytes)")
    try:
        if regular_only:  # never block on a FIFO swapped in after the stat: open without waiting, re-check
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise InputError(f"{name}: not a regular file, cannot read {what}")
            os.set_blocking(fd, True)
            fh = os.fdopen(fd, "rb")
        else:
            fh = open(name, "rb")
        with fh:
            data = fh.read(limit + 1)
    except PermissionError:
        raise InputError(f"{name}: permission denied, cannot read {what}") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, not a {what}") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(f"{name}: {what} is too large (more than {limit} bytes)")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"{name}: {what} is binary (NUL byte at offset {nul}), expected text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name}: {what} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    if not allow_empty and not text.strip():
        raise InputError(f"{name}: file is empty")
    return text


# --------------------------------------------------------------------------- YAML


# A list this long that a document holds twice (a huge unit's argv, saved as `argv` and as the same
# `expanded_argv`) is written once, with an anchor, and the second time as its alias: each copy of
# 16 000 words cost about 0.15 s to write and read back. Shorter lists (every real unit's argv) and
# everything else are written out in full, so ordinary files have no anchors.
ALIAS_MIN_ITEMS = 256


def _written_once(data) -> bool:
    return type(data) is list and len(data) >= ALIAS_MIN_ITEMS


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as literal blocks (unit text stays reviewable in git); no
    anchors and aliases but for a long list held twice (see ALIAS_MIN_ITEMS)."""

    def ignore_aliases(self, data):
        return not _written_once(data)


_INT_TAG, _FLOAT_TAG, _STR_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"


def _children(node) -> list:
    """A node's children as the bounds count them: a sequence's items, a mapping's keys and values."""
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


if TYPE_CHECKING:  # what the mixins below extend, for the checker only (at run time they sit before it in the MRO)
    from yaml.events import Event

    class _ComposerBase(yaml.composer.Composer):
        def peek_event(self) -> Event | None: ...
        def check_event(self, *choices: Any) -> bool: ...

    _ResolverBase = yaml.resolver.BaseResolver
else:
    _ComposerBase = _ResolverBase = object


class _Limits(_ComposerBase):
    """Bounds for a loader whose composer is PyYAML's Python one: nesting depth, and the number of nodes a
    document expands to (each alias counted as the size of what it names), so an alias bomb or a deep
    structure is one clear error."""

    _dw_max_nodes = MAX_YAML_NODES

    def _dw_reset(self) -> None:
        self._dw_depth = 0
        self._dw_sizes: dict[int, int] = {}
        self._dw_nodes: list = []
        self._dw_total = 0

    def compose_node(self, parent, index):
        mark: Any = self.peek_event().start_mark  # type: ignore[union-attr]  # an event is always next here
        self._dw_depth += 1
        try:
            if self._dw_depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", mark)
            alias = self.check_event(yaml.AliasEvent)
            node = super().compose_node(parent, index)
            if (not alias and isinstance(node, yaml.ScalarNode) and len(node.value) > MAX_NUMBER_CHARS
                    and node.tag in (_INT_TAG, _FLOAT_TAG)):
                raise yaml.composer.ComposerError(None, None, f"a number of {len(node.value)} characters (the "
                                                  f"limit is {MAX_NUMBER_CHARS})", mark)
            if alias:
                if id(node) not in self._dw_sizes:  # names a node still being read: a cycle
                    raise yaml.composer.ComposerError(None, None, "an alias refers to a structure that contains it",
                                                      mark)
                size = self._dw_sizes[id(node)]
            else:
                size = 1 + sum(self._dw_sizes.get(id(c), 1) for c in _children(node))
                self._dw_sizes[id(node)] = size
                self._dw_nodes.append(node)  # keep it alive: ids must not be reused while reading
            if alias or parent is None:
                self._dw_total += size
            if size > self._dw_max_nodes or self._dw_total > self._dw_max_nodes:
                raise yaml.composer.ComposerError(None, None, f"expands to more than {self._dw_max_nodes} values "
                                                  "(aliases counted as what they repeat)", mark)
            return node
        finally:
            self._dw_depth -= 1


class PureLimitedLoader(_Limits, yaml.SafeLoader):
    """safe_load with bounds, all in Python (the reference; used where libyaml is missing)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._dw_reset()


class _RememberedTags(_ResolverBase):
    """A scalar's implicit tag, worked out once per spelling in a document (an argv of `--tp 1` x 8 000
    repeats three words; the regular expressions ran for each), for libyaml's loader and dumper, which
    ask for every scalar (the dumper twice). With no path resolvers (none are added to the safe classes),
    a scalar's tag depends only on its text, and is the plain str tag when implicit resolution is off."""

    def resolve(self, kind, value, implicit):
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        if not implicit[0]:
            return _STR_TAG
        tags = self.__dict__.get("_dw_tags")
        if tags is None:
            tags = self._dw_tags = {}
        tag = tags.get(value)
        if tag is None:
            tag = tags[value] = super().resolve(kind, value, implicit)
        return tag

    def descend_resolver(self, current_node, current_index):
        """Nothing to follow without path resolvers (asked for every node)."""

    def ascend_resolver(self):
        """Nothing to follow without path resolvers (asked for every node)."""


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser as _CParser

    class CLimitedLoader(_Limits, yaml.composer.Composer, _CParser, yaml.constructor.SafeConstructor,
                         yaml.resolver.Resolver):
        """The same bounds with libyaml's scanner and parser (most of the cost of a pure load): the
        events come from C, the composer stays PyYAML's Python one (before CParser in the MRO), so the
        depth and alias hooks above run on every node exactly as in the pure loader. CSafeLoader's own
        composer is C and cannot be hooked."""

        def __init__(self, stream):
            _CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._dw_reset()

        def get_single_node(self):
            try:
                return super().get_single_node()
            except yaml.MarkedYAMLError as exc:
                # libyaml's scanner looks ahead past our depth check inside a flow collection and stops at
                # its own limit (1000): the same error as the pure loader's, in the same words
                if exc.problem == "exceeded maximum nesting depth":
                    raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                                      exc.problem_mark) from None
                raise

    class _CSafeLoader(_RememberedTags, yaml.CSafeLoader):
        """libyaml's composer as well: for texts without a merge key, sized before use (`_within_bounds` on
        the value of a text without anchors, `_graph_within_bounds` on the nodes of one with them). A plain
        string node is its own value (what SafeConstructor's str constructor returns, without its per-node
        bookkeeping: a string is never mutated, so an alias of one needs none)."""

        def construct_object(self, node, deep=False):
            if node.tag == _STR_TAG and type(node) is yaml.ScalarNode:
                return node.value
            return super().construct_object(node, deep)
else:  # pragma: no cover - PyYAML built without libyaml
    CLimitedLoader = _CSafeLoader = None  # type: ignore[assignment,misc]

LimitedLoader = PureLimitedLoader  # the reference; subclassed elsewhere (inventory) for its exact errors

# Where libyaml and PyYAML's scanner disagree on a text both call valid: libyaml accepts tabs in more
# places, and reads a bare "!" tag on an empty node as '' (PyYAML: null). Such texts take the pure path.
_C_UNSAFE = re.compile(r"[\t\ufeff]|(?:^|[\s,\[\]{}])!(?:[\s,\[\]{}]|\Z)")


def _c_unsafe(text: str) -> bool:
    """`_C_UNSAFE` found in `text`; asked only of a text holding one of its characters (the search tries
    every position: 28 ms on a 400 KB snapshot, where three `in` tests take well under one)."""
    return ("!" in text or "\t" in text or "\ufeff" in text) and _C_UNSAFE.search(text) is not None


def libyaml_reads_alike(text: str) -> bool:
    """True when CLimitedLoader gives the pure loader's answer on `text` (libyaml there, no texts of the
    few it reads otherwise): a caller with its own loader subclass (the inventory's) may try it first."""
    return CLimitedLoader is not None and not _c_unsafe(text)


def _literal(data: str) -> bool:
    return not any(line != line.rstrip() for line in data.split("\n"))


def _str_representer(dumper: yaml.representer.SafeRepresenter, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data and not any(c in data for c in "\r\t") else None
    if style and not _literal(data):
        style = None  # trailing spaces cannot round-trip through a literal block
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _add_representers(dumper: type[yaml.representer.SafeRepresenter]) -> None:
    dumper.add_representer(str, _str_representer)
    dumper.add_multi_representer(str, _str_representer)  # str subclasses too (a rejected flag value, a message)
    dumper.add_representer(tuple, lambda dumper, data: dumper.represent_list(list(data)))


_add_representers(_Dumper)

if getattr(yaml, "__with_libyaml__", False):
    class _CDumper(_RememberedTags, yaml.CSafeDumper):
        """_Dumper with libyaml's emitter (about six times faster), for data it writes byte for byte as
        _Dumper does (see _c_dumpable)."""

        def ignore_aliases(self, data):
            return not _written_once(data)

        def represent_data(self, data):
            kind = type(data)
            if kind is str and "\n" not in data:  # most of a saved snapshot: _str_representer's node
                return yaml.ScalarNode(_STR_TAG, data)
            once = _written_once(data)
            if once and id(data) in self.represented_objects:  # a long list again: the same node, an alias
                return self.represented_objects[id(data)]
            if kind is list and data and all(type(item) is str and "\n" not in item for item in data):
                # an argv: represent_sequence's node (block style: every item a plain-style scalar)
                flow = True if self.default_flow_style is None else self.default_flow_style
                node = yaml.SequenceNode(_SEQ_TAG, [yaml.ScalarNode(_STR_TAG, item) for item in data],
                                         flow_style=flow)
                if once:
                    self.represented_objects[id(data)] = node
                    self.object_keeper.append(data)
                return node
            return super().represent_data(data)

    _add_representers(_CDumper)
else:  # pragma: no cover - PyYAML built without libyaml
    _CDumper = None  # type: ignore[assignment,misc]

_SCALARS = (int, float, bool, type(None))


def _c_dumpable(data: Any) -> bool:
    """True when libyaml's emitter writes `data` exactly as PyYAML's: plain types only, printable ASCII
    text whose multi-line strings become literal blocks, keys single-line, non-empty and short. (The
    emitters differ on non-ASCII text, double-quoted line folding, the simple-key length limit and an
    empty key.) Anything else, or nesting past 100 levels (a cycle), is left to the pure dumper."""
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            if depth > 100:
                return False
            for key, value in item.items():
                if isinstance(key, str):
                    if not (0 < len(key) <= 100 and key.isascii() and key.isprintable()):
                        return False
                elif type(key) not in _SCALARS:
                    return False
                stack.append((value, depth + 1))
        elif kind is list or kind is tuple:
            if depth > 100:
                return False
            if item and all(type(value) is str for value in item):
                words = "".join(item)  # an argv: all its words at once, when none is multi-line
                if words.isascii() and words.isprintable():
                    continue
            stack.extend((value, depth + 1) for value in item)
        elif isinstance(item, str):
            if not item.isascii():
                return False
            if not item.isprintable() and not ("\n" in item and item.replace("\n", "").isprintable()
                                                and _literal(item)):
                return False
        elif kind not in _SCALARS:
            return False
    return True


def dump_yaml(data: Any) -> str:
    """YAML text of `data`; a value YAML cannot hold is an InputError (never a representer traceback)."""
    dumper = _CDumper if _CDumper is not None and _c_dumpable(data) else _Dumper
    try:
        return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)
    except yaml.YAMLError as exc:
        odd = getattr(exc, "args", (None, None))[-1]
        raise InputError(f"cannot write YAML: a value of type {type(odd).__name__} has no YAML form") from None


def dump_yaml_readable(data: Any, what: str, *, limit: int = MAX_YAML_BYTES) -> str:
    """dump_yaml of a record driftwatch will read back (a snapshot, a baseline): refused with one
    InputError line, before anything is written, when `read_yaml` would refuse the file (deeper than
    MAX_YAML_DEPTH, more than MAX_YAML_NODES values, a number longer than MAX_NUMBER_CHARS, more than
    `limit` bytes). Nothing is saved that cannot be read back."""
    stack = [(data, 1)]
    count = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_YAML_NODES:
            raise InputError(f"{what} not saved: more than {MAX_YAML_NODES} values, which it could not be read back")
        if isinstance(item, (dict, list, tuple)):
            if depth > MAX_YAML_DEPTH:
                raise InputError(f"{what} not saved: nested deeper than {MAX_YAML_DEPTH} levels, so it could not "
                                 "be read back")
            values = list(item.values()) + list(item.keys()) if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in values)
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and len(repr(item)) > MAX_NUMBER_CHARS:
            raise InputError(f"{what} not saved: a number of {len(repr(item))} characters, so it could not be read "
                             "back")
    text = dump_yaml(data)
    size = len(text.encode("utf-8"))
    if size > limit:
        raise InputError(f"{what} not saved: {size} bytes, over the {limit} bytes driftwatch reads back")
    return text


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """(1-based line or None, one-line reason) of a YAML error, for messages that name the line."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
    return (mark.line + 1 if mark is not None else None), " ".join(str(problem).split())


def _load_one(loader_class, text: str, max_nodes: int = MAX_YAML_NODES) -> Any:
    loader = loader_class(text)
    loader._dw_max_nodes = max_nodes
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


# A text without '&' and '*' has no anchor and no alias, so libyaml's own composer cannot expand anything
# (one with them is checked on its nodes, as the bounded composer counts them); a merge key folds nodes away
# and is counted otherwise. An int or float scalar longer than MAX_NUMBER_CHARS is a run of these characters
# (sexagesimal, hex, '_'): a text without one cannot hold a number over the bound.
_MAY_ALIAS = re.compile(r"[&*]")
_MERGE_KEY = re.compile(r"<<")
_MAY_BE_LONG_NUMBER = re.compile(r"[-+0-9_:.xXoObBa-fA-F]{" + str(MAX_NUMBER_CHARS + 1) + ",}")


def _first_bound_broken(data: Any, max_nodes: int, *, as_yaml_nodes: bool) -> str | None:
    """The bound parsed `data` breaks first, walked without recursion: "values" (more than `max_nodes`),
    "depth" (deeper than MAX_YAML_DEPTH = MAX_JSON_DEPTH) or "set" (not judged here); None within both.
    The one loop behind both loaders, counting as each one defines its bounds: `as_yaml_nodes`, as the
    bounded YAML composer counts nodes (a mapping's keys are nodes, and a scalar is as deep as where it
    stands); otherwise as JSON counts values (keys are not; only arrays and objects have a depth). A list
    of strings (an argv) is counted at once, which changes no verdict and saves a step per word."""
    stack = [(data, 1)]
    count = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > max_nodes:
            return "values"
        kind = type(item)
        if depth > MAX_YAML_DEPTH and (as_yaml_nodes or kind is dict or kind is list):
            return "depth"
        if kind is dict:
            if as_yaml_nodes:
                stack.extend((child, depth + 1) for pair in item.items() for child in pair)
            else:
                stack.extend((child, depth + 1) for child in item.values())
        elif kind is list or kind is tuple:  # a tuple: one pair of an !!omap or !!pairs, a mapping of one entry
            if item and all(type(child) is str for child in item):  # an argv: counted at once
                count += len(item)
                if count > max_nodes:
                    return "values"
                if as_yaml_nodes and depth + 1 > MAX_YAML_DEPTH:
                    return "depth"
            else:
                stack.extend((child, depth + 1) for child in item)
        elif kind is set:
            return "set"
    return None


def _within_bounds(data: Any, max_nodes: int) -> bool:
    """True when `data` (alias-free: no object reached twice) is at most MAX_YAML_DEPTH deep and holds at most
    `max_nodes` values, both counted as the bounded composer counts nodes (a scalar too, a mapping's keys too).
    A set (a `!!set` mapping's nodes are not its members) is not judged here."""
    return _first_bound_broken(data, max_nodes, as_yaml_nodes=True) is None


def _graph_within_bounds(root, max_nodes: int) -> bool:
    """The bounded composer's verdict (`_Limits`) on a document libyaml composed, aliases and all: True when
    no alias names a structure that contains it, nothing is nested deeper than MAX_YAML_DEPTH (an alias
    counts where it stands, as one node), and the document's nodes plus, for each alias, the nodes of what it
    names, are at most `max_nodes`. Each node is visited once (an alias bomb is sized, never expanded):
    nodes first met in document order are the anchors, met again they are aliases."""
    sizes: dict[int, int] = {}  # id -> nodes it holds, once complete
    open_nodes: set[int] = set()
    aliased = 0
    stack = [(root, 1, False)]
    scalar = yaml.ScalarNode
    while stack:
        node, depth, complete = stack.pop()
        key = id(node)
        if complete:
            open_nodes.discard(key)
            sizes[key] = size = 1 + sum(sizes[id(c)] for c in _children(node))
            if size > max_nodes:
                return False
            continue
        if depth > MAX_YAML_DEPTH:
            return False
        if key in sizes:  # an alias of a structure read before
            aliased += sizes[key]
            if aliased > max_nodes:
                return False
            continue
        if key in open_nodes:  # an alias inside what it names
            return False
        children = _children(node)
        if not children:
            sizes[key] = 1
            continue
        if type(node) is yaml.SequenceNode and all(type(c) is scalar for c in children):
            # an argv: its words at once (a word met before is an alias of one node)
            if depth + 1 > MAX_YAML_DEPTH:
                return False
            ids = [id(c) for c in children]
            fresh = set(ids)
            aliased += len(ids) - len(fresh) + sum(1 for i in fresh if i in sizes)
            sizes.update(dict.fromkeys(fresh, 1))
            sizes[key] = 1 + len(ids)
            continue
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in reversed(children))
    return sizes[id(root)] + aliased <= max_nodes


def _load_aliased(text: str, max_nodes: int) -> tuple[bool, Any]:
    """libyaml's composer on a text with anchors or aliases; the nodes checked before anything is built."""
    loader = _CSafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return True, None
        if not _graph_within_bounds(node, max_nodes):
            return False, None
        return True, loader.construct_document(node)
    finally:
        loader.dispose()


def _load_unbounded_if_safe(text: str, max_nodes: int) -> tuple[bool, Any]:
    """(True, data) when libyaml's composer and parser (all C: several times faster than ours on the large
    documents driftwatch saves) read `text` to what the bounded loader would give: libyaml-safe text with no
    merge key and no long number, read without error, within depth and size (aliases counted as the bounded
    composer counts them). Otherwise (False, None), and the caller asks the bounded loader for the value or
    the verdict and its message."""
    if _CSafeLoader is None or _c_unsafe(text) or _MERGE_KEY.search(text) or _MAY_BE_LONG_NUMBER.search(text):
        return False, None
    try:
        if _MAY_ALIAS.search(text):
            return _load_aliased(text, max_nodes)
        data = _load_one(_CSafeLoader, text, max_nodes)
    except Exception:  # noqa: BLE001 - the bounded loaders give the verdict and the message
        return False, None
    return (True, data) if _within_bounds(data, max_nodes) else (False, None)


def _load_bounded(text: str, max_nodes: int = MAX_YAML_NODES) -> Any:
    """What yaml.safe_load does, bounded, with libyaml's parser when it gives the pure loader's answer:
    a text it refuses (or one of the few it reads differently) is read again by the pure loader, so
    values and error messages are the pure loader's, only about five times faster on valid files. A text
    that cannot expand (no alias) is read by libyaml's composer too, and checked once read."""
    fast, data = _load_unbounded_if_safe(text, max_nodes)
    if fast:
        return data
    if CLimitedLoader is not None and not _c_unsafe(text):
        try:
            return _load_one(CLimitedLoader, text, max_nodes)
        except Exception:  # noqa: BLE001 - the pure loader gives the verdict and the message
            pass
    return _load_one(PureLimitedLoader, text, max_nodes)


class YAMLLimitError(ValueError):
    """A YAML text refused by the bounded loader (invalid, or over a bound); `line` is 1-based or None."""

    def __init__(self, line: int | None, reason: str):
        super().__init__(reason)
        self.line, self.reason = line, reason


def load_yaml_data(text: str, *, max_nodes: int = MAX_YAML_NODES) -> Any:
    """The bounded safe_load for text that is not a file of its own (a vLLM --config FILE's text carried
    in a unit's argv): YAMLLimitError(line, reason) instead of an InputError naming a file."""
    try:
        return _load_bounded(text) if max_nodes == MAX_YAML_NODES else _load_bounded(text, max_nodes)
    except (ValueError, OverflowError, RecursionError) as exc:
        raise YAMLLimitError(None, f"unusable value: {str(exc).splitlines()[0][:120]}") from None
    except yaml.YAMLError as exc:
        raise YAMLLimitError(*yaml_problem(exc)) from None


def load_yaml_text(text: str, where: str, what: str, *, max_nodes: int = MAX_YAML_NODES) -> Any:
    """safe_load `text` read from `where`. A YAML error is one line for people and for editors
    that jump to ``FILE:LINE``: ``WHERE:4: invalid YAML in WHAT (line 4, column 9): reason``.
    `max_nodes`: how many values the document may expand to (aliases counted as what they repeat)."""
    try:
        return _load_bounded(text) if max_nodes == MAX_YAML_NODES else _load_bounded(text, max_nodes)
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"{where}: unusable value in {what}: {str(exc).splitlines()[0][:120]}") from None
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        if line is None:
            raise InputError(f"{where}: invalid YAML in {what}: {problem}") from None
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        column = f", column {mark.column + 1}" if mark is not None else ""  # yaml_problem gave a line: a mark
        raise InputError(f"{where}:{line}: invalid YAML in {what} (line {line}{column}): {problem}") from None


class JSONLimitError(ValueError):
    """A JSON text over a bound (size, depth, values, number length): a ValueError, so that a flag's
    converter reads it as a rejected value like any other bad JSON."""


def _json_number(kind):
    def parse(text: str):
        if len(text) > MAX_NUMBER_CHARS:
            raise JSONLimitError(f"a number of {len(text)} characters (the limit is {MAX_NUMBER_CHARS})")
        return kind(text)
    return parse


_PARSE_INT, _PARSE_FLOAT = _json_number(int), _json_number(float)


def loads_json(text: str | bytes, *, limit: int = MAX_JSON_BYTES, max_nodes: int = MAX_JSON_NODES) -> Any:
    """json.loads, bounded: at most `limit` characters, MAX_JSON_DEPTH levels of arrays and objects,
    MAX_JSON_NODES values and numbers of at most MAX_NUMBER_CHARS characters. Raises JSONLimitError
    (or json.JSONDecodeError, both ValueErrors) with one line; never RecursionError or MemoryError.
    Every JSON text driftwatch reads (flag values, config.json, state files, probe answers) goes here."""
    import json
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if len(text) > limit:
        raise JSONLimitError(f"JSON text of {len(text)} characters (the limit is {limit})")
    try:
        data = json.loads(text, parse_int=_PARSE_INT, parse_float=_PARSE_FLOAT)
    except RecursionError:
        raise JSONLimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    _check_json_shape(data, max_nodes)
    return data


def _check_json_shape(data: Any, max_nodes: int = MAX_JSON_NODES) -> None:
    """Depth and size of parsed JSON, without recursion (`_first_bound_broken`, counting JSON values)."""
    broken = _first_bound_broken(data, max_nodes, as_yaml_nodes=False)
    if broken == "values":
        raise JSONLimitError(f"JSON text of more than {max_nodes} values")
    if broken == "depth":
        raise JSONLimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def load_json_text(text: str | bytes, where: str, what: str, *, limit: int = MAX_JSON_BYTES,
                   max_nodes: int = MAX_JSON_NODES) -> Any:
    """loads_json with one InputError line naming `where` and `what` (a file, a host's file)."""
    try:
        return loads_json(text, limit=limit, max_nodes=max_nodes)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        at = f":{line}" if line else ""
        kind = "over a limit" if isinstance(exc, JSONLimitError) else "not valid JSON"
        raise InputError(f"{where}{at}: {what} is {kind}: {str(exc).splitlines()[0][:160]}") from None


def read_json(path: str | os.PathLike, what: str, *, limit: int = MAX_JSON_BYTES,
              max_nodes: int = MAX_JSON_NODES) -> Any:
    """A JSON file read and parsed within every bound; errors name the file."""
    name = os.fspath(path)
    return load_json_text(read_text_file(name, what, limit=limit, regular_only=True), name, what, limit=limit,
                          max_nodes=max_nodes)


def read_yaml(path: str | os.PathLike, what: str, *, limit: int = MAX_YAML_BYTES) -> Any:
    """safe_load a YAML file (empty -> None); errors name the file and the line."""
    name = os.fspath(path)
    return load_yaml_text(read_text_file(name, what, allow_empty=True, limit=limit, regular_only=True), name, what)


__all__ = ["LimitedLoader", "CLimitedLoader", "libyaml_reads_alike", "MAX_TEXT_BYTES", "MAX_YAML_BYTES",
           "read_text_file", "loads_json", "load_json_text", "read_json", "JSONLimitError", "dump_yaml_readable",
           "load_yaml_data", "YAMLLimitError", "write_atomic", "write_new", "link_atomic", "sync_directories",
           "STALE_TEMP_SECONDS", "dump_yaml", "yaml_problem", "load_yaml_text", "read_yaml"]
