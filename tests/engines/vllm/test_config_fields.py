"""driftwatch/engines/vllm/config_fields.json equals what gen_config_fields.py reads from the real
wheels (SpeculativeConfig / CompilationConfig fields, speculative method names), where the wheels
are present (/work/oracles/_wheels, or DRIFTWATCH_VLLM_WHEELS); skipped otherwise."""
from __future__ import annotations

import json
import os
from pathlib import Path

import gen_config_fields  # beside this file: pytest puts a test's folder on sys.path
import pytest

HERE = Path(__file__).resolve().parent

WHEELS = Path(os.environ.get("DRIFTWATCH_VLLM_WHEELS", "/work/oracles/_wheels"))
SHIPPED = json.loads(gen_config_fields.OUT.read_text())["releases"]


def _wheel(version: str) -> Path | None:
    found = sorted(WHEELS.glob(f"vllm-{version}-*.whl")) if WHEELS.is_dir() else []
    return found[0] if found else None


@pytest.mark.parametrize("version", sorted(SHIPPED))
def test_fields_match_the_wheel(version):
    wheel = _wheel(version)
    if wheel is None:
        pytest.skip(f"no vllm-{version} wheel in {WHEELS}")
    assert gen_config_fields.extract(wheel) == (version, SHIPPED[version])


def test_every_catalog_release_has_fields_at_or_below_it():
    from driftwatch.engines.vllm.engine import ENGINE
    from driftwatch.engines.vllm.rewrites import config_fields
    for version in ENGINE.releases():
        fields = config_fields(version)
        assert "num_speculative_tokens" in fields["speculative_config"]["fields"], version
