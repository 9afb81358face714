"""Feishu's redelivery against the real daemon: an event the daemon refused (acked 500) comes
back under a new event_id and is answered exactly once; an event acked 200 never comes back,
even while its answer is still being thought about.

FakeFeishu redelivers as Feishu does only when asked (``redeliver_unacked``): each delivery is
checked ``after_s`` after it went out, and every check is recorded, so a test can wait for the
verdict on an event instead of sleeping past the redelivery window.
"""

from __future__ import annotations

from pathlib import Path

from tests.channels.feishu_support import (
    DM,
    WAIT_S,
    feishu_daemon,
    feishu_settings,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.feishu import Redelivery
from tests.fakes.feishu_api import FakeFeishu

REDELIVER_AFTER_S = 2.0
"""Generous next to an ack on loopback, so a busy machine does not cause extra redeliveries
(Feishu's own window is about 3 s)."""


def _chain(fake: FakeFeishu, origin: str) -> list[Redelivery]:
    """The checks of the message first delivered as ``origin``, its redeliveries included."""
    return [r for r in fake.redelivery_checks() if r.origin == origin]


def _settled(fake: FakeFeishu, origin: str) -> bool:
    return any(r.outcome in {"acked", "exhausted"} for r in _chain(fake, origin))


async def test_an_event_refused_for_a_full_queue_is_redelivered_and_answered_once(
    tmp_path: Path,
) -> None:
    with FakeFeishu() as fake:
        fake.redeliver_unacked(after_s=REDELIVER_AFTER_S, times=3)
        agent = FakeAgent()
        settings = feishu_settings(tmp_path, fake, daemon={"inbound_queue_size": 1})
        async with feishu_daemon(settings, fake, agent) as run:
            bus = run.kernel.conversations.bus
            assert bus.reserve()  # the one place in the inbound queue is taken: it is full
            message_id = fake.push_message("refused once", chat_id=DM)
            [first] = fake.event_ids(message_id)
            refused = await fake.await_ack(first, timeout=WAIT_S)
            bus.release()  # room again, well before the redelivery is due
            await wait_text(fake, DM, "echo: refused once")
            await fake.await_until(lambda: _settled(fake, first), WAIT_S + 4 * REDELIVER_AFTER_S)
            await run.settle()
            journal = await run.kernel.store.inbound.find("feishu", message_id)
        assert refused.code == 500
        chain = _chain(fake, first)
        *resent, last = chain
        assert resent  # at least one redelivery (one, unless the machine stalled for seconds)
        assert [r.outcome for r in resent] == ["redelivered"] * len(resent)
        assert resent[0].ack_code == 500
        assert (last.outcome, last.ack_code, last.new_event_id) == ("acked", 200, None)
        # Each redelivery is the same message under a new event_id, and it is the one checked next.
        assert [r.event_id for r in chain] == [first] + [r.new_event_id for r in resent]
        assert fake.event_ids(message_id) == [first] + [r.new_event_id for r in resent]
        assert len(set(fake.event_ids(message_id))) == len(chain)
        assert fake.unacked() == []
        assert [entry.message.text for entry in journal] == ["refused once"]
        assert [r.turn.text for r in agent.runs] == ["refused once"]
        assert texts(fake, DM) == ["echo: refused once"]


async def test_an_event_acked_200_is_never_redelivered(tmp_path: Path) -> None:
    with FakeFeishu() as fake:
        fake.redeliver_unacked(after_s=REDELIVER_AFTER_S, times=3)
        agent = FakeAgent()
        release = agent.hold("slow")
        settings = feishu_settings(tmp_path, fake)
        async with feishu_daemon(settings, fake, agent) as run:
            message_id = fake.push_message("a slow question", chat_id=DM)
            [event_id] = fake.event_ids(message_id)
            # The verdict comes while the model is still thinking: the ack settled the event.
            await fake.await_until(lambda: _settled(fake, event_id), WAIT_S + REDELIVER_AFTER_S)
            answered_before_verdict = [t for t in texts(fake, DM) if t.startswith("echo:")]
            release.set()
            await wait_text(fake, DM, "echo: a slow question")
            await run.settle()
        assert answered_before_verdict == []
        [check] = fake.redelivery_checks()
        assert (check.event_id, check.origin) == (event_id, event_id)
        assert (check.outcome, check.ack_code, check.new_event_id) == ("acked", 200, None)
        assert fake.redeliveries() == []
        assert fake.event_ids(message_id) == [event_id]
        assert [d.event_id for d in fake.deliveries()] == [event_id]
        assert [r.turn.text for r in agent.runs] == ["a slow question"]
        assert sum("echo: a slow question" in t for t in texts(fake, DM)) == 1
