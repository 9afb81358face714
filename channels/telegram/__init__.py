"""Telegram adapter on python-telegram-bot 22 (SPEC §14, PLATFORMS.md §1)."""

from channels.telegram.adapter import TELEGRAM_CAPABILITIES, TelegramChannel

__all__ = ["TELEGRAM_CAPABILITIES", "TelegramChannel"]
