"""Uploads (``im/v1/images``, ``im/v1/files``) and message resource downloads.

Images must be a recognisable format (PNG, JPEG, GIF, WEBP, BMP, TIFF, ICO, HEIC; use
``TINY_PNG`` in tests) and at most ``image_limit`` bytes (10 MB); files at most ``file_limit``
(30 MB) with a ``file_type`` Feishu knows. A resource downloads only through a message that
carries it (``add_resource`` or a bot message with that key), with the matching ``type``.
"""

from __future__ import annotations

from tests.fakes.common.wire import FilePart, Raw, content_disposition
from tests.fakes.feishu import codes
from tests.fakes.feishu.records import ApiError, Upload
from tests.fakes.feishu.wire import ApiRequest, Reply, Route
from tests.fakes.feishu.world import World

IMAGE_TYPES = frozenset({"message", "avatar"})
FILE_TYPES = frozenset({"opus", "mp4", "pdf", "doc", "xls", "ppt", "stream"})
_MAGIC = (
    (b"\x89PNG", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
)


def image_mime(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:8] == b"ftyp":
        return "image/heic"
    return None


class Media:
    def __init__(self, world: World) -> None:
        self._world = world

    def routes(self) -> list[Route]:
        resource = "/open-apis/im/v1/messages/{message_id}/resources/{file_key}"
        return [
            Route("POST", "/open-apis/im/v1/images", "im.image.create", self.upload_image),
            Route("POST", "/open-apis/im/v1/files", "im.file.create", self.upload_file),
            Route("GET", resource, "im.message_resource.get", self.download),
        ]

    @staticmethod
    def _part(request: ApiRequest, name: str, limit: int) -> FilePart:
        part = request.files.get(name)
        if part is None:
            raise ApiError(codes.UPLOAD_PARAM, f"Invalid request param: {name} is required")
        if not part.data:
            raise ApiError(codes.UPLOAD_EMPTY, "File's size can't be 0.")
        if len(part.data) > limit:
            raise ApiError(codes.UPLOAD_TOO_BIG, "The file size exceed the max value.")
        return part

    def upload_image(self, request: ApiRequest) -> Reply:
        image_type = request.form.get("image_type", "")
        if image_type not in IMAGE_TYPES:
            raise ApiError(codes.UPLOAD_PARAM, "Invalid request param: image_type")
        part = self._part(request, "image", self._world.image_limit)
        mime = image_mime(part.data)
        if mime is None:
            raise ApiError(codes.IMAGE_FORMAT, "Can't regonnize the image format.")
        key = World.new_id("img_v3_", 12)
        self._world.uploads[key] = Upload(
            key=key,
            kind="image",
            data=part.data,
            file_name=part.filename,
            file_type=image_type,
            content_type=mime,
        )
        return {"image_key": key}

    def upload_file(self, request: ApiRequest) -> Reply:
        file_type = request.form.get("file_type", "")
        file_name = request.form.get("file_name", "")
        if file_type not in FILE_TYPES or not file_name:
            raise ApiError(codes.UPLOAD_PARAM, "Invalid request param: file_type/file_name")
        part = self._part(request, "file", self._world.file_limit)
        key = World.new_id("file_v3_", 12)
        self._world.uploads[key] = Upload(
            key=key,
            kind="file",
            data=part.data,
            file_name=file_name,
            file_type=file_type,
            content_type=part.content_type or "application/octet-stream",
        )
        return {"file_key": key}

    def download(self, request: ApiRequest) -> Reply:
        kind = request.query.get("type", "")
        if kind not in ("image", "file"):
            raise ApiError(codes.UPLOAD_PARAM, "Invalid request param: type")
        found = self._world.resources.get(
            (request.params["message_id"], request.params["file_key"])
        )
        if found is None or found.kind != kind:
            raise ApiError(codes.RESOURCE_NOT_IN_MESSAGE, "File not in msg.")
        headers = {"Content-Disposition": content_disposition(found.file_name)}
        return Raw(found.data, found.content_type, headers)
