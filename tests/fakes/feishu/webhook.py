"""HTTP events mode: events POSTed to the bot's webhook the way Feishu sends them.

- Plain: the event JSON as is (``header.token`` = the verification token).
- Encrypted: ``{"encrypt": base64(iv + AES-256-CBC(sha256(encrypt_key), iv, PKCS7(json)))}``.
- Always signed when an encrypt key is set: ``X-Lark-Request-Timestamp``,
  ``X-Lark-Request-Nonce``, ``X-Lark-Signature = sha256(ts + nonce + encrypt_key + body)``.
These are what ``lark_oapi``'s ``EventDispatcherHandler`` and ``AESCipher`` check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
import urllib.error
import urllib.request
from typing import Any

from Crypto.Cipher import AES

from tests.fakes.feishu.world import Identity

_BLOCK = 16


def encrypt(encrypt_key: str, plaintext: bytes) -> str:
    iv = os.urandom(_BLOCK)
    pad = _BLOCK - len(plaintext) % _BLOCK
    cipher = AES.new(hashlib.sha256(encrypt_key.encode()).digest(), AES.MODE_CBC, iv)
    sealed: bytes = cipher.encrypt(plaintext + bytes([pad]) * pad)
    return base64.b64encode(iv + sealed).decode()


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def post(url: str, body: bytes, headers: dict[str, str], timeout: float = 10.0) -> tuple[int, Any]:
    """POST ``body`` (blocking); the status and the decoded JSON (or text) answer."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), _decode(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), _decode(error.read())


class Webhook:
    def __init__(self, ids: Identity) -> None:
        self._ids = ids

    def request(
        self, payload: dict[str, Any], *, encrypt_body: bool, bad_signature: bool = False
    ) -> tuple[bytes, dict[str, str]]:
        """The body and headers Feishu would send for ``payload``."""
        plain = json.dumps(payload, ensure_ascii=False).encode()
        key = self._ids.encrypt_key
        if encrypt_body:
            if not key:
                raise ValueError("encrypting needs an encrypt_key")
            body = json.dumps({"encrypt": encrypt(key, plain)}).encode()
        else:
            body = plain
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "X-Request-Id": secrets.token_hex(16),
        }
        if key:
            timestamp, nonce = str(int(time.time())), secrets.token_hex(8)
            sign = signature(timestamp, nonce, key, body)
            headers |= {
                "X-Lark-Request-Timestamp": timestamp,
                "X-Lark-Request-Nonce": nonce,
                "X-Lark-Signature": "0" * 64 if bad_signature else sign,
            }
        return body, headers

    def post_event(
        self,
        url: str,
        payload: dict[str, Any],
        *,
        encrypt_body: bool = False,
        bad_signature: bool = False,
    ) -> tuple[int, Any]:
        body, headers = self.request(
            payload, encrypt_body=encrypt_body, bad_signature=bad_signature
        )
        return post(url, body, headers)

    def url_verification(
        self, url: str, *, encrypt_body: bool | None = None, challenge: str | None = None
    ) -> tuple[int, Any]:
        payload = {
            "challenge": challenge or secrets.token_hex(16),
            "token": self._ids.verification_token,
            "type": "url_verification",
        }
        sealed = bool(self._ids.encrypt_key) if encrypt_body is None else encrypt_body
        return self.post_event(url, payload, encrypt_body=sealed)
