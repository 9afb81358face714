"""Proactive robot sends: ``oToMessages/batchSend`` (1:1) and ``groupMessages/send``.

Both check ``robotCode`` (this app's client id) and the message (``msgparam``). batchSend takes
1-20 ``userIds``: ids the fake doesn't know (``add_user``, or a pushed message's sender) come
back in ``invalidStaffIdList`` and get nothing; each known one gets a ``Sent``. A group send
needs a group the robot is in (``add_group`` or a pushed group message; not after
``remove_from_group``), else 400 ``robot.not.in.group``.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.dingtalk import codes, msgparam
from tests.fakes.dingtalk.wire import ApiRequest, Reply, Route
from tests.fakes.dingtalk.world import World

MAX_USER_IDS = 20


class Robot:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        return [
            Route("POST", "/v1.0/robot/oToMessages/batchSend", self.batch_send),
            Route("POST", "/v1.0/robot/groupMessages/send", self.group_send),
        ]

    def check_robot(self, request: ApiRequest) -> None:
        if request.field("robotCode") != self._world.ids.client_id:
            raise codes.bad(codes.ROBOT_CODE, "robotCode is not this app's robot")

    def batch_send(self, request: ApiRequest) -> Reply:
        self.check_robot(request)
        user_ids = request.field("userIds")
        if (
            not isinstance(user_ids, list)
            or not 1 <= len(user_ids) <= MAX_USER_IDS
            or not all(isinstance(u, str) and u for u in user_ids)
        ):
            raise codes.bad(codes.INVALID_PARAMETER, "userIds must list 1-20 staff ids")
        message = msgparam.parse(self._world, request.field("msgKey"), request.field("msgParam"))
        raw: dict[str, Any] = dict(request.body)
        invalid = [u for u in user_ids if u not in self._world.users]
        for user_id in user_ids:
            if user_id not in invalid:
                self._world.sent.append(message.sent("otom", user_id, raw))
        return {
            "processQueryKey": World.new_id("pqk", 12),
            "invalidStaffIdList": invalid,
            "flowControlledStaffIdList": [],
        }

    def group_send(self, request: ApiRequest) -> Reply:
        self.check_robot(request)
        cid = request.text("openConversationId")
        message = msgparam.parse(self._world, request.field("msgKey"), request.field("msgParam"))
        group = self._world.groups.get(cid)
        if group is None or not group.robot_in:
            raise codes.bad(codes.ROBOT_NOT_IN_GROUP, "the robot is not a member of this group")
        self._world.sent.append(message.sent("group", cid, dict(request.body)))
        return {"processQueryKey": World.new_id("pqk", 12)}
