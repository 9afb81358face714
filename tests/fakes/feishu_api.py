"""The import path the Feishu adapter tests use; the fake lives in ``tests.fakes.feishu``."""

from tests.fakes.feishu import FakeFeishu

__all__ = ["FakeFeishu"]
