"""The README's push example works as written, for a chat the bot has not heard from yet:
the ``curl`` command is read from the README and sent, headers and body
as they are, to a daemon with the push API on and the example's channel enabled."""

from __future__ import annotations

import itertools
import json
import re
import shlex
from pathlib import Path

import aiohttp

from tests.bot.harness import running
from tests.bot.ops.push_support import TOKEN, api_url, push_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel

README = Path(__file__).resolve().parents[3] / "README.md"
BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def _push_example() -> tuple[str, dict[str, str], str]:
    """The README's ``curl`` of ``/api/v1/messages``: its URL path, headers and body."""
    blocks = [block for block in BLOCK.findall(README.read_text()) if "/api/v1/messages" in block]
    assert len(blocks) == 1, "the README shows one push example"
    words = shlex.split(blocks[0].replace("\\\n", " "))
    assert words[0] == "curl"
    headers: dict[str, str] = {}
    body = ""
    for flag, value in itertools.pairwise(words):
        if flag == "-H":
            name, _, text = value.partition(":")
            headers[name.strip()] = text.strip()
        elif flag in ("-d", "--data"):
            body = value
    url = next(word for word in words if "/api/v1/messages" in word)
    return re.sub(r"^https?://[^/]+", "", url), headers, body


def test_the_example_names_the_chat_type_an_unknown_chat_needs() -> None:
    _, _, body = _push_example()
    assert json.loads(body)["chat_type"] in ("dm", "group")


async def test_the_example_is_accepted_for_a_chat_never_heard_from(tmp_path: Path) -> None:
    path, headers, body = _push_example()
    channel = FakeChannel(fake_name=json.loads(body)["channel"])
    headers = {
        name: value.replace("$SWITCHBOARD_PUSH_TOKEN", TOKEN) for name, value in headers.items()
    }
    async with (
        running(push_settings(tmp_path), [channel], FakeAgent()) as run,
        aiohttp.ClientSession() as client,
        client.post(api_url(run.daemon, path), data=body.encode(), headers=headers) as response,
    ):
        answer = await response.json()
    assert response.status == 202, answer
    assert answer["status"] == "queued"
