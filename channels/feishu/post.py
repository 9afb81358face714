"""Feishu ``post`` rich text → Markdown (and the images it holds) for the agent.

A received post is ``{"title", "content": [[node, …], …]}`` — one list of nodes per
paragraph — or the same keyed by locale (``{"zh_cn": {...}}``) as senders write it. Nodes:
``text`` (with ``style`` bold/italic/lineThrough), ``a``, ``at`` (a ``@_user_N`` placeholder
the mention table resolves later), ``img``, ``media``, ``emotion``, ``code_block``, ``hr``
and ``md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Json = dict[str, Any]

_STYLES = (("bold", "**"), ("italic", "*"), ("lineThrough", "~~"))


def flatten_post(content: Json) -> tuple[str, tuple[str, ...]]:
    """The post as Markdown, and the ``image_key`` of each image in it, in order."""
    body = _body(content)
    images: list[str] = []
    paragraphs = [
        "".join(_node(node, images) for node in paragraph if isinstance(node, dict))
        for paragraph in body.get("content") or ()
        if isinstance(paragraph, list)
    ]
    title = str(body.get("title") or "").strip()
    text = "\n".join(paragraphs).strip()
    if title:
        text = f"**{title}**\n{text}" if text else f"**{title}**"
    return text, tuple(images)


def _body(content: Json) -> Json:
    if "content" in content or "title" in content:
        return content
    for value in content.values():
        if isinstance(value, dict):
            return value
    return {}


def _node(node: Json, images: list[str]) -> str:
    tag = str(node.get("tag") or "")
    text = str(node.get("text") or "")
    if tag == "img":
        key = str(node.get("image_key") or "")
        if key:
            images.append(key)
        return ""
    render = _RENDERERS.get(tag)
    return render(node, text) if render is not None else text


def _link(node: Json, text: str) -> str:
    href = str(node.get("href") or "")
    return f"[{text or href}]({href})" if href else text


def _at(node: Json, _text: str) -> str:
    user = str(node.get("user_id") or "")
    return user if user.startswith("@_") else f"@{node.get('user_name') or user}"


def _code(node: Json, text: str) -> str:
    return f"\n```{node.get('language') or ''}\n{text.rstrip()}\n```\n"


_RENDERERS: dict[str, Callable[[Json, str], str]] = {
    "text": lambda node, text: _styled(text, node.get("style")),
    "a": _link,
    "at": _at,
    "emotion": lambda node, _text: f":{node.get('emoji_type') or ''}:",
    "code_block": _code,
    "hr": lambda _n, _text: "\n---\n",
    "md": lambda _n, text: text,
    "media": lambda _n, _text: "[video]",
}


def _styled(text: str, styles: object) -> str:
    if not isinstance(styles, list) or not text.strip():
        return text
    for style, mark in _STYLES:
        if style in styles:
            text = f"{mark}{text}{mark}"
    return text
