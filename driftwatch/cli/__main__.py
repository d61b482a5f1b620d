"""`python -m driftwatch.cli …`: the same as the `driftwatch` console script (for timing and for
machines where the script is not on PATH)."""
from . import main

main()
