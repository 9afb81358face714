"""``/console/approvals`` over plain HTTP on a real SQLite store: pending requests first (masked,
escaped, with the decisions their tool allows), then the decided ones; a decision needs the
CSRF token, is recorded once under chat's rules, audited as ``console:<name>`` and said in a
note; in the daemon, the sweep resumes the run and the daemon's metrics count it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote

import aiohttp
import pytest

from bot.app import Daemon, DaemonOptions, Overrides
from bot.console.wiring import daemon_console
from bot.messages import utc_now
from bot.ports.approvals import Approval, ApprovalState, Decided
from tests.bot.approvals.requests import approvals_in, paused_run, record, waiting
from tests.bot.approvals.test_approvals_in_chat import WRITE
from tests.bot.harness import make_settings, started
from tests.console.support import Served, console_section, cookie_session, log_in, serve_console
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm
from tests.store.support import inbound
from tests.store.support import record as journal

PAGE = "/console/approvals"
SNEAKY = "<script>alert(1)</script>"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serve_console(make_settings(tmp_path, console=console_section())) as found:
        yield found


async def _get(served: Served, client: aiohttp.ClientSession, path: str = PAGE) -> str:
    async with client.get(served.base + path) as response:
        assert response.status == 200
        return await response.text()


async def _post(
    served: Served, client: aiohttp.ClientSession, action: str, fields: dict[str, str]
) -> str:
    """The redirect's target after a decision (its note or failure, unquoted)."""
    async with client.post(
        f"{served.base}{PAGE}/{action}", data=fields, allow_redirects=False
    ) as response:
        assert response.status == 303, await response.text()
        return unquote(response.headers["Location"])


async def _stored(served: Served, approval_id: str) -> Approval:
    found = await approvals_in(served.store).get(approval_id)
    assert found is not None
    return found


async def test_pending_requests_come_first_masked_and_escaped_then_the_decided(
    served: Served,
) -> None:
    older = paused_run("r0", "corr-0")
    await record(served.store, older, waiting(older, tool="delete_repo"))
    decided = Decided(
        state=ApprovalState.REJECTED, by="telegram:42", by_name="Ben", at=utc_now(),
        reason=f"not on a Friday {SNEAKY}",
    )  # fmt: skip
    assert await approvals_in(served.store).decide("r0a0", decided)
    run = paused_run("r1", "corr-1")
    await record(
        served.store,
        run,
        waiting(run, 0, tool=f"run_{SNEAKY}"),
        waiting(run, 1, allowed=("approve", "reject")),
    )
    async with cookie_session() as client:
        await log_in(client, served.base)
        page = await _get(served, client)
    assert 'href="/console/approvals" class="active"' in page
    waiting_at, decided_at = page.index('id="pending"'), page.index('id="decided"')
    assert waiting_at < page.index("r1a0") < page.index("r1a1") < decided_at < page.index("r0a0")
    assert SNEAKY not in page
    assert "run_&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "sk-secret-1" not in page
    assert page.count("&#34;api_key&#34;: &#34;•••&#34;") >= 2  # shown, and in the edit box
    pending = page[waiting_at:decided_at]
    assert pending.count('action="/console/approvals/approve"') == 2
    assert pending.count('action="/console/approvals/reject"') == 2
    assert pending.count('action="/console/approvals/edit"') == 1  # r1a1 allows no edit
    assert pending.count('name="csrf"') == 5
    row = page[page.index("r0a0", decided_at) :]
    assert "rejected" in row
    assert "Ben (telegram:42)" in row
    assert "not on a Friday &lt;script&gt;" in row


async def test_a_decision_without_the_csrf_token_is_refused_and_changes_nothing(
    served: Served,
) -> None:
    run = paused_run("r1", "corr-1")
    await record(served.store, run)
    async with cookie_session() as client:
        csrf = await log_in(client, served.base)
        for fields in ({"approval_id": "r1a0"}, {"approval_id": "r1a0", "csrf": csrf + "x"}):
            for action in ("approve", "reject", "edit"):
                async with client.post(
                    f"{served.base}{PAGE}/{action}", data=fields, allow_redirects=False
                ) as response:
                    assert response.status == 403, action
                    assert "CSRF" in await response.text()
    assert (await _stored(served, "r1a0")).state is ApprovalState.PENDING
    assert await served.store.audit.recent(5) == []


async def test_approve_with_the_token_records_audits_and_says_so_once(served: Served) -> None:
    run = paused_run("r1", "corr-1")
    await record(served.store, run)
    async with cookie_session() as client:
        csrf = await log_in(client, served.base, name="ann")
        fields = {"csrf": csrf, "approval_id": "r1a0"}
        target = await _post(served, client, "approve", fields)
        assert target.startswith(f"{PAGE}?note=approved send_email (ID r1a0) in telegram -100;")
        page = await _get(served, client, target)
        assert "the daemon resumes its run within a few seconds" in page
        assert "Nothing is waiting for a decision." in page
        again = await _post(served, client, "reject", {**fields, "reason": "changed my mind"})
        assert "failed=That request was already approved by ann at " in again
    stored = await _stored(served, "r1a0")
    assert (stored.state, stored.decided_by, stored.reason) == (
        ApprovalState.APPROVED,
        "console:ann",
        None,
    )
    assert await approvals_in(served.store).settled_runs() == [run]  # the sweep resumes it
    audit = await served.store.audit.recent(5)
    assert [(a.actor, a.action) for a in audit] == [("console:ann", "approval.approved")]
    assert "r1a0 send_email in telegram -100" in audit[0].detail


async def test_reject_takes_its_reason_and_edit_its_json(served: Served) -> None:
    run = paused_run("r1", "corr-1")
    await record(served.store, run, waiting(run, 0), waiting(run, 1), waiting(run, 2))
    async with cookie_session() as client:
        csrf = await log_in(client, served.base)
        rejected = {"csrf": csrf, "approval_id": "r1a0", "reason": "  wrong recipient "}
        assert "waits for 2 more decision(s)" in await _post(served, client, "reject", rejected)
        bad = {"csrf": csrf, "approval_id": "r1a1", "args": '{"to": '}
        failed = await _post(served, client, "edit", bad)
        assert "failed=Not decided: the new arguments are not valid JSON" in failed
        edit = {
            "csrf": csrf,
            "approval_id": "r1a1",
            "args": '{"to": "bob@x.org", "api_key": "•••"}',
        }
        assert "approved with new arguments" in await _post(served, client, "edit", edit)
        nothing = await _post(served, client, "approve", {"csrf": csrf, "approval_id": " "})
        assert "failed=no approval id was sent" in nothing
    assert (await _stored(served, "r1a0")).reason == "wrong recipient"
    edited = await _stored(served, "r1a1")
    assert edited.state is ApprovalState.EDITED
    assert edited.decided_args == '{"api_key": "sk-secret-1", "to": "bob@x.org"}'
    assert (await _stored(served, "r1a2")).state is ApprovalState.PENDING


async def test_an_expired_request_is_shown_as_such_and_not_decided(served: Served) -> None:
    run = paused_run("r1", "corr-1")
    await record(served.store, run, waiting(run, ttl=timedelta(seconds=-1)))
    async with cookie_session() as client:
        csrf = await log_in(client, served.base)
        assert 'badge tone-bad">expired' in await _get(served, client)
        target = await _post(served, client, "approve", {"csrf": csrf, "approval_id": "r1a0"})
        assert "failed=That request has expired." in target
    assert (await _stored(served, "r1a0")).state is ApprovalState.PENDING


async def test_the_trace_shows_the_approvals_of_a_messages_turn(served: Served) -> None:
    await journal(served.store, inbound("m-77", chat_id="-100"), "turn-77")
    run = paused_run("r1", "turn-77")
    await record(served.store, run, waiting(run, tool=f"run_{SNEAKY}"))
    decided = Decided(
        state=ApprovalState.EDITED, by="console:ann", by_name="ann", at=utc_now(),
        args='{"to": "bob@x.org", "password": "hunter2"}',
    )  # fmt: skip
    assert await approvals_in(served.store).decide("r1a0", decided)
    async with cookie_session() as client:
        await log_in(client, served.base)
        page = await _get(served, client, "/console/trace?id=m-77")
        by_run = await _get(served, client, "/console/trace?id=approval-r1")
    assert "approval run r1 of turn turn-77 in telegram -100" in page
    assert "run_&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert SNEAKY not in page
    assert "ann (console:ann)" in page
    assert "{&#34;to&#34;: &#34;bob@x.org&#34;, &#34;password&#34;: &#34;•••&#34;}" in page
    assert "hunter2" not in page
    assert "No journal entry" not in by_run
    assert "approval run r1 of turn turn-77" in by_run


@asynccontextmanager
async def _daemon(tmp_path: Path, channel: FakeChannel) -> AsyncIterator[str]:
    """The daemon with the console mounted, as ``switchboard run`` builds it; its base URL."""
    settings = make_settings(tmp_path, console=console_section())
    options = DaemonOptions(
        overrides=Overrides(channels=[channel], agent=FakeAgent()), mounts=(daemon_console,)
    )
    async with started(Daemon(settings, options)) as handle:
        assert handle.daemon.http is not None
        yield f"http://127.0.0.1:{handle.daemon.http.port}"


async def test_in_the_daemon_the_run_resumes_and_the_metrics_count_the_decision(
    tmp_path: Path,
) -> None:
    channel = FakeChannel()
    async with _daemon(tmp_path, channel) as base, cookie_session() as client:
        await channel.inject(dm(WRITE, message_id="1"))
        await channel.wait_text("Approval needed")
        csrf = await log_in(client, base, name="ann")
        async with client.get(base + PAGE) as listing:
            page = await listing.text()
        start = page.index('id="approval-') + len('id="approval-')
        approval_id = page[start : page.index('"', start)]
        fields = {"csrf": csrf, "approval_id": approval_id}
        async with client.post(f"{base}{PAGE}/approve", data=fields) as done:
            assert f"approved write_file (ID {approval_id})" in await done.text()
        await channel.wait_text("decided: approve", within=10.0)
        async with client.get(base + "/metrics") as metrics:
            exposed = await metrics.text()
    assert 'switchboard_approvals_total{outcome="approved"} 1.0' in exposed
