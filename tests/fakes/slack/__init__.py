"""A loopback fake Slack for channel tests; see ``fake.FakeSlack``."""

from tests.fakes.slack.fake import FakeSlack
from tests.fakes.slack.records import Call, Delivery, Ephemeral

__all__ = ["Call", "Delivery", "Ephemeral", "FakeSlack"]
