"""The Slack channel (slack-bolt, Socket Mode or HTTP Events); see ``adapter.py``."""

from channels.slack.adapter import SLACK_CAPABILITIES, SlackChannel

__all__ = ["SLACK_CAPABILITIES", "SlackChannel"]
