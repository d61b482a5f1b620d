"""Regenerate driftwatch/engines/vllm/config_fields.json from the real vLLM wheels' sources.

For each release: the fields of `SpeculativeConfig` and `CompilationConfig` (what the JSON of
`--speculative-config` / `--compilation-config` may hold; vLLM rejects or ignores other keys at
start-up) and the speculative method names (`SpeculativeMethod` and the Literals it names), read
with `ast` from `vllm/config/{speculative,compilation}.py` (`vllm/config.py` before 0.11). The wheel
is never imported. Usage (from the repository root):

    python tests/engines/vllm/gen_config_fields.py /work/oracles/_wheels/vllm-*.whl

test_config_fields.py runs the same extraction where the wheels are present and compares.
"""
from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[3] / "driftwatch" / "engines" / "vllm" / "config_fields.json"
CLASSES = {"speculative_config": "SpeculativeConfig", "compilation_config": "CompilationConfig"}


def _module_sources(whl: Path) -> list[str]:
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        wanted = ["vllm/config/speculative.py", "vllm/config/compilation.py", "vllm/config.py"]
        return [z.read(n).decode("utf-8") for n in wanted if n in names]


def _literals(trees: list[ast.Module]) -> dict[str, list[str]]:
    """Module-level `Name = Literal[...]` assignments, with names of other Literals expanded."""
    raw: dict[str, list] = {}
    for tree in trees:
        for node in tree.body:
            target, value = None, None
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                target, value = node.target.id, node.value
            if target and isinstance(value, ast.Subscript) and getattr(value.value, "id", None) == "Literal":
                items = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
                raw[target] = items

    def expand(name: str, seen: frozenset = frozenset()) -> list[str]:
        out: list[str] = []
        for item in raw.get(name, []):
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                out.append(item.value)
            elif isinstance(item, ast.Name) and item.id in raw and item.id not in seen:
                out.extend(expand(item.id, seen | {name}))
        return out

    return {name: expand(name) for name in raw}


def _fields(trees: list[ast.Module], cls_name: str) -> tuple[list[str], list[str]]:
    """(init fields, init=False fields) of a dataclass, in source order."""
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls_name:
                init, no_init = [], []
                for stmt in node.body:
                    if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                        continue
                    name = stmt.target.id
                    if "ClassVar" in ast.unparse(stmt.annotation) or name.startswith("_"):
                        continue
                    text = ast.unparse(stmt.value) if stmt.value is not None else ""
                    (no_init if re.search(r"\binit\s*=\s*False", text) else init).append(name)
                return init, no_init
    return [], []


def extract(whl: Path) -> tuple[str, dict]:
    version = whl.name.split("-")[1]
    trees = [ast.parse(src) for src in _module_sources(whl)]
    literals = _literals(trees)
    entry: dict = {}
    for arg, cls in CLASSES.items():
        init, no_init = _fields(trees, cls)
        entry[arg] = {"fields": init, "not_init": no_init}
    entry["speculative_methods"] = sorted(set(literals.get("SpeculativeMethod", [])))
    entry["mtp_methods"] = sorted(set(literals.get("MTPModelTypes", [])))
    return version, entry


def main(wheels: list[str]) -> None:
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    releases = data.get("releases", {})
    for w in wheels:
        version, entry = extract(Path(w))
        releases[version] = entry
    from driftwatch.engines.versions import version_key
    doc = {"schema": "driftwatch.vllm-config-fields/v1",
           "generated_by": "tests/engines/vllm/gen_config_fields.py",
           "releases": dict(sorted(releases.items(), key=lambda kv: version_key(kv[0])))}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT} ({len(releases)} releases)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    main(sys.argv[1:])
