"""The import path the DingTalk adapter tests use; the fake lives in ``tests.fakes.dingtalk``."""

from tests.fakes.dingtalk import TINY_PNG, FakeDingTalk

__all__ = ["TINY_PNG", "FakeDingTalk"]
