"""A channel's state as the overview shows it: a colour (its tone), a short sentence an
operator reads at a glance, and the raw reason the adapter gave, kept for a tooltip.

The reasons come from the supervisor (``start failed: …``, ``stale: …``, ``restart budget
exhausted …``), the health reporter (``auth_failed: …``) and each adapter's own words (an
exception's text, such as httpx's ``ConnectError: [Errno -2] Name or service not known``).
The sentence is picked from what the reason says; the reason itself is never parsed further.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bot.hub import ChannelState

TONES: Final = {
    ChannelState.RUNNING: "ok",
    ChannelState.STARTING: "warn",
    ChannelState.RECONNECTING: "warn",
    ChannelState.PARKED: "bad",
    ChannelState.STOPPED: "off",
}
# (words in the raw reason, lower case) → the sentence; the first that matches wins.
_SENTENCES: Final = (
    (
        ("auth_failed", "unauthorized", "invalid_auth", "token"),
        "The platform refused the credentials: check the token in the config, then reload.",
    ),
    (("restart budget",), "Restarted too often: waiting a while before the next try."),
    (("re-probing",), "Checking again whether the credentials work now."),
    (("restart requested",), "Restarting (a reload or an operator asked for it)."),
    (("stale", "nothing received"), "Nothing heard from the platform for a while: reconnecting."),
    (
        ("name or service not known", "nodename nor servname", "name resolution", "getaddrinfo"),
        "Cannot reach the platform (DNS or network): retrying.",
    ),
    (
        ("connecterror", "connectionerror", "connection refused", "connection reset", "network"),
        "Cannot reach the platform (network): retrying.",
    ),
    (("timeout", "timed out"), "The platform did not answer in time: retrying."),
    (
        ("500", "502", "503", "504", "server error", "bad gateway"),
        "The platform is having trouble (a server error): retrying.",
    ),
    (
        ("socket closed", "disconnect", "closed"),
        "The platform closed the connection: reconnecting.",
    ),
)
_BY_STATE: Final = {
    ChannelState.RUNNING: "Connected.",
    ChannelState.STARTING: "Connecting.",
    ChannelState.RECONNECTING: "Connection lost: reconnecting.",
    ChannelState.PARKED: "Stopped trying: see the reason, fix it, then reload.",
    ChannelState.STOPPED: "Not running.",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelView:
    name: str
    state: str
    label: str
    """The state as shown: ``running``, ``running (paused)``."""
    tone: str
    """``ok``, ``warn``, ``bad`` or ``off``: the badge's colour."""
    sentence: str
    raw: str
    """The reason as the adapter gave it (escaped by the template; shown as a tooltip)."""


def readable_reason(state: ChannelState, reason: str) -> str:
    """A short sentence for the state and its raw reason."""
    if state is not ChannelState.RUNNING and reason:
        lowered = reason.lower()
        for words, sentence in _SENTENCES:
            if any(word in lowered for word in words):
                return sentence
    return _BY_STATE[state]


def channel_view(name: str, state: ChannelState, reason: str, *, paused: bool) -> ChannelView:
    tone = TONES[state]
    if paused and tone == "ok":
        tone = "warn"
    sentence = readable_reason(state, reason)
    if paused:
        sentence = f"{sentence} Paused: messages are dropped until an admin sends /resume."
    return ChannelView(
        name=name,
        state=str(state),
        label=f"{state} (paused)" if paused else str(state),
        tone=tone,
        sentence=sentence,
        raw=reason,
    )
