"""The floor plan in docs/architecture.md holds: no import runs back up the pipeline.

The test reads the floors from the document itself (the whiteboard is the rule), walks every import
of every module, lazy ones inside functions included, and names each import that runs against it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "driftwatch"
WHITEBOARD = ROOT / "docs" / "architecture.md"


def floors() -> dict[str, int]:
    """room -> floor, from the fenced block after the `<!-- floors` marker."""
    text = WHITEBOARD.read_text(encoding="utf-8")
    block = text.split("<!-- floors", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    rooms: dict[str, int] = {}
    for line in block.splitlines():
        match = re.match(r"\s*(\d+)\s+(?:ground:)?\s*(.+)$", line)
        if match:
            for room in match.group(2).split():
                rooms[room] = int(match.group(1))
    return rooms


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(module: str) -> str:
    """`driftwatch.engines.vllm.engine` -> engines; `driftwatch.redact` -> redact; the package -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports() -> list[tuple[str, int, str]]:
    """(importing module, line, imported driftwatch module) for every import in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - (node.level - 1)]
                    targets = [".".join(base + ([node.module] if node.module else []))]
                else:
                    targets = [node.module or ""]
            else:
                continue
            found += [(name, node.lineno, t) for t in targets if t == "driftwatch" or t.startswith("driftwatch.")]
    return found


def test_whiteboard_names_every_room_of_the_package():
    plan = floors()
    assert len(plan) >= 12, plan
    on_disk = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
               if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    assert on_disk == set(plan), f"rooms on disk but not on the whiteboard: {sorted(on_disk - set(plan))}; " \
                                 f"on the whiteboard but not on disk: {sorted(set(plan) - on_disk)}"


def ground() -> set[str]:
    """The ground floor's modules are one room: they may import each other."""
    return {room for room, floor in floors().items() if floor == 1}


def test_no_import_runs_back_up():
    plan, base = floors(), ground()
    wrong = []
    for module, line, target in imports():
        source, dest = room_of(module), room_of(target)
        if source == dest or (source in base and dest in base):
            continue
        if plan[dest] >= plan[source]:
            side = "a peer on its floor" if plan[dest] == plan[source] else f"floor {plan[dest]}"
            wrong.append(f"{module}:{line} imports {target} ({source} on floor {plan[source]} -> {dest}, {side})")
    assert not wrong, "imports against the floor plan in docs/architecture.md:\n" + "\n".join(wrong)


def test_the_walk_sees_lazy_and_relative_imports():
    """The checker itself: an import inside a function and a relative import are both seen."""
    seen = {(m, t) for m, _, t in imports()}
    assert ("driftwatch.report.data", "driftwatch.report.wording") in seen or \
        ("driftwatch.report.data", "driftwatch.report") in seen
    lazy = [(m, t) for m, _, t in imports() if m.startswith("driftwatch.cli")]
    assert lazy, "the CLI imports its use cases lazily; the walk must see them"


@pytest.mark.parametrize("source,dest,allowed", [
    ("cli", "run", True), ("run", "cli", False), ("collect", "parse", False),
    ("findings", "report", False), ("snapshots", "findings", False), ("redact", "parse", False),
])
def test_floor_plan_says_what_the_issue_asks(source, dest, allowed):
    """The plan itself: use cases below the CLI, collectors beside the parser, words above findings."""
    plan = floors()
    assert (plan[dest] < plan[source]) is allowed
