"""The SSH fixtures of tests/collect (known_hosts, options), shared with the hardening tests; the lab
itself is the run's one (tests/conftest.py)."""
from __future__ import annotations

import importlib.util
import os

_COLLECT = os.path.join(os.path.dirname(__file__), "..", "collect")
_spec = importlib.util.spec_from_file_location("dw_collect_conftest", os.path.join(_COLLECT, "conftest.py"))
_collect = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_collect)

known_hosts = _collect.known_hosts
options = _collect.options
