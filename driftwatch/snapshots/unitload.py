"""What systemd does with a unit before the engine sees it, as snapshot issues.

- A unit systemd 252 refuses to load (parse/loadcheck.py) never starts: each reason is an error
  issue "systemd will not load this unit: …", so `check` exits 1 with one line per reason.
- A required EnvironmentFile= that was not read (offline, or a file the SSH user may not read) leaves
  the variables it may set unknown: the parser keeps their references (`${DTYPE}`), and the engine's
  complaints about those values (`--dtype '${DTYPE}' is not one of …`) are not errors of the unit.
  They become ONE warning naming the file and the flags whose values are unknown.
"""
from __future__ import annotations

import re

from ..engines.config import Issue

REFUSED_KIND = "systemd-refuses"
UNKNOWN_KIND = "value-unknown"
REFUSED_PREFIX = "systemd will not load this unit: "


def refusal_issues(load_errors: list[str]) -> list[Issue]:
    """One error issue per reason systemd refuses to load the unit (public texts)."""
    return [Issue(REFUSED_KIND, REFUSED_PREFIX + reason, key="systemd.load", severity="error")
            for reason in load_errors]


def _references(names: list[str]) -> re.Pattern | None:
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(r"\$\{(?:" + alternatives + r")\}|\$(?:" + alternatives + r")(?![A-Za-z0-9_])")


def depends_on_unknown(issue: Issue, explicit: dict, unknown_variables: list[str]) -> bool:
    """Whether an issue is about a value holding a variable an unread EnvironmentFile= may set."""
    pattern = _references(unknown_variables)
    if pattern is None or issue.severity not in ("error", "warning"):
        return False
    value = explicit.get(issue.key) if issue.key else None
    texts = [issue.message, issue.flag or "", issue.value or "", str(getattr(value, "value", "") or "")]
    return any(pattern.search(t) for t in texts)


def unknown_value_issues(issues: list[Issue], explicit: dict, unknown_variables: list[str],
                         unreadable_files: list[str]) -> list[Issue]:
    """`issues` with every one about a value that holds an unknown variable taken out, and one warning
    naming the unread file(s) and the flags whose values are unknown."""
    if not unreadable_files:
        return list(issues)
    kept: list[Issue] = []
    flags: list[str] = []
    for issue in issues:
        if depends_on_unknown(issue, explicit, unknown_variables):
            value = explicit.get(issue.key) if issue.key else None
            flags.append(issue.flag or (getattr(value, "flag", None) or issue.key or "a word"))
            continue
        kept.append(issue)
    named = ", ".join(dict.fromkeys(flags))
    files = ", ".join(f"EnvironmentFile={path}" for path in unreadable_files)
    if named:
        message = f"{named}: value unknown ({files} not readable)"
    elif unknown_variables:
        message = f"{', '.join('$' + n for n in unknown_variables)}: value unknown ({files} not readable)"
    else:
        message = f"{files} not readable: the variables it sets are unknown"
    kept.append(Issue(UNKNOWN_KIND, message, key="systemd.environment_files", severity="warning"))
    return kept
