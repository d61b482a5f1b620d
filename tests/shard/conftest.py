"""Fixtures for tests/shard: the real OpenSSH lab of tests/collect (dw_sshlab), removed even on failure."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "collect"))
import dw_sshlab  # noqa: E402


@pytest.fixture(scope="session")
def lab():
    if not (dw_sshlab.is_root() and dw_sshlab.have_sshd()):
        pytest.skip("needs root and /usr/sbin/sshd (apt-get install openssh-server)")
    lab = dw_sshlab.Lab()
    try:
        yield lab
    finally:
        lab.close()
