"""Fixtures for tests/parse. The systemd oracle itself lives in dw_parse_oracle.py."""
from __future__ import annotations

import pytest
from dw_parse_oracle import SystemdOracle, oracle_available


@pytest.fixture(scope="session")
def systemd_oracle():
    reason = oracle_available()
    if reason:
        pytest.skip(f"systemd oracle unavailable: {reason}")
    return SystemdOracle()
