"""Telegram adapter on python-telegram-bot 22 (design §14, design §17.1)."""

from channels.telegram.adapter import TELEGRAM_CAPABILITIES, TelegramChannel

__all__ = ["TELEGRAM_CAPABILITIES", "TelegramChannel"]
