"""The `replay` fixture: a temporary store filled by real `driftwatch snapshot` runs (history_helpers.py)."""
from __future__ import annotations

import pytest
from history_helpers import Replay


@pytest.fixture
def replay(tmp_path):
    (tmp_path / ".home").mkdir()
    return Replay(tmp_path)
