"""The fake Telegram Bot API (contract path); the implementation is ``tests/fakes/telegram/``."""

from tests.fakes.telegram import (
    SECRET_HEADER,
    TINY_PNG,
    Call,
    CallbackAnswer,
    FakeTelegram,
    tiny_png,
)

__all__ = ["SECRET_HEADER", "TINY_PNG", "Call", "CallbackAnswer", "FakeTelegram", "tiny_png"]
