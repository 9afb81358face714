"""The test-facing API of the fake Telegram: push traffic in, see what the bot did, inject faults.

Every method here is thread-safe and callable from the test's thread; the blocking waits have
``await_*`` twins for async tests.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence, Sized
from typing import Any

from tests.fakes.common import waiting
from tests.fakes.telegram import inbound
from tests.fakes.telegram.errors import ApiError
from tests.fakes.telegram.recording import Call, Predicate, refuse_running_loop
from tests.fakes.telegram.server import FakeTelegramServer
from tests.fakes.telegram.world import CallbackAnswer, Json


class FakeTelegram(FakeTelegramServer):
    """``with FakeTelegram() as fake:`` serves the Bot API at ``fake.base_url`` until the block
    ends; point python-telegram-bot at ``base_url``/``base_file_url`` (or the adapter at
    ``api_origin``)."""

    def __init__(
        self,
        *,
        token: str = "123456:TEST-token",  # noqa: S107 - a fake token
        bot_id: int = 999,
        bot_username: str = "fake_bot",
    ) -> None:
        super().__init__(token=token, bot_id=bot_id, bot_username=bot_username)

    def set_privacy_mode(self, *, on: bool) -> None:
        """What ``getMe`` says from now on (BotFather ``/setprivacy``); on by default."""
        with self._cond:
            self._world.privacy_mode = on

    # ------------------------------------------------------------------ inbound traffic

    def push_update(self, update: dict[str, Any]) -> int:
        """Queues an update (assigning ``update_id`` if missing) for getUpdates or the webhook."""
        with self._cond:
            update_id = self._world.enqueue(copy.deepcopy(update))
        self._poke()
        return update_id

    def push_message(  # noqa: PLR0913 - the message fields tests vary
        self,
        text: str | None = None,
        *,
        chat_id: int = 42,
        chat_type: str = "private",
        user_id: int = 42,
        first_name: str = "Alice",
        username: str | None = "alice",
        message_id: int | None = None,
        message_thread_id: int | None = None,
        is_forum: bool = False,
        reply_to_message_id: int | None = None,
        entities: list[dict[str, Any]] | None = None,
        caption: str | None = None,
        photo_file_ids: list[str] | None = None,
        document_file_id: str | None = None,
        document_name: str | None = None,
        voice_file_id: str | None = None,
    ) -> dict[str, Any]:
        """A user's message; registers the chat and user so the bot may answer. Returns the
        Update as queued (``update["message"]["message_id"]`` is the user's message id)."""
        spec = inbound.PushedMessage(
            text=text, chat_id=chat_id, chat_type=chat_type, user_id=user_id,
            first_name=first_name, username=username, message_id=message_id,
            message_thread_id=message_thread_id, is_forum=is_forum,
            reply_to_message_id=reply_to_message_id, entities=entities, caption=caption,
            photo_file_ids=photo_file_ids, document_file_id=document_file_id,
            document_name=document_name, voice_file_id=voice_file_id,
        )  # fmt: skip
        with self._cond:
            update = inbound.message_update(self._world, spec)
            self._world.enqueue(update)
            queued = _copy(update)
        self._poke()
        return queued

    def push_edit(
        self, message_id: int, text: str, *, chat_id: int = 42, entities: list[Json] | None = None
    ) -> dict[str, Any]:
        """The user edits their message ``message_id`` to ``text`` (``edited_message``)."""
        with self._cond:
            update = inbound.edited_update(
                self._world, chat_id=chat_id, message_id=message_id, text=text, entities=entities
            )
            self._world.enqueue(update)
            queued = _copy(update)
        self._poke()
        return queued

    def push_callback_query(
        self,
        *,
        data: str,
        chat_id: int,
        message_id: int,
        user_id: int = 42,
        first_name: str = "Alice",
    ) -> dict[str, Any]:
        """A press of an inline button with ``data`` on the bot's message ``message_id``."""
        with self._cond:
            update = inbound.callback_update(
                self._world, data=data, chat_id=chat_id, message_id=message_id,
                user_id=user_id, first_name=first_name,
            )  # fmt: skip
            self._world.enqueue(update)
            queued = _copy(update)
        self._poke()
        return queued

    def redeliver(self, update_id: int) -> None:
        """Offers ``update_id`` once more (to the next getUpdates, whatever its offset, or to
        the webhook), as if its confirmation had been lost."""
        with self._cond:
            self._world.redeliver(update_id)
        self._poke()

    def add_file(self, file_id: str, content: bytes, *, file_path: str | None = None) -> None:
        """Makes ``file_id`` downloadable through getFile and the file URL."""
        with self._cond:
            self._world.add_file(file_id, content, file_path, folder="documents")

    # ------------------------------------------------------------------ what the bot did

    def calls(self, method: str | None = None) -> list[Call]:
        """Every request so far (including refused ones), oldest first."""
        return self._log.calls(method)

    def calls_after(self, seen: int, timeout: float = 5.0) -> list[Call]:
        """Every request after the first ``seen``, waiting up to ``timeout`` for at least one
        (a load driver following all of the bot's calls in order)."""
        refuse_running_loop("calls_after", "asyncio.to_thread(fake.calls_after, ...)")
        return self._log.after(seen, timeout)

    def wait_for_call(
        self, method: str, predicate: Predicate | None = None, timeout: float = 5.0
    ) -> Call:
        """The first call of ``method`` matching ``predicate``, waiting up to ``timeout``.

        Raises ``AssertionError`` naming what was seen instead. Blocking: async tests use
        ``await_call``."""
        refuse_running_loop("wait_for_call", "await_call(...)")
        return self._log.wait(method, predicate, 1, timeout)[0]

    async def await_call(
        self,
        method: str,
        predicate: Predicate | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> Call:
        return (await self.await_calls(method, 1, predicate, timeout))[0]

    def wait_for_calls(
        self, method: str, count: int, predicate: Predicate | None = None, timeout: float = 5.0
    ) -> list[Call]:
        """The first ``count`` matching calls, once there are that many."""
        refuse_running_loop("wait_for_calls", "await_calls(...)")
        return self._log.wait(method, predicate, count, timeout)

    async def await_calls(
        self,
        method: str,
        count: int,
        predicate: Predicate | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> list[Call]:
        return await asyncio.to_thread(self._log.wait, method, predicate, count, timeout)

    def callback_answers(self) -> dict[str, CallbackAnswer]:
        """How each answered button press was answered, by callback query id."""
        with self._cond:
            return dict(self._world.callback_answers)

    def chat_messages(self, chat_id: int) -> list[dict[str, Any]]:
        """The bot's messages in the chat as they stand now (after edits, minus deletions)."""
        with self._cond:
            return self._world.bot_messages(chat_id)

    # ------------------------------------------------------------------ fault injection

    def fail_next(
        self,
        method: str,
        *,
        status: int,
        description: str,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls of ``method`` get this error instead of being handled."""
        with self._cond:
            error = ApiError(status, description, retry_after=retry_after)
            self._injections.fail(method, error, times)

    def delay_next(self, method: str, seconds: float, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` are answered ``seconds`` late."""
        with self._cond:
            self._injections.delay(method, seconds, times)

    def set_token_valid(self, valid: bool) -> None:  # noqa: FBT001 - the shared contract
        """While False every method (and file download) answers 401 Unauthorized."""
        with self._cond:
            self._token_valid = valid

    # ------------------------------------------------------------------ webhook

    def webhook_deliveries(self) -> list[tuple[int, int]]:
        """``(update_id, status the bot answered)`` per delivery; status 0 = unreachable."""
        with self._cond:
            return list(self._world.deliveries)

    def wait_for_deliveries(self, count: int, timeout: float = 5.0) -> list[tuple[int, int]]:
        refuse_running_loop("wait_for_deliveries", "await_deliveries(...)")
        return self._wait_deliveries(count, timeout)

    async def await_deliveries(
        self,
        count: int,
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> list[tuple[int, int]]:
        return await asyncio.to_thread(self._wait_deliveries, count, timeout)

    def _wait_deliveries(self, count: int, timeout: float) -> list[tuple[int, int]]:
        with self._cond:
            if not self._at_least(self._world.deliveries, count, timeout):
                seen = self._world.deliveries
                raise AssertionError(
                    f"FakeTelegram: expected {count} webhook deliveries, saw {seen}"
                )
            return list(self._world.deliveries)

    def balance_webhook(self, urls: Sequence[str] | None) -> None:
        """Puts a load balancer in front of several replicas' webhook routes; ``[]``/None
        removes it.

        While ``urls`` is set (and setWebhook has set a webhook, whose secret header is still
        sent), every webhook post goes to the next URL in the rotation, starting at ``urls[0]``,
        instead of the setWebhook URL. Updates are still posted one at a time and in order; a
        failed post (unreachable, timed out or non-2xx) is retried after ``webhook_retry_s`` on
        the next URL, up to ``webhook_balanced_max_attempts`` tries instead of
        ``webhook_max_attempts``. ``push_raw_webhook`` posts through the rotation too."""
        with self._cond:
            self._balancer.set(urls)
        self._poke()

    def balanced_deliveries(self) -> list[tuple[int, str]]:
        """``(update_id, url that answered 2xx)`` per update accepted behind the balancer, in
        delivery order (every try, failed ones too, stays in ``webhook_deliveries``)."""
        with self._cond:
            return list(self._balancer.accepted)

    def wait_for_balanced_deliveries(
        self, count: int, timeout: float = 5.0
    ) -> list[tuple[int, str]]:
        """``balanced_deliveries()`` once it holds at least ``count`` entries."""
        refuse_running_loop("wait_for_balanced_deliveries", "await_balanced_deliveries(...)")
        return self._wait_balanced(count, timeout)

    async def await_balanced_deliveries(
        self,
        count: int,
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> list[tuple[int, str]]:
        return await asyncio.to_thread(self._wait_balanced, count, timeout)

    def _wait_balanced(self, count: int, timeout: float) -> list[tuple[int, str]]:
        with self._cond:
            if not self._at_least(self._balancer.accepted, count, timeout):
                raise AssertionError(
                    f"FakeTelegram: expected {count} balanced webhook deliveries, saw "
                    f"{self._balancer.accepted} (every try: {self._world.deliveries})"
                )
            return list(self._balancer.accepted)

    def _at_least(self, items: Sized, count: int, timeout: float) -> bool:
        """Whether ``items`` (guarded by the fake's lock) holds ``count`` within ``timeout``."""
        return waiting.wait_until(self._cond, lambda: len(items) >= count, timeout)

    def push_raw_webhook(self, body: bytes, *, secret: str | None) -> int:
        """POSTs ``body`` to the webhook with this secret header (None = omitted); returns the
        status. Blocking: async tests use ``apush_raw_webhook``."""
        refuse_running_loop("push_raw_webhook", "apush_raw_webhook(...)")
        return int(self._run(self._post_raw_webhook(body, secret)).result(timeout=15))

    async def apush_raw_webhook(self, body: bytes, *, secret: str | None) -> int:
        return int(await asyncio.wrap_future(self._run(self._post_raw_webhook(body, secret))))


def _copy(update: Json) -> Json:
    return copy.deepcopy(update)
