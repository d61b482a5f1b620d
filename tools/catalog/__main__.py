"""``python -m tools.catalog ENGINE ...`` (run from the repository root)."""

import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a path (`python tools/catalog`): that puts tools/catalog itself on
    # sys.path, where sglang.py would shadow the real sglang. Use the
    # repository root instead.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parents[1]))

from tools.catalog.cli import main  # noqa: E402

sys.exit(main())
