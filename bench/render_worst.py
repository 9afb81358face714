"""Worst-case time of each Markdown renderer on the send path (design §8 Rendering, §16).

Every renderer gets the same adversarial inputs — unclosed links and fences, runs of ``*``,
``_`` and backticks, deep ``>``/list nesting, long lines of table pipes, HTML-ish ``<`` and
``&``, emoji outside the BMP (UTF-16 surrogate pairs) — each cut to the largest chunk its
platform is sent (Slack 12 000 characters, Telegram 4 096 UTF-16 units, Feishu 7 000
characters, DingTalk 5 000 UTF-8 bytes; the terminal console renders Markdown up to
``RICH_LIMIT`` characters, in a worker thread). Each case is timed ``--repeats`` times in
thread CPU time (other work on the machine barely moves it), the garbage collector run before
each over what was made since start-up, and the median kept (the console's ``rich`` once: it
takes seconds). Prints one JSON line: per renderer, the worst case in ms per chunk and which
input it was (``--all`` adds every case).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.markdown import Markdown  # noqa: E402

from bot.delivery.chunking import measure  # noqa: E402
from bot.errors import InvalidRequest  # noqa: E402
from bot.messages import Button, RenderMode  # noqa: E402
from bot.ports import TextUnit  # noqa: E402
from channels.console import RICH_LIMIT  # noqa: E402
from channels.dingtalk import render as dingtalk  # noqa: E402
from channels.feishu import render as feishu  # noqa: E402
from channels.slack import render as slack  # noqa: E402
from channels.telegram import render as telegram  # noqa: E402

REPEATED = {
    "unclosed_links": "[a](",
    "closed_links": "[a](b) ",
    "brackets": "[",
    "close_paren": "](",
    "images": "![",
    "stars": "*",
    "star_words": "*a",
    "strong_open": "**a",
    "underscores": "_a",
    "double_underscores": "__a",
    "tildes": "~~a",
    "backticks": "`",
    "backtick_pairs": "a``",
    "fences_unclosed": "```\n",
    "fences_nested": "````\n```\n",
    "tilde_fences": "~~~\n",
    "quotes_nested": ">",
    "quoted_lists": "> - ",
    "table_pipes": "|",
    "tables": "|a|\n|-|\n",
    "lt": "<",
    "tags": "<a>",
    "open_tags": "<a ",
    "comments": "<!--",
    "amps": "&",
    "entities": "&#",
    "mentions": "<@U1> <!channel> <at id=all></at> ",
    "escapes": "\\*",
    "hard_breaks": "a  \n",
    "ref_defs": "[a]: ",
    "emoji_stars": "😀*",
    "emoji_links": "[😀](",
    "prose": "An ordinary sentence with **bold**, `code` and a [link](https://e.org). ",
}


def _deep_list(size: int) -> str:
    lines: list[str] = []
    length = 0
    while length < size:
        lines.append("  " * len(lines) + "- a")
        length += len(lines[-1]) + 1
    return "\n".join(lines)


def _wide_table(size: int) -> str:
    columns = max(1, size // 12)
    return "|" + " a |" * columns + "\n|" + "-|" * columns + "\n|" + " b |" * columns


GENERATED: dict[str, Callable[[int], str]] = {"deep_list": _deep_list, "wide_table": _wide_table}

RENDERERS: dict[str, tuple[int, TextUnit]] = {
    "slack.markdown": (12_000, TextUnit.CHARS),
    "slack.mrkdwn": (12_000, TextUnit.CHARS),
    "slack.mrkdwn+buttons": (12_000, TextUnit.CHARS),
    "telegram.rich": (telegram.TEXT_LIMIT, TextUnit.UTF16),
    "feishu.card": (feishu.TEXT_LIMIT, TextUnit.CHARS),
    "feishu.post": (feishu.TEXT_LIMIT, TextUnit.CHARS),
    "dingtalk.markdown": (dingtalk.TEXT_LIMIT, TextUnit.UTF8_BYTES),
    "console.rich": (RICH_LIMIT, TextUnit.CHARS),
}


def fit(text: str, limit: int, unit: TextUnit) -> str:
    """The longest prefix of ``text`` that measures at most ``limit`` in ``unit``."""
    text = text[:limit]
    while measure(text, unit) > limit:
        over = measure(text, unit) - limit
        text = text[: len(text) - max(1, over // 4)]
    return text


def adversarial(limit: int, unit: TextUnit) -> dict[str, str]:
    """Every adversarial input, as long as one chunk of ``limit`` in ``unit`` allows."""
    cases = {name: fit(piece * (limit // len(piece) + 1), limit, unit)
             for name, piece in REPEATED.items()}  # fmt: skip
    cases |= {name: fit(make(limit), limit, unit) for name, make in GENERATED.items()}
    return cases


def _console(text: str) -> object:
    screen = Console(file=io.StringIO(), force_terminal=True, width=100)
    screen.print(Markdown(text))
    return screen


def _feishu(rung: feishu.Rung) -> Callable[[str], object]:
    def render(text: str) -> object:
        try:
            return feishu.render(text, rung)
        except InvalidRequest:  # too big for one card: the adapter moves down a rung
            return None

    return render


BUTTONS = (Button(label="Yes", payload="p/1/0"), Button(label="No", payload="p/1/1"))
CALLS: dict[str, Callable[[str], object]] = {
    "slack.markdown": lambda text: slack.render(text, slack.Rung.MARKDOWN),
    "slack.mrkdwn": lambda text: slack.render(text, slack.Rung.MRKDWN),
    "slack.mrkdwn+buttons": lambda text: slack.render(text, slack.Rung.MRKDWN, BUTTONS),
    "telegram.rich": lambda text: telegram.render(text, RenderMode.RICH),
    "feishu.card": _feishu(feishu.Rung.CARD),
    "feishu.post": _feishu(feishu.Rung.POST),
    "dingtalk.markdown": lambda text: (dingtalk.dingtalk_markdown(text), dingtalk.title_of(text)),
    "console.rich": _console,
}


def cpu_ms(call: Callable[[str], object], text: str, repeats: int, *, collect: bool) -> float:
    runs = []
    for _ in range(repeats):
        if collect:
            gc.collect()
        started = time.thread_time()
        call(text)
        runs.append((time.thread_time() - started) * 1000)
    return statistics.median(runs)


def run(names: list[str], repeats: int, *, collect: bool = True) -> dict[str, dict[str, object]]:
    """Per renderer its worst case; ``collect=False`` skips the collections (a quick check)."""
    results: dict[str, dict[str, object]] = {}
    for name in names:
        limit, unit = RENDERERS[name]
        runs = 1 if name == "console.rich" else repeats
        times = {case: round(cpu_ms(CALLS[name], text, runs, collect=collect), 1)
                 for case, text in adversarial(limit, unit).items()}  # fmt: skip
        worst = max(times, key=times.__getitem__)
        results[name] = {"chunk": f"{limit} {unit}", "worst_ms": times[worst], "input": worst,
                         "cases": times}  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per case (median)")
    parser.add_argument("--renderers", nargs="+", default=list(RENDERERS), choices=RENDERERS)
    parser.add_argument("--all", action="store_true", help="every case, not only the worst")
    args = parser.parse_args()
    gc.collect()
    gc.freeze()  # the imported libraries' objects: a collection before each run skips them
    results = run(args.renderers, args.repeats)
    if not args.all:
        for result in results.values():
            del result["cases"]
    print(json.dumps({"bench": "render_worst", "repeats": args.repeats, "renderers": results}))


if __name__ == "__main__":
    main()
