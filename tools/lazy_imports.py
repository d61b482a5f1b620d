"""Count imports made inside functions (lazy imports) in the driftwatch package.

Issue 33 asks for imports at the top of the module, lazy only where importing is expensive or would make a
cycle; this counts what is left so a round can report before/after figures.

    python -m tools.lazy_imports            # totals: all lazy imports, those of driftwatch's own modules
    python -m tools.lazy_imports --list     # one line per lazy import: path:line module
    python -m tools.lazy_imports --own --under driftwatch/parse   # only own-module ones, one folder
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "driftwatch"


@dataclass(frozen=True)
class LazyImport:
    path: Path
    line: int
    module: str  # absolute dotted name of what is imported

    @property
    def own(self) -> bool:
        return self.module == "driftwatch" or self.module.startswith("driftwatch.")


def _package_of(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts if path.name == "__init__.py" else parts[:-1]


def _targets(node: ast.Import | ast.ImportFrom, path: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = _package_of(path)
        base = package[:len(package) - (node.level - 1)]
        return [".".join(base + ([node.module] if node.module else []))]
    return [node.module or ""]


def lazy_imports(path: Path) -> Iterator[LazyImport]:
    """Imports anywhere inside a function body (nested classes and functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    seen: set[int] = set()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in seen:
                seen.add(id(node))
                for target in _targets(node, path):
                    yield LazyImport(path, node.lineno, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="one line per lazy import")
    parser.add_argument("--own", action="store_true", help="only imports of driftwatch's own modules")
    parser.add_argument("--under", type=Path, default=PACKAGE, help="folder to count (default: the package)")
    args = parser.parse_args(argv)
    under = args.under if args.under.is_absolute() else (Path.cwd() / args.under)
    if not under.exists() or not under.resolve().is_relative_to(ROOT):
        print(f"lazy_imports: {args.under}: not a folder of this repository", file=sys.stderr)
        return 2
    found = [imp for path in sorted(under.resolve().rglob("*.py")) for imp in lazy_imports(path)]
    if args.own:
        found = [imp for imp in found if imp.own]
    if args.list:
        for imp in found:
            print(f"{imp.path.relative_to(ROOT)}:{imp.line} {imp.module}")
    own = sum(imp.own for imp in found)
    print(f"function-level imports: {len(found)}; of driftwatch's own modules: {own}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
