"""The DingTalk channel (stream mode, session webhooks, OpenAPI, AI cards); see ``adapter.py``."""

from channels.dingtalk.adapter import DINGTALK_CAPABILITIES, DingTalkChannel

__all__ = ["DINGTALK_CAPABILITIES", "DingTalkChannel"]
