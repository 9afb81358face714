"""Scripted failures: the next matching call(s) answer an error instead of running.

A pattern names an API (``"im.message.create"``, ``"cardkit.*"``), a request
(``"POST /open-apis/im/v1/messages*"``) or a path glob; faults apply before the token check,
in the order they were added, and also to ``auth.tenant_access_token`` and ``ws.endpoint``.
``withhold_answer`` is the other kind: the call succeeds, but its answer never arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakes.common.faults import CredentialSwitch
from tests.fakes.common.records import Guard
from tests.fakes.feishu import codes
from tests.fakes.feishu.records import Fault, Withhold
from tests.fakes.feishu.server import FeishuServer


class FaultScript(CredentialSwitch):
    """Also ``refuse_credentials``: token fetches and endpoint discovery answer 10014 ("app
    secret invalid")."""

    _server: FeishuServer
    _guard: Guard

    def fail_next(  # noqa: PLR0913 - the contract's signature
        self,
        pattern: str,
        *,
        code: int,
        msg: str = "injected failure",
        http_status: int = 400,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        fault = Fault(pattern, code, msg, http_status, dict(headers or {}))
        with self._guard:
            self._server.faults.extend([fault] * times)

    def withhold_answer(
        self, pattern: str, *, when: Callable[[Any], bool] | None = None, times: int = 1
    ) -> None:
        """Carry out the next matching call(s) (``when``: a test of the JSON body) but never
        answer while the fake runs: Feishu took the request, and the caller cannot know (it
        was killed, or gave up waiting)."""
        with self._guard:
            self._server.withheld.extend([Withhold(pattern, when)] * times)

    def rate_limit(self, pattern: str, *, reset_s: int = 1, times: int = 1) -> None:
        """HTTP 429, code 99991400, ``x-ogw-ratelimit-limit``/``x-ogw-ratelimit-reset`` headers."""
        headers = {"x-ogw-ratelimit-limit": "50", "x-ogw-ratelimit-reset": str(reset_s)}
        self.fail_next(
            pattern,
            code=codes.RATE_LIMITED,
            msg=codes.RATE_LIMITED_MSG,
            http_status=429,
            headers=headers,
            times=times,
        )

    def fail_server_error(self, pattern: str, *, http_status: int = 500, times: int = 1) -> None:
        self.fail_next(
            pattern,
            code=codes.INTERNAL_ERROR,
            msg="internal error",
            http_status=http_status,
            times=times,
        )

    def expire_token_next(
        self, pattern: str, *, code: int = codes.TOKEN_INVALID, times: int = 1
    ) -> None:
        """Answer the token-invalid code (99991663; or 99991661 for "missing") once."""
        msg = codes.TOKEN_MISSING_MSG if code == codes.TOKEN_MISSING else codes.TOKEN_INVALID_MSG
        self.fail_next(pattern, code=code, msg=msg, times=times)

    def fail_invalid_card(self, pattern: str, *, times: int = 1) -> None:
        error = codes.bad_card("injected")
        self.fail_next(pattern, code=error.code, msg=error.msg, times=times)

    def fail_bot_not_in_chat(self, pattern: str, *, times: int = 1) -> None:
        self.fail_next(
            pattern,
            code=codes.BOT_NOT_IN_CHAT,
            msg="Bot/User can NOT be out of the chat.",
            times=times,
        )

    def revoke_token(self) -> None:
        """The current tenant token stops working (99991663); the next fetch issues a new one."""
        with self._guard:
            self._server.world.token = None

    def expire_streaming(self, card_id: str) -> None:
        """Turn a card's streaming mode off, as Feishu does after its streaming timeout."""
        with self._guard:
            card = self._server.world.cards[card_id]
            card.streaming_mode = False
            card.data.setdefault("config", {})["streaming_mode"] = False
