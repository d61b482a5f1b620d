"""Re-generate each shipped SGLang catalog from a real SGLang and compare.

Needs an "oracle": a venv with that SGLang release installed (see
tools/README.md). Found via

* ``DRIFTWATCH_SGLANG_ORACLE=/path/to/venv/bin/python`` (any release; the test
  asks it which sglang it has), or
* the conventional path ``/work/oracles/sglang-<VERSION>/bin/python``
  (override the root with ``DRIFTWATCH_ORACLE_ROOT``).

Without an oracle for a release the test for it is skipped, saying why. With
one, the regenerated catalog must equal the shipped file byte for byte, except
``generated_at``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GEN_PATH = REPO / "tools" / "gen_sglang_catalog.py"
CATALOG_DIR = REPO / "driftwatch" / "engines" / "sglang" / "catalogs"
ENV_VAR = "DRIFTWATCH_SGLANG_ORACLE"
ORACLE_ROOT = Path(os.environ.get("DRIFTWATCH_ORACLE_ROOT", "/work/oracles"))

SHIPPED = {p.name[len("sglang-"):-len(".json")]: p
           for p in sorted(CATALOG_DIR.glob("sglang-*.json"))}


def _gen():
    spec = importlib.util.spec_from_file_location("gen_sglang_catalog", GEN_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sglang_version(python: str) -> str | None:
    try:
        res = subprocess.run(
            [python, "-c",
             "import importlib.metadata as m; print(m.version('sglang'))"],
            capture_output=True, text=True, timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def _env_oracle():
    python = os.environ.get(ENV_VAR)
    if not python:
        return None, None
    return python, _sglang_version(python)


def _oracle_for(version: str) -> tuple[str | None, str]:
    python, v = _env_oracle()
    if python and v == version:
        return python, ""
    conventional = ORACLE_ROOT / f"sglang-{version}" / "bin" / "python"
    if conventional.exists():
        return str(conventional), ""
    why = f"no SGLang {version} oracle: set {ENV_VAR}=/path/to/venv/bin/python " \
          f"or create {conventional.parent.parent} with " \
          f"`python tools/gen_sglang_catalog.py --version {version}`"
    if python:
        why += f" ({ENV_VAR} has sglang {v})"
    return None, why


def _diff(shipped: dict, fresh: dict) -> str:
    lines = []
    for k in sorted(set(shipped) | set(fresh)):
        if k in ("options", "generated_at"):
            continue
        if shipped.get(k) != fresh.get(k):
            lines.append(f"{k}: shipped {shipped.get(k)!r} != fresh {fresh.get(k)!r}")
    a = {o["primary"]: o for o in shipped.get("options", [])}
    b = {o["primary"]: o for o in fresh.get("options", [])}
    for p in sorted(set(a) - set(b)):
        lines.append(f"only in shipped: {p}")
    for p in sorted(set(b) - set(a)):
        lines.append(f"only in fresh: {p}")
    for p in sorted(set(a) & set(b)):
        for k in sorted(set(a[p]) | set(b[p])):
            if a[p].get(k) != b[p].get(k):
                lines.append(f"{p}.{k}: shipped {a[p].get(k)!r} != fresh {b[p].get(k)!r}")
    return "\n".join(lines[:60]) or "(differs only in formatting)"


@pytest.mark.parametrize("version", sorted(SHIPPED))
def test_shipped_catalog_matches_oracle(version):
    python, why = _oracle_for(version)
    if python is None:
        pytest.skip(why)
    gen = _gen()
    text = SHIPPED[version].read_text(encoding="utf-8")
    shipped = json.loads(text)
    fresh = gen.generate(python, version, generated_at=shipped["generated_at"])
    assert gen.render(fresh) == text, _diff(shipped, fresh)


def test_env_oracle_has_a_shipped_catalog():
    python, v = _env_oracle()
    if python is None:
        pytest.skip(f"{ENV_VAR} not set")
    assert v, f"{ENV_VAR}={python} cannot report an installed sglang"
    assert v in SHIPPED, (
        f"{ENV_VAR} has sglang {v}, which has no shipped catalog: run "
        f"`python tools/gen_sglang_catalog.py --python {python}` and commit it"
    )
