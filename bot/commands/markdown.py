"""Tiny Markdown helpers for the bot's own messages."""

from __future__ import annotations


def code(text: str) -> str:
    """Inline code that survives backticks inside ``text``."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"
