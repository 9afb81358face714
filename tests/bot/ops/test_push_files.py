"""Files through the push API (design §19): a ``path`` only from under published roots, read
once when recorded, one answer for missing and forbidden paths; multipart uploads; the rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from bot.messages import OutboundFile
from bot.push.rate import PushRate
from tests.bot.harness import http_get, running
from tests.bot.ops.push_support import TOKEN, api_url, post, push_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel

WHERE = {"channel": "fake", "chat": "dm-alice", "chat_type": "dm"}


def _roots(state_dir: Path, *roots: Path, **push_api: Any) -> Any:
    block = {"enabled": True, "token": TOKEN, "file_roots": [str(r) for r in roots], **push_api}
    return push_settings(state_dir, http={"push_api": block})


def _file(path: Path | str) -> dict[str, Any]:
    return {**WHERE, "file": {"path": str(path)}}


async def test_a_path_push_is_refused_while_no_roots_are_published(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("fine")
    channel = FakeChannel()
    async with running(push_settings(tmp_path / "state"), [channel], FakeAgent()) as run:
        status, answer, _ = await post(run.daemon, _file(report))
        passwd = await post(run.daemon, _file("/etc/passwd"))
    assert (status, answer["field"]) == (400, "file.path"), answer
    assert "no file roots are published" in answer["error"]
    assert passwd[:2] == (status, answer)
    assert channel.sent == []


async def test_missing_and_forbidden_paths_get_one_answer(tmp_path: Path) -> None:
    published = tmp_path / "published"
    published.mkdir()
    secret = tmp_path / "switchboard.yaml"
    secret.write_text("token: TOP SECRET")
    (published / "link.txt").symlink_to(secret)
    (published / "sub").symlink_to(tmp_path)
    state = tmp_path / "state"
    tries = [
        "/etc/passwd", "/proc/self/environ", str(secret), str(published / "link.txt"),
        str(published / "sub" / "switchboard.yaml"), f"{published}/../switchboard.yaml",
        str(published / "gone.txt"), str(published), str(state / "switchboard.db"),
        f"{published}/a\x00b",
    ]  # fmt: skip
    channel = FakeChannel()
    async with running(_roots(state, published), [channel], FakeAgent()) as run:
        answers = [await post(run.daemon, _file(path)) for path in tries]
    assert {status for status, _, _ in answers} == {400}
    assert len({str(body) for _, body, _ in answers}) == 1, answers  # no existence oracle
    assert answers[0][1]["field"] == "file.path"
    assert "published root" in answers[0][1]["error"]
    assert channel.sent == []


async def test_proc_and_sys_are_never_sent_even_under_a_root_of_slash(tmp_path: Path) -> None:
    channel = FakeChannel()
    settings = _roots(tmp_path / "state", Path("/"), Path("/proc"))
    async with running(settings, [channel], FakeAgent()) as run:
        environ = await post(run.daemon, _file("/proc/self/environ"))
        status = await post(run.daemon, _file("/proc/self/status"))
        sysfs = await post(run.daemon, _file("/sys/kernel/mm/transparent_hugepage/enabled"))
    assert [answer[0] for answer in (environ, status, sysfs)] == [400, 400, 400]
    assert channel.sent == []


async def test_a_published_file_is_read_once_when_the_push_is_recorded(tmp_path: Path) -> None:
    published = tmp_path / "published"
    (published / "nightly").mkdir(parents=True)
    report = published / "nightly" / "report.txt"
    report.write_text("all green\n")
    channel = FakeChannel()
    async with running(_roots(tmp_path / "state", published), [channel], FakeAgent()) as run:
        status, answer, _ = await post(run.daemon, _file(report))
        report.write_text("changed after the push\n")
        sent = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
    assert (status, answer["kind"]) == (202, "file"), answer
    assert isinstance(sent.delivery, OutboundFile)
    assert sent.delivery.name == "report.txt"
    kept = Path(sent.delivery.path)
    assert kept.is_relative_to((tmp_path / "state" / "pushes").resolve())
    assert kept.read_text() == "all green\n"


async def _form(daemon: Any, form: aiohttp.FormData) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(api_url(daemon, "/api/v1/messages"), data=form, headers=headers) as reply,
    ):
        return reply.status, await reply.json()


def _upload(content: bytes, **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, value in {**WHERE, **fields}.items():
        form.add_field(name, value)
    form.add_field("file", content, filename="chart.csv", content_type="text/csv")
    return form


async def test_a_multipart_upload_arrives_and_is_bounded(tmp_path: Path) -> None:
    settings = _roots(tmp_path / "state", max_body_bytes=4096)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as run:
        status, answer = await _form(run.daemon, _upload(b"a,b\n1,2\n", caption="today"))
        sent = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
        too_big = await _form(run.daemon, _upload(b"x" * 8192))
        no_file = aiohttp.FormData(WHERE)
        no_file.add_field("caption", "x", content_type="text/plain")
        missing = await _form(run.daemon, no_file)
    assert (status, answer["kind"]) == (202, "file"), answer
    assert isinstance(sent.delivery, OutboundFile)
    assert (sent.delivery.name, sent.delivery.caption) == ("chart.csv", "today")
    assert Path(sent.delivery.path).read_bytes() == b"a,b\n1,2\n"
    assert too_big[0] == 413
    assert missing[0] == 400
    assert "'file'" in missing[1]["error"]


async def test_pushes_past_the_rate_get_429_with_retry_after(tmp_path: Path) -> None:
    settings = _roots(tmp_path / "state", rate_per_minute=1, rate_burst=2)
    channel = FakeChannel()
    text = {**WHERE, "text": "hello"}
    async with running(settings, [channel], FakeAgent()) as run:
        answers = [await post(run.daemon, text) for _ in range(4)]
        _, metrics = await http_get(run.daemon, "/metrics")
    assert [status for status, _, _ in answers] == [202, 202, 429, 429]
    assert answers[2][1]["field"] == "rate"
    assert int(answers[2][2]["Retry-After"]) >= 1
    assert 'switchboard_pushes_total{kind="unknown",outcome="rate_limited"} 2.0' in metrics


def test_the_rate_refills_at_its_pace() -> None:
    now = [100.0]
    rate = PushRate(per_minute=6, burst=2, clock=lambda: now[0])
    assert [rate.take(), rate.take()] == [0.0, 0.0]
    assert rate.take() == 10.0  # one push every 10 s
    now[0] += 10.0
    assert rate.take() == 0.0
    assert rate.take() == 10.0
    now[0] += 60.0
    assert [rate.take(), rate.take(), rate.take() > 0] == [0.0, 0.0, True]
