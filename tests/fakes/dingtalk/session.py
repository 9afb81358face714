"""``POST /robot/sendBySession?session=S``: the sessionWebhook every pushed message carries.

No token. Bodies ``{"msgtype": "text", "text": {"content"}, "at": {"atUserIds": [..]}}`` or
``{"msgtype": "markdown", "markdown": {"title", "text"}, "at": {..}}``; success is
``{"errcode": 0, "errmsg": "ok"}``. Failures are HTTP **200** with an errcode, as DingTalk
answers them: 300001 for an unknown or expired session (past ``sessionWebhookExpiredTime``,
or any session once ``expire_sessions()`` was called), 460101 for text over 20000 bytes,
40035 for a body without the fields. The reply lands in ``sent_messages`` under the
session's conversation.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.records import ApiError, Sent
from tests.fakes.dingtalk.wire import ApiRequest, Reply, Route
from tests.fakes.dingtalk.world import World

SESSION_PATH = "/robot/sendBySession"
TEXT_LIMIT = 20000  # bytes


def _missing(what: str) -> ApiError:
    return codes.errcode(codes.OAPI_MISSING, f"缺少参数 {what}")


class SessionWebhook:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        return [Route("POST", SESSION_PATH, self.send, auth="none", errcode=True)]

    def send(self, request: ApiRequest) -> Reply:
        session = self._world.live_session(request.query.get("session", ""))
        if session is None:
            raise codes.errcode(codes.SESSION_EXPIRED, codes.SESSION_EXPIRED_MSG)
        body: dict[str, Any] = request.body if isinstance(request.body, dict) else {}
        msgtype = body.get("msgtype")
        part = body.get(msgtype) if isinstance(msgtype, str) else None
        if msgtype not in ("text", "markdown") or not isinstance(part, dict):
            raise _missing("msgtype (text or markdown, with its object)")
        keys = ("content",) if msgtype == "text" else ("title", "text")
        if not all(isinstance(part.get(k), str) for k in keys):
            raise _missing(f"{msgtype}.{'/'.join(keys)}")
        text = str(part.get("content", part.get("text", "")))
        if len(text.encode()) > TEXT_LIMIT:
            raise codes.errcode(codes.MESSAGE_TOO_LONG, codes.MESSAGE_TOO_LONG_MSG)
        self._world.sent.append(
            Sent(
                via="session",
                conversation=session.conversation,
                msgtype=msgtype,
                text=text,
                title=str(part.get("title", "")),
                at_user_ids=_at_user_ids(body.get("at")),
                media_id="",
                file_name="",
                raw=body,
            )
        )
        return {"errcode": 0, "errmsg": "ok"}


def _at_user_ids(at: object) -> tuple[str, ...]:
    ids = at.get("atUserIds") if isinstance(at, dict) else None
    if not isinstance(ids, list):
        return ()
    return tuple(str(i) for i in ids if i)
