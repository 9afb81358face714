"""URLs without their credentials, for logs, error texts and command output.

A URL in the configuration may carry a password (``postgresql://user:pass@…``,
``https://user:pass@…``) or a token in its query (``?token=…``); wherever a URL is shown, those
parts read ``***``.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit

REDACTED = "***"
SECRET_QUERY_KEYS = re.compile(
    r"(?i)(token|secret|passw(or)?d|pwd|api[-_]?key|key|auth|signature|sig|session|credential)"
)
"""A query parameter whose name contains one of these carries a credential."""
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")


def redact_url(url: str) -> str:
    """The URL without its credentials: ``https://user:***@host/p?token=***``.

    A URL that cannot be parsed is shown as its scheme and ``***``: better nothing than a secret.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        scheme = url.partition("://")[0]
        return f"{scheme}://{REDACTED}"
    netloc = parts.netloc
    if "@" in netloc:
        host = parts.hostname or ""
        host = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
        user = parts.username or ""
        netloc = f"{user}:{REDACTED}@{host}" if parts.password is not None else f"{REDACTED}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(SECRET_QUERY_KEYS.search(key) for key, _ in pairs):
            shown = [(k, REDACTED if SECRET_QUERY_KEYS.search(k) else v) for k, v in pairs]
            query = urlencode(shown, safe="*")
    return parts._replace(netloc=netloc, query=query).geturl()


def redact_urls(text: str) -> str:
    """Every URL found in ``text`` without its credentials."""
    if "://" not in text:  # no URL (most log lines): the pattern needs one
        return text
    return _URL.sub(lambda match: redact_url(match.group(0)), text)
