"""The error codes the fake answers with, and where each comes from.

Codes marked [doc] are in Feishu's published error tables for that API (send/reply message,
CardKit settings/element content, image/file upload, rate limits); [chosen] ones are a
reasonable pick where no table was found. Every REST error answers HTTP 400 unless noted.
"""

from __future__ import annotations

from tests.fakes.feishu.records import ApiError

# --- gateway / auth -------------------------------------------------------------------------
RATE_LIMITED = 99991400  # [doc] HTTP 429, header x-ogw-ratelimit-reset
RATE_LIMITED_MSG = "request trigger frequency limit"
TOKEN_MISSING = 99991661  # [doc] no Authorization header
TOKEN_MISSING_MSG = (
    "Missing access token for authorization. Please make a request with token attached."  # noqa: S105
)
TOKEN_INVALID = 99991663  # [doc] wrong, expired or revoked tenant_access_token (HTTP 400 [chosen])
TOKEN_INVALID_MSG = (
    "Invalid access token for authorization. Please make a request with token attached."  # noqa: S105
)
FIELD_VALIDATION = 99992402  # [doc] gateway schema check: missing/ill-typed required field
APP_SECRET_INVALID = 10014  # [doc] tenant_access_token/internal with a wrong app_id/app_secret
INTERNAL_ERROR = 2200  # [chosen] what ``fail_server_error`` answers (HTTP 500)

# --- im/v1/messages -------------------------------------------------------------------------
INVALID_PARAM = 230001  # [doc] "invalid request parameter" (bad content, unknown message_id …)
BOT_NOT_IN_CHAT = 230002  # [doc]
MESSAGE_RECALLED = 230011  # [doc] the message was deleted/recalled
NO_AVAILABILITY = 230013  # [doc] the user is outside the bot's availability (unknown open_id)
CONTENT_TOO_LONG = 230025  # [doc] text > 150 KB, post/card > 30 KB
UNSUPPORTED_FOR_TYPE = 230054  # [doc] e.g. PATCH on a message that isn't a card
CARD_CONTENT_FAILED = 230099  # [doc] invalid card; the msg carries the sub-code (ErrCode: 200621)

# --- cardkit/v1 -----------------------------------------------------------------------------
CARDKIT_PARAM = 10002  # [doc] invalid request parameter
CARD_GENERATE_FAILED = 200220  # [doc] card JSON can't be turned into a card
CARD_NOT_FOUND = 200740  # [doc]
CARD_TOO_BIG = 200860  # [doc] card > 30 KB
STREAMING_CLOSED = 300309  # [doc] element content update while streaming_mode is off
ONLY_TEXT = 300310  # [doc] element content update on a non-text element
ELEMENT_NOT_FOUND = 300313  # [doc-ish] "Failed to update element properties" (unknown element_id)
SEQUENCE_NOT_INCREASING = 300317  # [doc]

# --- im/v1/images, files, resources, reactions ----------------------------------------------
UPLOAD_PARAM = 234001  # [doc] invalid image_type / file_type / missing file
RESOURCE_NOT_IN_MESSAGE = 234003  # [chosen] the key isn't a resource of that message
UPLOAD_TOO_BIG = 234006  # [doc] image > 10 MB, file > 30 MB
UPLOAD_EMPTY = 234010  # [doc] 0-byte upload
IMAGE_FORMAT = 234011  # [doc] not a recognisable image
REACTION_INVALID = 231001  # [doc-ish] unknown emoji_type
REACTION_MESSAGE_NOT_FOUND = 231003  # [doc-ish] reacting to an unknown message
REACTION_NOT_FOUND = 231010  # [chosen] deleting an unknown reaction_id


def invalid(ext: str) -> ApiError:
    return ApiError(INVALID_PARAM, f"Your request contains an invalid request parameter, ext={ext}")


def field_error(field: str) -> ApiError:
    return ApiError(FIELD_VALIDATION, f"field validation failed: {field}")


def bad_card(detail: str) -> ApiError:
    return ApiError(
        CARD_CONTENT_FAILED,
        f"Failed to create card content, ext=ErrCode: 200621; ErrMsg: parse card json err, "
        f"please check whether the card json is correct; ErrorValue: {detail}",
    )


def too_long() -> ApiError:
    return ApiError(CONTENT_TOO_LONG, "The length of the message content reaches its limit.")
