"""vLLM's catalog module (tools/catalog/vllm.py).

Without any vLLM: its pure functions on a fake ``FlexibleArgumentParser``-like
parser built the way vLLM builds ``vllm serve`` (a ``model_tag`` positional,
0.33's ``EnableDisableAction`` with its hidden ``--no-enable-x``, a
``_deprecated`` set filled from ``add_argument(deprecated=True)``, vLLM's
converters as closures), the install plan from a wheel's METADATA, the
``VLLM_*`` variable reader on a fake ``vllm.envs``, and the base-venv layering
of tools/catalog/oracle.py.

With an oracle venv (``/work/oracles/vllm-<VERSION>``, root overridable with
``DRIFTWATCH_ORACLE_ROOT``, or ``DRIFTWATCH_VLLM_ORACLE=/path/bin/python`` for
one release): each shipped catalog and its ``envs-<VERSION>.json`` are
regenerated and must equal the shipped files byte for byte, except
``generated_at`` and ``dump_seconds`` (a timing). Skipped otherwise, saying
how to make the oracle.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from driftwatch.engines import catalog_delta as cd
from tools.catalog import ENGINES, argparse_dump as ad, cli as catalog_cli, load_engine, oracle, vllm as V

REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# a fake of vLLM's parser machinery (shapes copied from the 0.33 sources)
# ---------------------------------------------------------------------------

def human_readable_int(value):
    value = value.strip()
    if value[-1] in "kK":
        return int(float(value[:-1]) * (1000 if value[-1] == "k" else 1024))
    return int(value)


def human_readable_int_or_auto(value):
    return -1 if value in ("-1", "auto") else human_readable_int(value)


def parse_type(return_type):
    def _parse_type(val):
        try:
            return return_type(val)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from e
    return _parse_type


def optional_type(return_type):
    def _optional_type(val):
        if val in ("", "None"):
            return None
        return parse_type(return_type)(val)
    return _optional_type


@dataclasses.dataclass
class SpeculativeConfig:
    method: str | None = None
    num_speculative_tokens: int | None = None


def _make_parse_dataclass(dataclass_cls):
    def parse_dataclass(val, cls=dataclass_cls):
        return cls(**json.loads(val))
    return parse_dataclass


class CompilationConfig:
    @classmethod
    def from_cli(cls, value):
        if value.isdigit():
            return {"level": int(value)}
        return dict(json.loads(value))


class EnableDisableAction(argparse.BooleanOptionalAction):
    """vLLM 0.33's: --enable-x pairs with --disable-x; --no-enable-x hidden."""

    _inverse_prefixes = {"--enable-": "--disable-", "--disable-": "--enable-"}

    def __init__(self, option_strings, dest, *args, **kwargs):
        super().__init__(option_strings, dest, *args, **kwargs)
        inverses = [inverse + opt.removeprefix(prefix)
                    for opt in option_strings
                    for prefix, inverse in self._inverse_prefixes.items()
                    if opt.startswith(prefix)]
        negated = {o for o in self.option_strings if o not in option_strings}
        self.negative_option_strings = negated | set(inverses)
        self.visible_option_strings = (
            [*option_strings, *inverses] if inverses else list(self.option_strings))
        self.option_strings = [*self.option_strings, *inverses]

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest,
                option_string not in self.negative_option_strings)


class FakeFlexibleArgumentParser(argparse.ArgumentParser):
    """Like vLLM's FlexibleArgumentParser on Python < 3.13: ``deprecated=``
    popped into ``_deprecated``; EnableDisableAction's hidden spellings stay
    registered but leave ``option_strings``."""

    def __init__(self, *a, **kw):
        self._deprecated = set()
        super().__init__(*a, **kw)

    def add_argument(self, *args, **kwargs):
        deprecated = kwargs.pop("deprecated", False)
        action = super().add_argument(*args, **kwargs)
        if isinstance(action, EnableDisableAction):
            action.option_strings = action.visible_option_strings
        if deprecated:
            self._deprecated.add(action)
        return action


@dataclasses.dataclass
class FakeEngineArgs:
    model: str = "Qwen/Qwen3-0.6B"
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enable_prefix_caching: bool | None = None
    async_scheduling: bool | None = None
    speculative_config: dict | None = None
    compilation_config: dict | None = None
    tensor_parallel_size: int = 1
    disable_log_requests: bool = False
    kv_cache_dtype: str = "auto"


def fake_serve_parser():
    p = FakeFlexibleArgumentParser(prog="vllm serve")
    p.add_argument("model_tag", type=str, nargs="?",
                   help="The model tag to serve (optional if specified in config)")
    p.add_argument("--config", help="Read CLI options from a config file.")
    p.add_argument("--model", type=str, default="Qwen/Qwen3-0.6B",
                   help="Name or path of the Hugging Face model to use.")
    p.add_argument("--max-model-len", type=human_readable_int_or_auto,
                   help="Model context length. Parse human-readable integers.")
    p.add_argument("--max-num-batched-tokens",
                   type=optional_type(human_readable_int),
                   help="Maximum number of tokens per iteration.")
    p.add_argument("--max-num-seqs", type=optional_type(int),
                   help="Maximum number of sequences per iteration.")
    p.add_argument("--enable-prefix-caching", action=EnableDisableAction,
                   default=None, help="Whether to enable prefix caching.")
    p.add_argument("--async-scheduling", action=EnableDisableAction,
                   default=None, help="Async scheduling.")
    p.add_argument("--speculative-config", "-sc", type=optional_type(json.loads),
                   help="The configurations for speculative decoding.")
    p.add_argument("--compilation-config", "-cc",
                   type=_make_parse_dataclass(SpeculativeConfig),
                   default=SpeculativeConfig(),
                   help="torch.compile configuration. Should be valid JSON.")
    p.add_argument("--legacy-compile", type=CompilationConfig.from_cli,
                   help=argparse.SUPPRESS)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1,
                   help="Number of tensor parallel groups.")
    p.add_argument("--disable-log-requests", action="store_true", deprecated=True,
                   help="[DEPRECATED] Disable logging requests.")
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8"], default="auto",
                   help="Data type for kv cache storage. This argument is "
                        "deprecated and will be removed in v0.34.0. Use "
                        "--cache-dtype instead.")
    p.add_argument("--allow-deprecated-quantization", action="store_true",
                   help="Whether to allow deprecated quantization methods.")
    return p


# ---------------------------------------------------------------------------
# registry and install plan
# ---------------------------------------------------------------------------

def test_registered_and_interface():
    assert ENGINES["vllm"] == "tools.catalog.vllm"
    mod = load_engine("vllm")
    for name in ("NAME", "DISTRIBUTION", "GENERATED_BY", "DEFAULT_OUT",
                 "STRIP_ENV_PREFIXES", "install_plan", "stubs_for", "dump",
                 "BASE_PLAN"):
        assert hasattr(mod, name), name
    assert mod.NAME == mod.DISTRIBUTION == "vllm"
    assert mod.STRIP_ENV_PREFIXES == ("VLLM_",)
    assert mod.DEFAULT_OUT == REPO / "driftwatch" / "engines" / "vllm" / "catalogs"
    assert mod.BASE_PLAN == [[oracle.TORCH_SPEC]]
    # vllm serve --help: NEEDS_HELP is true in every release (0.10 wants
    # "serve" and "--help" in argv[1:]).
    assert "serve" in mod.BUILD_ARGV[1:] and "--help" in mod.BUILD_ARGV[1:]
    assert catalog_cli.base_of(mod) == (mod.BASE_PLAN, mod.BASE_VENV)
    assert catalog_cli.base_of(load_engine("sglang")) is None


METADATA = """\
Metadata-Version: 2.1
Name: vllm
Version: 0.10.0
Requires-Dist: regex
Requires-Dist: transformers>=4.53.2
Requires-Dist: xgrammar==0.1.16; platform_machine == "x86_64"
Requires-Dist: torch==2.7.1
Requires-Dist: torchaudio==2.7.1
Requires-Dist: xformers==0.0.31; platform_system == "Linux"
Requires-Dist: flashinfer-python==0.2.8
Requires-Dist: nvidia-cutlass-dsl[cu13]==4.8.0
Requires-Dist: ray[cgraph]>=2.43.0
Requires-Dist: numba==0.61.2; python_version > "3.9"
Requires-Dist: six>=1.16.0; python_version > "3.11"
Requires-Dist: tensorizer==2.10.1; extra == "tensorizer"
"""


def test_wheel_requirements_drop_gpu_and_extras_keep_markers():
    assert V.wheel_requirements(METADATA) == [
        "regex", "transformers>=4.53.2",
        'xgrammar==0.1.16; platform_machine == "x86_64"',
        'six>=1.16.0; python_version > "3.11"',
    ]
    assert V.wheel_requirements(
        METADATA, {"xgrammar": "xgrammar==0.1.17", "regex": None}) == [
        "transformers>=4.53.2", "xgrammar==0.1.17",
        'six>=1.16.0; python_version > "3.11"',
    ]


def test_install_plan_from_cached_wheel(tmp_path, monkeypatch):
    import zipfile

    monkeypatch.setattr(V, "WHEELS", tmp_path)
    whl = tmp_path / "vllm-0.10.0-cp38-abi3-manylinux1_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("vllm-0.10.0.dist-info/METADATA", METADATA)
    plan = V.install_plan("0.10.0")
    assert plan[0] == ["--no-deps", "--find-links", str(tmp_path), "vllm==0.10.0"]
    assert plan[1][0] == oracle.TORCH_SPEC          # the base's CPU torch, pinned
    assert "transformers==4.53.3" in plan[1]        # EXTRA_DEPS of 0.10.0
    assert not any(r.startswith(("torch", "xformers", "ray")) for r in plan[1][1:])


# ---------------------------------------------------------------------------
# converters, deprecation notes, booleans
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("conv, name, kind", [
    (int, "int", "int"),
    (json.loads, "json.loads", "json"),
    (optional_type(int), "optional_type(int)", "int"),
    (optional_type(str), "optional_type(str)", "str"),
    (optional_type(json.loads), "optional_type(json.loads)", "json"),
    (parse_type(json.loads), "parse_type(json.loads)", "json"),
    (optional_type(parse_type(json.loads)), "optional_type(parse_type(json.loads))", "json"),
    (_make_parse_dataclass(SpeculativeConfig), "parse_dataclass(SpeculativeConfig)", "json"),
    (optional_type(_make_parse_dataclass(SpeculativeConfig)),
     "optional_type(parse_dataclass(SpeculativeConfig))", "json"),
    (human_readable_int, "human_readable_int", "str"),
    (human_readable_int_or_auto, "human_readable_int_or_auto", "str"),
    (optional_type(human_readable_int), "optional_type(human_readable_int)", "str"),
    (CompilationConfig.from_cli, "CompilationConfig.from_cli", "str"),
])
def test_converter_names(conv, name, kind):
    assert V.converter_name(conv) == name
    typ, tname = V.type_info(conv)
    assert typ == kind
    if conv in (int, json.loads):
        assert tname is None
    else:
        assert tname.split(" (")[0] == name
        outer = name.split("(")[0]
        if outer in V.CONVERTERS:
            assert tname == f"{name} ({V.CONVERTERS[outer][1]})"


@pytest.mark.parametrize("text, note, removed_in", [
    ("[DEPRECATED] Disable logging requests.", "[DEPRECATED] Disable logging requests.", None),
    ("--mamba-cache-mode is deprecated and will be removed in v0.33.0. It has no effect.",
     "--mamba-cache-mode is deprecated and will be removed in v0.33.0.", "0.33.0"),
    ("--log-config-file is deprecated and will be removed in v0.33.0. "
     "Use --logging-config.pylogging_config_file instead.",
     "use --logging-config.pylogging_config_file", "0.33.0"),
    ("IR op priority. Deprecated: vLLM IR is being removed, and this option "
     "will be removed in v0.34.0. Kernels will be selected by the platform.",
     "Deprecated: vLLM IR is being removed, and this option will be removed in v0.34.0.",
     "0.34.0"),
    ("Interleave size. dcp_kv_cache_interleave_size has been replaced by "
     "cp_kv_cache_interleave_size, and will be deprecated when PCP is fully supported.",
     "use cp_kv_cache_interleave_size", None),
    ("Deprecated: This option is deprecated and will be removed in v0.19. It enables x.",
     "Deprecated: This option is deprecated and will be removed in v0.19.", "0.19"),
    ("[DEPRECATED] Use `pooler_config` instead. This field will be removed in "
     "v0.12.0 or v1.0.0, whichever is sooner.", "use `pooler_config`", "0.12.0"),
    # "use" in prose is no replacement
    ("[DEPRECATED] The task to use the model for. If the model supports more.",
     "[DEPRECATED] The task to use the model for.", None),
    # mentions of other deprecated things are no note about the flag
    ("Whether to allow deprecated quantization methods.", None, None),
    ("Enable deprecated Prometheus metrics that have been hidden since the "
     "specified version. For example v0.7.0.", None, None),
    (None, None, None),
])
def test_help_deprecation(text, note, removed_in):
    assert V.help_deprecation(text) == (note, removed_in)


# ---------------------------------------------------------------------------
# records and the catalog of a fake `vllm serve` parser
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_doc():
    fields = {f.name: f for f in dataclasses.fields(FakeEngineArgs)}
    source = {"built_by": "test", "make_arg_parser": "test.make_arg_parser",
              "FlexibleArgumentParser": "test.FakeFlexibleArgumentParser"}
    return V.catalog_of(fake_serve_parser(), "0.99.0", fields, source,
                        aliases=V.serve_aliases(FakeServeSubcommand, fields))


def _opt(doc, primary):
    return next(o for o in doc["options"] if o["primary"] == primary)


class FakeServeSubcommand:
    @staticmethod
    def cmd(args):
        if hasattr(args, "model_tag") and args.model_tag is not None:
            args.model = args.model_tag
        if args.headless:
            args.api_server_count = 0
        else:
            args.tensor_parallel_size = args.max_num_seqs


def test_serve_aliases():
    fields = {f.name for f in dataclasses.fields(FakeEngineArgs)}
    # model_tag is no field: an alias; max_num_seqs is one: a computed copy
    assert V.serve_aliases(FakeServeSubcommand, fields) == {"model_tag": "model"}
    assert V.serve_aliases(object, fields) == {}


def test_positional_model_tag(fake_doc):
    (pos,) = fake_doc["positionals"]
    assert pos["primary"] == pos["dest"] == "model_tag"
    assert pos["option_strings"] == [] and pos["position"] == 0
    assert pos["nargs"] == "?" and pos["required"] is False
    assert pos["field"] == "model" and "not_a_field" not in pos
    assert fake_doc["field_aliases"] == {"model_tag": "model"}
    assert fake_doc["counts"]["positionals"] == 1
    assert not any(o["primary"] == "model_tag" for o in fake_doc["options"])


def test_enable_disable_pairs_and_hidden_aliases(fake_doc):
    o = _opt(fake_doc, "--enable-prefix-caching")
    assert o["option_strings"] == ["--enable-prefix-caching", "--disable-prefix-caching"]
    assert o["hidden_option_strings"] == ["--no-enable-prefix-caching"]
    assert o["negative_option_strings"] == ["--disable-prefix-caching",
                                            "--no-enable-prefix-caching"]
    assert (o["action"], o["action_class"]) == ("store_true", "EnableDisableAction")
    assert o["default"] is None and o["field"] == "enable_prefix_caching"
    # a flag without enable/disable prefix: --x / --no-x, nothing hidden
    a = _opt(fake_doc, "--async-scheduling")
    assert a["option_strings"] == ["--async-scheduling", "--no-async-scheduling"]
    assert a["negative_option_strings"] == ["--no-async-scheduling"]
    assert "hidden_option_strings" not in a
    assert fake_doc["counts"]["hidden_option_strings"] == 1


def test_types_fields_defaults(fake_doc):
    mml = _opt(fake_doc, "--max-model-len")
    assert mml["type"] == "str" and mml["type_name"].startswith("human_readable_int_or_auto (")
    assert _opt(fake_doc, "--max-num-seqs")["type"] == "int"
    assert _opt(fake_doc, "--max-num-seqs")["type_name"].startswith("optional_type(int) (")
    sc = _opt(fake_doc, "--speculative-config")
    assert sc["option_strings"] == ["--speculative-config", "-sc"]
    assert sc["type"] == "json"
    cc = _opt(fake_doc, "--compilation-config")
    assert cc["type_name"].startswith("parse_dataclass(SpeculativeConfig) (")
    assert cc["default"] is None and cc["default_repr"].startswith("SpeculativeConfig(")
    assert _opt(fake_doc, "--tensor-parallel-size")["option_strings"] == [
        "--tensor-parallel-size", "-tp"]
    assert _opt(fake_doc, "--config")["not_a_field"] is True
    assert "not_a_field" not in _opt(fake_doc, "--model")
    assert _opt(fake_doc, "--kv-cache-dtype")["choices"] == ["auto", "fp8"]


def test_help_full_and_suppressed(fake_doc):
    kv = _opt(fake_doc, "--kv-cache-dtype")
    assert kv["help"] == "Data type for kv cache storage."
    assert kv["help_full"].endswith("Use --cache-dtype instead.")
    assert "help_full" not in _opt(fake_doc, "--max-num-seqs")
    hidden = _opt(fake_doc, "--legacy-compile")
    assert hidden["help"] is None and hidden["help_suppressed"] is True
    assert hidden["type_name"] == "CompilationConfig.from_cli"


def test_deprecations(fake_doc):
    dl = _opt(fake_doc, "--disable-log-requests")
    assert dl["deprecated_kwarg"] is True            # parser._deprecated
    assert dl["deprecated"] == "[DEPRECATED] Disable logging requests."
    kv = _opt(fake_doc, "--kv-cache-dtype")
    assert kv["deprecated"] == "use --cache-dtype"
    assert kv["removed_in"] == "0.34.0"
    assert "deprecated_kwarg" not in kv
    assert _opt(fake_doc, "--allow-deprecated-quantization")["deprecated"] is None
    assert fake_doc["counts"]["deprecated"] == 2


def test_top_level(fake_doc):
    d = fake_doc
    assert d["schema"] == ad.SCHEMA and d["engine"] == "vllm"
    assert d["version"] == "0.99.0" and d["generated_by"] == "tools/catalog/vllm.py"
    assert d["allow_abbrev"] is True                  # always said for vLLM
    assert d["envs_file"] == "envs-0.99.0.json"
    assert d["parser"]["prog"] == "vllm serve"
    assert d["parser"]["argv"] == list(V.BUILD_ARGV)
    assert d["counts"]["actions"] == len(d["options"]) == 14
    assert d["counts"]["option_strings"] == sum(len(o["option_strings"])
                                                for o in d["options"])
    assert [o["primary"] for o in d["options"]] == sorted(o["primary"] for o in d["options"])
    # deterministic text
    fields = {f.name: f for f in dataclasses.fields(FakeEngineArgs)}
    again = V.catalog_of(fake_serve_parser(), "0.99.0", fields, d["parser"] | {},
                         aliases={"model_tag": "model"})
    again["parser"] = d["parser"]
    assert ad.render(again) == ad.render(d)


# ---------------------------------------------------------------------------
# VLLM_* variables
# ---------------------------------------------------------------------------

def _env_with_choices(name, default, choices):
    def _get_validated_env():
        value = os.getenv(name, default)
        if value is not None and value not in choices:
            raise ValueError(value)
        return value
    return _get_validated_env


def test_env_variables_on_a_fake_envs(monkeypatch):
    envs = types.ModuleType("vllm.envs")
    envs.environment_variables = {
        "VLLM_USE_V1": lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),
        "VLLM_ATTENTION_BACKEND": lambda: os.getenv("VLLM_ATTENTION_BACKEND", None),
        "VLLM_LOGGING_LEVEL": _env_with_choices("VLLM_LOGGING_LEVEL", "INFO",
                                                ["DEBUG", "INFO"]),
        "VLLM_SET": lambda: set(),
        "VLLM_RANDOM": lambda: object(),
        "VLLM_MUST": lambda: int(os.environ["VLLM_MUST"]),
        "CUDA_VISIBLE_DEVICES": lambda: os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    pkg = types.ModuleType("vllm")
    pkg.envs = envs
    monkeypatch.setitem(sys.modules, "vllm", pkg)
    monkeypatch.setitem(sys.modules, "vllm.envs", envs)
    for k in list(os.environ):
        if k.startswith("VLLM_") or k == "CUDA_VISIBLE_DEVICES":
            monkeypatch.delenv(k)
    got = {v["name"]: v for v in V.env_variables()}
    assert list(got) == sorted(got)
    assert got["VLLM_USE_V1"]["default"] is True
    assert got["VLLM_USE_V1"]["expr"].startswith('lambda: bool(int(os.getenv("VLLM_USE_V1", "1")))')
    assert got["VLLM_ATTENTION_BACKEND"]["default"] is None
    assert got["VLLM_LOGGING_LEVEL"] == {"name": "VLLM_LOGGING_LEVEL", "default": "INFO",
                                         "choices": ["DEBUG", "INFO"]}
    assert got["VLLM_SET"]["default_repr"] == "set()"
    assert got["VLLM_MUST"]["default_error"] == "KeyError"
    assert got["VLLM_RANDOM"]["default_varies"] is True
    assert got["VLLM_RANDOM"]["default"] is None and "default_repr" not in got["VLLM_RANDOM"]
    doc = V.envs_document("0.99.0", list(got.values()))
    assert doc["counts"] == {"variables": 7, "vllm_variables": 6}
    assert doc["schema"] == "driftwatch.engine-envs/v1"


# ---------------------------------------------------------------------------
# oracle.py: a release venv layered on a base venv
# ---------------------------------------------------------------------------

def test_prepare_venv_layers_base(tmp_path):
    base = tmp_path / "_base"
    # venvs without pip (fast); an empty plan runs no pip
    for d in (base, tmp_path / "rel"):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)],
                       check=True)
    py = oracle.prepare_venv([], "9.9", tmp_path / "rel", base=([], base))
    sp = oracle.site_packages(base / "bin" / "python")
    pth = Path(oracle.site_packages(py)) / oracle.BASE_PTH
    assert pth.read_text() == sp + "\n"
    path = subprocess.run([str(py), "-c", "import sys; print('\\n'.join(sys.path))"],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    assert sp in path
    stamp = json.loads((tmp_path / "rel" / oracle.STAMP_NAME).read_text())
    assert stamp == {"version": "9.9", "plan": [],
                     "base": {"venv": str(base), "plan": []}}
    assert json.loads((base / oracle.STAMP_NAME).read_text()) == {"version": "base",
                                                                  "plan": []}


# ---------------------------------------------------------------------------
# with an oracle venv: regenerate and compare byte for byte
# ---------------------------------------------------------------------------

CATALOG_DIR = V.DEFAULT_OUT
ENV_VAR = "DRIFTWATCH_VLLM_ORACLE"
ORACLE_ROOT = Path(os.environ.get("DRIFTWATCH_ORACLE_ROOT", "/work/oracles"))
# every shipped release, full file or delta (driftwatch/engines/catalog_delta.py)
SHIPPED = {v: p for p in sorted(CATALOG_DIR.glob("vllm-*.json")) if (v := cd.release_of(p.name, "vllm"))}


def _shipped_text(version, name=None):
    """The exact text of a shipped release's catalog (or of its file `name`), rebuilt if a delta."""
    catalog = f"vllm-{version}.json"
    docs = cd.read_docs(CATALOG_DIR, "vllm", version, (name,) if name else ())
    return cd.render(docs[name or catalog])
VOLATILE = ("generated_at", "dump_seconds")   # when and how fast, not what


def _oracle_for(version):
    python = os.environ.get(ENV_VAR)
    if python:
        try:
            v = oracle.installed_version(python, "vllm")
        except (OSError, subprocess.CalledProcessError):
            v = None
        if v == version:
            return python, ""
    conventional = ORACLE_ROOT / f"vllm-{version}" / "bin" / "python"
    if conventional.exists():
        return str(conventional), ""
    return None, (f"no vLLM {version} oracle: create {conventional.parent.parent} "
                  f"with `python -m tools.catalog vllm --version {version}` "
                  f"(from the repository root) or set {ENV_VAR}")


def _diff(shipped, fresh):
    lines = [f"{k}: shipped {shipped.get(k)!r} != fresh {fresh.get(k)!r}"
             for k in sorted(set(shipped) | set(fresh))
             if k not in ("options",) and shipped.get(k) != fresh.get(k)]
    a = {o["primary"]: o for o in shipped.get("options", [])}
    b = {o["primary"]: o for o in fresh.get("options", [])}
    lines += [f"only in shipped: {p}" for p in sorted(set(a) - set(b))]
    lines += [f"only in fresh: {p}" for p in sorted(set(b) - set(a))]
    for p in sorted(set(a) & set(b)):
        for k in sorted(set(a[p]) | set(b[p])):
            if a[p].get(k) != b[p].get(k):
                lines.append(f"{p}.{k}: shipped {a[p].get(k)!r} != fresh {b[p].get(k)!r}")
    return "\n".join(lines[:60]) or "(differs only in formatting)"


def test_shipped_releases():
    # the list; 0.8.2 is the newest release where --speculative-model
    # still parses (0.8.3 removed it)
    assert {"0.8.2", "0.10.0", "0.15.0", "0.20.0", "0.25.0", "0.33.0"} <= set(SHIPPED)
    for v in SHIPPED:
        doc = json.loads(_shipped_text(v))
        assert doc["envs_file"] == f"envs-{v}.json"
        assert json.loads(_shipped_text(v, doc["envs_file"]))["version"] == v


@pytest.mark.parametrize("version", sorted(SHIPPED))
def test_shipped_catalog_matches_oracle(version):
    python, why = _oracle_for(version)
    if python is None:
        pytest.skip(why)
    text = _shipped_text(version)
    shipped = json.loads(text)
    fresh, files = catalog_cli.generate_files("vllm", python, version,
                                              generated_at=shipped["generated_at"])
    for k in VOLATILE:
        fresh[k] = shipped[k]
    assert ad.render(fresh) == text, _diff(shipped, fresh)
    assert sorted(files) == [shipped["envs_file"]]
    envs_text = _shipped_text(version, shipped["envs_file"])
    assert ad.render(files[shipped["envs_file"]]) == envs_text
