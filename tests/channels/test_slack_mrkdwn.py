"""Slack's mrkdwn rung (``channels/slack/mrkdwn.py``): ordinary Markdown converts exactly as the
``markdown-to-mrkdwn`` library it replaced converted it (the expected texts are that library's
output), the agent's text can never mention anyone, and pathological nesting is sent as written.
"""

from __future__ import annotations

import pytest

from channels.slack.mrkdwn import MAX_DEPTH, escape, to_mrkdwn

ORDINARY = [
    ("Hello **world**, this is *fine* and ~~gone~~.\n\nSecond one with `code` & a <tag>.",
     "Hello *world*, this is _fine_ and ~gone~.\n\nSecond one with `code` &amp; a &lt;tag&gt;."),
    ("# Title\n\nSome text.\n\n## Section two\n\n### Third level\nText under it.",
     "*Title*\n\nSome text.\n\n*Section two*\n\n*Third level*\nText under it."),
    ("Steps:\n\n- first item\n- second **bold**\n  - nested one\n* star bullet\n\n1. one\n2. two",
     "Steps:\n\n• first item\n• second *bold*\n  • nested one\n• star bullet\n\n1. one\n2. two"),
    ("- [ ] todo\n- [x] done",
     "• ☐ todo\n• ☑ done"),
    ("See [the docs](https://example.org/docs?a=1&b=2) and ![img](https://example.org/i.png).",
     "See <https://example.org/docs?a=1&amp;b=2|the docs> and <https://example.org/i.png>."),
    ("Run this:\n\n```python\ndef f(x):\n    return x * 2  # **not bold**\n```\n\nThen `f(2)`.",
     "Run this:\n\n```python\ndef f(x):\n    return x * 2  # **not bold**\n```\n\nThen `f(2)`."),
    ("> quoted text\n> more quote\n\nafter",
     "&gt; quoted text\n&gt; more quote\n\nafter"),
    ("above\n\n---\n\nbelow",
     "above\n\n──────────\n\nbelow"),
    ("| Name | Value |\n|------|-------|\n| a | 1 |\n| **b** | 2 |",
     "*Name* | *Value*\na | 1\n*b* | 2"),
    ("**Summary**: the build *passed*.\n\n- 3 tests __fixed__\n- see [log](https://ci.example/run/1)",
     "*Summary*: the build _passed_.\n\n• 3 tests *fixed*\n• see <https://ci.example/run/1|log>"),
]  # fmt: skip


@pytest.mark.parametrize(("markdown", "expected"), ORDINARY)
def test_ordinary_markdown_converts_as_before(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("<@U1> <!channel> <#C1|x>", "&lt;@U1&gt; &lt;!channel&gt; &lt;#C1|x&gt;"),
        ("[a](https://e.org/x|y>z)", "<https://e.org/x%7Cy&gt;z|a>"),
        ("<https://e.org> [](https://e.org/empty)", "<https://e.org> <https://e.org/empty>"),
        ("[![logo](https://e.org/i.png)](https://e.org)", "<https://e.org|logo>"),
        ("# **Bold** heading", "*Bold heading*"),
        ("a \\*not italic\\*", "a \\*not italic\\*"),
        ("```\nunclosed <b> **x**", "```\nunclosed &lt;b&gt; **x**"),
        ("[a][ref]\n\n[ref]: https://e.org", "<https://e.org|a>\n\n[ref]: https://e.org"),
    ],
)
def test_edges_stay_safe_and_readable(markdown: str, expected: str) -> None:
    assert to_mrkdwn(markdown) == expected


def test_nesting_deeper_than_the_cap_is_sent_as_written() -> None:
    shallow = "> " * (MAX_DEPTH - 2) + "**x**"  # with its paragraph and bold: MAX_DEPTH
    assert to_mrkdwn(shallow).endswith("*x*")
    deep = ">" * (MAX_DEPTH + 1) + " **x**"
    assert to_mrkdwn(deep) == escape(deep)
