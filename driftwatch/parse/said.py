"""Messages that systemd words with the offending value in them, and the public form driftwatch shows.

systemd quotes what it refuses (`Unbalanced quoting, ignoring: "…--api-key sk-…"`); the parser keeps
that wording (the oracle tests compare it with `systemd --test`), but nothing driftwatch prints or
stores may echo a value, which can be a secret. A `Said` is the systemd text (as a str) that also
carries `.public`: the same problem, file and line, with the value left out.
"""
from __future__ import annotations


class Said(str):
    """A systemd message (the str itself) with its public form (`.public`)."""

    public: str

    def __new__(cls, systemd: str, public: str | None = None) -> Said:
        obj = super().__new__(cls, systemd)
        obj.public = public if public is not None else str(systemd)
        return obj

    def __add__(self, other: object) -> Said:  # 'prefix' + said and said + 'suffix' keep both forms
        return Said(str(self) + str(other), self.public + public(other))

    def __radd__(self, other: object) -> Said:
        return Said(str(other) + str(self), public(other) + self.public)


def public(message: object) -> str:
    """The form of a message (a str, a Said, or an exception holding one) that may be shown."""
    if isinstance(message, BaseException):
        message = message.args[0] if message.args else str(message)
    return getattr(message, "public", None) or str(message)


def prefixed(prefix: str, message: object) -> Said:
    return Said(prefix + str(message), prefix + public(message))
