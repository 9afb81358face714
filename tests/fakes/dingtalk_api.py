"""The import path the DingTalk adapter tests use; the fake lives in ``tests.fakes.dingtalk``."""

from tests.fakes.dingtalk import (
    TINY_PNG,
    Ack,
    Call,
    CardUpdate,
    CardView,
    Delivery,
    FakeDingTalk,
    Sent,
    Upload,
)

__all__ = [
    "TINY_PNG",
    "Ack",
    "Call",
    "CardUpdate",
    "CardView",
    "Delivery",
    "FakeDingTalk",
    "Sent",
    "Upload",
]
