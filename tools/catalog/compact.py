"""``python -m tools.catalog compact ENGINE [--from DIR ...] [--full VERSION ...]``

Stores an engine's catalogs compactly: every release not kept full becomes
``<engine>-<VERSION>.delta.json``, a patch of the release before it (see
driftwatch/engines/catalog_delta.py), for the catalog and, where the catalog
names one (vLLM), its ``envs-<VERSION>.json``. Releases come from the
package's catalog folder (full files, or deltas rebuilt exactly) and from the
``--from`` directories, which hold full files as ``python -m tools.catalog
ENGINE --version X --out DIR`` writes them (one replaces the folder's copy of
its release). Every delta is rebuilt and checked
against the full text (sha256) before anything is written; the folder's
``credential-options.json`` is rewritten from all the releases.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from driftwatch.engines import catalog_delta as cd
from tools.catalog import load_engine


def write_credential_options(engine: str, folder: Path) -> Path:
    """credential-options.json beside the catalogs: the credential flags of every catalog there, so
    a run reads one small file instead of every release's catalog (tests check it stays true)."""
    from driftwatch.engines.argparse_catalog import (
        CREDENTIALS_FILE,
        credential_options_of,
        load_catalog_text,
    )
    from driftwatch.engines.catalog_delta import catalog_text, release_of
    name = load_engine(engine).NAME
    releases = sorted({v for p in folder.iterdir() if (v := release_of(p.name, name))})  # full or delta
    catalogs = [load_catalog_text(catalog_text(folder, name, v), f"{name} {v}", name) for v in releases]
    out = folder / CREDENTIALS_FILE
    doc = {"engine": name, "derived_from": "every shipped catalog (tools/catalog)",
           "options": credential_options_of(catalogs)}
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return out


def _names(doc: dict, engine: str, version: str) -> list[str]:
    """The files of one release: its catalog and the envs file it names, if any."""
    names = [f"{engine}-{version}.json"]
    if doc.get("envs_file"):
        names.append(doc["envs_file"])
    return names


def _from_dir(folder: Path, engine: str, version: str) -> dict:
    catalog = json.loads((folder / f"{engine}-{version}.json").read_text(encoding="utf-8"))
    docs = {f"{engine}-{version}.json": catalog}
    for name in _names(catalog, engine, version)[1:]:
        path = folder / name
        if not path.is_file():
            raise SystemExit(f"{folder}: {name} (named by {engine}-{version}.json) is missing")
        docs[name] = json.loads(path.read_text(encoding="utf-8"))
    return docs


def collect(engine: str, folder: Path, sources: list[Path]) -> tuple[dict[str, dict], set[str]]:
    """{release: {file name: document}} of every release in the package folder and the sources
    (a source's file wins: it is a newer dump), and the releases the folder holds as full files."""
    releases: dict[str, dict] = {}
    for source in sources:  # first: a release found here needs nothing of the folder's chain
        for path in sorted(source.glob(f"{engine}-*.json")):
            version = cd.release_of(path.name, engine)
            if version and not path.name.endswith(cd.DELTA_SUFFIX):
                releases[version] = _from_dir(source, engine, version)  # a fresh dump replaces the shipped one
    full = set()
    for path in sorted(folder.iterdir()):
        version = cd.release_of(path.name, engine)
        if version is None:
            continue
        if path.name == f"{engine}-{version}.json":
            full.add(version)
        if version in releases:
            continue
        if path.name == f"{engine}-{version}.json":
            releases[version] = _from_dir(folder, engine, version)
        else:
            catalog = cd.read_docs(folder, engine, version)[f"{engine}-{version}.json"]
            releases[version] = cd.read_docs(folder, engine, version, tuple(_names(catalog, engine, version)))
    return releases, full


def compact(engine: str, folder: Path, sources: list[Path], keep_full: set[str] | None = None) -> dict:
    """Write the deltas (and remove the full files they replace); returns {release: "full" | base}."""
    from driftwatch.engines.versions import version_key
    releases, full_now = collect(engine, folder, sources)
    keep = set(full_now if keep_full is None else keep_full)
    order = sorted(releases, key=version_key)
    if order and order[0] not in keep:
        keep.add(order[0])  # the oldest has nothing before it
    plan: dict[str, str] = {}
    writes: dict[str, str] = {}
    for i, version in enumerate(order):
        docs = releases[version]
        if version in keep:
            plan[version] = "full"
            for name, doc in docs.items():
                writes[name] = cd.render(doc)
            continue
        base = order[i - 1]
        pairs = {}
        for name, doc in docs.items():
            base_name = cd.base_file_name(name, version, base)
            if base_name not in releases[base]:
                raise SystemExit(f"{engine} {base} has no {base_name} to base {name} on")
            pairs[name] = (releases[base][base_name], doc)
        delta = cd.make_delta(engine, version, base, pairs)
        text = cd.render_delta(delta)
        cd.rebuild(json.loads(text), releases[base], check=True)  # as it will be read
        writes[f"{engine}-{version}{cd.DELTA_SUFFIX}"] = text
        plan[version] = base
    for version in order:  # files of the other form go
        stale = ([f"{engine}-{version}{cd.DELTA_SUFFIX}"] if plan[version] == "full"
                 else list(releases[version]))
        for name in stale:
            (folder / name).unlink(missing_ok=True)
    for name, text in writes.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return plan


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m tools.catalog compact",
                                 description="Store an engine's catalogs as deltas from the release before.")
    ap.add_argument("engine")
    ap.add_argument("--from", dest="sources", type=Path, action="append", default=[],
                    help="directory of full generated catalogs to add (repeatable)")
    ap.add_argument("--full", action="append", default=None, metavar="VERSION",
                    help="keep this release as a full file (repeatable; default: the ones full today)")
    ap.add_argument("--out", type=Path, help="catalog folder (default: the engine's package catalogs dir)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    mod = load_engine(a.engine)
    folder = Path(a.out or mod.DEFAULT_OUT)
    plan = compact(mod.NAME, folder, a.sources, set(a.full) if a.full else None)
    write_credential_options(a.engine, folder)
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    for version, how in plan.items():
        print(f"{mod.NAME} {version}: {'full' if how == 'full' else 'delta on ' + how}")
    print(f"{folder}: {len(plan)} releases, {size} bytes")
    return 0
