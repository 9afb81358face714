"""The Slack channel on slack-bolt's ``AsyncApp``, in Socket Mode or HTTP Events mode (design §14).

Wiring (design §17.2), all on the daemon's loop, nothing patched:

- Web API calls go through ``AsyncWebClient(base_url=api_base_url)`` with no retry handlers —
  the kernel's outbox retries by error kind (``errors.py``), so nothing is sent twice.
- ``start`` runs ``auth.test`` once (a refused token raises ``AuthFailed``: the channel is
  parked) and hands bolt an ``authorize`` function answering from that result, so bolt makes
  no ``auth.test`` of its own before acknowledging the first event. The result also gives the
  bot's user id (mentions, own messages) and the team id (``account_id``).
- Socket Mode: ``connection.SocketLink`` (``connect_async``/``close_async``, reconnects,
  backoff, health). HTTP mode: a route on the daemon's HTTP server, registered in
  ``__init__``, dispatching to bolt, which checks the signing secret (401 otherwise) and
  answers ``url_verification``.
- Listeners (``events.py``) only publish; bolt acks once they return (see there).

Proxies: slack_sdk reads ``HTTPS_PROXY``/``HTTP_PROXY`` but ignores ``NO_PROXY``. The adapter
decides itself, with the standard library's rules (``NO_PROXY`` honoured), whether the API host
needs a proxy and sets that on the clients it owns — the Web API client and the Socket Mode
client — overriding what the SDK picked up from the environment. Bolt's per-request clients
would still read the environment, but this adapter never calls through them.

Capabilities: the ``markdown`` block holds 12 000 characters, so that is the text limit the
kernel splits at; Slack allows about one message per second per channel (edits and posts share
the kernel's limiter); progress edits every second; Slack has no bot typing indicator.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient
from typing_extensions import override

from bot.config.settings import Settings
from bot.errors import AuthFailed, ChannelError, DownloadError, SendError
from bot.messages import Attachment, Reaction
from bot.ports import BotIdentity, ButtonLimits, ChannelCapabilities, ChannelContext, Publish
from channels.base import PlatformChannel
from channels.slack.connection import LinkOptions, LinkWebClient, SocketLink, open_url
from channels.slack.downloads import FileAccess, fetch
from channels.slack.errors import sdk_errors
from channels.slack.events import Listeners
from channels.slack.inbound import BotSelf, ChoiceClick, InboundRules, Translator
from channels.slack.markup import UserNames
from channels.slack.outbound import Outbound
from channels.slack.render import BUTTON_LABEL_LIMIT, BUTTONS_PER_BLOCK
from channels.slack.webhook import SignedRequests

logger = logging.getLogger(__name__)

FILE_LIMIT = 100 * 1024 * 1024
QUESTION_BUTTONS = ButtonLimits(max_buttons=BUTTONS_PER_BLOCK, label_chars=BUTTON_LABEL_LIMIT)
"""One ``actions`` block (25 elements) of buttons whose text Slack takes (75 characters)."""
SLACK_CAPABILITIES = ChannelCapabilities(
    text_limit=12_000,
    edits=True,
    buttons=True,
    threads=True,
    typing=False,
    deletes=True,
    reactions=frozenset(Reaction),
    button_limits=QUESTION_BUTTONS,
    max_file_bytes=FILE_LIMIT,
    max_image_bytes=FILE_LIMIT,
    progress_interval_dm_s=1.0,
    progress_interval_group_s=1.0,
    per_chat_interval_s=1.0,
    per_dm_interval_s=1.0,
)
"""``chat.postMessage`` allows about one message a second per conversation, a DM included
(short bursts tolerated); ``chat.update`` is Tier 3 (50+/min per workspace) and progress
edits are throttled by the progress interval. No bot-wide pacing: the tiers are per method,
and a 429's ``Retry-After`` blocks the conversation it came from."""
PING_INTERVAL_S = 10.0
HTTP_START_WAIT_S = 2.5
"""How long an event POSTed while the channel starts waits for it (Slack gives up at 3 s)."""
AUTH_RECHECK_S = 300.0
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=15, sock_read=60)


@dataclass(frozen=True, slots=True, kw_only=True)
class Clients:
    """The HTTP session and the two Web API clients on it: sends, and the link's control."""

    session: aiohttp.ClientSession
    sends: AsyncWebClient
    control: LinkWebClient


def proxy_for(url: str) -> str | None:
    """The proxy for ``url`` by the usual environment variables, ``NO_PROXY`` included."""
    parts = urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme) or None


class SlackChannel(PlatformChannel[Outbound]):
    name = "slack"
    capabilities = SLACK_CAPABILITIES
    not_running = "the Slack channel is not running"

    def __init__(
        self,
        settings: Settings,
        context: ChannelContext,
        *,
        capabilities: ChannelCapabilities | None = None,
        ping_interval_s: float = PING_INTERVAL_S,
        rules: InboundRules | None = None,
    ) -> None:
        """No I/O. ``capabilities`` and ``ping_interval_s`` let tests on a fake go faster."""
        super().__init__(context.health)
        block = settings.channels.slack
        bot_token = self._required(block.bot_token, "channels.slack.bot_token")
        self._socket = block.mode == "socket"
        app_token, self._signing_secret = "", ""
        if self._socket:
            app_token = self._required(block.app_token, "channels.slack.app_token")
        else:
            secret = self._required(block.signing_secret, "channels.slack.signing_secret")
            self._signing_secret = secret
        self._signed = None if self._socket else SignedRequests(self._signing_secret)
        proxy = proxy_for(block.api_base_url)
        self._access = FileAccess(token=bot_token, api_base_url=block.api_base_url, proxy=proxy)
        self._options = LinkOptions(
            app_token=app_token, ping_interval_s=ping_interval_s, proxy=proxy
        )
        self._rules = rules or InboundRules(ignore_other_bots=settings.channels.slack.ignore_bots)
        if capabilities is not None:
            self.capabilities = capabilities
        if not self._socket:
            context.routes.add_post(block.events_path, self._on_http)
        self._clients: Clients | None = None
        self._app: AsyncApp | None = None
        self._link: SocketLink | None = None
        self._auth_lost = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle

    def _new_clients(self) -> Clients:
        access = self._access
        session = aiohttp.ClientSession(timeout=HTTP_TIMEOUT)
        sends = AsyncWebClient(
            token=access.token, base_url=access.api_base_url, session=session, retry_handlers=[]
        )
        control = LinkWebClient(health=self._health, base_url=access.api_base_url, session=session)
        for client in (sends, control):
            client.proxy = access.proxy  # override what the SDK read from the environment
        return Clients(session=session, sends=sends, control=control)

    async def probe(self) -> str:
        """``auth.test`` (and, in Socket Mode, the app token) for ``switchboard check --online``."""
        clients = self._new_clients()
        session, sends, control = clients.session, clients.sends, clients.control
        try:
            me = await self._authenticate(sends)
            detail = f"{me.team or me.team_id} ({me.team_id}) as @{me.name or me.user_id}"
            if self._socket:
                await open_url(control, self._options.app_token)
                detail += ", app token ok"
        finally:
            await session.close()
        return detail

    @override
    async def _connect(self, publish: Publish) -> None:
        clients = self._clients = self._new_clients()
        sends, control = clients.sends, clients.control
        me = await self._authenticate(sends)
        self._identity = BotIdentity(
            user_id=me.user_id, usernames=frozenset({me.name}) if me.name else frozenset()
        )
        self._out = Outbound(sends)
        app = self._app = self._new_app(control, me)
        translator = Translator(me, UserNames(self._user_name), self._rules, self.name)
        Listeners(translator, publish, self._mark_choice, self._accepting).register(app)
        self._open_intake()
        self._spawn(self._recheck_auth(), "auth")
        if self._socket:
            self._link = SocketLink(app, self._options, control, self._health)
            await self._link.open()
        else:
            self._health.connected()
        logger.info("slack connected (%s mode)", "socket" if self._socket else "http")

    def _new_app(self, client: AsyncWebClient, me: BotSelf) -> AsyncApp:
        async def authorize(enterprise_id: str | None) -> AuthorizeResult:
            return AuthorizeResult(
                enterprise_id=enterprise_id,
                team_id=me.team_id,
                bot_id=me.bot_id,
                bot_user_id=me.user_id,
                bot_token=self._access.token,
            )

        return AsyncApp(
            name="switchboard",
            client=client,
            signing_secret=self._signing_secret,
            authorize=authorize,
            process_before_response=True,
            ignoring_self_events_enabled=True,
        )

    async def _authenticate(self, client: AsyncWebClient) -> BotSelf:
        try:
            with sdk_errors():
                found = await client.auth_test()
        except AuthFailed:
            raise
        except SendError as exc:
            raise ChannelError(f"auth.test failed: {exc}") from exc
        return BotSelf(
            team_id=str(found.get("team_id") or ""),
            team=str(found.get("team") or ""),
            user_id=str(found.get("user_id") or ""),
            bot_id=str(found.get("bot_id") or ""),
            name=str(found.get("user") or ""),
        )

    def _accepting(self) -> bool:
        return self._intake_open

    @override
    async def _stop_receiving(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            await link.close()

    @override
    async def _disconnect(self) -> None:
        await self._stop_receiving()
        await self._cancel_spawned()
        if self._clients is not None:
            clients, self._clients = self._clients, None
            await clients.session.close()

    # ------------------------------------------------------------------ inbound

    async def _on_http(self, request: web.Request) -> web.StreamResponse:
        """The Events/interactivity/commands endpoint. During a start the call waits for
        intake to open (Slack allows 3 s); 503 when it cannot be taken, so Slack retries."""
        if self._signed is None:  # pragma: no cover - the route exists in http mode only
            return web.Response(status=404)
        refused = self._signed.refusal(await request.read(), dict(request.headers))
        if refused is not None:
            return refused  # before bolt parses anything (``webhook.py``)
        ready = await self._intake_ready(HTTP_START_WAIT_S)
        app = self._app
        if app is None or not ready:
            return web.Response(status=503, text="not ready")
        response = await app.async_dispatch(await to_bolt_request(request))
        if response.status == 200:
            self._health.activity()
        return await to_aiohttp_response(response)

    async def _user_name(self, user_id: str) -> str | None:
        if self._clients is None:
            return None
        with sdk_errors():
            found = await self._clients.sends.users_info(user=user_id)
        user = found.get("user") or {}
        profile = user.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or user.get("name")
        return str(name) if name else None

    def _mark_choice(self, click: ChoiceClick) -> None:
        if self._out is not None:
            self._spawn(self._out.mark_choice(click), "choice")

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        if self._clients is None:
            raise DownloadError("the Slack channel is not running")
        return await fetch(self._clients.session, attachment, self._access, max_bytes)

    # ------------------------------------------------------------------ outbound

    @override
    def _auth_refused(self, exc: AuthFailed) -> None:
        """A refused token parks the channel until ``auth.test`` passes again."""
        super()._auth_refused(exc)
        self._auth_lost.set()

    async def _recheck_auth(self) -> None:
        while True:
            await self._auth_lost.wait()
            await asyncio.sleep(AUTH_RECHECK_S)
            if self._clients is None:
                continue
            try:
                await self._authenticate(self._clients.sends)
            except ChannelError as exc:
                logger.info("slack token still refused: %s", exc)
                continue
            self._auth_lost.clear()
            self._health.connected()
