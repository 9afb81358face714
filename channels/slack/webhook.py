"""HTTP Events mode: the signature is checked on the raw body before anything parses it.

bolt's aiohttp adapter parses the body (JSON, or a form with a JSON ``payload``) when it
builds its request, before its own signature check runs, so an unsigned malformed body used to
end in a 500 and a traceback. ``SignatureVerifier`` (slack_sdk's, the same check bolt makes:
``v0=HMAC-SHA256(signing_secret, "v0:{timestamp}:{body}")``, timestamps within five minutes)
runs first here; only a signed body reaches bolt, and a signed JSON body must not nest deeper
than ``channels.webhook_json.MAX_DEPTH``.
"""

from __future__ import annotations

import logging

from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from channels.webhook_json import nesting_ok

logger = logging.getLogger(__name__)


class SignedRequests:
    def __init__(self, signing_secret: str) -> None:
        self._verifier = SignatureVerifier(signing_secret)

    def refusal(self, body: bytes, headers: dict[str, str]) -> web.Response | None:
        """``None`` for a request Slack signed with a readable body; else the answer."""
        if not self._verifier.is_valid_request(body, headers):
            logger.warning("slack events call with a missing, stale or wrong signature refused")
            return web.Response(status=401, text="invalid signature")
        if not nesting_ok(body):
            logger.warning("slack events call refused: its JSON nests too deep")
            return web.Response(status=400, text="JSON nested too deep")
        return None
