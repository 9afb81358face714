"""Upload checks for sendPhoto/sendDocument: size limits and "is this really an image"."""

from __future__ import annotations

import struct
import zlib

from tests.fakes.telegram.errors import ApiError, bad_request

UPLOAD_LIMIT = 50 * 1024 * 1024
PHOTO_LIMIT = 10 * 1024 * 1024
_PNG = b"\x89PNG\r\n\x1a\n"
_MAGIC = (_PNG, b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def tiny_png(width: int = 1, height: int = 1) -> bytes:
    """A valid PNG, for tests that upload photos (the fake refuses non-images like Telegram)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    body = _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(rows))
    return _PNG + body + _png_chunk(b"IEND", b"")


TINY_PNG = tiny_png()


def is_image(data: bytes) -> bool:
    webp = data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return webp or data.startswith(_MAGIC)


def photo_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG header; other formats report a nominal size."""
    if data.startswith(_PNG) and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    return 100, 100


def check_upload(kind: str, data: bytes) -> None:
    if not data:
        raise bad_request("file must be non-empty")
    if len(data) > UPLOAD_LIMIT:
        raise ApiError(413, "Request Entity Too Large")
    if kind == "photo" and len(data) > PHOTO_LIMIT:
        raise bad_request("PHOTO_INVALID_DIMENSIONS")
    if kind == "photo" and not is_image(data):
        raise bad_request("IMAGE_PROCESS_FAILED")
