"""The SMTP settings' fixed words, apart from the mailer: the config file reads them on every
command, and importing `notify.email` for them would load smtplib, ssl and the email package
(~0.05 s) into commands that never mail."""
from __future__ import annotations

SECURITY_MODES = ("starttls", "ssl", "plain")
PASSWORD_ENV = "DRIFTWATCH_SMTP_PASSWORD"
