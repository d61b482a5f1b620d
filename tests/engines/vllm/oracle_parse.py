"""Runs INSIDE a vLLM oracle venv (standard library + vllm): vLLM's own parser on each command line.

stdin: JSON list of {"mode": "serve" | "module", "argv": [...]}. `serve` builds the `vllm` CLI parser
with its `serve` subcommand exactly as vllm/entrypoints/cli/main.py does and parses
["serve", *argv] (then copies model_tag into model, as ServeSubcommand.cmd does); `module` builds
the parser of `python -m vllm.entrypoints.openai.api_server` (make_arg_parser on a fresh
FlexibleArgumentParser) and parses argv. sys.argv is set to the process's own while the parser is built
(0.9.0 registers `--model` only when neither `serve` nor `--help` is in it); a namespace without `model`
fails as AsyncEngineArgs.from_cli_args would, and a speculative config with a key SpeculativeConfig has
no field fails as its constructor would. stdout: "@@ORACLE@@" + JSON {"version", "results": [{"ns":
{dest: value} for dests that differ from a bare parse, "error": text or null}]}.
"""
import contextlib
import dataclasses
import enum
import importlib
import io
import json
import logging
import sys
import warnings

warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)

import vllm.platforms as platforms  # noqa: E402

if not getattr(platforms.current_platform, "device_type", None):  # 0.8 - 0.25 need a platform
    from vllm.platforms.cpu import CpuPlatform
    platforms._current_platform = CpuPlatform()


def _first(modules, attr):
    for name in modules:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, attr):
            return getattr(mod, attr)
    raise ImportError(attr)


Flexible = _first(("vllm.utils.argparse_utils", "vllm.utils"), "FlexibleArgumentParser")
make_arg_parser = _first(("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
                          "vllm.entrypoints.openai.cli_args"), "make_arg_parser")
from vllm.entrypoints.cli.serve import ServeSubcommand  # noqa: E402


def serve_parser():
    top = Flexible(prog="vllm")
    subs = top.add_subparsers(required=False, dest="subparser")
    ServeSubcommand().subparser_init(subs)
    return top


def plain(value):
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            default = type(value)()
        except Exception:
            default = None
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name, None)
            if default is None or v != getattr(default, f.name, None):
                out[f.name] = plain(v)
        return out
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _speculative_fields(ns):
    """The start-up's next step for a speculative config: SpeculativeConfig(**dict) (0.9.x from_dict),
    run only for its unexpected-keyword TypeError (other checks need the model)."""
    spec = ns.get("speculative_config")
    if not isinstance(spec, dict):
        return
    try:
        from vllm.config import SpeculativeConfig
    except ImportError:
        return
    try:
        SpeculativeConfig(**spec)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise
    except Exception:
        pass


def run(mode, argv):
    words = ["serve", *argv] if mode == "serve" else list(argv)
    # The parser is built while sys.argv is the process's own (0.9.0's EngineArgs.add_cli_args reads it).
    sys.argv = ["vllm", *words] if mode == "serve" else ["api_server.py", *words]
    parser = serve_parser() if mode == "serve" else make_arg_parser(Flexible())
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = vars(parser.parse_args(words))
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        raise SystemExit(lines[-1] if lines else "argparse error") from None
    if mode == "serve" and ns.get("model_tag") is not None:
        ns["model"] = ns["model_tag"]
    if "model" not in ns:  # AsyncEngineArgs.from_cli_args: getattr(args, "model")
        raise AttributeError("'Namespace' object has no attribute 'model'")
    _speculative_fields(ns)
    ns.pop("model_tag", None)
    ns.pop("dispatch_function", None)
    ns.pop("subparser", None)
    return {k: plain(v) for k, v in ns.items()}


def main():
    cases = json.loads(sys.stdin.read())
    base = {"serve": run("serve", ["/base-model"]), "module": run("module", [])}
    out = []
    for case in cases:
        mode = case.get("mode", "serve")
        try:
            ns = run(mode, case["argv"])
        except BaseException as exc:  # SystemExit from argparse, ValueError/AssertionError from vLLM
            msg = str(exc)
            out.append({"ns": None, "error": f"{type(exc).__name__}: {msg}"})
            continue
        ref = base[mode]
        changed = {k: v for k, v in ns.items() if ref.get(k) != v or (k == "model" and mode == "serve")}
        if mode == "serve" and changed.get("model") == "/base-model":
            changed.pop("model")
        out.append({"ns": changed, "error": None})
    import importlib.metadata as md
    print("@@ORACLE@@" + json.dumps({"version": md.version("vllm"), "base": base, "results": out}))


main()
