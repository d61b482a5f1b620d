#!/usr/bin/env python3
"""Generate a driftwatch flag catalog from a real SGLang release.

Developer tool, not shipped: the generated JSON files ship as package data
(``driftwatch/engines/sglang/catalogs/sglang-<VERSION>.json``) so users and CI
never need SGLang installed.

Usage::

    python tools/gen_sglang_catalog.py --version 0.5.23
    python tools/gen_sglang_catalog.py --version 0.5.23 --venv /work/oracles/sglang-0.5.23
    python tools/gen_sglang_catalog.py --python /work/oracles/sglang-0.5.23/bin/python --out /tmp/x

Without ``--python`` the script creates (or reuses) a scratch venv (default
``/work/oracles/sglang-<VERSION>``) holding ``sglang==<VERSION>`` installed with
``--no-deps``, the CPU build of torch, ``triton --no-deps`` and the light
dependencies that ``import sglang.srt.server_args`` needs. It then re-runs this
very file *inside that venv* with ``--dump`` which imports SGLang, builds
``argparse.ArgumentParser()``, calls ``ServerArgs.add_cli_args(parser)`` and
walks ``parser._actions``. The outer process adds ``generated_at`` and writes
the catalog. See tools/README.md.

The dump half (everything under "inside the oracle venv") must only use the
standard library, because it runs on whatever interpreter the oracle venv has.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

SCHEMA = "driftwatch.catalog/v1"
GENERATED_BY = "tools/gen_sglang_catalog.py"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "driftwatch" / "engines" / "sglang" / "catalogs"
DEFAULT_ORACLE_ROOT = Path("/work/oracles")

# torch: the CPU wheel. "+cpu" is a local version label that only the CPU
# build carries, so pip can never satisfy this with a CUDA wheel from PyPI.
TORCH_SPEC = "torch==2.13.0+cpu"

# What `import sglang.srt.server_args` needs on a CPU-only machine (sglang and
# triton themselves go in with --no-deps so pip never resolves a CUDA torch).
LIGHT_DEPS = [
    "numpy", "msgspec", "orjson", "psutil", "pybase64", "requests", "pillow",
    "starlette", "packaging", "typing_extensions", "pydantic", "pyzmq", "tqdm",
    "IPython", "aiohttp",
]

# Extra requirements per release, found by running the dump until the import
# chain stopped failing (each entry is a module the import chain needs).
# transformers is pinned to a version that works with the release (0.5.5 and
# 0.5.12 pin exactly that in their metadata; 0.4.10.post2 pins 4.54.1, but
# 4.57.6 imports fine and matches 0.5.5). Releases not listed fall back to the
# first matching prefix in EXTRA_DEPS_BY_PREFIX; see tools/README.md for how to
# find the list for a new release.
_COMMON_05 = ["fastapi", "sentencepiece", "openai", "partial_json_parser", "dill"]
EXTRA_DEPS = {
    "0.4.10.post2": ["transformers==4.57.6", "fastapi", "sentencepiece"],
    "0.5.5": ["transformers==4.57.6"] + _COMMON_05,
    "0.5.12": ["transformers==5.6.0"] + _COMMON_05,
    "0.5.23": [],
}
EXTRA_DEPS_BY_PREFIX = [
    ("0.4.", ["transformers==4.57.6", "fastapi", "sentencepiece"]),
    ("0.5.", _COMMON_05),
]

# Modules replaced by stubs in sys.modules while dumping, per release. PyPI's
# torchvision does not load with the CPU torch ("operator torchvision::nms does
# not exist"), so if an import chain ever needs it we stub it instead of
# installing it. Each stub is recorded in the catalog under "stubs".
STUBS = {
    "0.4.10.post2": [],
    "0.5.5": [],
    "0.5.12": ["torchvision"],
    "0.5.23": [],
}

STAMP_NAME = ".driftwatch-oracle.json"


# ---------------------------------------------------------------------------
# Outside: venv preparation
# ---------------------------------------------------------------------------

def extra_deps_for(version: str) -> list[str]:
    if version in EXTRA_DEPS:
        return list(EXTRA_DEPS[version])
    for prefix, deps in EXTRA_DEPS_BY_PREFIX:
        if version.startswith(prefix):
            return list(deps)
    return []


def install_plan(version: str) -> list[list[str]]:
    """The pip invocations (argument lists after `pip install`) for a release."""
    return [
        [TORCH_SPEC],
        ["--no-deps", f"sglang=={version}", "triton"],
        LIGHT_DEPS + extra_deps_for(version),
    ]


def _run(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kw)


def prepare_venv(version: str, venv: Path, base_python: str) -> Path:
    """Create or reuse the oracle venv; return its python."""
    py = venv / "bin" / "python"
    stamp = venv / STAMP_NAME
    plan = install_plan(version)
    want = {"version": version, "plan": plan}
    if py.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text()) == want:
                print(f"reusing {venv}", file=sys.stderr)
                return py
        except ValueError:
            pass
    if not py.exists():
        _run([base_python, "-m", "venv", str(venv)])
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    for args in plan:
        _run(pip + args)
    out = subprocess.run(
        [str(py), "-c", "import torch; print(torch.version.cuda)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]
    if out != "None":
        raise SystemExit(f"{venv}: torch is a CUDA build (cuda={out}); refusing")
    stamp.write_text(json.dumps(want, indent=1) + "\n")
    return py


def dump_with(python: str, stubs: list[str] | None = None) -> dict:
    """Run the dump half of this file under `python` and return its catalog."""
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("SGLANG_", "SGL_", "PYTHON"))
    }
    env.update({
        "PYTHONHASHSEED": "0",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONWARNINGS": "ignore",
    })
    cmd = [python, str(Path(__file__).resolve()), "--dump"]
    for s in stubs or []:
        cmd += ["--stub", s]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         cwd="/")
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"dump failed under {python} (exit {res.returncode})")
    marker = "@@DRIFTWATCH-CATALOG@@"
    text = res.stdout
    if marker not in text:
        sys.stderr.write(res.stderr)
        raise SystemExit("dump produced no catalog")
    return json.loads(text.split(marker, 1)[1])


def render(catalog: dict) -> str:
    return json.dumps(catalog, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def generate(python: str, version: str | None = None,
             generated_at: str | None = None) -> dict:
    """Dump the catalog from an oracle interpreter (public for the tests)."""
    stubs = STUBS.get(version, []) if version else None
    if stubs is None:
        # Unknown up front: ask the interpreter which sglang it has.
        v = subprocess.run(
            [python, "-c",
             "import importlib.metadata as m; print(m.version('sglang'))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        stubs = STUBS.get(v, [])
    cat = dump_with(python, stubs)
    if version and cat["version"] != version:
        raise SystemExit(f"{python} has sglang {cat['version']}, not {version}")
    cat["generated_at"] = generated_at or _dt.datetime.now(
        _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return cat


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", help="SGLang release, e.g. 0.5.23")
    ap.add_argument("--venv", type=Path,
                    help="oracle venv (default /work/oracles/sglang-VERSION)")
    ap.add_argument("--python",
                    help="use this existing oracle interpreter; install nothing")
    ap.add_argument("--base-python", default=sys.executable,
                    help="interpreter used to create the venv")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="output directory (default: the package catalogs dir)")
    ap.add_argument("--dump", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--stub", action="append", default=[], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.dump:
        return _dump_main(a.stub)

    t0 = time.monotonic()
    if a.python:
        python = a.python
    else:
        if not a.version:
            ap.error("--version is required unless --python is given")
        venv = a.venv or DEFAULT_ORACLE_ROOT / f"sglang-{a.version}"
        venv.parent.mkdir(parents=True, exist_ok=True)
        python = str(prepare_venv(a.version, venv, a.base_python))
    t1 = time.monotonic()
    cat = generate(python, a.version)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"sglang-{cat['version']}.json"
    path.write_text(render(cat), encoding="utf-8")
    t2 = time.monotonic()
    print(f"{path}: {cat['counts']['actions']} actions, "
          f"{cat['counts']['option_strings']} option strings "
          f"(venv {t1 - t0:.0f}s, dump {t2 - t1:.1f}s)")
    return 0


# ---------------------------------------------------------------------------
# Inside the oracle venv (standard library + sglang only)
# ---------------------------------------------------------------------------

# Converters SGLang passes as argparse `type=`, by function name: how to
# classify them, and a short description appended to type_name.
KNOWN_CONVERTERS = {
    "nullable_str": ("str", "str; '' or 'None' -> null"),
    "human_readable_int": ("str", "int, accepts SI/IEC suffixes like 4k, 1Mi"),
    "json_list_type": ("str", "JSON list"),
    "parse_cuda_graph_backend_arg": ("str", "str; rejects retired tc_piecewise"),
    "parse_cuda_graph_config_arg": ("str", "JSON object: phase -> settings"),
}

_BOOL_CONVERTER_NAMES = {"str2bool", "str_to_bool", "strtobool", "parse_bool",
                         "bool_arg", "str2bool_or_none"}


def _jsonable(value):
    """(ok, json_value). Tuples become lists; sets and other objects fail."""
    import enum

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
            ok, j = _jsonable(v)
            if not ok:
                return False, None
            out.append(j)
        return True, out
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            ok, j = _jsonable(v)
            if not ok or not isinstance(k, str):
                return False, None
            out[k] = j
        return True, out
    return False, None


def _choice_value(c):
    import enum

    if isinstance(c, enum.Enum):
        c = c.value
    ok, j = _jsonable(c)
    return j if ok else str(c)


def _choices(choices):
    if choices is None:
        return None
    if isinstance(choices, (set, frozenset)):
        vals = [_choice_value(c) for c in choices]
        return sorted(vals, key=lambda v: (str(type(v)), str(v)))
    return [_choice_value(c) for c in choices]


def _type_info(t):
    """(type, type_name or None) for an argparse `type=`."""
    import json as _json

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
    if t is _json.loads:
        return "json", None
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) \
        or type(t).__qualname__
    short = name.rsplit(".", 1)[-1]
    if short in KNOWN_CONVERTERS:
        kind, desc = KNOWN_CONVERTERS[short]
        return kind, f"{name} ({desc})"
    if short in _BOOL_CONVERTER_NAMES or _behaves_like_bool(t):
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


def _behaves_like_bool(t) -> bool:
    try:
        return t("true") is True and t("false") is False
    except Exception:
        return False


_STD_ACTIONS = {
    "_StoreAction": "store", "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false", "_StoreConstAction": "store_const",
    "_AppendAction": "append", "_AppendConstAction": "append_const",
    "_CountAction": "count", "_ExtendAction": "extend",
    "_VersionAction": "version", "_HelpAction": "help",
}


def _action_info(act):
    """(action, action_class or None)."""
    import argparse as _ap

    cls = type(act)
    if cls.__module__ == "argparse" and cls.__name__ in _STD_ACTIONS:
        return _STD_ACTIONS[cls.__name__], None
    for base in cls.__mro__[1:]:
        if base.__module__ == "argparse" and base.__name__ in _STD_ACTIONS:
            return _STD_ACTIONS[base.__name__], cls.__name__
    if isinstance(act, getattr(_ap, "BooleanOptionalAction", ())):
        return "store_true", cls.__name__
    if act.nargs == 0:
        return ("store_true" if act.const is True else "store_const"), cls.__name__
    return "store", cls.__name__


_ABBREV = re.compile(r"(?:\be\.g|\bi\.e|\betc|\bvs|\bcf|\bapprox|\bno)\.$", re.I)


def first_sentence(text, cap=200):
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
_DEPRECATED_HELP = re.compile(
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


def _clean_msg(msg, cap=200):
    m = _ANSI.sub("", " ".join(str(msg).split()))
    m = re.sub(r"^(?:note|warning)\s*:\s*", "", m, flags=re.I)
    if len(m) > cap:
        m = m[: cap - 3].rstrip() + "..."
    return m


def _replacement(msg):
    """'use X' / 'set X ...' clause of a deprecation message, else None."""
    m = _REPLACEMENT.search(_clean_msg(msg, cap=10_000))
    if not m:
        return None
    verb = m.group(1).lower()
    if verb in ("replaced by", "in favor of", "in favour of", "switch to"):
        verb = "use"
    return _clean_msg(f"{verb} {m.group(2).strip()}")


def _source_messages(paths):
    """String literals (f-strings flattened, {} for fields) in SGLang source
    that mention "deprecat"."""
    import ast

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


def _deprecated_value_tables(paths):
    """`deprecated_<field>s = {"old": "new", ...}` tables in SGLang source
    (e.g. deprecated_tool_call_parsers = {"qwen25": "qwen", "glm45": "glm"}),
    as {field: {old: new}}."""
    import ast

    out = {}
    for p in paths:
        try:
            tree = ast.parse(Path(p).read_text(encoding="utf-8"))
        except Exception:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Dict)):
                continue
            m = re.fullmatch(r"deprecated_(\w+?)s?", node.targets[0].id)
            if not m:
                continue
            try:
                table = ast.literal_eval(node.value)
            except ValueError:
                continue
            if all(isinstance(k, str) and isinstance(v, str)
                   for k, v in table.items()):
                out.setdefault(m.group(1), {}).update(table)
    return out


def _deprecation(act, help_text, source_msgs):
    """Short string saying the flag is deprecated and what replaces it.

    Sources, in order: a Deprecated* action class (its new_flag or
    error_message), help text that declares the flag deprecated, and warning
    strings in SGLang's argument code of the form "--flag is deprecated ...".
    """
    cls = type(act)
    is_dep_class = "deprecat" in cls.__name__.lower()
    help_hit = bool(help_text) and bool(_DEPRECATED_HELP.search(help_text))
    flags = [o for o in act.option_strings if o.startswith("--")]
    src_hits = []
    for s in source_msgs:
        for f in flags:
            pat = (re.escape(f) + r"(?![\w-])['\"`]?\s+(?:is|has been|was|are)"
                   r"\s+(?:now\s+)?deprecated")
            if re.search(pat, s, re.I):
                src_hits.append(s)
                break
    if not (is_dep_class or help_hit or src_hits):
        return None
    new_flag = getattr(act, "new_flag", None)
    if new_flag:
        return _clean_msg(f"use {new_flag}")
    msgs = []
    err = getattr(act, "error_message", None)
    if err:
        msgs.append(err)
    if help_hit:
        msgs.append(help_text)
    msgs += sorted(src_hits, key=len)
    for m in msgs:
        r = _replacement(m)
        if r:
            return r
    return _clean_msg(msgs[0]) if msgs else "deprecated"


def _record_fields(cls):
    import dataclasses

    try:
        import msgspec  # noqa: F401
        import msgspec.structs

        if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
            return list(msgspec.structs.fields(cls))
    except ImportError:
        pass
    return list(dataclasses.fields(cls))


def _field_default(f):
    import dataclasses

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


def _field_aliases(ServerArgs):
    """`args.<field> = args.<dest>` copies in ServerArgs.from_cli_args."""
    import inspect

    try:
        src = inspect.getsource(ServerArgs.from_cli_args)
    except (OSError, TypeError, AttributeError):
        return {}
    out = {}
    for m in re.finditer(r"args\.(\w+)\s*=\s*args\.(\w+)\s*$", src, re.M):
        out[m.group(2)] = m.group(1)
    return out


def _speculative_defaults(modules):
    """Read SGLang's (steps, topk, draft) choice by architecture from source."""
    import ast
    import inspect

    fn = None
    for mod in modules:
        for name in ("auto_choose_speculative_params",
                     "_auto_choose_speculative_params"):
            cand = getattr(mod, name, None)
            if cand is None:
                cand = getattr(getattr(mod, "ServerArgs", None), name, None)
            if callable(cand):
                fn = cand
                break
        if fn:
            break
    if fn is None:
        return None
    src = inspect.getsource(fn)
    import textwrap

    tree = ast.parse(textwrap.dedent(src))
    func = tree.body[0]

    def ret_tuple(stmts):
        for st in stmts:
            if isinstance(st, ast.Return) and isinstance(st.value, ast.Tuple):
                try:
                    vals = [ast.literal_eval(e) for e in st.value.elts]
                except ValueError:
                    return None
                if len(vals) == 3:
                    return dict(zip(("steps", "topk", "draft"), vals))
        return None

    def cond(test):
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            left = ast.unparse(test.left)
            if isinstance(op, ast.In):
                try:
                    vals = ast.literal_eval(right)
                except ValueError:
                    vals = None
                if isinstance(vals, (list, tuple, set)) and "arch" in left:
                    return {"architectures": list(vals)}
            if isinstance(op, ast.Eq):
                try:
                    val = ast.literal_eval(right)
                except ValueError:
                    val = None
                if "speculative_algorithm" in left:
                    return {"speculative_algorithm": val}
                if "arch" in left and isinstance(val, str):
                    return {"architectures": [val]}
        return {"condition": ast.unparse(test)}

    rules, default = [], None

    def walk(stmts):
        nonlocal default
        for st in stmts:
            if isinstance(st, ast.If):
                r = ret_tuple(st.body)
                if r is not None:
                    rules.append({"when": cond(st.test), **r})
                if st.orelse:
                    walk(st.orelse)
            elif isinstance(st, ast.Return):
                r = ret_tuple([st])
                if r is not None and default is None:
                    default = r
                return

    walk(func.body)
    mod = inspect.getmodule(fn)
    return {
        "source": f"{mod.__name__}.{fn.__name__}" if mod else fn.__name__,
        "rules": rules,
        "default": default,
        "note": "first matching rule wins; user-given values are kept",
    }


def _install_stubs(names):
    """Put permissive stub modules in sys.modules for `names` (and their
    submodules, via a meta-path finder)."""
    import importlib.abc
    import importlib.machinery
    import types

    class _Meta(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Anything

    class _Anything(metaclass=_Meta):
        def __init__(self, *a, **k):
            pass

        def __call__(self, *a, **k):
            return _Anything()

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Anything()

    class _StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Anything

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path=None, target=None):
            if any(fullname == n or fullname.startswith(n + ".") for n in names):
                return importlib.machinery.ModuleSpec(fullname, self,
                                                      is_package=True)
            return None

        def create_module(self, spec):
            m = _StubModule(spec.name)
            m.__path__ = []
            m.__version__ = "0.0.0+driftwatch-stub"
            return m

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Finder())


def _dump_main(stubs):
    import argparse as _ap
    import importlib
    import importlib.metadata
    import logging
    import platform
    import warnings

    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    if stubs:
        _install_stubs(stubs)
    version = importlib.metadata.version("sglang")
    sa_mod = importlib.import_module("sglang.srt.server_args")
    ServerArgs = sa_mod.ServerArgs
    parser = _ap.ArgumentParser()
    ServerArgs.add_cli_args(parser)

    fields = {f.name: f for f in _record_fields(ServerArgs)}
    aliases = _field_aliases(ServerArgs)

    srt = Path(sa_mod.__file__).parent
    src_files = [sa_mod.__file__]
    src_files += sorted(str(p) for p in (srt / "arg_groups").glob("*.py")) \
        if (srt / "arg_groups").is_dir() else []
    source_msgs = _source_messages(src_files)
    value_tables = _deprecated_value_tables(src_files)

    spec_mods = [sa_mod]
    for name in ("sglang.srt.arg_groups.speculative_hook",):
        try:
            spec_mods.append(importlib.import_module(name))
        except Exception:
            pass
    try:
        spec = _speculative_defaults(spec_mods)
    except Exception as e:  # optional extra; never fail the catalog for it
        spec = {"error": repr(e)}

    options = []
    used_aliases = {}
    for act in parser._actions:
        if isinstance(act, _ap._HelpAction):
            continue
        action, action_class = _action_info(act)
        typ, type_name = _type_info(act.type)
        ok, default = _jsonable(act.default)
        help_text = act.help if isinstance(act.help, str) else None
        field = act.dest
        not_a_field = False
        if act.dest in aliases and aliases[act.dest] in fields:
            field = aliases[act.dest]
            used_aliases[act.dest] = field
        elif act.dest not in fields:
            not_a_field = True
        raw_const = act.const
        if raw_const is None and getattr(act, "const_value", None) is not None:
            # Deprecated*ConstAction keeps the value it stores in const_value.
            raw_const = act.const_value
        okc, const = _jsonable(raw_const)
        opt = {
            "option_strings": list(act.option_strings),
            "primary": act.option_strings[0],
            "dest": act.dest,
            "field": field,
            "action": action,
            "type": typ,
            "nargs": act.nargs,
            "const": const if okc else repr(raw_const),
            "default": default if ok else None,
            "default_repr": None if ok else repr(act.default),
            "choices": _choices(act.choices),
            "required": bool(act.required),
            "deprecated": _deprecation(act, help_text, source_msgs),
            "help": first_sentence(help_text),
        }
        if action_class:
            opt["action_class"] = action_class
        if type_name:
            opt["type_name"] = type_name
        if not_a_field:
            opt["not_a_field"] = True
        table = value_tables.get(field) or value_tables.get(act.dest)
        if table:
            opt["deprecated_values"] = dict(sorted(table.items()))
        f = fields.get(field)
        if f is not None:
            has, fd = _field_default(f)
            if has:
                okf, fdj = _jsonable(fd)
                if okf and (not ok or fdj != default):
                    opt["field_default"] = fdj
                elif not okf and (ok or repr(fd) != repr(act.default)):
                    opt["field_default_repr"] = repr(fd)
        options.append(opt)

    options.sort(key=lambda o: o["primary"])
    catalog = {
        "schema": SCHEMA,
        "engine": "sglang",
        "version": version,
        "generated_by": GENERATED_BY,
        "python": platform.python_version(),
        "counts": {
            "actions": len(options),
            "option_strings": sum(len(o["option_strings"]) for o in options),
        },
        "field_aliases": dict(sorted(used_aliases.items())),
        "options": options,
    }
    if stubs:
        catalog["stubs"] = sorted(stubs)
    if spec:
        catalog["speculative_defaults"] = spec
    sys.stdout.write("@@DRIFTWATCH-CATALOG@@")
    sys.stdout.write(json.dumps(catalog))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
