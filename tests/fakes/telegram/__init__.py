"""A strict loopback fake of the Telegram Bot API for Switchboard's tests.

Wire rules (design §17.1): ``POST /bot<TOKEN>/<method>`` with form or multipart bodies only
(JSON and GET are refused with 400 because python-telegram-bot never sends them); a wrong token
answers 401, an unknown method 404; success is ``200 {"ok": true, "result": ...}``, errors are
non-2xx ``{"ok": false, "error_code", "description"}`` (+ ``parameters.retry_after``). Text is
validated as the real server does: 1-4096 UTF-16 code units after parsing, HTML and
MarkdownV2 parsed by tdlib's rules, ``entities`` checked against the text, "message is not
modified" on no-op edits, replies, topics and chats must exist; a button press is answered
once, with at most 200 characters (``callback_answers`` keeps each answer). Files download from
``GET /file/bot<TOKEN>/<file_path>``.
"""

from tests.fakes.telegram.fake import FakeTelegram
from tests.fakes.telegram.media import TINY_PNG, tiny_png
from tests.fakes.telegram.recording import Call
from tests.fakes.telegram.server import SECRET_HEADER
from tests.fakes.telegram.world import CallbackAnswer

__all__ = ["SECRET_HEADER", "TINY_PNG", "Call", "CallbackAnswer", "FakeTelegram", "tiny_png"]
