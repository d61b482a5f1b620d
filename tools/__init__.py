"""Developer-only tools (not shipped in the wheel). A package so that
``python -m tools.catalog`` works from the repository root."""
