"""The one error shape every fake Bot API method raises, mirroring the real server's replies."""

from __future__ import annotations

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)


class ApiError(Exception):
    """A non-2xx Bot API reply: ``{"ok": false, "error_code": status, "description": ...}``."""

    def __init__(self, status: int, description: str, *, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.retry_after = retry_after

    def body(self) -> dict[str, object]:
        payload: dict[str, object] = {
            "ok": False,
            "error_code": self.status,
            "description": self.description,
        }
        if self.retry_after is not None:
            payload["parameters"] = {"retry_after": self.retry_after}
        return payload


def bad_request(message: str) -> ApiError:
    """A 400 with the real server's ``Bad Request: `` prefix."""
    return ApiError(400, f"Bad Request: {message}")


def cant_parse(message: str) -> ApiError:
    """A parse-mode failure, worded like the real server's."""
    return bad_request(f"can't parse entities: {message}")
