"""``python -m tools.catalog ENGINE [--version X] [--venv DIR | --python PY] [--out DIR]``

Without ``--python``: create (or reuse) the oracle venv
``/work/oracles/ENGINE-VERSION`` from the engine's install plan, dump the
engine's parser inside it and write ``ENGINE-VERSION.json`` into the engine's
catalog directory (or ``--out``). See docs/engines.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path

from tools.catalog import ENGINES, load_engine, oracle
from tools.catalog.argparse_dump import render


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate(engine: str, python: str, version: str | None = None,
             generated_at: str | None = None) -> dict:
    """Dump ``engine``'s catalog from an oracle interpreter; add generated_at."""
    return generate_files(engine, python, version, generated_at)[0]


def generate_files(engine: str, python: str, version: str | None = None,
                   generated_at: str | None = None) -> tuple[dict, dict]:
    """(catalog, {file name: document}): the catalog plus the extra documents
    an engine's dump returns under ``_files`` (vLLM: ``envs-<VERSION>.json``),
    each with generated_at; written beside the catalog."""
    mod = load_engine(engine)
    if not version:
        # Unknown up front: ask the interpreter which release it has (the
        # stubs depend on it).
        found = oracle.installed_version(python, mod.DISTRIBUTION)
    else:
        found = version
    doc = oracle.run_dump(python, engine, mod.stubs_for(found),
                          mod.STRIP_ENV_PREFIXES)
    if version and doc["version"] != version:
        raise SystemExit(f"{python} has {mod.DISTRIBUTION} {doc['version']}, "
                         f"not {version}")
    doc["generated_at"] = generated_at or now_utc()
    files = doc.pop("_files", None) or {}
    for extra in files.values():
        extra["generated_at"] = doc["generated_at"]
    return doc, files


def base_of(mod):
    """(base_plan, base_venv) for engines that layer their oracle venvs on a
    shared base venv (``BASE_PLAN``, optional ``BASE_VENV``), else None."""
    plan = getattr(mod, "BASE_PLAN", None)
    if not plan:
        return None
    return plan, Path(getattr(mod, "BASE_VENV", None)
                      or oracle.DEFAULT_ORACLE_ROOT / "_base")


def catalog_path(engine: str, version: str, out: Path | None = None) -> Path:
    mod = load_engine(engine)
    return Path(out or mod.DEFAULT_OUT) / f"{mod.NAME}-{version}.json"


def parser(engine: str | None = None) -> argparse.ArgumentParser:
    prog = "python -m tools.catalog"
    ap = argparse.ArgumentParser(
        prog=f"{prog} {engine}" if engine else prog,
        description="Generate a driftwatch flag catalog from a real engine release.")
    if engine is None:
        ap.add_argument("engine", choices=sorted(ENGINES))
    ap.add_argument("--version", help="engine release, e.g. 0.5.23")
    ap.add_argument("--venv", type=Path,
                    help="oracle venv (default /work/oracles/ENGINE-VERSION)")
    ap.add_argument("--python",
                    help="use this existing oracle interpreter; install nothing")
    ap.add_argument("--base-python", default=sys.executable,
                    help="interpreter used to create the venv")
    ap.add_argument("--install-only", action="store_true",
                    help="prepare the oracle venv, dump nothing")
    ap.add_argument("--out", type=Path,
                    help="output directory (default: the engine's package catalogs dir)")
    return ap


def main(argv: list[str] | None = None, engine: str | None = None) -> int:
    """``engine`` fixed (the gen_sglang_catalog.py wrapper) or the first argument."""
    args = sys.argv[1:] if argv is None else argv
    if engine is None and args[:1] == ["compact"]:
        from tools.catalog import compact
        return compact.main(args[1:])
    ap = parser(engine)
    a = ap.parse_args(argv)
    engine = engine or a.engine
    mod = load_engine(engine)

    t0 = time.monotonic()
    if a.python:
        python = a.python
    else:
        if not a.version:
            ap.error("--version is required unless --python is given")
        venv = a.venv or oracle.default_venv(mod.NAME, a.version)
        python = str(oracle.prepare_venv(mod.install_plan(a.version), a.version,
                                         venv, a.base_python,
                                         base=base_of(mod)))
    t1 = time.monotonic()
    if a.install_only:
        print(f"{python}: ready (venv {t1 - t0:.0f}s)")
        return 0
    doc, files = generate_files(engine, python, a.version)
    path = catalog_path(engine, doc["version"], a.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(doc), encoding="utf-8")
    for name, extra in sorted(files.items()):
        (path.parent / name).write_text(render(extra), encoding="utf-8")
    from tools.catalog.compact import write_credential_options
    write_credential_options(engine, path.parent)
    t2 = time.monotonic()
    print(f"{path}: {doc['counts']['actions']} actions, "
          f"{doc['counts']['option_strings']} option strings "
          f"(venv {t1 - t0:.0f}s, dump {t2 - t1:.1f}s)")
    return 0
