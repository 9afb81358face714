"""The Telegram channel on python-telegram-bot 22, driven inside the daemon's loop (design §14).

PTB's ``Bot`` does every Bot API call (pointed at ``api_base_url``, so a self-hosted Bot API
server or a loopback fake works without patching). PTB's ``Application``/``Updater`` are not
used: the Updater confirms updates to Telegram before any handler has run, which would break
"ack only once durably recorded" (design §5). Updates come from this package's own long-poll
loop (``polling.py``) or from the webhook route it mounts on the daemon's HTTP server
(``webhook.py``); both hand each update to ``_handle_update``, which publishes it and answers
whether Telegram may forget it.

Private messages (``OutboundText.private_to``): a Telegram bot can speak to one member of a
group only in the answer to that member's button press, so a press is held open for a few
seconds (``presses.py``) and a message ``private_to`` the presser in that chat answers it as an
alert; otherwise the message is posted in the chat.

Capabilities encode Telegram's limits for the kernel: 4096 UTF-16 code units per message,
~1 message/s per chat and 30/s per bot (the kernel's limiter), progress edits ≥1 s in DMs and
≥3 s in groups, photos ≤10 MB, documents ≤50 MB. The 20 messages/minute per group rule lives
in ``ratelimit.py``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace

from telegram import Bot, BotCommand, Update
from typing_extensions import override

from bot.config.settings import Settings
from bot.delivery.bounded import RecentSet
from bot.errors import AuthFailed, ChannelError, ConfigError, SendError
from bot.messages import Attachment, InboundMessage, OutboundText, Reaction, SentRef
from bot.ports import (
    BotIdentity,
    ButtonLimits,
    ChannelCapabilities,
    ChannelContext,
    Publish,
    TextUnit,
)
from channels.base import PlatformChannel
from channels.telegram.errors import sdk_errors
from channels.telegram.inbound import BotMe, to_inbound
from channels.telegram.outbound import DOCUMENT_LIMIT, PHOTO_LIMIT, Outbound
from channels.telegram.polling import ALLOWED_UPDATES, ExclusivePolling
from channels.telegram.presses import PRESS_WINDOW_S, PressAnswers, PressKey
from channels.telegram.request import BotAccess

logger = logging.getLogger(__name__)

WEBHOOK_START_WAIT_S = 20.0
"""How long an update POSTed while the channel starts waits for it (Telegram waits longer)."""

QUESTION_BUTTONS = ButtonLimits(max_buttons=10, label_chars=64)
"""One option per keyboard row (``outbound._keyboard``): ten rows still fit a phone screen,
well inside the 100 buttons an inline keyboard takes; a longer label is cut by the client."""
TELEGRAM_CAPABILITIES = ChannelCapabilities(
    text_limit=4096,
    text_unit=TextUnit.UTF16,
    edits=True,
    buttons=True,
    threads=True,
    button_limits=QUESTION_BUTTONS,
    reactions=frozenset({Reaction.QUEUED}),
    typing=True,
    max_file_bytes=DOCUMENT_LIMIT,
    max_image_bytes=PHOTO_LIMIT,
    progress_interval_dm_s=1.0,
    progress_interval_group_s=3.0,
    per_chat_interval_s=1.0,
    per_dm_interval_s=0.0,
    global_rate_per_s=30.0,
    group_messages_per_minute=20,
)
"""Pacing as python-telegram-bot's own limiter: 30/s for the bot, about one message a second
in a group (and at most 20 new messages a minute), private chats limited only bot-wide.
Telegram says what it wants with 429 ``retry_after``, which blocks exactly that chat."""
PRIVACY_MODE_CAVEAT = (
    "the bot's privacy mode is on (getMe can_read_all_group_messages is false), so Telegram "
    "delivers it only commands, @-mentions and replies and listen hears nothing else; turn it "
    "off with @BotFather /setprivacy, then remove the bot from each group and add it again"
)
POLL_TIMEOUT_S = 10.0
RECENT_UPDATES = 2048
_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")


class TelegramChannel(PlatformChannel[Outbound]):
    name = "telegram"
    capabilities = TELEGRAM_CAPABILITIES
    not_running = "the Telegram channel is not started"

    def __init__(
        self,
        settings: Settings,
        context: ChannelContext,
        *,
        capabilities: ChannelCapabilities | None = None,
        poll_timeout_s: float = POLL_TIMEOUT_S,
        press_window_s: float = PRESS_WINDOW_S,
    ) -> None:
        """No I/O. ``capabilities`` replaces the pacing for benchmarks and tests on a fake;
        ``press_window_s`` is how long a button press waits for a private answer."""
        super().__init__(context.health)
        block = settings.channels.telegram
        token = self._required(block.token, "channels.telegram.token")
        self._access = BotAccess(
            token=token, api=block.api_base_url.rstrip("/"), in_flight=block.max_requests_in_flight
        )
        self._menu = context.commands
        if capabilities is not None:
            self.capabilities = capabilities
        self._webhook = block.webhook if block.mode == "webhook" else None
        if block.mode == "webhook":
            if self._webhook is None:
                raise ConfigError("channels.telegram.webhook: required when mode is webhook")
            # Only webhook mode loads aiohttp (``bot/ops/routes.py``).
            from channels.telegram.webhook import WebhookReceiver  # noqa: PLC0415

            receiver = WebhookReceiver(
                self._webhook.secret_token.get_secret_value(), self._handle_webhook_json
            )
            context.routes.add_post(self._webhook.path, receiver.handle)
        self._polling = ExclusivePolling(
            self._handle_updates,
            context.health,
            context.exclusive,
            timeout_s=poll_timeout_s,
            secret=token,
        )
        self._bot: Bot | None = None
        self._me: BotMe | None = None
        self._presses = PressAnswers(window_s=press_window_s, secret=token)
        self._recent: RecentSet[int] = RecentSet(RECENT_UPDATES)

    # ------------------------------------------------------------------ lifecycle

    async def probe(self) -> str:
        """``getMe`` for ``switchboard check --online``; raises ``AuthFailed``/``ChannelError``."""
        bot = self._access.new_bot()
        try:
            me = await self._initialize(bot)
        finally:
            await bot.shutdown()
        return f"@{me.username} (id {me.user_id})"

    @override
    async def _connect(self, publish: Publish) -> None:
        bot = self._bot = self._access.new_bot()
        me = await self._initialize(bot)
        private = not bot.bot.can_read_all_group_messages  # getMe: privacy mode is on
        caveat = PRIVACY_MODE_CAVEAT if private else None
        self.capabilities = replace(self.capabilities, listen_caveat=caveat)
        await self._register_commands(bot)
        self._me, self._out = me, Outbound(bot, secret=self._access.token)
        self._presses.start(bot)
        self._identity = BotIdentity(user_id=me.account_id, usernames=frozenset({me.username}))
        self._open_intake()
        if self._webhook is not None:
            await self._start_webhook(bot)
        else:
            await self._start_polling(bot)
        self._health.connected()
        mode = "webhook" if self._webhook else "polling"
        logger.info("telegram connected as @%s (%s mode)", me.username, mode)

    async def _initialize(self, bot: Bot) -> BotMe:
        try:
            with sdk_errors(self._access.token):
                await bot.initialize()
        except AuthFailed:
            raise
        except SendError as exc:
            raise ChannelError(f"Telegram is not reachable: {exc}") from exc
        user = bot.bot
        return BotMe(channel=self.name, user_id=user.id, username=user.username or "")

    async def _register_commands(self, bot: Bot) -> None:
        """The command menu: the commands every user may run (admin ones stay hidden)."""
        commands = [
            BotCommand(c.name, (c.summary or c.name)[:256])
            for c in self._menu
            if _COMMAND_NAME.fullmatch(c.name)
        ]
        try:
            with sdk_errors(self._access.token):
                await bot.set_my_commands(commands)
        except AuthFailed:
            raise
        except SendError as exc:
            logger.warning("could not register the command menu: %s", exc)

    async def _start_webhook(self, bot: Bot) -> None:
        assert self._webhook is not None  # noqa: S101 - webhook mode only
        try:
            with sdk_errors(self._access.token):
                await bot.set_webhook(
                    url=self._webhook.url,
                    secret_token=self._webhook.secret_token.get_secret_value(),
                    allowed_updates=ALLOWED_UPDATES,
                )
        except AuthFailed:
            raise
        except SendError as exc:
            raise ChannelError(f"setWebhook failed: {exc}") from exc

    async def _start_polling(self, bot: Bot) -> None:
        try:
            with sdk_errors(self._access.token):
                await bot.delete_webhook(drop_pending_updates=False)
        except AuthFailed:
            raise
        except SendError as exc:
            raise ChannelError(f"deleteWebhook failed: {exc}") from exc
        self._polling.start(bot)

    @override
    async def _stop_receiving(self) -> None:
        await self._polling.stop()

    @override
    async def _disconnect(self) -> None:
        await self._stop_receiving()
        await self._presses.aclose()
        bot, self._bot, self._out = self._bot, None, None
        if bot is not None:
            await bot.shutdown()

    # ------------------------------------------------------------------ inbound

    async def _handle_update(self, update: Update) -> bool:
        """Publish what ``update`` carries; ``True`` when Telegram may forget it."""
        return await self._handle_updates([update]) == 1

    async def _handle_updates(self, updates: Sequence[Update]) -> int:
        """Publish a batch with one journal write; how many leading updates Telegram may forget.

        Updates seen already and updates with nothing to act on count as handled; the first
        update the kernel refuses ends the count (it and the rest are fetched again). A button
        press is held for a private answer before it is published (the kernel may answer it
        at once) and let go unanswered if the kernel refused it.
        """
        self._health.activity()
        if not self._intake_open or self._publish is None or self._me is None:
            return 0
        read = [
            (position, message)
            for position, update in enumerate(updates)
            if update.update_id not in self._recent
            and (message := self._read(update, self._me)) is not None
        ]
        held = self._hold_presses(updates, read)
        try:
            admissions = await self._publish.many([m for _, m in read]) if read else []
        except BaseException:
            self._release_presses(updates, held, since=0)
            raise
        handled = len(updates)
        for (position, _), admission in zip(read, admissions, strict=True):
            if not admission.ack:
                logger.warning("update %s refused (%s)", updates[position].update_id, admission)
                handled = position
                break
        self._release_presses(updates, held, since=handled)
        for position, update in enumerate(updates[:handled]):
            query = update.callback_query
            if query is not None and position not in held and update.update_id not in self._recent:
                self._presses.answer_empty(query.id)  # not the kernel's: nothing to tell them
            self._remember(update.update_id)
        return handled

    def _hold_presses(
        self, updates: Sequence[Update], read: Sequence[tuple[int, InboundMessage]]
    ) -> dict[int, PressKey]:
        """Hold each button press about to be published: position → (chat id, user id)."""
        held: dict[int, PressKey] = {}
        for position, message in read:
            query = updates[position].callback_query
            if query is not None and message.button is not None:
                held[position] = (message.chat_id, message.sender.id)
                self._presses.hold(held[position], query.id)
        return held

    def _release_presses(
        self, updates: Sequence[Update], held: dict[int, PressKey], *, since: int
    ) -> None:
        """Let go, unanswered, of the presses from position ``since`` on (not journaled)."""
        for position, key in held.items():
            query = updates[position].callback_query
            if position >= since and query is not None:
                self._presses.release(key, query.id)

    @staticmethod
    def _read(update: Update, me: BotMe) -> InboundMessage | None:
        try:
            return to_inbound(update, me)
        except Exception:
            logger.exception("update %s could not be read; skipping it", update.update_id)
            return None

    async def _handle_webhook_json(self, data: dict[str, object]) -> bool | None:
        if not await self._intake_ready(WEBHOOK_START_WAIT_S):
            return False
        bot = self._bot
        if bot is None:
            return False
        try:
            update = Update.de_json(data, bot)
        except (KeyError, TypeError, ValueError):
            return None
        return await self._handle_update(update)

    def _remember(self, update_id: int) -> None:
        if update_id not in self._recent:  # a redelivered update keeps its first place
            self._recent.add(update_id)

    # ------------------------------------------------------------------ outbound

    @override
    def _auth_refused(self, exc: AuthFailed) -> None:
        """Not reported from a send: the poller reports a refused token (and parks)."""

    @override
    async def send_text(self, message: OutboundText) -> SentRef:
        """A message ``private_to`` someone whose button press is still held answers that press
        (an alert only they see; nothing in the chat to edit later, so no message id); any
        other message, and one that came too late, is posted in the chat."""
        if message.private_to is not None and not message.buttons:
            key = (message.destination.chat_id, message.private_to)
            if await self._presses.answer_privately(key, message.text, message.render):
                return SentRef(message_ids=())
        return await super().send_text(message)

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        return await self._outbound().download(attachment, max_bytes=max_bytes)
