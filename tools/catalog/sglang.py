"""SGLang: what only SGLang's catalogs need.

* the install plan of an oracle venv per release (``install_plan``,
  ``EXTRA_DEPS``) and the modules stubbed per release (``STUBS``);
* how to get its parser: ``argparse.ArgumentParser()`` filled by
  ``sglang.srt.server_args.ServerArgs.add_cli_args``;
* its converters (``CONVERTERS``), the ``ServerArgs`` fields and the
  ``args.<field> = args.<dest>`` aliases of ``ServerArgs.from_cli_args``, its
  ``deprecated_<field>s`` value tables, and the speculative defaults read from
  ``auto_choose_speculative_params``.

The dump half (``dump`` and what it calls) runs inside the oracle venv:
standard library plus SGLang only. See docs/engines.md.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.catalog import argparse_dump as ad
from tools.catalog.oracle import REPO_ROOT, TORCH_SPEC

NAME = "sglang"
DISTRIBUTION = "sglang"
GENERATED_BY = "tools/catalog/sglang.py"
DEFAULT_OUT = REPO_ROOT / "driftwatch" / "engines" / "sglang" / "catalogs"
# Removed from the dump's environment: 0.5.23 computes some choices from them.
STRIP_ENV_PREFIXES = ("SGLANG_", "SGL_")
# sys.argv while the parser is built. "--help" as for every engine (some only
# compute full help text then); SGLang's catalogs are the same without it.
BUILD_ARGV = ("sglang", "--help")

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
# first matching prefix in EXTRA_DEPS_BY_PREFIX; see docs/engines.md for how to
# find the list for a new release.
_COMMON_05 = ["fastapi", "sentencepiece", "openai", "partial_json_parser", "dill"]
EXTRA_DEPS = {
    # 0.4.6 - 0.4.9: their runtime-common pins, and the triton of their torch (2.6.0: triton 3.2.0; 2.7.1: 3.3.1;
    # today's triton lacks triton.runtime.cache.default_cache_dir, which their sglang/srt/utils.py imports)
    "0.4.6": ["transformers==4.51.1", "xgrammar==0.1.17", "triton==3.2.0", "fastapi", "sentencepiece"],
    "0.4.7": ["transformers==4.52.3", "xgrammar==0.1.19", "triton==3.3.1", "fastapi", "sentencepiece"],
    "0.4.8": ["transformers==4.52.3", "xgrammar==0.1.19", "triton==3.3.1", "fastapi", "sentencepiece"],
    "0.4.9": ["transformers==4.53.0", "xgrammar==0.1.19", "triton==3.3.1", "fastapi", "sentencepiece"],
    "0.4.10.post2": ["transformers==4.57.6", "fastapi", "sentencepiece"],
    # 0.5.1 - 0.5.4: the transformers and xgrammar pins of the release's METADATA (0.5.1, 0.5.2: of its
    # runtime-common extra)
    "0.5.1": ["transformers==4.55.2", "xgrammar==0.1.23"] + _COMMON_05,
    "0.5.2": ["transformers==4.56.1", "xgrammar==0.1.24"] + _COMMON_05,
    "0.5.3": ["transformers==4.57.0", "xgrammar==0.1.24"] + _COMMON_05,
    "0.5.4": ["transformers==4.57.1", "xgrammar==0.1.25"] + _COMMON_05,
    "0.5.5": ["transformers==4.57.6"] + _COMMON_05,
    # 0.5.6 - 0.5.11: the transformers and xgrammar pins of each release's own METADATA
    **{v: ["transformers==4.57.1", "xgrammar==0.1.27"] + _COMMON_05 for v in ("0.5.6", "0.5.7", "0.5.8", "0.5.9")},
    "0.5.10": ["transformers==5.3.0", "xgrammar==0.1.32"] + _COMMON_05,
    "0.5.11": ["transformers==5.6.0", "xgrammar==0.1.32"] + _COMMON_05,
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
    "0.5.4": ["torchvision"],  # sglang/srt/configs/deepseek_ocr.py imports torchvision.transforms
    "0.5.5": [],
    "0.5.11": ["torchvision"],
    "0.5.12": ["torchvision"],
    "0.5.23": [],
}
# Releases between 0.5.12 and 0.5.22 not listed above: sglang/srt/utils/common.py imports
# torchvision.io at import time (0.5.22 no longer does), and the import needs transformers and
# xgrammar (pinned as 0.5.18/0.5.20's METADATA pins them: transformers==5.12.1, xgrammar==0.2.1).
_MID_05 = ((0, 5, 13), (0, 5, 21))
_MID_05_DEPS = ["transformers==5.12.1", "xgrammar==0.2.1"] + _COMMON_05


def _in_range(version: str, low: tuple[int, ...], high: tuple[int, ...]) -> bool:
    key = tuple(int(x) for x in version.split(".")[:3] if x.isdigit())
    return len(key) == 3 and low <= key <= high


def _in_mid_05(version: str) -> bool:
    return _in_range(version, *_MID_05)

# Converters SGLang passes as argparse `type=`, by function name: how to
# classify them, and a short description appended to type_name.
CONVERTERS = {
    "nullable_str": ("str", "str; '' or 'None' -> null"),
    "human_readable_int": ("str", "int, accepts SI/IEC suffixes like 4k, 1Mi"),
    "json_list_type": ("str", "JSON list"),
    "parse_cuda_graph_backend_arg": ("str", "str; rejects retired tc_piecewise"),
    "parse_cuda_graph_config_arg": ("str", "JSON object: phase -> settings"),
}


# ---------------------------------------------------------------------------
# outside: what to install
# ---------------------------------------------------------------------------

def extra_deps_for(version: str) -> list[str]:
    if version in EXTRA_DEPS:
        return list(EXTRA_DEPS[version])
    if _in_mid_05(version):
        return list(_MID_05_DEPS)
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


def stubs_for(version: str) -> list[str]:
    if version not in STUBS and (_in_mid_05(version) or _in_range(version, (0, 5, 6), (0, 5, 10))):
        return ["torchvision"]  # 0.5.11's import needs it already; 0.5.5's does not
    return list(STUBS.get(version, []))


# ---------------------------------------------------------------------------
# inside the oracle venv (standard library + sglang only)
# ---------------------------------------------------------------------------

def type_info(t):
    return ad.type_info(t, CONVERTERS)


def deprecated_value_tables(paths):
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


def field_aliases(server_args_cls):
    """`args.<field> = args.<dest>` copies in ServerArgs.from_cli_args."""
    import inspect

    try:
        src = inspect.getsource(server_args_cls.from_cli_args)
    except (OSError, TypeError, AttributeError):
        return {}
    out = {}
    for m in re.finditer(r"args\.(\w+)\s*=\s*args\.(\w+)\s*$", src, re.M):
        out[m.group(2)] = m.group(1)
    return out


def speculative_defaults(modules):
    """Read SGLang's (steps, topk, draft) choice by architecture from source."""
    import ast
    import inspect
    import textwrap

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
                    return dict(zip(("steps", "topk", "draft"), vals, strict=False))
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


def dump(stubs=()) -> dict:
    """The catalog of the SGLang installed here (without generated_at)."""
    import importlib
    import importlib.metadata

    version = importlib.metadata.version(DISTRIBUTION)
    sa_mod = importlib.import_module("sglang.srt.server_args")
    server_args = sa_mod.ServerArgs
    parser = ad.build_parser(server_args.add_cli_args, BUILD_ARGV)

    srt = Path(sa_mod.__file__).parent
    src_files = [sa_mod.__file__]
    src_files += sorted(str(p) for p in (srt / "arg_groups").glob("*.py")) \
        if (srt / "arg_groups").is_dir() else []
    source_msgs = ad.source_messages(src_files)
    value_tables = deprecated_value_tables(src_files)

    spec_mods = [sa_mod]
    for name in ("sglang.srt.arg_groups.speculative_hook",):
        try:
            spec_mods.append(importlib.import_module(name))
        except Exception:
            pass
    try:
        spec = speculative_defaults(spec_mods)
    except Exception as e:  # optional extra; never fail the catalog for it
        spec = {"error": repr(e)}

    options, positionals, settings = ad.dump_parser(parser, CONVERTERS, source_msgs)
    fields = {f.name: f for f in ad.record_fields(server_args)}
    used = ad.attach_fields(options + positionals, fields,
                            field_aliases(server_args))
    for _act, rec in options + positionals:
        table = value_tables.get(rec["field"]) or value_tables.get(rec["dest"])
        if table:
            rec["deprecated_values"] = dict(sorted(table.items()))

    return ad.catalog(
        NAME, version, GENERATED_BY,
        options=[rec for _a, rec in options],
        positionals=[rec for _a, rec in positionals],
        field_aliases=used,
        settings=settings,
        stubs=stubs,
        extra={"speculative_defaults": spec},
    )
