"""Decide whether a fleet report is mailed, mail it, and remember what was sent (--only-changes).

`deliver` takes the merged settings dict of `driftwatch.config` (flat keys: email, sender,
state, only_changes, smtp_*); this module reads it, `driftwatch.config` never imports it, so
config → notify is the only direction between the two.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .email import PASSWORD_ENV, SMTPSettings, build_message, load_password_file, send_message
from .state import is_resolved, load_state, mark_changes, save_state, should_send, state_for

if TYPE_CHECKING:
    from ..report.document import FleetReportDoc


def default_sender() -> str:
    host = socket.getfqdn() or "localhost"
    return f"driftwatch@{host}"


def smtp_settings(settings: Mapping[str, Any], env: Mapping[str, str]) -> SMTPSettings:
    """SMTPSettings from merged settings; the password is read now, from the password file
    (CLI or config) or DRIFTWATCH_SMTP_PASSWORD, in that order of the merged settings."""
    password = None
    if settings.get("smtp_password_file"):
        password = load_password_file(settings["smtp_password_file"])
    elif env.get(PASSWORD_ENV):
        password = env[PASSWORD_ENV]
    return SMTPSettings(host=settings.get("smtp_host") or "localhost", port=settings.get("smtp_port"),
                        user=settings.get("smtp_user") or None, password=password,
                        security=settings.get("smtp_security") or "starttls",
                        timeout=settings.get("smtp_timeout") or 30.0, ca_file=settings.get("smtp_ca_file"))


def deliver(doc: FleetReportDoc, settings: Mapping, always: bool) -> str:
    """Mail `doc` when warranted and return one line saying what happened.

    Raises NotifyError when a mail was due and could not be delivered; the state file is then left
    as it was, so the next run tries again.
    """
    state_path = settings.get("state")
    previous = load_state(state_path) if state_path else None
    send, why = should_send(doc, previous, bool(settings.get("only_changes")), always)
    if not send:
        if state_path:  # remember "clean" too, so the same drift coming back is mailed again
            save_state(state_path, state_for(doc, sent=False))
        return f"no mail sent: {why}"
    mark_changes(doc, previous)  # each finding: "new since last run" or "still present"
    prefix = settings.get("subject_prefix") or "[driftwatch]"
    resolved = is_resolved(doc, previous, bool(settings.get("only_changes")))
    if resolved:  # "[driftwatch] resolved: 14 hosts match 70toks"
        prefix = f"{prefix} resolved:"
    msg = build_message(doc, settings.get("sender") or default_sender(), list(settings["email"]),
                        subject_prefix=prefix)
    if resolved:
        msg["X-Driftwatch-Status"] = "resolved"
    send_message(msg, smtp_settings(settings, os.environ))
    if state_path:
        save_state(state_path, state_for(doc, sent=True))
    return f"mailed {msg['Subject']!s} to {', '.join(settings['email'])} ({why})"


__all__ = ["deliver", "default_sender", "smtp_settings"]
