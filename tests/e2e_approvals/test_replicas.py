"""Approvals across two ``switchboard run`` replicas on one PostgreSQL schema (design §11,
§24), against the fake Telegram playing the load balancer (webhook mode, updates posted to the
replicas in turn) and the fake model, with the embedded agent and ``write_file`` waiting for a
decision. A press that reaches the replica not holding the chat is decided by the holder,
which created the request; a request whose holder is killed with -9 while it waits is decided
through the other replica, which resumes the run from the shared checkpoint: each call runs
exactly once and each answer is shown once."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from bench.replicas_fleet import Replica
from bench.soak_daemon import free_port
from tests.channels.replicas_support import fleet, killed
from tests.channels.telegram_support import texts, wait_text
from tests.e2e_approvals.support import (
    gated_agent,
    model_requests,
    press_on_telegram,
    telegram_request,
    tool_results,
    write,
    written,
)
from tests.fakes.common.waiting import eventually
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.postgres import fresh_schema, require_postgres

CHAT = 42
EXPIRY_S = 3.0
"""``daemon.replica_expiry_s``: how soon the killed replica's chat moves."""
WITHIN_S = 60.0
"""Bound for a step that waits on a cold start or a takeover on a busy machine."""
SECRET = "approvals-webhook-secret"  # noqa: S105 - the webhook secret of the test


def _replica(work: Path, name: str, store: dict[str, Any], fake: FakeTelegram,
             model: FakeOpenAIServer) -> Replica:  # fmt: skip
    port = free_port()
    webhook = {"url": f"http://127.0.0.1:{port}/telegram/webhook", "secret_token": SECRET}
    data = {
        "config_version": 1,
        "state_dir": str(work / name),
        "workspace_dir": str(work / "shared"),
        "log": {"level": "INFO"},
        "http": {"enabled": True, "host": "127.0.0.1", "port": port},
        "access": {"dm_policy": "open"},
        "agent": gated_agent(model),
        "store": store,
        "daemon": {"shutdown_grace_s": 5, "replica_expiry_s": EXPIRY_S},
        "channels": {"telegram": {"enabled": True, "token": fake.token, "mode": "webhook",
                                  "api_base_url": fake.api_origin, "webhook": webhook}},
    }  # fmt: skip
    path = work / f"{name}.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return Replica(name=name, config=path, port=port, log=work / f"{name}.log")


def _press_approve(fake: FakeTelegram, needle: str) -> str:
    """Approve the request showing ``needle``; its approval id."""
    request = telegram_request(fake, CHAT, needle)
    press_on_telegram(fake, CHAT, request, "approve")
    return request.id


async def _turns_ended(replica: Replica, outcome: str, count: int) -> None:
    """Until ``count`` turns ended with ``outcome`` on ``replica`` (their messages marked in the
    journal: a turn's end is logged after that)."""
    await eventually(
        lambda: replica.log.read_text().count(f"outcome={outcome} ") >= count, WITHIN_S
    )


def _decided_by(replicas: list[Replica], approval_id: str) -> list[str]:
    return [r.name for r in replicas if f"approval decided id={approval_id}" in r.log.read_text()]


async def test_a_press_through_either_replica_runs_the_call_once(tmp_path: Path) -> None:
    url = require_postgres()
    async with fresh_schema(url) as schema:
        with FakeOpenAIServer() as model, FakeTelegram() as fake:
            store = {"url": url, "schema": schema, "pool_size": 4}
            replicas = [_replica(tmp_path, f"r{i}", store, fake, model) for i in range(2)]
            holder, other = replicas
            fake.balance_webhook([r.webhook_url for r in replicas])
            async with fleet(replicas) as codes:
                model.script(Reply(tool_calls=(write("a.txt", "alpha", "call_a"),)))
                fake.push_message("please write a.txt")  # to r0, which then holds the chat
                await wait_text(fake, CHAT, "a.txt", within=WITHIN_S)
                first = _press_approve(fake, "a.txt")  # to r1
                model.script(Reply(text="Saved a.txt."))
                await wait_text(fake, CHAT, "Saved a.txt.", within=WITHIN_S)

                model.script(Reply(tool_calls=(write("b.txt", "beta", "call_b"),)))
                fake.push_message("now write b.txt")  # to r0
                await wait_text(fake, CHAT, "b.txt", within=WITHIN_S)
                await _turns_ended(holder, "approval", 2)  # nothing left for a takeover to re-run
                assert await killed(holder) == -signal.SIGKILL
                second = _press_approve(fake, "b.txt")  # to r1, which takes the chat over
                model.script(Reply(text="Saved b.txt."))
                await wait_text(fake, CHAT, "Saved b.txt.", within=WITHIN_S)
                requests = await model_requests(model, 4)
            shown = texts(fake, CHAT)
            deliveries = fake.balanced_deliveries()
    logs = "\n".join(f"--- {r.name}\n{r.tail(40)}" for r in replicas)
    assert [url for _, url in deliveries] == [
        holder.webhook_url, other.webhook_url, holder.webhook_url, other.webhook_url
    ], deliveries  # fmt: skip
    assert _decided_by(replicas, first) == [holder.name], logs
    assert _decided_by(replicas, second) == [other.name], logs
    assert (written(tmp_path / "shared", "a.txt"), written(tmp_path / "shared", "b.txt")) == (
        ["alpha"],
        ["beta"],
    )
    assert "Wrote outputs/a.txt" in tool_results(requests[1])["call_a"]
    assert "Wrote outputs/b.txt" in tool_results(requests[3])["call_b"]
    assert len(model.requests) == 4, model.requests
    assert sum("Saved a.txt." in text for text in shown) == 1, shown
    assert sum("Saved b.txt." in text for text in shown) == 1, shown
    assert codes == {other.name: 0}, (codes, logs)
