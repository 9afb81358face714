"""The Feishu/Lark channel (lark-oapi long connection, or HTTP events); see ``adapter.py``."""

from channels.feishu.adapter import FEISHU_CAPABILITIES, FeishuChannel

__all__ = ["FEISHU_CAPABILITIES", "FeishuChannel"]
