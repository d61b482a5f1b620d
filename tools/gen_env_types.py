"""Engines' own environment-variable tables -> the types the secrets policy reads.

    python -m tools.gen_env_types            # write every table (downloads SGLang wheels)
    python -m tools.gen_env_types --check    # fail when a committed file is stale (no download)

- vLLM: ``driftwatch/engines/vllm/catalogs/envs-<VERSION>.json`` is written by ``tools/catalog``
  from ``vllm.envs.environment_variables`` of the real release; the type of each variable is read
  from its default and its parsing expression (``int(...)``, ``float(...)``, ``bool``, choices).
- SGLang: for every release with a flag catalog (``sglang-<VERSION>.json``), the wheel is fetched
  with ``pip download --no-deps`` into a scratch directory under /tmp (deleted after) and its source
  read, never imported: the ``Envs`` class of ``sglang/srt/environ.py`` (``EnvBool``, ``EnvInt``,
  ``EnvFloat``, ``EnvStr``) and the typed helpers used everywhere (``get_bool_env_var("X")``,
  ``get_int_env_var``, ``get_float_env_var``). Written as
  ``driftwatch/engines/sglang/envs/envs-<VERSION>.json`` (not beside the flag catalogs: that folder
  holds only ``sglang-<VERSION>.json``).
- The union, ``driftwatch/data/engine_env_types.json``: ``{name: type}`` (``bool``, ``int``,
  ``float``, ``choice``, ``str``); where releases or engines disagree, the loosest type wins
  (``str``). ``driftwatch/redact.py`` (ground) reads only this file: a value of a known variable of
  a non-text type is shown when it parses as that type; a text-typed one follows its name.
"""
from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINES = os.path.join(ROOT, "driftwatch", "engines")
OUT = os.path.join(ROOT, "driftwatch", "data", "engine_env_types.json")
SCHEMA = "driftwatch.engine-envs/v1"
_ORDER = {"bool": 0, "int": 1, "float": 2, "choice": 3, "str": 4}
_SGLANG_CLASSES = {"EnvBool": "bool", "EnvInt": "int", "EnvFloat": "float", "EnvStr": "str"}
_SGLANG_HELPERS = {"get_bool_env_var": "bool", "get_int_env_var": "int", "get_float_env_var": "float"}


def _versions(engine: str) -> list[str]:
    """Every shipped release, full file or delta (`sglang-0.5.6.delta.json` is release 0.5.6)."""
    from driftwatch.engines.catalog_delta import release_of
    from driftwatch.engines.versions import version_key
    names = glob.glob(os.path.join(ENGINES, engine, "catalogs", f"{engine}-*.json"))
    found = {release_of(os.path.basename(n), engine) for n in names}
    return sorted((v for v in found if v), key=version_key)


def vllm_type(var: dict) -> str:
    default, expr = var.get("default"), var.get("expr") or ""
    if var.get("choices"):
        return "choice"
    if isinstance(default, bool):
        return "bool"
    if re.search(r"\bint\(", expr) and "bool(" not in expr:
        return "int"
    if re.search(r"\bfloat\(", expr):
        return "float"
    if re.search(r"\bbool\(|\.lower\(\) in \(|!= \"0\"|== \"1\"", expr):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    return "str"


def vllm_tables() -> dict[str, dict[str, str]]:
    """Each shipped release's `envs-<VERSION>.json`, a full file or rebuilt from its delta chain."""
    from pathlib import Path

    from driftwatch.engines.catalog_delta import read_docs
    folder = Path(ENGINES, "vllm", "catalogs")
    out = {}
    for version in _versions("vllm"):
        name = f"envs-{version}.json"
        doc = read_docs(folder, "vllm", version, (name,)).get(name)
        if doc is not None:
            out[version] = {v["name"]: vllm_type(v) for v in doc["variables"]}
    return out


def sglang_types_from_source(files: dict[str, str]) -> dict[str, str]:
    """{path: source} of one SGLang release -> {name: type}."""
    types: dict[str, str] = {}

    def put(name: str, kind: str) -> None:
        old = types.get(name)
        types[name] = kind if old is None or _ORDER[kind] > _ORDER[old] else old

    for _path, text in sorted(files.items()):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "Envs":
                for stmt in node.body:
                    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                            and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call)
                            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id in _SGLANG_CLASSES):
                        put(stmt.targets[0].id, _SGLANG_CLASSES[stmt.value.func.id])
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                func = node.func
                fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if fname in _SGLANG_HELPERS and re.fullmatch(r"[A-Z][A-Z0-9_]*", node.args[0].value):
                    put(node.args[0].value, _SGLANG_HELPERS[fname])
    return types


def sglang_release(version: str, scratch: str) -> dict[str, str]:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", f"sglang=={version}", "-d", scratch],
                   check=True, stdout=subprocess.DEVNULL)
    wheel = next(p for p in glob.glob(os.path.join(scratch, f"sglang-{version}-*.whl")))
    files = {}
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith("sglang/") and name.endswith(".py"):
                files[name] = z.read(name).decode("utf-8", "replace")
    return sglang_types_from_source(files)


def table_document(engine: str, version: str, types: dict[str, str], source: str) -> dict:
    return {"engine": engine, "version": version, "schema": SCHEMA, "generated_by": "tools/gen_env_types.py",
            "source": source, "types": dict(sorted(types.items()))}


def merged(tables: list[dict[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for table in tables:
        for name, kind in table.items():
            old = out.get(name)
            out[name] = kind if old is None or _ORDER[kind] > _ORDER[old] else old
    return dict(sorted(out.items()))


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare the committed union with the tables; no download")
    args = ap.parse_args(argv)
    sg_dir = os.path.join(ENGINES, "sglang", "envs")
    tables = list(vllm_tables().values())
    if args.check:
        for path in sorted(glob.glob(os.path.join(sg_dir, "envs-*.json"))):
            with open(path, encoding="utf-8") as f:
                tables.append(json.load(f)["types"])
    else:
        scratch = tempfile.mkdtemp(prefix="dw-sglang-envs-", dir="/tmp")
        try:
            for version in _versions("sglang"):
                types = sglang_release(version, scratch)
                doc = table_document("sglang", version, types, f"sglang=={version} wheel: Envs, get_*_env_var")
                with open(os.path.join(sg_dir, f"envs-{version}.json"), "w", encoding="utf-8") as f:
                    f.write(render(doc))
                tables.append(types)
                print(f"sglang {version}: {len(types)} variables", file=sys.stderr)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    union = {"schema": "driftwatch.engine-env-types/v1", "generated_by": "tools/gen_env_types.py",
             "types": merged(tables)}
    text = render(union)
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{OUT} is stale: run python -m tools.gen_env_types", file=sys.stderr)
                return 1
        return 0
    with open(OUT + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(OUT + ".tmp", OUT)
    print(f"{OUT}: {len(union['types'])} variables", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
