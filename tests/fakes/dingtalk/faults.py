"""Scripted failures and the switches that break the world on purpose.

A fault answers the next request matching its pattern (a path or glob such as
``"/v1.0/robot/*"``, ``"/robot/sendBySession"``, ``"/media/upload"``,
``"/v1.0/gateway/connections/open"``, ``"/connect"``; optionally ``"PUT /v1.0/card/*"``)
with ``http_status`` and ``body`` instead of running it. Faults apply before the token check,
in the order they were added; each is used up by the first request it matches.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.common.faults import CredentialSwitch
from tests.fakes.common.records import Guard
from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.records import Fault
from tests.fakes.dingtalk.server import DingTalkServer

RATE_LIMIT_STYLES = ("http", "body", "qps")


class FaultScript(CredentialSwitch):
    """Also ``refuse_credentials``: token endpoints and ``connections/open`` reject even the
    right credentials."""

    _server: DingTalkServer
    _guard: Guard

    def fail_next(
        self,
        pattern: str,
        *,
        http_status: int = 400,
        body: dict[str, Any],
        times: int = 1,
        headers: dict[str, str] | None = None,
    ) -> None:
        fault = Fault(pattern, http_status, dict(body), dict(headers or {}))
        with self._guard:
            self._server.faults.extend([fault] * times)

    def rate_limit(
        self,
        pattern: str,
        *,
        times: int = 1,
        style: str = "http",
        retry_after_s: float | None = None,
    ) -> None:
        """Flow control, the way each API family reports it:

        - ``"http"``: HTTP 429 ``{"code": "Throttling.Api"}`` (the OpenAPI gateway);
        - ``"body"``: HTTP 200 ``{"errcode": 130101, "errmsg": "send too fast, ..."}``
          (session webhooks and the oapi);
        - ``"qps"``: HTTP 403 ``{"code": "Forbidden.AccessDenied.QpsLimitForApi"}``.

        DingTalk is not known to send ``Retry-After``, so none is sent unless ``retry_after_s``
        asks for one (a test that wants its adapter's honouring of the header, or a short wait).
        """
        if style == "http":
            status, body = 429, codes.openapi_body(codes.THROTTLED, "Too many requests")
        elif style == "body":
            status, body = 200, {"errcode": codes.SEND_TOO_FAST, "errmsg": codes.SEND_TOO_FAST_MSG}
        elif style == "qps":
            status, body = 403, codes.openapi_body(codes.QPS_LIMIT, "QPS limit for this api")
        else:
            raise ValueError(f"style must be one of {RATE_LIMIT_STYLES}, not {style!r}")
        headers = {} if retry_after_s is None else {"Retry-After": f"{retry_after_s:g}"}
        self.fail_next(pattern, http_status=status, body=body, times=times, headers=headers)

    def fail_server_error(self, pattern: str, *, http_status: int = 500, times: int = 1) -> None:
        body = codes.openapi_body(codes.INTERNAL_ERROR, "The request processing has failed")
        self.fail_next(pattern, http_status=http_status, body=body, times=times)

    def revoke_tokens(self) -> None:
        """Every token issued so far stops working (OpenAPI 401, oapi errcode 40014); the next
        fetch issues a working one."""
        with self._guard:
            self._server.world.tokens.clear()

    def expire_sessions(self) -> None:
        """From now on every sessionWebhook, those handed out and those still to come, answers
        errcode 300001 although its ``sessionWebhookExpiredTime`` says it is valid: how an
        early server-side expiry looks to a client, and what makes a fallback testable without
        racing the reply. (``session_ttl_s=-1`` instead gives one message a webhook that is
        expired by its advertised time.)"""
        with self._guard:
            self._server.world.sessions_expired = True
