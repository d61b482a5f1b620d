"""Fixtures for tests/run (sharded runs and their merge): the real OpenSSH lab of tests/collect (dw_sshlab), removed even on failure."""
from __future__ import annotations

import dw_sshlab
import pytest


@pytest.fixture(scope="session")
def lab():
    if not (dw_sshlab.is_root() and dw_sshlab.have_sshd()):
        pytest.skip("needs root and /usr/sbin/sshd (apt-get install openssh-server)")
    lab = dw_sshlab.Lab()
    try:
        yield lab
    finally:
        lab.close()
