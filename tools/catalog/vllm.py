"""vLLM: what only vLLM's catalogs need.

* the install plan of an oracle venv per release: the vLLM wheel with
  ``--no-deps``, then the wheel's own ``Requires-Dist`` minus the GPU-only
  packages (``GPU_ONLY``), on a shared base venv holding the CPU torch
  (``BASE_PLAN``; every release venv is layered on it with a ``.pth``);
* how to get the parser: the ``vllm serve`` subparser, i.e.
  ``make_arg_parser(FlexibleArgumentParser())`` (both moved between
  releases: ``_MAKE_ARG_PARSER`` / ``_FLEXIBLE_PARSER``), built with
  ``--help`` in ``sys.argv`` (vLLM only computes full help text then) and,
  in releases that cannot infer a device without a GPU, with vLLM's
  ``CpuPlatform`` set as the current platform first;
* its converters by name (``CONVERTERS``), the ``EngineArgs`` fields,
  deprecation notes in help ("[DEPRECATED]", "will be removed in vX"),
  ``EnableDisableAction`` pairs (0.33), and the ``VLLM_*`` environment
  variables of ``vllm.envs`` with their defaults (written as
  ``envs-<VERSION>.json`` beside the catalog, see ``extra_files``).

The dump half (``dump`` and what it calls) runs inside the oracle venv:
standard library plus vLLM only. See docs/engines.md, "vLLM (`catalog/vllm.py`)".
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from tools.catalog import argparse_dump as ad
from tools.catalog.oracle import DEFAULT_ORACLE_ROOT, REPO_ROOT, TORCH_SPEC

NAME = "vllm"
DISTRIBUTION = "vllm"
GENERATED_BY = "tools/catalog/vllm.py"
DEFAULT_OUT = REPO_ROOT / "driftwatch" / "engines" / "vllm" / "catalogs"
# Removed from the dump's environment: vLLM reads dozens of VLLM_* variables
# while it imports (platform, plugins, defaults of some flags).
STRIP_ENV_PREFIXES = ("VLLM_",)
# sys.argv while the parser is built: the `vllm serve` command line asking for
# help, so vLLM's NEEDS_HELP is true and every flag gets its help text.
BUILD_ARGV = ("vllm", "serve", "--help")

# One shared base venv with the CPU torch; each release venv sees it through a
# .pth file (tools/catalog/oracle.py, link_base). Saves ~1 GB and a torch
# install per release.
BASE_PLAN = [[TORCH_SPEC]]
BASE_VENV = DEFAULT_ORACLE_ROOT / "_base"

# Where release wheels are downloaded once (pip download --no-deps) to read
# their Requires-Dist; pip installs vllm from here too.
WHEELS = DEFAULT_ORACLE_ROOT / "_wheels"

# Requires-Dist entries never installed: CUDA/GPU-only packages, torch and its
# companions (the base venv has the CPU torch), and heavy packages the parser
# never needs. Lower-case, '-' for '_'.
GPU_ONLY = {
    "torch", "torchaudio", "torchvision", "torchcodec", "xformers", "triton",
    "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache",
    "cupy-cuda12x", "ray", "numba", "tilelang", "quack-kernels",
    "humming-kernels", "tokenspeed-mla", "fastsafetensors", "instanttensor",
    "deep-gemm", "apache-tvm-ffi", "pynvvideocodec", "nvtx",
    "nvidia-cudnn-frontend", "nvidia-cutlass-dsl", "nvidia-ml-py",
    "intel-extension-for-pytorch", "vllm-flash-attn",
}

# Per-release extra pip requirements, added to the wheel's own list. Old
# releases only give a lower bound for transformers, and today's transformers
# no longer imports with them: pin one from the release's time.
EXTRA_DEPS: dict[str, list[str]] = {
    "0.8.2": ["transformers==4.49.0"],
    "0.9.0": ["transformers==4.52.4"],  # today's 4.x registers 'aimv2', which 0.9.0 registers too
    "0.10.0": ["transformers==4.53.3"],
    "0.11.0": ["transformers==4.56.2"],
}
# Per-release replacements of a Requires-Dist entry (normalized name ->
# requirement, or None to drop it), for pins that PyPI no longer serves.
OVERRIDES: dict[str, dict[str, str | None]] = {
    # xgrammar 0.1.16 is gone from PyPI (0.1.13 and 0.1.17 remain).
    "0.8.2": {"xgrammar": "xgrammar==0.1.17"},
}
# Modules replaced by stubs while dumping, per release (none needed so far).
STUBS: dict[str, list[str]] = {}

# vLLM's argparse converters, by function name -> (kind, description).
CONVERTERS = {
    "human_readable_int": ("str", "int, accepts k/m/g/K/M/G suffixes like 25.6k, 1M"),
    "human_readable_int_or_auto": ("str", "int with k/m/g/K/M/G suffixes, or 'auto'/-1"),
    "parse_dataclass": ("json", "JSON object validated as the config dataclass"),
    "parse_type": ("str", "the inner type; a ValueError becomes an argparse error"),
    "optional_type": ("str", "'None'/'' -> null, else the inner type"),
    "union_dict_and_str": ("str", "JSON object, else str"),
    "nullable_str": ("str", "str; '' or 'None' -> null"),
    "nullable_kvs": ("str", "comma-separated key=value list"),
    "parse_args_json": ("json", "JSON object"),
    "parse_s3_uri": ("str", "str"),
}


# ---------------------------------------------------------------------------
# outside: what to install
# ---------------------------------------------------------------------------

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_path(version: str) -> Path:
    """The release's wheel in WHEELS, downloaded (no deps) if missing."""
    found = sorted(WHEELS.glob(f"vllm-{version}-*.whl"))
    if not found:
        WHEELS.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                        "--no-deps", "-d", str(WHEELS), f"vllm=={version}"],
                       check=True)
        found = sorted(WHEELS.glob(f"vllm-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel for vllm {version} in {WHEELS}")
    return found[0]


def wheel_requirements(metadata: str, overrides=None) -> list[str]:
    """``Requires-Dist`` of a wheel's METADATA minus extras-only and
    GPU_ONLY entries, markers kept (pip evaluates them); ``overrides``
    replaces (or, with None, drops) entries by normalized name."""
    overrides = overrides or {}
    out = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        if "extra ==" in req:
            continue
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req).group(0)
        if _norm(name) in GPU_ONLY or _norm(name).startswith("nvidia-"):
            continue
        if _norm(name) in overrides:
            req = overrides[_norm(name)]
            if req is None:
                continue
        out.append(req)
    return out


def install_plan(version: str) -> list[list[str]]:
    """The pip invocations for a release: the wheel without deps, then its
    non-GPU requirements with the base venv's CPU torch pinned (so no
    requirement can pull a CUDA torch)."""
    whl = wheel_path(version)
    with zipfile.ZipFile(whl) as z:
        meta = z.read(f"vllm-{version}.dist-info/METADATA").decode()
    return [
        ["--no-deps", "--find-links", str(WHEELS), f"vllm=={version}"],
        [TORCH_SPEC] + wheel_requirements(meta, OVERRIDES.get(version))
        + EXTRA_DEPS.get(version, []),
    ]


def stubs_for(version: str) -> list[str]:
    return list(STUBS.get(version, []))


# ---------------------------------------------------------------------------
# inside the oracle venv (standard library + vllm only)
# ---------------------------------------------------------------------------

# Where the pieces of `vllm serve` live, newest first (they moved).
_SERVE_SUBCOMMAND = ("vllm.entrypoints.cli.serve",)
_MAKE_ARG_PARSER = ("vllm.entrypoints.common.cli_args",      # 0.33
                    "vllm.entrypoints.launchers.cli_args",   # 0.30
                    "vllm.entrypoints.openai.cli_args")      # 0.8 - 0.25
_FLEXIBLE_PARSER = ("vllm.utils.argparse_utils",             # 0.15+
                    "vllm.utils")                            # 0.8 - 0.11


def _first_attr(modules, attr):
    import importlib

    errors = []
    for name in modules:
        try:
            mod = importlib.import_module(name)
        except ImportError as e:
            errors.append(f"{name}: {e!r}")
            continue
        if hasattr(mod, attr):
            return mod, getattr(mod, attr)
    raise ImportError(f"no {attr} in {modules}: {errors}")


def current_platform_name() -> str:
    import vllm.platforms as platforms

    return type(platforms.current_platform).__name__


def use_cpu_platform() -> None:
    """Make vLLM's CpuPlatform the current platform, also in every module
    that already bound ``current_platform`` at import.

    0.8 - 0.25 build a ``DeviceConfig()`` default while adding arguments,
    which raises "Failed to infer device type" on a machine without a GPU
    (the GPU wheel resolves to UnspecifiedPlatform there); 0.30+ do not.
    ``dump`` calls this only after a first build failed that way."""
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    old = platforms.current_platform
    new = CpuPlatform()
    platforms._current_platform = new
    for mod in list(sys.modules.values()):
        try:
            if getattr(mod, "current_platform", None) is old:
                mod.current_platform = new
        except Exception:
            pass


def serve_parser():
    """(the ``vllm serve`` subparser, where it came from): a
    FlexibleArgumentParser with subparsers, filled by
    ``ServeSubcommand().subparser_init`` as ``vllm`` does (which calls
    ``make_arg_parser``); ``make_arg_parser(FlexibleArgumentParser())`` if a
    release has no ServeSubcommand."""
    fmod, flexible = _first_attr(_FLEXIBLE_PARSER, "FlexibleArgumentParser")
    try:
        smod, serve_cls = _first_attr(_SERVE_SUBCOMMAND, "ServeSubcommand")
    except ImportError:
        serve_cls = None
    mmod, _make = _first_attr(_MAKE_ARG_PARSER, "make_arg_parser")
    source = {
        "FlexibleArgumentParser": f"{fmod.__name__}.FlexibleArgumentParser",
        "make_arg_parser": f"{mmod.__name__}.make_arg_parser",
    }
    if serve_cls is not None:
        def make():
            top = flexible(prog="vllm")
            subs = top.add_subparsers(dest="subparser")
            return serve_cls().subparser_init(subs)
        source["built_by"] = f"{smod.__name__}.ServeSubcommand().subparser_init"
    else:
        def make():
            return _make(flexible(prog="vllm serve"))
        source["built_by"] = f"{mmod.__name__}.make_arg_parser"
    return ad.build_parser(make, BUILD_ARGV), source


def _closure(fn):
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def converter_name(t) -> str:
    """A readable spelling of a vLLM argparse ``type=``:
    ``optional_type(int)``, ``parse_type(json.loads)``,
    ``parse_dataclass(SpeculativeConfig)``, ``human_readable_int`` ..."""
    import functools
    import json

    if t is json.loads:
        return "json.loads"
    if isinstance(t, type):
        return t.__name__
    if isinstance(t, functools.partial):
        return converter_name(t.func)
    qual = getattr(t, "__qualname__", None) or type(t).__qualname__
    short = qual.rsplit(".", 1)[-1]
    cl = _closure(t)
    if short in ("_optional_type", "_parse_type") and "return_type" in cl:
        outer = short.lstrip("_")
        return f"{outer}({converter_name(cl['return_type'])})"
    if short == "parse_dataclass":
        cls = (getattr(t, "__defaults__", None) or (None,))[-1]
        if isinstance(cls, type):
            return f"parse_dataclass({cls.__name__})"
    # module-level functions and methods by qualname
    # (CompilationConfig.from_cli), closures by their own name
    return short if "<locals>" in qual else qual


def _innermost(t):
    cl = _closure(t)
    while "return_type" in cl:
        t = cl["return_type"]
        cl = _closure(t)
    return t


def type_info(t):
    """(type, type_name): the generic classification of the innermost
    converter (``optional_type(int)`` is an int that also takes 'None'/''),
    ``type_name`` the readable spelling plus, for vLLM's own converters, a
    description."""
    import json

    if t is None:
        return None, None
    name = converter_name(t)
    inner = _innermost(t)
    if inner is t:
        kind, tname = ad.type_info(t, CONVERTERS)
        if tname is None:
            return kind, None
        short = name.split("(", 1)[0]
        if short in CONVERTERS:
            return kind, f"{name} ({CONVERTERS[short][1]})"
        return kind, name
    if inner is json.loads:
        kind = "json"
    else:
        kind, _ = ad.type_info(inner, CONVERTERS)
    outer = name.split("(", 1)[0]
    desc = CONVERTERS.get(outer, (None, None))[1]
    return kind, f"{name} ({desc})" if desc else name


# "[DEPRECATED] ...", "... is deprecated and will be removed in v0.12.0",
# "This argument is deprecated", "Deprecated: ...": a note about *this* flag.
_DEP_NOTE = re.compile(
    r"^\W*deprecated\b|\[deprecated\]|\b(?:this|the)\s+(?:flag|argument|option|"
    r"parameter|field)\s+(?:is|has been|will be)\s+(?:now\s+)?deprecated\b|"
    r"^[^.]*?\bis\s+deprecated\b|\bwill be removed in\b|\bdeprecated in v?\d|"
    r"\bhas been replaced by\b",
    re.I,
)
_REMOVED_IN = re.compile(r"\bremoved\s+in\s+(?:vllm\s+)?v?(\d+\.\d+(?:\.\d+)?)", re.I)


def help_deprecation(text):
    """(note, removed_in) from a flag's full help text: the sentence that
    says the flag is deprecated or will be removed, and the release named in
    "removed in vX" (None when there is none)."""
    if not text:
        return None, None
    t = " ".join(str(text).split())
    if not _DEP_NOTE.search(t):
        return None, None
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z\[(`-])", t)
    i = next((i for i, s in enumerate(sentences) if _DEP_NOTE.search(s)), 0)
    note = sentences[i]
    # "... Use --new-flag instead." in the note or the sentence after it.
    short = ad.replacement(" ".join(sentences[i:i + 2]))
    # only a replacement that names a flag or field ("use --new-flag",
    # "use `pooler_config`", "use cp_kv_cache_interleave_size"), not prose
    # ("[DEPRECATED] The task to use the model for.")
    if short and not re.match(r"(?:use|set) (?:`|--|\w+[_.]\w)", short):
        short = None
    if short:
        short = re.split(r",\s+(?:and|but|which)\b", short)[0]
    m = _REMOVED_IN.search(t)
    return ad.clean_msg(short or note), (m.group(1) if m else None)


def negative_option_strings(parser, act):
    """Option strings that set a boolean flag to False: EnableDisableAction's
    ``negative_option_strings`` (0.33: ``--disable-x``, ``--no-x``, hidden
    ``--no-enable-x``), else the ``--no-`` spellings of a
    BooleanOptionalAction. None for other actions."""
    import argparse

    if not isinstance(act, argparse.BooleanOptionalAction):
        return None
    neg = getattr(act, "negative_option_strings", None)
    registered = {s for s, a in parser._option_string_actions.items() if a is act}
    if neg is None:
        neg = {s for s in registered if s.startswith("--no-")}
    return sorted(s for s in neg if s in registered)


def env_variables():
    """The ``VLLM_*`` (and other) variables ``vllm.envs`` reads: name,
    default (the lambda evaluated with no VLLM_* set), the lambda's source,
    and choices where the release declares them (``env_with_choices``)."""
    import inspect
    import os

    import vllm.envs as envs

    out = []
    for name, fn in envs.environment_variables.items():
        rec = {"name": name}

        def read(fn=fn):
            # some lambdas store what they made up in os.environ
            # (get_env_or_set_default): undo that after each read
            saved = dict(os.environ)
            try:
                return fn()
            finally:
                os.environ.clear()
                os.environ.update(saved)

        try:
            value = read()
            ok, j = ad.jsonable(value)
            if repr(read()) != repr(value):
                # made up on each read (0.33 VLLM_MM_SHM_NAME: a random
                # name): no default to record
                rec["default"] = None
                rec["default_varies"] = True
            else:
                rec["default"] = j if ok else None
                if not ok:
                    rec["default_repr"] = repr(value)
        except Exception as e:  # e.g. reads os.environ[...] unconditionally
            rec["default"] = None
            rec["default_error"] = type(e).__name__
        cl = _closure(fn)
        choices = cl.get("choices")
        if callable(choices):
            try:
                choices = choices()
            except Exception:
                choices = None
        if isinstance(choices, (list, tuple, set, frozenset)):
            rec["choices"] = ad.choices_list(choices)
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            src = None
        if src and "lambda" in src:
            src = " ".join(src.split())
            src = src[src.index("lambda"):].rstrip(",")
            rec["expr"] = src if len(src) <= 300 else src[:297] + "..."
        out.append(rec)
    out.sort(key=lambda r: r["name"])
    return out


def envs_document(version, variables):
    return {
        "schema": "driftwatch.engine-envs/v1",
        "engine": NAME,
        "version": version,
        "generated_by": GENERATED_BY,
        "source": "vllm.envs.environment_variables",
        "counts": {"variables": len(variables),
                   "vllm_variables": sum(v["name"].startswith("VLLM_")
                                         for v in variables)},
        "variables": variables,
    }


def _fields():
    """{name: field} of the dataclasses behind the serve flags: EngineArgs /
    AsyncEngineArgs and the frontend's FrontendArgs (0.10+)."""
    import dataclasses
    import importlib

    fields = {}
    for modname, clsname in (("vllm.engine.arg_utils", "AsyncEngineArgs"),) + \
            tuple((m, "FrontendArgs") for m in _MAKE_ARG_PARSER):
        try:
            cls = getattr(importlib.import_module(modname), clsname)
        except (ImportError, AttributeError):
            continue
        if dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                fields.setdefault(f.name, f)
    return fields


def serve_aliases(serve_cls, fields):
    """``args.<field> = args.<dest>`` copies in ``ServeSubcommand.cmd`` where
    ``dest`` is no field itself: the positional ``model_tag`` -> ``model``
    in every release. (``args.api_server_count = args.data_parallel_size``
    is a computed value, not an alias, and is left out.)"""
    import inspect

    try:
        src = inspect.getsource(serve_cls.cmd)
    except (OSError, TypeError, AttributeError):
        return {}
    return {m.group(2): m.group(1)
            for m in re.finditer(r"args\.(\w+)\s*=\s*args\.(\w+)\s*$", src, re.M)
            if m.group(2) not in fields and m.group(1) in fields}


def _round(x):
    return round(x, 1)


def dump(stubs=()) -> dict:
    """The catalog of the vLLM installed here (without generated_at); the
    environment-variable document goes under ``_files`` (written beside the
    catalog by the CLI as ``envs-<VERSION>.json``)."""
    import importlib
    import importlib.metadata
    import time

    t0 = time.monotonic()
    version = importlib.metadata.version(DISTRIBUTION)
    # "--help" in sys.argv for the whole dump: 0.33 computes NEEDS_HELP when
    # arg_utils is imported, older releases when the parser is built.
    with ad.argv_as(BUILD_ARGV):
        importlib.import_module("vllm.engine.arg_utils")
        t1 = time.monotonic()
        patched = False
        try:
            parser, source = serve_parser()
        except Exception as e:  # noqa: BLE001
            if "infer device" not in str(e):
                raise
            use_cpu_platform()
            patched = True
            parser, source = serve_parser()
        platform_name = current_platform_name()
    t2 = time.monotonic()

    variables = env_variables()
    fields = _fields()
    try:
        _m, serve_cls = _first_attr(_SERVE_SUBCOMMAND, "ServeSubcommand")
        aliases = serve_aliases(serve_cls, fields)
    except ImportError:
        aliases = {}
    doc = catalog_of(parser, version, fields, source, stubs=stubs,
                     aliases=aliases)
    t3 = time.monotonic()
    doc["parser"].update(platform=platform_name, cpu_platform_patched=patched)
    doc["counts"]["env_variables"] = len(variables)
    doc["dump_seconds"] = {"import": _round(t1 - t0), "build": _round(t2 - t1),
                           "total": _round(t3 - t0)}
    doc["_files"] = {f"envs-{version}.json": envs_document(version, variables)}
    return doc


def records(parser):
    """(options, positionals, settings) of a vLLM parser: the generic dump
    plus what vLLM needs (readable converter names, full help, deprecation
    notes and ``removed_in`` from help, ``deprecated_kwarg`` from the
    parser's ``_deprecated`` set, ``negative_option_strings``)."""
    options, positionals, settings = ad.dump_parser(parser, CONVERTERS)
    for act, rec in options + positionals:
        typ, tname = type_info(act.type)
        rec["type"] = typ
        rec.pop("type_name", None)
        if tname:
            rec["type_name"] = tname
        full = " ".join(act.help.split()) if isinstance(act.help, str) else None
        if full == "==SUPPRESS==":
            rec["help_suppressed"] = True
            full = None
        if full and full != rec["help"]:
            rec["help_full"] = full
        note, removed_in = help_deprecation(full)
        # The help note says more than a bare "deprecated" (what a
        # Deprecated* action class without a message gives).
        if note and rec["deprecated"] in (None, "deprecated"):
            rec["deprecated"] = note
        if removed_in:
            rec["removed_in"] = removed_in
        if ad.argparse_deprecated(act, parser):
            rec["deprecated_kwarg"] = True
        neg = negative_option_strings(parser, act)
        if neg:
            rec["negative_option_strings"] = neg
    return options, positionals, settings


def catalog_of(parser, version, fields, source, stubs=(), aliases=None):
    """The catalog document of a built ``vllm serve`` parser (no timings,
    platform or generated_at: ``dump`` adds those). ``aliases``: {dest:
    field} copies made after parsing (``serve_aliases``)."""
    options, positionals, settings = records(parser)
    used = ad.attach_fields(options + positionals, fields, aliases or {})
    doc = ad.catalog(
        NAME, version, GENERATED_BY,
        options=[rec for _a, rec in options],
        positionals=[rec for _a, rec in positionals],
        field_aliases=used,
        settings=settings,
        stubs=stubs,
        extra={
            "parser": {**source, "prog": parser.prog, "argv": list(BUILD_ARGV)},
            "envs_file": f"envs-{version}.json",
        },
    )
    doc["allow_abbrev"] = settings["allow_abbrev"]
    doc["counts"]["deprecated"] = sum(
        1 for _a, r in options + positionals if r["deprecated"])
    return doc
