"""A push traced (design §19): its rows and every platform call, for ``switchboard trace`` and
the console's search; loaded by those surfaces only, not by the daemon's message path."""

from __future__ import annotations

from bot.operator.labels import JsonObject, outbox_json
from bot.operator.trace import RowTrace, row_lines
from bot.ports import Store
from bot.push.status import delivery_report
from bot.text.escape import escape_controls


async def trace_push(store: Store, delivery_id: str) -> tuple[JsonObject, str] | None:
    """A text or file push (design §19; a ``run_agent`` one is a journal entry, traced as a
    message): its rows and every platform call, as JSON and as text; ``None``: no such push."""
    report = await delivery_report(store, delivery_id)
    if report is None:
        return None
    traced = [
        RowTrace(row=row, calls=tuple(await store.outbox.attempts(row.id))) for row in report.rows
    ]
    lines = [
        escape_controls(
            f"push {delivery_id} ({report.kind}) to {report.channel} chat {report.chat_id}:"
            f" {report.status}" + (f" ({report.error})" if report.error else "")
        ),
    ]
    for row in traced:
        lines += row_lines(row)
    body: JsonObject = {
        "delivery_id": delivery_id,
        "kind": str(report.kind),
        "status": str(report.status),
        "error": report.error,
        "outbox": [outbox_json(row.row, row.calls) for row in traced],
    }
    return body, "\n".join(lines)
