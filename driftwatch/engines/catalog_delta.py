"""Catalogs stored as deltas from the release before, rebuilt exactly at load time.

A full catalog is ~100-260 KB and consecutive releases share most of it, so most shipped releases are
`<engine>-<release>.delta.json` (schema `driftwatch.catalog-delta/v1`): the release it is based on
(`base`, the shipped release before it, full or itself a delta) and, per file it stands for (the catalog,
and vLLM's `envs-<release>.json`), a patch of the base file's JSON document plus the sha256 of the full
file's exact text (`render`), which the tests check. `python -m tools.catalog compact` writes them.

A patch is one of:
- `{"$set": value}`: the value replaced whole;
- `{"$dict": {"set": {key: value}, "patch": {key: patch}, "del": [key]}}`;
- `{"$list": {"key": field, "del": [id], "patch": {id: patch}, "add": [[index, item]], "order": [id]}}`:
  a list of records that each have a unique `field` (an option's `primary`, a variable's `name`); the kept
  records stay in base order, added ones go in at their final index; `order` (only when records moved)
  gives the final order of ids outright.
Standard library only: tools/catalog imports it too.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

DELTA_SCHEMA = "driftwatch.catalog-delta/v1"
DELTA_SUFFIX = ".delta.json"
_KEY_FIELDS = ("primary", "name", "dest")


class DeltaError(ValueError):
    """A delta that does not apply to its base (wrong base, or a corrupt file)."""


def render(doc: Any) -> str:
    """A catalog file's exact text (the same as tools/catalog/argparse_dump.render)."""
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def render_delta(delta: dict) -> str:
    """A delta file's text: compact (a third smaller than indented), sorted, one line."""
    return json.dumps(delta, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _list_key(old: list, new: list) -> str | None:
    """The field that identifies each record in both lists (unique in each), if there is one."""
    for field in _KEY_FIELDS:
        ok = True
        for items in (old, new):
            if not all(isinstance(i, dict) and isinstance(i.get(field), str) for i in items):
                ok = False
                break
            if len({i[field] for i in items}) != len(items):
                ok = False
                break
        if ok:
            return field
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal as the file's text sees it (`True` is not `1`, `1.0` is not `1`)."""
    return a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def diff(old: Any, new: Any) -> dict | None:
    """The patch turning `old` into `new`, or None when they are equal."""
    if _same(old, new):
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {}
        removed = sorted(k for k in old if k not in new)
        added = {k: new[k] for k in new if k not in old}
        patched = {k: p for k in new if k in old and (p := diff(old[k], new[k])) is not None}
        if removed:
            out["del"] = removed
        if added:
            out["set"] = added
        if patched:
            out["patch"] = patched
        return {"$dict": out}
    if isinstance(old, list) and isinstance(new, list) and old and new:
        field = _list_key(old, new)
        if field is not None:
            return {"$list": _diff_records(old, new, field)}
    return {"$set": new}


def _diff_records(old: list, new: list, field: str) -> dict:
    before = {i[field]: i for i in old}
    after_ids = [i[field] for i in new]
    out: dict[str, Any] = {"key": field}
    removed = [k for k in before if k not in set(after_ids)]
    if removed:
        out["del"] = removed
    patched = {i[field]: p for i in new if i[field] in before and (p := diff(before[i[field]], i)) is not None}
    if patched:
        out["patch"] = patched
    added = [[n, i] for n, i in enumerate(new) if i[field] not in before]
    if added:
        out["add"] = added
    kept_order = [k for k in before if k not in set(removed)]
    if [k for k in after_ids if k in before] != kept_order:
        out["order"] = after_ids
    return out


def apply(base: Any, patch: dict) -> Any:
    """`base` with `patch` applied (a new object; `base` is left as it was)."""
    if "$set" in patch:
        return json.loads(json.dumps(patch["$set"]))
    if "$dict" in patch:
        if not isinstance(base, dict):
            raise DeltaError("a dict patch on a non-dict")
        ops = patch["$dict"]
        out = {k: v for k, v in base.items() if k not in set(ops.get("del", ()))}
        for k, p in ops.get("patch", {}).items():
            if k not in out:
                raise DeltaError(f"patch of a missing key {k!r}")
            out[k] = apply(out[k], p)
        for k, v in ops.get("set", {}).items():
            out[k] = json.loads(json.dumps(v))
        return out
    if "$list" in patch:
        if not isinstance(base, list):
            raise DeltaError("a list patch on a non-list")
        return _apply_records(base, patch["$list"])
    raise DeltaError(f"unknown patch {sorted(patch)}")


def _apply_records(base: list, ops: dict) -> list:
    field = ops["key"]
    removed = set(ops.get("del", ()))
    patches = ops.get("patch", {})
    kept = []
    for item in base:
        key = item.get(field) if isinstance(item, dict) else None
        if key in removed:
            continue
        kept.append(apply(item, patches[key]) if key in patches else item)
    missing = set(patches) - {i[field] for i in kept}
    if missing:
        raise DeltaError(f"patch of missing records {sorted(missing)[:3]}")
    for index, item in ops.get("add", ()):
        kept.insert(index, json.loads(json.dumps(item)))
    if "order" in ops:
        by_id = {i[field]: i for i in kept}
        if set(by_id) != set(ops["order"]):
            raise DeltaError("the order list names other records than the patch leaves")
        kept = [by_id[k] for k in ops["order"]]
    return kept


def make_delta(engine: str, version: str, base: str, files: dict[str, tuple[Any, Any]]) -> dict:
    """The delta document of `version` on `base`: `files` maps a full file's name to
    (its base file's document, its own document)."""
    entries = {}
    for name, (old, new) in sorted(files.items()):
        entries[name] = {"patch": diff(old, new) or {"$dict": {}}, "sha256": sha256_text(render(new))}
    return {"schema": DELTA_SCHEMA, "engine": engine, "version": version, "base": base, "files": entries}


def base_file_name(name: str, version: str, base: str) -> str:
    """`envs-0.24.0.json` on base 0.23.0 → `envs-0.23.0.json` (the same file of the base release)."""
    if version not in name:
        raise DeltaError(f"{name} does not name release {version}")
    return name.replace(version, base)


def rebuild(delta: dict, base_docs: dict[str, Any], check: bool = False) -> dict[str, Any]:
    """The full documents a delta stands for, from its base release's documents (by file name);
    `check` compares each with the sha256 recorded for it."""
    if delta.get("schema") != DELTA_SCHEMA:
        raise DeltaError(f"not a {DELTA_SCHEMA} document")
    out = {}
    for name, entry in delta["files"].items():
        base_name = base_file_name(name, delta["version"], delta["base"])
        if base_name not in base_docs:
            raise DeltaError(f"{name}: base file {base_name} is missing")
        doc = apply(base_docs[base_name], entry["patch"])
        if check and sha256_text(render(doc)) != entry["sha256"]:
            raise DeltaError(f"{name} rebuilt from {base_name} differs from the generated file (sha256)")
        out[name] = doc
    return out


_DOCS: dict[tuple[str, str, str, tuple[str, ...]], dict[str, Any]] = {}


def read_docs(folder, engine: str, version: str, names: tuple[str, ...] = ()) -> dict[str, Any]:
    """The full documents of `version` in a shipped catalog folder (a Traversable or Path): its
    catalog `<engine>-<version>.json` and the other files `names` (by this release's name), read as
    they are or rebuilt through the chain of deltas. Raises FileNotFoundError if there is neither.
    Each release is read once per process: loading every release (a run that infers the release)
    rebuilds each link of a chain once, not once per release above it. The documents are shared:
    never change them (`apply` builds new ones)."""
    key = (str(folder), engine, version, names)
    if key not in _DOCS:
        _DOCS[key] = _read_docs(folder, engine, version, names)
    return _DOCS[key]


def _read_docs(folder, engine: str, version: str, names: tuple[str, ...]) -> dict[str, Any]:
    catalog = f"{engine}-{version}.json"
    full = folder.joinpath(catalog)
    if full.is_file():
        wanted = (catalog,) + tuple(n for n in names if n != catalog)
        return {n: json.loads(folder.joinpath(n).read_text(encoding="utf-8")) for n in wanted
                if n == catalog or folder.joinpath(n).is_file()}
    delta_file = folder.joinpath(f"{engine}-{version}{DELTA_SUFFIX}")
    if not delta_file.is_file():
        raise FileNotFoundError(f"no catalog for {engine} {version}")
    delta = json.loads(delta_file.read_text(encoding="utf-8"))
    base = delta["base"]
    base_names = tuple(base_file_name(n, version, base) for n in delta["files"])
    return rebuild(delta, read_docs(folder, engine, base, base_names))


def catalog_doc(folder, engine: str, version: str) -> dict[str, Any]:
    """`version`'s full catalog document in a shipped folder, full or rebuilt (shared: never change it)."""
    return read_docs(folder, engine, version)[f"{engine}-{version}.json"]


def catalog_text(folder, engine: str, version: str) -> str:
    """The exact text of `version`'s full catalog in a shipped folder, full or rebuilt."""
    full = folder.joinpath(f"{engine}-{version}.json")
    if full.is_file():
        return full.read_text(encoding="utf-8")
    return render(read_docs(folder, engine, version)[f"{engine}-{version}.json"])


def release_of(file_name: str, engine: str) -> str | None:
    """`vllm-0.24.0.delta.json` or `vllm-0.24.0.json` → "0.24.0"; None for other files."""
    prefix = f"{engine}-"
    if not file_name.startswith(prefix):
        return None
    for suffix in (DELTA_SUFFIX, ".json"):
        if file_name.endswith(suffix):
            return file_name[len(prefix):-len(suffix)]
    return None
