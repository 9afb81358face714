"""Every renderer on the send path handles adversarial Markdown at its platform's full chunk
size (design §8 Rendering): the output is valid, and it comes in bounded time.

The inputs are the benchmark's (``bench/render_worst.py``). ``timeout(5)`` is the bound: the
code these tests replaced took from seconds to minutes on them (Slack's mrkdwn rung 88 s on
8 000 characters of ``[a](``, Telegram 7.7 s on 80 KB of fences, the console's ``rich`` 3.3 s
on 24 KB of tables and super-linearly more on 100 KB); each case now takes milliseconds. No
speed is asserted (``bench/render_worst.py`` measures it).
"""

from __future__ import annotations

import html
import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typing_extensions import override

from bench.render_worst import adversarial, run
from bot.errors import InvalidRequest
from bot.messages import Button, ChatType, Destination, OutboundKind, OutboundText, RenderMode
from bot.ports import TextUnit
from channels.console import CHAT_ID, RICH_LIMIT, ConsoleChannel
from channels.dingtalk import render as dingtalk
from channels.feishu import render as feishu
from channels.slack import render as slack
from channels.telegram import render as telegram
from tests.bot.harness import make_settings

SLACK = adversarial(12_000, TextUnit.CHARS)
TELEGRAM = adversarial(telegram.TEXT_LIMIT, TextUnit.UTF16)
FEISHU = adversarial(feishu.TEXT_LIMIT, TextUnit.CHARS)
DINGTALK = adversarial(dingtalk.TEXT_LIMIT, TextUnit.UTF8_BYTES)
LINK = re.compile(r"<(?:https?://|mailto:|b\b)[^<>]*>")
"""A link the converter wrote (``[a](b)`` is the one relative link among the inputs)."""


def _alnum(text: str) -> Counter[str]:
    return Counter(c for c in text if c.isalnum())


@pytest.mark.timeout(5)
@pytest.mark.parametrize("case", sorted(SLACK))
def test_slack_mrkdwn_rung_converts_adversarial_chunks(case: str) -> None:
    text = SLACK[case]
    payload = slack.render(text, slack.Rung.MRKDWN)
    out = payload.text
    assert out
    assert not re.search(r"<[@!#]", out), "no mention or broadcast can come from the text"
    assert "<" not in LINK.sub("", out)
    assert ">" not in LINK.sub("", out)
    assert _alnum(html.unescape(LINK.sub(_link_letters, out))) == _alnum(text)


def _link_letters(link: re.Match[str]) -> str:
    target, _, label = link.group(0)[1:-1].partition("|")
    return target + label if label != target else target


@pytest.mark.timeout(5)
def test_slack_mrkdwn_rung_with_buttons_splits_a_full_chunk_into_sections() -> None:
    buttons = (Button(label="Yes", payload="p/0"),)
    payload = slack.render(SLACK["unclosed_links"], slack.Rung.MRKDWN, buttons)
    sections = [b for b in payload.blocks if b["type"] == "section"]
    assert len(sections) >= 4  # 12 000 characters, escaped, in 3 000-character sections
    assert payload.blocks[-1]["type"] == "actions"


@pytest.mark.timeout(5)
@pytest.mark.parametrize("case", sorted(TELEGRAM))
def test_telegram_rich_render_of_adversarial_chunks_has_valid_entities(case: str) -> None:
    text = TELEGRAM[case]
    body = telegram.render(text, RenderMode.RICH)
    units = body.text.encode("utf-16-le", "surrogatepass")
    assert 0 < len(units) // 2 <= telegram.TEXT_LIMIT
    if not body.entities:
        return
    for entity in body.entities:
        assert entity.length > 0
        assert entity.offset >= 0
        assert entity.offset + entity.length <= len(units) // 2
        for edge in (entity.offset, entity.offset + entity.length):
            unit = (
                int.from_bytes(units[2 * edge : 2 * edge + 2], "little")
                if edge * 2 < len(units)
                else 0
            )
            assert not 0xDC00 <= unit <= 0xDFFF, "an entity edge splits a surrogate pair"


@pytest.mark.timeout(5)
def test_telegram_text_far_over_the_limit_is_not_rendered() -> None:
    source = "```\n" * 20_000  # 80 KB of fences: 7.7 s in the converter
    assert telegram.render(source, RenderMode.RICH) == telegram.Rendered(text=source)


@pytest.mark.timeout(5)
@pytest.mark.parametrize("case", sorted(FEISHU))
@pytest.mark.parametrize("rung", [feishu.Rung.CARD, feishu.Rung.POST, feishu.Rung.TEXT])
def test_feishu_renders_adversarial_chunks_without_live_tags(case: str, rung: feishu.Rung) -> None:
    try:
        content = feishu.render(FEISHU[case], rung)
    except InvalidRequest:
        assert rung is not feishu.Rung.TEXT  # only too big a card or post, moving down a rung
        return
    assert len(content.content.encode()) <= feishu.CONTENT_LIMIT or rung is feishu.Rung.TEXT
    decoded = json.dumps(json.loads(content.content), ensure_ascii=False)
    assert not re.search(r"<at\b", decoded, re.IGNORECASE)


@pytest.mark.timeout(5)
@pytest.mark.parametrize("case", sorted(DINGTALK))
def test_dingtalk_renders_adversarial_chunks_line_for_line(case: str) -> None:
    text = DINGTALK[case]
    out = dingtalk.dingtalk_markdown(text)
    assert [line.rstrip() for line in out.split("\n")] == [
        line.rstrip() for line in text.split("\n")
    ]
    title = dingtalk.title_of(text)
    assert 0 < len(title) <= dingtalk.TITLE_CHARS
    assert "\n" not in title


class TerminalOutput(io.StringIO):
    @override
    def isatty(self) -> bool:
        return True


@pytest.mark.timeout(5)
async def test_console_prints_a_huge_answer_as_written(tmp_path: Path) -> None:
    text = "|a|\n|-|\n" * 12_500  # 100 KB of tables: far more than 5 s of rich's layout
    assert len(text) > RICH_LIMIT
    out = TerminalOutput()
    console = ConsoleChannel(make_settings(tmp_path), stdin=io.StringIO(""), stdout=out)
    destination = Destination(channel="console", chat_id=CHAT_ID, chat_type=ChatType.DM)
    await console.send_text(
        OutboundText(destination=destination, text=text, kind=OutboundKind.FINAL)
    )
    assert out.getvalue() == f"bot> {text}\n"


def test_the_benchmark_reports_the_worst_case_of_each_renderer() -> None:
    results = run(["slack.markdown", "dingtalk.markdown"], repeats=1, collect=False)
    for result in results.values():
        cases = result["cases"]
        assert isinstance(cases, dict)
        assert result["input"] in cases
        assert result["worst_ms"] == max(cases.values())
