"""Files both ways.

In: ``POST /v1.0/robot/messageFiles/download`` ``{"robotCode", "downloadCode"}`` →
``{"downloadUrl"}`` for codes registered with ``add_download``; the URL
(``GET /files/{id}``, no auth, as DingTalk's pre-signed URLs) serves the bytes. An unknown
code answers 400 ``InvalidParameter.DownloadCode``.

Out: the legacy ``POST /media/upload?access_token=T&type=image|file|voice|video`` with a
multipart ``media`` part (with a filename) → ``{"errcode": 0, "media_id": "@lA…", "type",
"created_at"}``. Failures are HTTP 200 with an errcode: 40014 bad token, 40004 bad type,
40035 no ``media`` part, 40006 empty or too big (10 MB images, 20 MB otherwise; lowered by
``set_limits``), 40005 an ``image`` that is not one.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable

from tests.fakes.common.wire import Raw, content_disposition
from tests.fakes.dingtalk import codes
from tests.fakes.dingtalk.records import Upload
from tests.fakes.dingtalk.wire import ApiRequest, Reply, Route
from tests.fakes.dingtalk.world import Download, World

MEDIA_TYPES = frozenset({"image", "file", "voice", "video"})
_IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"BM")


def guess_type(file_name: str) -> str:
    return mimetypes.guess_type(file_name)[0] or "application/octet-stream"


class Media:
    def __init__(self, world: World, origin: Callable[[], str]) -> None:
        self._world = world
        self._origin = origin

    def routes(self) -> list[Route]:
        return [
            Route("POST", "/v1.0/robot/messageFiles/download", self.download_url),
            Route("GET", "/files/{file_id}", self.serve_file, auth="none"),
            Route("POST", "/media/upload", self.upload, auth="query", errcode=True),
        ]

    def download_url(self, request: ApiRequest) -> Reply:
        if request.field("robotCode") != self._world.ids.client_id:
            raise codes.bad(codes.ROBOT_CODE, "robotCode is not this app's robot")
        code = request.text("downloadCode")
        found = self._world.downloads.get(code)
        if found is None:
            raise codes.bad(codes.DOWNLOAD_CODE, "downloadCode is invalid or expired")
        file_id = self._world.file_ids.get(code)
        if file_id is None:
            file_id = self._world.file_ids[code] = World.new_id("f", 12)
            self._world.files[file_id] = found
        return {"downloadUrl": f"{self._origin()}/files/{file_id}"}

    def serve_file(self, request: ApiRequest) -> Reply:
        found = self._world.files.get(request.params["file_id"])
        if found is None:
            raise codes.openapi(404, "NotFound", "no such file")
        headers = {"Content-Disposition": content_disposition(found.file_name)}
        return Raw(found.data, found.content_type, headers)

    def upload(self, request: ApiRequest) -> Reply:
        kind = request.query.get("type", "")
        if kind not in MEDIA_TYPES:
            raise codes.errcode(codes.OAPI_MEDIA_TYPE, "不合法的媒体文件类型")
        part = request.files.get("media")
        if part is None:
            raise codes.errcode(codes.OAPI_MISSING, "缺少参数 media")
        limit = self._world.image_limit if kind == "image" else self._world.file_limit
        if not part.data or len(part.data) > limit:
            raise codes.errcode(codes.OAPI_FILE_SIZE, "不合法的文件大小")
        if kind == "image" and not part.data.startswith(_IMAGE_MAGIC):
            raise codes.errcode(codes.OAPI_FILE_TYPE, "不合法的文件类型")
        media_id = World.new_id("@lA", 14)
        self._world.uploads[media_id] = Upload(
            media_id=media_id,
            kind=kind,
            file_name=part.filename,
            data=part.data,
            content_type=part.content_type,
        )
        return {
            "errcode": 0,
            "errmsg": "ok",
            "media_id": media_id,
            "type": kind,
            "created_at": World.now_ms(),
        }


def download(data: bytes, file_name: str, content_type: str | None = None) -> Download:
    return Download(data, file_name, content_type or guess_type(file_name))
