"""``switchboard check --online``: where a failed probe went and what to try, and Telegram's
privacy mode against a group policy that needs every message.

A probe's failure is the SDK's words (``httpx.ConnectError: [Errno -2] Name or service not
known``); ``explain`` adds the URL it tried (credentials redacted) and the usual causes of
that kind of failure. Telegram tells its privacy mode only through ``getMe``
(``can_read_all_group_messages``): with ``group_policy`` ``all`` or ``listen`` and privacy on,
the bot would hear only commands, mentions and replies in groups.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.config.settings import GroupPolicy, Settings
from bot.text.redact import redact_url

GETME_TIMEOUT_S = 15.0
_DNS = ("name or service not known", "name resolution", "nodename nor servname", "getaddrinfo")
_UNREACHABLE = ("connect", "refused", "unreachable", "timed out", "timeout", "no answer within")
_TLS = ("certificate", "ssl", "tls")
_REFUSED = re.compile(
    r"\b40[13]\b|unauthori|forbidden|rejected|invalid_auth|not_authed|token_revoked"
    r"|token_expired|invalid_token|account_inactive|not_allowed_token_type"
)
_SCOPE = re.compile(r"missing_scope|no_permission|permission denied")
_CREDENTIALS = {
    "telegram": "channels.telegram.token",
    "slack": "channels.slack.bot_token and app_token",
    "feishu": "channels.feishu.app_id and app_secret",
    "dingtalk": "channels.dingtalk.client_id and client_secret",
    "embedded": "agent.model.api_key",
    "remote": "agent.remote.api_key",
}
PRIVACY_ON = (
    "privacy mode is on (getMe can_read_all_group_messages is false), so Telegram delivers "
    "only commands, @-mentions and replies in groups; turn it off with @BotFather /setprivacy, "
    "then remove the bot from each group and add it again"
)


def endpoint(settings: Settings, target: str) -> str:
    """The URL a probe of ``target`` (``channel NAME`` or ``agent BACKEND``) calls, redacted."""
    channels, agent = settings.channels, settings.agent
    urls = {
        "channel telegram": channels.telegram.api_base_url,
        "channel slack": channels.slack.api_base_url,
        "channel feishu": channels.feishu.domain,
        "channel dingtalk": channels.dingtalk.api_base_url,
        "agent embedded": agent.model.base_url,
        "agent remote": agent.remote.url,
    }
    url = urls.get(target)
    return "" if url is None else redact_url(url)


_HINTS: tuple[tuple[Callable[[str], bool], str], ...] = (
    (
        lambda said: any(word in said for word in _DNS),
        "the host name does not resolve: check its spelling and the DNS servers "
        "(/etc/resolv.conf), or set HTTPS_PROXY if this host reaches the internet through a proxy",
    ),
    (
        lambda said: any(word in said for word in _TLS),
        "TLS failed: a proxy that inspects TLS needs its CA in SSL_CERT_FILE",
    ),
    (lambda said: _REFUSED.search(said) is not None, "the credentials were refused: check {creds}"),
    (
        lambda said: _SCOPE.search(said) is not None,
        "the app lacks a permission: add the scope the platform names, publish or reinstall the "
        "app, and check again (docs/platforms/ lists every scope)",
    ),
    (
        lambda said: re.search(r"\b404\b|not found", said) is not None,
        "nothing there: check the URL in the config",
    ),
    (
        lambda said: any(word in said for word in _UNREACHABLE),
        "nothing answered: check a firewall or egress rules, or set HTTPS_PROXY (and NO_PROXY) if "
        "this host reaches the internet through a proxy",
    ),
)
"""What a failed probe's reason points at, first match wins."""


def hint(target: str, detail: str) -> str:
    """What to try for a probe of ``target`` that failed with ``detail``."""
    said = detail.lower()
    creds = _CREDENTIALS.get(target.partition(" ")[2], "the credentials")
    for matches, text in _HINTS:
        if matches(said):
            return text.format(creds=creds)
    return "see the reason above; the URL and the credentials are the usual suspects"


async def privacy_warning(settings: Settings) -> str | None:
    """A warning when Telegram's privacy mode keeps group messages from ``group_policy``."""
    block = settings.channels.telegram
    policy = settings.channel_policy("telegram").group_policy
    if not block.enabled or block.token is None:
        return None
    if policy not in (GroupPolicy.ALL, GroupPolicy.LISTEN):
        return None
    import httpx  # noqa: PLC0415 - a plain `check` never needs it

    token = block.token.get_secret_value()
    url = f"{block.api_base_url.rstrip('/')}/bot{token}/getMe"
    try:
        async with httpx.AsyncClient(timeout=GETME_TIMEOUT_S) as client:
            answer = (await client.post(url)).json()
        reads_all = answer["result"]["can_read_all_group_messages"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None  # the probe itself says why Telegram did not answer
    if reads_all is not False:
        return None
    return f"channels.telegram: group_policy {policy}: {PRIVACY_ON}"
