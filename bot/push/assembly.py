"""How a daemon and the CLI each build their ``Pusher`` (design §19).

The daemon plans with its running channels' capabilities, sends at once when it is alone on
its store (``Outbox.submit``), and journals prompts through intake. The CLI has no channels:
it plans with each adapter's declared capabilities (``bot.registry.capabilities_of``, which
imports only the named channel's module) and only records, for the daemon to send.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.config.settings import GroupScope, Settings
from bot.delivery.outbox import Outbox
from bot.hub import ChannelHub, ChannelState
from bot.messages import ConversationKey
from bot.pipeline.bus import InboundBus
from bot.pipeline.intake import Intake
from bot.pipeline.sessions import ChatAddress, Sessions, pushed_key
from bot.ports import ChannelCapabilities, Store
from bot.push.pusher import PushDeps, Pusher, PushIntake
from bot.registry import capabilities_of


def daemon_pusher(  # noqa: PLR0913 - the kernel parts a push goes through
    *,
    settings: Callable[[], Settings],
    store: Store,
    hub: ChannelHub,
    outbox: Outbox,
    intake: Intake,
    bus: InboundBus,
    sessions: Sessions,
) -> Pusher:
    def note(name: str) -> str | None:
        state = hub.state(name)
        if state is ChannelState.RUNNING:
            return None
        return f"channel {name} is {state or 'not running'}: the delivery waits until it runs"

    return Pusher(
        PushDeps(
            settings=settings,
            store=store,
            caps_of=hub.capabilities_of,
            key_for=sessions.pushed_key,
            record=None if store.leases.shared else outbox.submit,
            intake=PushIntake(publish=intake.pushed, bus=bus),
            repoll=outbox.repoll,
            channel_note=note,
        )
    )


def cli_pusher(settings: Settings, store: Store) -> Pusher:
    def key_for(address: ChatAddress) -> ConversationKey:
        scope = settings.channel_policy(address.channel).group_scope
        caps = capabilities_of(address.channel)
        if scope is GroupScope.TOPIC and (caps is None or not caps.threads):
            scope = GroupScope.USER
        return pushed_key(address, scope)

    def caps_of(name: str) -> ChannelCapabilities | None:
        return capabilities_of(name) if name in settings.channels.enabled() else None

    deps = PushDeps(settings=lambda: settings, store=store, caps_of=caps_of, key_for=key_for)
    return Pusher(deps)
