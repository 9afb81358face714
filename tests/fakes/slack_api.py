"""The import path the Slack adapter tests use; the fake lives in ``tests.fakes.slack``."""

from tests.fakes.slack import Call, Delivery, Ephemeral, FakeSlack

__all__ = ["Call", "Delivery", "Ephemeral", "FakeSlack"]
