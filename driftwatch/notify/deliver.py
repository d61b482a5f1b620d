"""Decide whether a fleet report is mailed, mail it, and remember what was sent (--only-changes)."""
from __future__ import annotations

import os
from typing import Mapping

from .email import build_message, send_message
from .state import load_state, save_state, should_send, state_for


def deliver(doc: dict, settings: Mapping, always: bool) -> str:
    """Mail `doc` when warranted and return one line saying what happened.

    Raises NotifyError when a mail was due and could not be delivered; the state file is then left
    as it was, so the next run tries again.
    """
    from ..settings import default_sender, smtp_settings
    state_path = settings.get("state")
    previous = load_state(state_path) if state_path else None
    send, why = should_send(doc, previous, bool(settings.get("only_changes")), always)
    if not send:
        if state_path:  # remember "clean" too, so the same drift coming back is mailed again
            save_state(state_path, state_for(doc, sent=False))
        return f"no mail sent: {why}"
    msg = build_message(doc, settings.get("sender") or default_sender(), list(settings["email"]),
                        subject_prefix=settings.get("subject_prefix") or "[driftwatch]")
    send_message(msg, smtp_settings(settings, os.environ))
    if state_path:
        save_state(state_path, state_for(doc, sent=True))
    return f"mailed {msg['Subject']!s} to {', '.join(settings['email'])}"
