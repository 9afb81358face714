"""pbbp2 frames of the long connection, built and read with the SDK's own protobuf class."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lark_oapi.ws.pb.pbbp2_pb2 import Frame  # type: ignore[import-untyped]

CONTROL = 0
DATA = 1


@dataclass(frozen=True, slots=True)
class Parsed:
    method: int
    service: int
    headers: dict[str, str]
    payload: bytes


def parse(raw: bytes) -> Parsed:
    frame: Any = Frame()
    frame.ParseFromString(raw)
    headers = {h.key: h.value for h in frame.headers}
    return Parsed(int(frame.method), int(frame.service), headers, bytes(frame.payload))


def _frame(service: int, method: int, headers: dict[str, str], payload: bytes | None) -> bytes:
    frame: Any = Frame()
    frame.SeqID = 0
    frame.LogID = 0
    frame.service = service
    frame.method = method
    for key, value in headers.items():
        header = frame.headers.add()
        header.key = key
        header.value = value
    if payload is not None:
        frame.payload = payload
    return bytes(frame.SerializeToString())


def pong(service: int, client_config: dict[str, int] | None) -> bytes:
    payload = json.dumps(client_config).encode() if client_config else None
    return _frame(service, CONTROL, {"type": "pong"}, payload)


def event_frames(  # noqa: PLR0913 - one frame per part of one event
    service: int,
    *,
    payload: bytes,
    frame_id: str,
    trace_id: str,
    parts: int = 1,
    kind: str = "event",
) -> list[bytes]:
    """The DATA frame(s) carrying ``payload``; with ``parts`` > 1 it is split by ``seq``."""
    size = -(-len(payload) // parts)
    chunks = [payload[i * size : (i + 1) * size] for i in range(parts)]
    return [
        _frame(
            service,
            DATA,
            {
                "type": kind,
                "message_id": frame_id,
                "sum": str(parts),
                "seq": str(seq),
                "trace_id": trace_id,
            },
            chunk,
        )
        for seq, chunk in enumerate(chunks)
    ]
