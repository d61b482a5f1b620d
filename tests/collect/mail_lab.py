"""A real SMTP server (aiosmtpd) on loopback that keeps every message it is given: the `smtp`
fixture, (port, box) with `box.messages` parsed, for the fleet tests that read what cron would mail."""
from __future__ import annotations

from email import message_from_bytes, policy

import pytest
from dw_sshlab import free_port


class Mailbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 OK"


@pytest.fixture
def smtp():
    from aiosmtpd.controller import Controller
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port(), ready_timeout=5)
    controller.start()
    try:
        yield controller.port, box
    finally:
        controller.stop()
