"""tools/code_sizes.py finds what breaks issue 33's limits, on a package written here for it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools import code_sizes

ROOT = Path(__file__).resolve().parents[2]


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    body = "\n".join(f"    x{i} = {i}" for i in range(150))
    many = ", ".join(f"a{i}" for i in range(11))
    (package / "big.py").write_text(
        f"def long_one():\n{body}\n\n\n"  # 151 lines
        f"def short_one():\n    return 1\n\n\n"
        f"class Thing:\n    def method(self, {many}):\n        return 1\n\n"
        f"    def ten(self, {', '.join(f'b{i}' for i in range(10))}):\n        return 1\n"
        + "\n" * 700)
    (package / "cli" / "commands.py").write_text(f"def command({many}, *rest, **options):\n    return 1\n")
    return package


def test_it_lists_each_limit_broken_and_nothing_else(tmp_path):
    modules, functions, signatures = code_sizes.measure(_package(tmp_path))
    assert [(m.path, m.size > 800) for m in modules] == [("pkg/big.py", True)]
    assert [(f.name, f.size) for f in functions] == [("long_one", 151)]
    # self is not counted (10 is within the limit); the CLI may take what click gives it
    assert [(s.path, s.name, s.size) for s in signatures] == [("pkg/big.py", "Thing.method", 11)]


def test_exit_status_says_whether_a_limit_is_broken(tmp_path):
    package = _package(tmp_path)
    run = subprocess.run([sys.executable, "-m", "tools.code_sizes", str(package)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert "  151 lines  pkg/big.py:long_one" in run.stdout
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "small.py").write_text("def f(a, b):\n    return a + b\n")
    run = subprocess.run([sys.executable, "-m", "tools.code_sizes", str(clean)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.count(": 0") == 3, run.stdout
    run = subprocess.run([sys.executable, "-m", "tools.code_sizes", str(tmp_path / "missing")], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not a folder" in run.stderr
