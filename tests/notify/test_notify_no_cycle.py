"""config → notify is the only direction: nothing in driftwatch/notify imports driftwatch.config (the config file),
not even lazily inside a function (the old dodge), directly or through another module."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "driftwatch"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every import in every driftwatch module (top level or inside functions) -> driftwatch modules."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets.add(module)
                targets.update(f"{module}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in files}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_graph_sees_lazy_imports():
    graph = import_graph()
    assert "driftwatch.notify.smtp_words" in graph["driftwatch.config"]
    assert "driftwatch.notify.smtp_words" in graph["driftwatch.notify.email"]
    assert "driftwatch.notify.state" in graph["driftwatch.notify.deliver"]  # `from .state import …`
    assert "driftwatch.notify.deliver" in graph["driftwatch.run.fleet"]  # imported inside a function there


def test_no_notify_module_reaches_the_config_file():
    graph = import_graph()
    notify = [m for m in graph if m == "driftwatch.notify" or m.startswith("driftwatch.notify.")]
    assert len(notify) >= 4
    offenders = {m: sorted(reachable(graph, m) & {"driftwatch.config"}) for m in notify}
    assert not any(offenders.values()), offenders


def _python(code: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=60)


def test_fresh_interpreter_import_order():
    run = _python("import driftwatch.config", "-X", "importtime")
    assert run.returncode == 0, run.stderr
    loaded = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")]
    assert "driftwatch.config" in loaded and "driftwatch.notify.smtp_words" in loaded
    assert loaded.index("driftwatch.notify.smtp_words") < loaded.index("driftwatch.config")
    assert "driftwatch.notify.email" not in loaded and "smtplib" not in loaded  # every command reads the config file
    assert "driftwatch.notify.deliver" not in loaded
    run = _python("import sys, driftwatch.notify.deliver, driftwatch.config; "
                  "print(sorted(m for m in sys.modules if m.startswith('driftwatch.')))")
    assert run.returncode == 0, run.stderr
    run = _python("import sys, driftwatch.notify.deliver; print('driftwatch.config' in sys.modules)")
    assert run.returncode == 0 and run.stdout.strip() == "False", run
