"""Sizes a contributor meets inside the package: long modules, long functions, long signatures.

Issue 33 sets three limits (no module over 800 lines, no function over 150, no function below the CLI
with more than 10 parameters); this prints what breaks each, so the lead can re-run it after a merge.
Run from the repository's top directory: `python -m tools.code_sizes [PACKAGE_DIR]`. Exit code 0 when
every limit holds, 1 when something breaks one (a count, not a judgement: read the list).
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 150
MAX_PARAMETERS = 10


@dataclass(frozen=True)
class Oversize:
    """One thing over a limit: where it is and how big."""

    path: str
    name: str
    size: int


def _parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller can pass, `self`/`cls` not counted (they are not part of the signature's weight)."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    count = len(positional) + len(args.kwonlyargs)
    count += 1 if args.vararg else 0
    count += 1 if args.kwarg else 0
    return count


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (Class.method, outer.<locals>.inner)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((name, child))
                visit(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def measure(package: Path) -> tuple[list[Oversize], list[Oversize], list[Oversize]]:
    """(modules over the line limit, functions over theirs, functions below the CLI with too many parameters)."""
    modules: list[Oversize] = []
    functions: list[Oversize] = []
    signatures: list[Oversize] = []
    root = package.parent
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            modules.append(Oversize(rel, "", lines))
        below_cli = "/cli/" not in f"/{path.relative_to(package).as_posix()}"
        for name, node in _functions(ast.parse(text, filename=rel)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                functions.append(Oversize(rel, name, length))
            params = _parameter_count(node)
            if below_cli and params > MAX_PARAMETERS:
                signatures.append(Oversize(rel, name, params))
    return modules, functions, signatures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.code_sizes", description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="driftwatch", help="package folder (default: driftwatch)")
    options = parser.parse_args(argv)
    package = Path(options.package)
    if not package.is_dir():
        print(f"code_sizes: {package} is not a folder", file=sys.stderr)
        return 2
    modules, functions, signatures = measure(package.resolve())
    sections = (
        (f"modules over {MAX_MODULE_LINES} lines", modules, "lines"),
        (f"functions over {MAX_FUNCTION_LINES} lines", functions, "lines"),
        (f"functions below the CLI with more than {MAX_PARAMETERS} parameters", signatures, "parameters"),
    )
    for title, items, unit in sections:
        print(f"{title}: {len(items)}")
        for item in sorted(items, key=lambda o: (-o.size, o.path, o.name)):
            where = f"{item.path}:{item.name}" if item.name else item.path
            print(f"  {item.size:5d} {unit}  {where}")
    return 1 if modules or functions or signatures else 0


if __name__ == "__main__":
    sys.exit(main())
